"""env_query: environmental status of an area (004 §3.1), deterministic per area code."""

from __future__ import annotations

import hashlib
import re

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

from demo.servers._cli import run

server = MCPServer(
    "env_query",
    version="1.0.0",
    instructions="Environmental status (air quality, weather) of an area, by area code. Demo data.",
)

_AREA_RE = re.compile(r"^[A-Za-z0-9-]{1,16}$")
_CONDITIONS = ("sunny", "cloudy", "light rain", "overcast", "windy", "haze")


class EnvironmentStatus(BaseModel):
    area_code: str
    aqi: int
    air_quality: str
    pm25_ugm3: float
    temperature_c: float
    humidity_pct: int
    conditions: str
    advice: str


def _aqi_label(aqi: int) -> tuple[str, str]:
    if aqi <= 50:
        return "good", "Air is clean; outdoor activity is fine."
    if aqi <= 100:
        return "moderate", "Acceptable; very sensitive people may limit long outdoor effort."
    if aqi <= 150:
        return "unhealthy for sensitive groups", "Sensitive groups should reduce outdoor activity."
    return "unhealthy", "Everyone should limit outdoor activity; consider a mask."


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False))
def get_environment_status(area_code: str) -> EnvironmentStatus:
    """Use this when the user asks about the weather, the air or the environmental health of an area.

    Returns the current status for one area: AQI (0-500) with a label, PM2.5 in µg/m³, temperature
    in °C, relative humidity in %, a short conditions text and health advice.

    Args:
        area_code: The area's code: 1-16 letters, digits or '-', e.g. "A1001" or "BJ-CY".
    """
    if not _AREA_RE.match(area_code):
        raise ToolError(f"invalid area_code {area_code!r}: use 1-16 letters, digits or '-', e.g. A1001")
    seed = hashlib.sha256(area_code.upper().encode()).digest()
    aqi = 15 + seed[0] % 170
    label, advice = _aqi_label(aqi)
    return EnvironmentStatus(
        area_code=area_code.upper(),
        aqi=aqi,
        air_quality=label,
        pm25_ugm3=round(aqi * 0.42 + seed[1] % 10 / 10, 1),
        temperature_c=round(-5 + seed[2] % 400 / 10, 1),
        humidity_pct=20 + seed[3] % 70,
        conditions=_CONDITIONS[seed[4] % len(_CONDITIONS)],
        advice=advice,
    )


if __name__ == "__main__":
    run(server)

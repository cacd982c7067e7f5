"""geo_simulator: a simulated position near given coordinates (004 §3.1), bounds checked (§8.3)."""

from __future__ import annotations

import hashlib
import math

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

from demo.servers._cli import run

server = MCPServer("geo_simulator", version="1.0.0", instructions="Simulated geolocation for demos.")

MAX_RADIUS_M = 50_000.0
_EARTH_M_PER_DEG = 111_320.0


class SimulatedLocation(BaseModel):
    lat: float
    lng: float
    accuracy_m: float
    distance_from_center_m: float
    source: str = "simulated"


def _check(lat: float, lng: float, radius: float) -> None:
    # 004 §8.3: lat=999 once produced a "weird point" that the model then explained with confidence.
    problems = []
    if not (math.isfinite(lat) and -90.0 <= lat <= 90.0):
        problems.append(f"lat {lat} is outside -90..90")
    if not (math.isfinite(lng) and -180.0 <= lng <= 180.0):
        problems.append(f"lng {lng} is outside -180..180")
    if not (math.isfinite(radius) and 0 < radius <= MAX_RADIUS_M):
        problems.append(f"radius {radius} must be > 0 and <= {MAX_RADIUS_M:g} metres")
    if problems:
        raise ToolError("invalid parameters: " + "; ".join(problems))


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False))
def simulate_geolocation(lat: float, lng: float, radius: float = 100) -> SimulatedLocation:
    """Simulate a device position near a centre point, for testing location features (not a real fix).

    The same inputs always give the same point, within `radius` metres of the centre.
    Out-of-range values are rejected with an error instead of producing a meaningless point.

    Args:
        lat: Latitude of the centre in decimal degrees, -90 to 90 (e.g. 39.9042).
        lng: Longitude of the centre in decimal degrees, -180 to 180 (e.g. 116.4074).
        radius: Maximum distance from the centre in metres, >0 and at most 50000. Default 100.
    """
    _check(lat, lng, radius)
    seed = hashlib.sha256(f"{lat:.6f},{lng:.6f},{radius:.1f}".encode()).digest()
    distance = radius * (seed[0] / 255) * 0.9
    bearing = math.radians(seed[1] / 255 * 360)
    dlat = distance * math.cos(bearing) / _EARTH_M_PER_DEG
    dlng = distance * math.sin(bearing) / (_EARTH_M_PER_DEG * max(math.cos(math.radians(lat)), 1e-6))
    return SimulatedLocation(
        lat=round(max(-90.0, min(90.0, lat + dlat)), 6),
        lng=round(((lng + dlng + 180.0) % 360.0) - 180.0, 6),
        accuracy_m=round(5 + seed[2] % 30, 1),
        distance_from_center_m=round(distance, 1),
    )


if __name__ == "__main__":
    run(server)

"""Image attachments for vision models: checked against the model's capabilities, scaled down with
Pillow to the provider's documented size, sent as a base64 ``MediaPart`` of the user message.

Limits (docs/conversations.md has the sources): Anthropic scales down images whose long edge passes
1568 px and takes at most 5 MB per image; OpenAI fits "high" detail images into 2048 × 2048. Every
image is also kept under ``MAX_IMAGE_BYTES`` (5 MB, the smaller of the two) by re-encoding as JPEG.
"""

from __future__ import annotations

import base64
import io

from django.utils.translation import gettext as _
from PIL import Image

from agent.messages import MediaPart
from agent.providers import profiles
from chatapp.models import Conversation, ProviderConfig, Upload
from chatapp.services.errors import MessageRejected
from chatapp.services.workspace_files import FileRefused, open_for_reading

MAX_IMAGE_BYTES = 5 * 1024 * 1024
MIME = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
}


def image_type(upload: Upload) -> str | None:
    ext = upload.name.rsplit(".", 1)[-1].lower() if "." in upload.name else ""
    return MIME.get(ext)


def image_parts(
    convo: Conversation, uploads: list[Upload], provider: ProviderConfig, model: str
) -> tuple[MediaPart, ...]:
    """The attached images as parts for this model, or MessageRejected when it reads no images."""
    images = [(u, image_type(u)) for u in uploads if image_type(u)]
    if not images:
        return ()
    caps = profiles.resolve(provider.preset, model or provider.model, provider.capability_overrides or None)
    refused = [u.name for u, mime in images if mime not in caps.user_image_media]
    if refused:
        raise MessageRejected(
            _(
                "%(model)s reads text only (its capabilities list no image input of this type), so %(files)s "
                "cannot be sent to it. Remove the image from the message (it stays in the workspace), or "
                "pick a model that reads images."
            )
            % {"model": f"{provider} · {model or provider.model}", "files": ", ".join(refused)}
        )
    return tuple(_part(convo, u, caps.image_max_edge) for u, _ in images)


def _part(convo: Conversation, upload: Upload, max_edge: int) -> MediaPart:
    try:
        handle, _, _ = open_for_reading(convo, upload.name)
    except FileRefused as exc:
        raise MessageRejected(
            _("%(name)s can no longer be read: %(error)s") % {"name": upload.name, "error": exc}
        ) from None
    with handle, Image.open(handle) as image:
        image.seek(0)  # an animated GIF is sent as its first frame ("not animated", both providers)
        fmt = image.format if image.format in ("PNG", "JPEG", "WEBP") else "PNG"
        frame = image.convert("RGBA" if fmt == "PNG" and image.mode in ("RGBA", "LA", "P") else "RGB")
        if max(frame.size) > max_edge:
            frame.thumbnail((max_edge, max_edge), Image.Resampling.LANCZOS)
        data, fmt = _encode(frame, fmt)
    mime = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}[fmt]
    return MediaPart(kind="image", mime_type=mime, data=base64.b64encode(data).decode("ascii"))


def _encode(frame: Image.Image, fmt: str) -> tuple[bytes, str]:
    out = io.BytesIO()
    frame.save(out, fmt, **({"quality": 85} if fmt in ("JPEG", "WEBP") else {}))
    while out.tell() > MAX_IMAGE_BYTES:
        # Too large even at the edge limit: JPEG at decreasing sizes until it fits.
        frame = frame.convert("RGB")
        frame.thumbnail((int(frame.width * 0.8), int(frame.height * 0.8)), Image.Resampling.LANCZOS)
        out = io.BytesIO()
        frame.save(out, "JPEG", quality=80)
        fmt = "JPEG"
    return out.getvalue(), fmt

"""Images to vision models (capability-driven, scaled to the provider's limit, refused for text-only
models) and PDF/Word text for the file tools."""

from __future__ import annotations

import base64
import io

import docx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from PIL import Image

from agent.messages import MediaPart, Message
from agent.providers import profiles
from agent.providers.anthropic_request import convert_messages
from agent.providers.openai_chat_request import convert_message as chat_message
from agent.providers.openai_responses_request import convert_message as responses_message
from chatapp.models import Conversation, ProviderConfig, Run
from chatapp.workspaces import workspace_path

PIXEL = MediaPart(kind="image", mime_type="image/png", data=base64.b64encode(b"\x89PNG fake").decode())


def test_openai_chat_sends_an_image_url_data_url():
    caps = profiles.resolve("openai", "gpt-4o")
    body = chat_message(Message(role="user", content="what is this?", media=(PIXEL,)), caps)
    assert body["content"][0] == {"type": "text", "text": "what is this?"}
    assert body["content"][1]["image_url"]["url"] == f"data:image/png;base64,{PIXEL.data}"


def test_responses_sends_input_image():
    caps = profiles.resolve("openai_responses", "gpt-4o")
    [item] = responses_message(Message(role="user", content="what is this?", media=(PIXEL,)), caps)
    assert item["content"][0] == {"type": "input_text", "text": "what is this?"}
    assert item["content"][1]["type"] == "input_image"
    assert item["content"][1]["image_url"].startswith("data:image/png;base64,")


def test_anthropic_sends_an_image_block_before_the_text():
    caps = profiles.resolve("anthropic", "claude-sonnet-4-5")
    _, [user] = convert_messages((Message(role="user", content="what is this?", media=(PIXEL,)),), caps)
    assert user["content"][0] == {"type": "image",
                                  "source": {"type": "base64", "media_type": "image/png", "data": PIXEL.data}}
    assert user["content"][1] == {"type": "text", "text": "what is this?"}


def test_a_text_only_preset_sends_text_only():
    caps = profiles.resolve("deepseek", "deepseek-chat")
    assert chat_message(Message(role="user", content="hi", media=(PIXEL,)), caps)["content"] == "hi"


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), "navy").save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def alice(cast, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path / "workspaces"
    client = Client()
    client.force_login(cast["alice"])
    return client


def provider(name: str, preset: str, overrides: dict | None = None) -> ProviderConfig:
    return ProviderConfig.objects.create(name=name, kind="openai_chat", preset=preset, base_url="http://127.0.0.1:9/v1",
                                         model="m", capability_overrides=overrides or {})


def send_image(alice, convo, image: bytes):
    file_id = alice.post(f"/c/{convo.pk}/files/upload/", {"file": SimpleUploadedFile("chart.png", image)}).json()
    return alice.post(f"/c/{convo.pk}/send/", {"message": "describe it", "attachment": [file_id["files"][0]["id"]]},
                      HTTP_HX_REQUEST="true")


def test_an_image_for_a_text_only_model_is_refused_with_the_reason(alice, cast):
    convo = Conversation.objects.create(owner=cast["alice"], provider=provider("local", "vllm"))
    response = send_image(alice, convo, png(10, 10))
    assert response.status_code == 422
    assert "reads text only" in response.content.decode() and "chart.png" in response.content.decode()
    assert not Run.objects.exists()
    assert (workspace_path(convo.owner_id, convo.pk) / "chart.png").exists()  # the file stays


def test_an_image_for_a_vision_model_is_scaled_to_its_limit(alice, cast):
    vision = provider("vision", "vllm", {"user_image_media": ["image/png", "image/jpeg"], "image_max_edge": 1568})
    convo = Conversation.objects.create(owner=cast["alice"], provider=vision)
    response = send_image(alice, convo, png(4000, 1000))
    assert response.status_code == 200, response.content
    run = Run.objects.get()
    [media] = run.user_message.payload["media"]
    sent = Image.open(io.BytesIO(base64.b64decode(media["data"])))
    assert media["mime_type"] == "image/png" and sent.size == (1568, 392)
    stored = Image.open(workspace_path(convo.owner_id, convo.pk) / "chart.png")
    assert stored.size == (4000, 1000)  # the workspace keeps the original


def minimal_pdf(text: str) -> bytes:
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            None, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    stream = b"BT /F1 18 Tf 20 100 Td (" + text.encode() + b") Tj ET"
    objs[3] = b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream"
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def test_a_pdf_gets_its_text_beside_it(alice, cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    body = alice.post(f"/c/{convo.pk}/files/upload/",
                      {"file": SimpleUploadedFile("report.pdf", minimal_pdf("Quarterly revenue 42"))}).json()
    assert [f["name"] for f in body["files"]] == ["report.pdf", "report.pdf.txt"] and body["warnings"] == []
    text = (workspace_path(convo.owner_id, convo.pk) / "report.pdf.txt").read_text()
    assert "Quarterly revenue 42" in text


def test_a_docx_gets_its_text_beside_it(alice, cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    document = docx.Document()
    document.add_paragraph("Minutes of the meeting")
    document.add_table(rows=1, cols=2).rows[0].cells[0].text = "north"
    out = io.BytesIO()
    document.save(out)
    alice.post(f"/c/{convo.pk}/files/upload/", {"file": SimpleUploadedFile("minutes.docx", out.getvalue())})
    text = (workspace_path(convo.owner_id, convo.pk) / "minutes.docx.txt").read_text()
    assert "Minutes of the meeting" in text and "north" in text


def test_an_xlsx_gets_its_cells_as_text_beside_it(alice, cast):
    from openpyxl import Workbook

    convo = Conversation.objects.create(owner=cast["alice"])
    book = Workbook()
    sheet = book.active
    sheet.title = "Sales"
    sheet.append(["region", "amount"])
    sheet.append(["north", 42])
    out = io.BytesIO()
    book.save(out)
    alice.post(f"/c/{convo.pk}/files/upload/", {"file": SimpleUploadedFile("sales.xlsx", out.getvalue())})
    text = (workspace_path(convo.owner_id, convo.pk) / "sales.xlsx.txt").read_text()
    assert "--- sheet Sales ---" in text and "region\tamount" in text and "north\t42" in text


def test_a_pptx_gets_its_slide_text_beside_it(alice, cast):
    from pptx import Presentation
    from pptx.util import Inches

    convo = Conversation.objects.create(owner=cast["alice"])
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    slide.shapes.title.text = "Roadmap 2027"
    table = slide.shapes.add_table(1, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    table.cell(0, 0).text, table.cell(0, 1).text = "Q1", "launch"
    out = io.BytesIO()
    deck.save(out)
    alice.post(f"/c/{convo.pk}/files/upload/", {"file": SimpleUploadedFile("plan.pptx", out.getvalue())})
    text = (workspace_path(convo.owner_id, convo.pk) / "plan.pptx.txt").read_text()
    assert "--- slide 1 ---" in text and "Roadmap 2027" in text and "Q1 | launch" in text


def test_a_pdf_that_fails_to_parse_is_kept_with_a_warning(alice, cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    body = alice.post(f"/c/{convo.pk}/files/upload/",
                      {"file": SimpleUploadedFile("broken.pdf", b"%PDF-1.4 this is not a pdf")}).json()
    assert [f["name"] for f in body["files"]] == ["broken.pdf"]
    assert "could not be extracted" in body["warnings"][0]
    assert (workspace_path(convo.owner_id, convo.pk) / "broken.pdf").read_bytes() == b"%PDF-1.4 this is not a pdf"


def test_the_audit_view_of_a_request_shows_images_by_size():
    from chatapp.redaction import shown

    request = {"messages": [{"role": "user", "content": "look", "media": [PIXEL.to_dict()]}]}
    [message] = shown(request)["messages"]
    assert message["media"] == [{"kind": "image", "mime_type": "image/png", "bytes": PIXEL.size}]
    assert PIXEL.data not in str(shown(request))


@pytest.mark.parametrize(
    ("preset", "model", "edge"),
    [("openai", "gpt-4o", 2048), ("openai_responses", "gpt-4o", 2048), ("anthropic", "claude-sonnet-4-5", 1568)],
)
def test_the_vision_presets_take_images_up_to_their_documented_edge(preset, model, edge):
    caps = profiles.resolve(preset, model)
    assert set(caps.user_image_media) == {"image/png", "image/jpeg", "image/gif", "image/webp"}
    assert caps.image_max_edge == edge


def test_an_image_too_heavy_even_at_the_edge_is_sent_as_jpeg_under_5_mb(alice, cast):
    import os

    from chatapp.models import Upload
    from chatapp.services.images import MAX_IMAGE_BYTES, image_parts

    convo = Conversation.objects.create(owner=cast["alice"])
    folder = workspace_path(convo.owner_id, convo.pk)
    folder.mkdir(parents=True)
    Image.frombytes("RGB", (2600, 2600), os.urandom(2600 * 2600 * 3)).save(folder / "noise.png", "PNG")
    assert (folder / "noise.png").stat().st_size > MAX_IMAGE_BYTES  # noise does not compress
    upload = Upload.objects.create(conversation=convo, uploaded_by=cast["alice"], name="noise.png", size=1)
    [part] = image_parts(convo, [upload], provider("openai", "openai"), "gpt-4o")
    sent = Image.open(io.BytesIO(base64.b64decode(part.data)))
    assert part.mime_type == "image/jpeg" and sent.format == "JPEG"
    assert max(sent.size) <= 2048 and part.size <= MAX_IMAGE_BYTES

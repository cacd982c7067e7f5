"""Uploads: safe names, limits with reasons, nothing already stored lost, audit, attached to the message."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from PIL import Image

from chatapp.models import AuditEvent, Conversation, Message, Upload
from chatapp.services.uploads import normalise_name
from chatapp.workspaces import workspace_path


@pytest.fixture
def root(settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path / "workspaces"
    return tmp_path


@pytest.fixture
def convo(cast, root):
    return Conversation.objects.create(owner=cast["alice"], title="files")


@pytest.fixture
def alice(cast):
    client = Client()
    client.force_login(cast["alice"])
    return client


def upload(client, convo, *files):
    return client.post(f"/c/{convo.pk}/files/upload/", {"file": list(files)})


def png_bytes() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(out, "PNG")
    return out.getvalue()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("../../etc/passwd.txt", "passwd.txt"),
        ("/etc/hosts.csv", "hosts.csv"),
        ("C:\\Users\\me\\report.md", "report.md"),
        ("..\\..\\boot.ini.txt", "boot.ini.txt"),
        ("a\x00b.txt", "ab.txt"),
        ("new\nline\r.txt", "newline.txt"),
        ("\u202egnp.txt", "gnp.txt"),  # a right-to-left override cannot disguise the extension
        (".hidden.md", "hidden.md"),
        ("..", "upload"),
        ("", "upload"),
        ("  report.md  ", "report.md"),
    ],
)
def test_names_are_one_safe_segment(raw, expected):
    assert normalise_name(raw) == expected


def test_a_300_character_name_is_shortened_keeping_its_extension():
    name = normalise_name("x" * 300 + ".csv")
    assert name.endswith(".csv") and len(name.encode()) <= 180
    chinese = normalise_name("数" * 300 + ".md")
    assert chinese.endswith(".md") and len(chinese.encode()) <= 180
    chinese.encode().decode("utf-8")  # never cut inside a character


def test_upload_stores_the_bytes_records_it_and_renames_a_second_copy(alice, convo, cast):
    first = upload(alice, convo, SimpleUploadedFile("../sales.csv", b"region,total\nnorth,3\n"))
    assert first.status_code == 200, first.content
    again = upload(alice, convo, SimpleUploadedFile("sales.csv", b"other"))
    names = [f["name"] for f in first.json()["files"] + again.json()["files"]]
    assert names == ["sales.csv", "sales (2).csv"]
    folder = workspace_path(convo.owner_id, convo.pk)
    assert (folder / "sales.csv").read_bytes() == b"region,total\nnorth,3\n"  # the first is never overwritten
    assert (folder / "sales (2).csv").read_bytes() == b"other"
    assert sorted(p.name for p in folder.iterdir()) == ["sales (2).csv", "sales.csv"]  # no temp file left
    events = AuditEvent.objects.filter(kind="file_uploaded").order_by("seq")
    assert [e.payload["name"] for e in events] == names and events[0].actor == "alice"
    assert events[0].payload["original_name"] == "sales.csv"  # Django drops the directory part too


def test_several_files_at_once_and_they_are_attached_to_the_next_message(alice, convo, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    body = upload(alice, convo, SimpleUploadedFile("a.txt", b"aaa"), SimpleUploadedFile("b.md", b"# b")).json()
    ids = [f["id"] for f in body["files"]]
    response = alice.post(f"/c/{convo.pk}/send/", {"message": "analyse these", "attachment": ids},
                          HTTP_HX_REQUEST="true")
    assert response.status_code == 200, response.content
    message = Message.objects.get(conversation=convo, role="user")
    assert message.content == "analyse these"  # what the user typed, shown as typed
    assert set(message.uploads.values_list("name", flat=True)) == {"a.txt", "b.md"}
    model_text = message.payload["content"]
    assert "analyse these" in model_text and "a.txt (3 bytes)" in model_text and "b.md" in model_text
    assert "a.txt" in response.content.decode()  # the chips under the user's message


def test_an_attachment_of_another_conversation_is_refused(alice, convo, cast):
    other = Conversation.objects.create(owner=cast["alice"])
    file_id = upload(alice, other, SimpleUploadedFile("a.txt", b"x")).json()["files"][0]["id"]
    response = alice.post(f"/c/{convo.pk}/send/", {"message": "hi", "attachment": [file_id]},
                          HTTP_HX_REQUEST="true")
    assert response.status_code == 422 and "no longer available" in response.content.decode()
    assert not Message.objects.filter(conversation=convo).exists()


@pytest.mark.parametrize(
    ("name", "content", "status", "reason"),
    [
        ("tool.exe", b"MZ", 415, ".exe files are not accepted"),
        ("photo.png", b"not an image at all", 422, "not a readable image"),
        ("photo.jpg", None, 422, "holds PNG"),
    ],
)
def test_refusals_say_why_and_store_nothing(alice, convo, name, content, status, reason):
    response = upload(alice, convo, SimpleUploadedFile(name, content if content is not None else png_bytes()))
    assert response.status_code == status
    assert reason in response.json()["error"]
    assert not Upload.objects.exists()
    assert not AuditEvent.objects.filter(kind="file_uploaded").exists()


def test_a_real_image_is_accepted(alice, convo):
    assert upload(alice, convo, SimpleUploadedFile("photo.png", png_bytes())).status_code == 200


def test_size_limits_come_from_settings(alice, convo, settings):
    settings.UPLOAD_MAX_BYTES = 10
    response = upload(alice, convo, SimpleUploadedFile("big.txt", b"x" * 11))
    assert response.status_code == 413 and "limit per file is 10 bytes" in response.json()["error"]
    settings.UPLOAD_MAX_BYTES = 100
    settings.WORKSPACE_MAX_BYTES = 15
    assert upload(alice, convo, SimpleUploadedFile("a.txt", b"x" * 10)).status_code == 200
    response = upload(alice, convo, SimpleUploadedFile("b.txt", b"x" * 10))
    assert response.status_code == 413 and "limit is 15 bytes (in use: 10)" in response.json()["error"]
    assert Upload.objects.count() == 1


def test_a_batch_with_one_bad_file_stores_none(alice, convo):
    response = upload(alice, convo, SimpleUploadedFile("ok.txt", b"fine"), SimpleUploadedFile("bad.exe", b"MZ"))
    assert response.status_code == 415
    assert not Upload.objects.exists()
    assert not workspace_path(convo.owner_id, convo.pk).joinpath("ok.txt").exists()


def test_a_zip_bomb_disguised_as_docx_is_refused(alice, convo):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * (50 * 1024 * 1024))
    response = upload(alice, convo, SimpleUploadedFile("bomb.docx", out.getvalue()))
    assert response.status_code == 413 and "zip bomb" in response.json()["error"]


def test_only_the_owner_uploads(cast, convo):
    for user in ("bob", "otto"):
        client = Client()
        client.force_login(cast[user])
        assert upload(client, convo, SimpleUploadedFile("a.txt", b"x")).status_code in (403, 404)
    assert not Upload.objects.exists()


def test_an_upload_keeps_the_template_files_of_a_new_workspace(alice, convo, settings):
    template = settings.WORKSPACE_ROOT / f"user-{convo.owner_id}" / "template"
    template.mkdir(parents=True)
    (template / "config.yaml").write_text("a: 1\n")
    upload(alice, convo, SimpleUploadedFile("a.txt", b"x"))
    folder = workspace_path(convo.owner_id, convo.pk)
    assert (folder / "config.yaml").exists() and (folder / "a.txt").exists()


def multipart(filename: bytes, content: bytes) -> tuple[bytes, str]:
    boundary = "clearloopboundary"
    body = (
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"".encode()
        + filename
        + b"\"\r\nContent-Type: text/plain\r\n\r\n"
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize(
    ("filename", "stored"),
    [
        (b"../../../outside.txt", "outside.txt"),
        (b"/etc/outside.txt", "outside.txt"),
        (b"..\\..\\outside.txt", "outside.txt"),
        (b"C:\\Windows\\outside.txt", "outside.txt"),
        (b"out\x00side.txt", "outside.txt"),
        (b"out\x1b[31mside\x07.txt", "out[31mside.txt"),
        (b"x" * 300 + b".txt", "x" * 176 + ".txt"),
    ],
)
def test_path_tricks_in_a_real_multipart_upload_stay_inside_the_workspace(alice, convo, root, filename, stored):
    body, content_type = multipart(filename, b"payload")
    response = alice.generic("POST", f"/c/{convo.pk}/files/upload/", body, content_type=content_type)
    assert response.status_code == 200, response.content
    assert [f["name"] for f in response.json()["files"]] == [stored]
    folder = workspace_path(convo.owner_id, convo.pk)
    assert (folder / stored).read_bytes() == b"payload"
    written = [p for p in root.rglob("*") if p.is_file()]
    assert written == [folder / stored]  # nothing anywhere else under the data folder


def test_an_upload_never_writes_through_a_link_in_the_workspace(alice, convo, root):
    outside = root / "outside.txt"
    outside.write_text("keep me")
    folder = workspace_path(convo.owner_id, convo.pk)
    folder.mkdir(parents=True)
    (folder / "notes.txt").symlink_to(outside)
    response = upload(alice, convo, SimpleUploadedFile("notes.txt", b"new"))
    assert [f["name"] for f in response.json()["files"]] == ["notes (2).txt"]
    assert outside.read_text() == "keep me" and (folder / "notes (2).txt").read_bytes() == b"new"


def test_a_decompression_bomb_image_is_refused(alice, convo):
    # 12,000 x 12,000 pixels of one colour: a few hundred KB as PNG, 432 MB once decoded to scale it.
    out = io.BytesIO()
    Image.new("1", (12_000, 12_000)).save(out, "PNG")
    assert len(out.getvalue()) < 1_000_000
    response = upload(alice, convo, SimpleUploadedFile("huge.png", out.getvalue()))
    assert response.status_code == 413
    assert "12,000 × 12,000 pixels" in response.json()["error"]
    assert not Upload.objects.exists()

"""The workspace files panel: who may see which file, and that nothing outside the workspace is reached."""

from __future__ import annotations

import io
import os
import zipfile

import pytest
from django.test import Client

from chatapp.models import AuditEvent, Conversation, Message, Run, ToolCall, Upload
from chatapp.workspaces import workspace_path


@pytest.fixture
def root(settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path / "workspaces"
    return tmp_path


@pytest.fixture
def convo(cast, root):
    return Conversation.objects.create(owner=cast["alice"], title="files")


@pytest.fixture
def workspace(convo):
    path = workspace_path(convo.owner_id, convo.pk)
    path.mkdir(parents=True)
    (path / "report.md").write_text("# Report\n\n<script>alert(1)</script>**bold**\n", encoding="utf-8")
    (path / "data").mkdir()
    (path / "data" / "numbers.csv").write_bytes(b"a,b\n1,2\n")
    return path


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_panel_lists_files_with_who_wrote_them(cast, convo, workspace):
    question = Message.objects.create(conversation=convo, role="user", content="write it")
    run = Run.objects.create(conversation=convo, user_message=question, provider_name="demo", model="m")
    ToolCall.objects.create(run=run, round_index=0, index=0, call_id="c1", name="write_file",
                            arguments='{"path": "report.md", "content": "x"}', status="succeeded")
    html = client_for(cast["alice"]).get(f"/c/{convo.pk}/files/").content.decode()
    assert "report.md" in html and "data/numbers.csv" in html
    assert "write_file in the answer to “write it”" in html  # the question, not a database id
    assert "was there from the start" in html  # numbers.csv: nobody in this conversation wrote it


def test_download_returns_the_exact_bytes_as_an_attachment(cast, convo, workspace):
    response = client_for(cast["alice"]).get(f"/c/{convo.pk}/files/download/data/numbers.csv")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"a,b\n1,2\n"
    assert response["Content-Disposition"].startswith('attachment; filename="numbers.csv"')
    assert response["X-Content-Type-Options"] == "nosniff"


def test_another_users_file_is_a_404_and_an_auditor_may_read(cast, convo, workspace):
    assert client_for(cast["bob"]).get(f"/c/{convo.pk}/files/download/report.md").status_code == 404
    assert client_for(cast["bob"]).get(f"/c/{convo.pk}/files/").status_code == 404
    assert client_for(cast["bob"]).get(f"/c/{convo.pk}/files.zip").status_code == 404
    assert client_for(cast["otto"]).get(f"/c/{convo.pk}/files/download/report.md").status_code == 200
    # Auditors read; they never delete.
    response = client_for(cast["otto"]).post(f"/c/{convo.pk}/files/delete/", {"path": "report.md"})
    assert response.status_code in (403, 404)
    assert (workspace / "report.md").exists()


@pytest.mark.parametrize(
    "path",
    ["../secret.txt", "data/../../secret.txt", "%2e%2e/secret.txt", "link.txt", "hard.txt", "data\\numbers.csv",
     "/etc/passwd", "linkdir/x.txt", "report.md%00", "data%5c..%5c..%5csecret.txt", "%2fetc%2fpasswd"],
)
def test_nothing_outside_the_workspace_is_read(cast, convo, workspace, root, path):
    secret = root / "secret.txt"
    secret.write_text("top secret")
    (workspace / "link.txt").symlink_to(secret)
    os.link(secret, workspace / "hard.txt")
    (workspace / "linkdir").symlink_to(root)
    (root / "x.txt").write_text("outside")
    client = client_for(cast["alice"])
    for view in ("download", "view"):
        response = client.get(f"/c/{convo.pk}/files/{view}/{path}")
        assert response.status_code == 404, (view, path)
        assert b"top secret" not in response.content and b"outside" not in response.content
    names = zipfile.ZipFile(io.BytesIO(b"".join(client.get(f"/c/{convo.pk}/files.zip").streaming_content)))
    assert sorted(names.namelist()) == ["data/numbers.csv", "report.md"]  # links are never followed
    client.post(f"/c/{convo.pk}/files/delete/", {"path": path})
    assert secret.read_text() == "top secret" and (root / "x.txt").exists()


def test_the_zip_holds_every_file_byte_for_byte_and_streams(cast, convo, workspace):
    (workspace / "big.bin").write_bytes(os.urandom(300_000))
    response = client_for(cast["alice"]).get(f"/c/{convo.pk}/files.zip")
    assert response.streaming  # produced piece by piece, never built whole in memory
    chunks = list(response.streaming_content)
    assert len(chunks) > 3
    archive = zipfile.ZipFile(io.BytesIO(b"".join(chunks)))
    assert archive.testzip() is None
    for name in ("report.md", "data/numbers.csv", "big.bin"):
        assert archive.read(name) == (workspace / name).read_bytes()


def test_markdown_preview_goes_through_the_sanitiser(cast, convo, workspace):
    html = client_for(cast["alice"]).get(f"/c/{convo.pk}/files/view/report.md").content.decode()
    assert "<strong>bold</strong>" in html
    assert "<script>alert(1)</script>" not in html


def test_code_is_highlighted_and_escaped(cast, convo, workspace):
    (workspace / "x.py").write_text("print('<b>hi</b>')\n")
    html = client_for(cast["alice"]).get(f"/c/{convo.pk}/files/view/x.py").content.decode()
    assert 'class="codehilite"' in html and "&lt;b&gt;" in html and "<b>hi</b>" not in html


def test_an_svg_is_never_served_inline(cast, convo, workspace):
    (workspace / "x.svg").write_text("<svg onload='alert(1)'/>")
    assert client_for(cast["alice"]).get(f"/c/{convo.pk}/files/raw/x.svg").status_code == 404


def test_delete_is_the_owners_recorded_action(cast, convo, workspace):
    response = client_for(cast["alice"]).post(f"/c/{convo.pk}/files/delete/", {"path": "report.md"})
    assert response.status_code == 200
    assert not (workspace / "report.md").exists()
    event = AuditEvent.objects.get(kind="file_deleted")
    assert event.actor == "alice" and event.payload["path"] == "report.md" and len(event.payload["sha256"]) == 64
    assert client_for(cast["bob"]).post(f"/c/{convo.pk}/files/delete/", {"path": "data/numbers.csv"}).status_code == 404
    assert (workspace / "data" / "numbers.csv").exists()


def test_the_write_file_trace_row_links_the_file(cast, convo, workspace):
    question = Message.objects.create(conversation=convo, role="user", content="write it")
    run = Run.objects.create(conversation=convo, user_message=question, provider_name="demo", model="m",
                             status="succeeded")
    question.run = run
    question.save()
    ToolCall.objects.create(run=run, round_index=0, index=0, call_id="c1", name="write_file",
                            arguments='{"path": "./report.md", "content": "x"}', status="succeeded")
    ToolCall.objects.create(run=run, round_index=0, index=1, call_id="c2", name="write_file",
                            arguments='{"path": "../evil.md", "content": "x"}', status="failed")
    html = client_for(cast["alice"]).get(f"/c/{convo.pk}/").content.decode()
    assert f'href="/c/{convo.pk}/files/download/report.md"' in html
    assert f'href="/c/{convo.pk}/files/view/report.md"' in html
    assert "evil.md</span>" not in html and "files/download/../" not in html
    assert not Upload.objects.exists()


def asgi_get(user, path: str, on_first_piece, headers=()) -> tuple[dict, list[bytes]]:
    """GET ``path`` through the app's ASGI handler (what daphne runs), as ``user``. ``on_first_piece``
    is called when the first piece of the body is handed to the server; returns the start message and
    every body piece, in order. The request runs in a thread of its own, so the test's rows must be
    committed (``transactional_db``)."""
    from asgiref.sync import async_to_sync

    from chatapp.asgi_handler import OneHopASGIHandler
    from tests.web.asgi_calls import call, scope_for

    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    scope = scope_for(path, headers=[(b"cookie", cookie), *headers])
    answer = async_to_sync(call)(OneHopASGIHandler(), scope, on_first_piece=on_first_piece)
    return {"status": answer.status, "headers": list(answer.headers.items())}, answer.pieces


def test_under_asgi_the_zip_is_sent_while_it_is_made(transactional_db, cast, convo, workspace):
    # Django collects a synchronous iterator into a list before serving it under ASGI. The zip must not
    # be: the first piece goes out before the last file is even opened, so a change made to that file
    # once the first piece was sent is in the archive.
    last = workspace / "data" / "numbers.csv"  # the walk takes folders after the files beside them

    def change_the_last_file():
        last.write_bytes(b"changed after the first piece was sent\n")

    start, pieces = asgi_get(cast["alice"], f"/c/{convo.pk}/files.zip", change_the_last_file)
    assert start["status"] == 200 and len(pieces) > 1
    archive = zipfile.ZipFile(io.BytesIO(b"".join(pieces)))
    assert archive.read("data/numbers.csv") == b"changed after the first piece was sent\n"
    assert archive.read("report.md") == (workspace / "report.md").read_bytes()


@pytest.mark.parametrize("url", ["/c/{pk}/files/download/big.bin", "/api/conversations/{pk}/files/big.bin"])
def test_under_asgi_a_download_is_read_while_it_is_sent(transactional_db, cast, convo, workspace, url):
    big = workspace / "big.bin"
    data = os.urandom(1_000_000)
    big.write_bytes(data)

    def overwrite_the_tail():
        with big.open("r+b") as handle:
            handle.seek(len(data) - 5)
            handle.write(b"AFTER")

    from chatapp.services import api_keys

    key = api_keys.create_key(cast["alice"], "laptop", "chat").secret
    headers = [(b"authorization", f"Bearer {key}".encode())] if url.startswith("/api/") else []
    start, pieces = asgi_get(cast["alice"], url.format(pk=convo.pk), overwrite_the_tail, headers)
    assert start["status"] == 200 and (b"Content-Length", b"1000000") in start["headers"]
    body = b"".join(pieces)
    assert len(pieces) > 1 and len(pieces[0]) <= 64 * 1024
    assert body == data[:-5] + b"AFTER"  # the end was read after the first piece had gone out


def test_the_panel_shows_size_and_modification_time(cast, convo, workspace):
    os.utime(workspace / "report.md", (1_700_000_000, 1_700_000_000))  # 2023-11-14T22:13:20Z
    html = client_for(cast["alice"]).get(f"/c/{convo.pk}/files/").content.decode()
    row = html[html.index('data-file="report.md"'):]
    row = row[: row.index("</tr>")]
    size = (workspace / "report.md").stat().st_size
    assert f">{size}\xa0bytes<" in row  # filesizeformat
    assert 'datetime="2023-11-14T22:13:20+00:00"' in row


def test_an_image_is_shown_and_other_binaries_are_offered_as_a_download(cast, convo, workspace):
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (2, 2), "red").save(out, "PNG")
    (workspace / "chart.png").write_bytes(out.getvalue())
    (workspace / "blob.bin").write_bytes(b"\x00\x01binary\x00" * 10)
    client = client_for(cast["alice"])
    html = client.get(f"/c/{convo.pk}/files/view/chart.png").content.decode()
    assert f'<img class="image-preview" data-role="preview" src="/c/{convo.pk}/files/raw/chart.png"' in html
    raw = client.get(f"/c/{convo.pk}/files/raw/chart.png")
    assert raw["Content-Type"] == "image/png" and b"".join(raw.streaming_content) == out.getvalue()
    assert raw["X-Content-Type-Options"] == "nosniff" and "sandbox" in raw["Content-Security-Policy"]
    html = client.get(f"/c/{convo.pk}/files/view/blob.bin").content.decode()
    assert "cannot be shown here" in html and "binary\x00" not in html
    assert f'href="/c/{convo.pk}/files/download/blob.bin"' in html
    assert client.get(f"/c/{convo.pk}/files/raw/blob.bin").status_code == 404  # never inline

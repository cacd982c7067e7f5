"""The file tools' normal behaviour, limits and result shapes."""

from pathlib import Path

from agent.toolbox import ToolContext
from agent.tools import CombinedToolbox, DuplicateToolError, WorkspaceToolbox


async def test_read_file_returns_window_and_total(toolbox, ctx, sandbox):
    (sandbox["ws"] / "many.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = await toolbox.execute("read_file", {"path": "many.txt", "offset": 3, "limit": 4}, ctx)
    assert out.ok
    assert out.content["content"] == "line 3\nline 4\nline 5\nline 6"
    assert out.content["total_lines"] == 10
    assert out.content["next_offset"] == 7
    last = await toolbox.execute("read_file", {"path": "many.txt", "offset": 9}, ctx)
    assert last.content["content"] == "line 9\nline 10" and last.content["next_offset"] is None


async def test_read_missing_file_is_a_clear_error(toolbox, ctx):
    out = await toolbox.execute("read_file", {"path": "nope.yaml"}, ctx)
    assert not out.ok and out.code == "execution_error" and "not found" in out.error


async def test_read_refuses_binary_and_oversized(toolbox, ctx, sandbox):
    (sandbox["ws"] / "bin.dat").write_bytes(b"\x00\x01\x02")
    (sandbox["ws"] / "big.txt").write_text("x" * (70 * 1024))
    assert "binary" in (await toolbox.execute("read_file", {"path": "bin.dat"}, ctx)).error
    assert "cannot be read" in (await toolbox.execute("read_file", {"path": "big.txt"}, ctx)).error


async def test_bad_arguments_are_invalid_arguments(toolbox, ctx):
    out = await toolbox.execute("read_file", {"path": "config.yaml", "limit": 0}, ctx)
    assert out.code == "invalid_arguments"
    out = await toolbox.execute("search_files", {"path": ".", "pattern": "(", "target": "content"}, ctx)
    assert out.code == "invalid_arguments"
    out = await toolbox.execute("no_such_tool", {}, ctx)
    assert out.code == "unknown_tool"


async def test_search_files_by_name_and_content(toolbox, ctx):
    out = await toolbox.execute("search_files", {"path": ".", "pattern": "*.md", "target": "files"}, ctx)
    assert out.ok and sorted(m["path"] for m in out.content["matches"]) == ["docs/a.md", "docs/b.md"]
    assert out.content["count"] == 2
    out = await toolbox.execute(
        "search_files", {"path": "docs", "pattern": "hel+o", "target": "content"}, ctx
    )
    assert out.content["matches"] == [{"path": "docs/a.md", "line": 2, "text": "hello world"}]
    out = await toolbox.execute(
        "search_files", {"path": ".", "pattern": "*", "target": "files", "limit": 1}, ctx
    )
    assert out.content["count"] == 1 and out.content["truncated"] is True


async def test_write_then_append_then_read(toolbox, ctx, sandbox):
    out = await toolbox.execute("write_file", {"path": "out/report.md", "content": "# 报告\n"}, ctx)
    assert out.ok and out.content == {
        "success": True,
        "path": "out/report.md",
        "bytes_written": len("# 报告\n".encode()),
    }
    out = await toolbox.execute("append_file", {"path": "out/report.md", "content": "more\n"}, ctx)
    assert out.ok and out.content["size"] == len("# 报告\nmore\n".encode())
    assert (sandbox["ws"] / "out" / "report.md").read_text() == "# 报告\nmore\n"
    out = await toolbox.execute("write_file", {"path": "out/report.md", "content": "new"}, ctx)
    assert (sandbox["ws"] / "out" / "report.md").read_text() == "new"


async def test_write_size_limit_points_to_append(toolbox, ctx):
    out = await toolbox.execute("write_file", {"path": "big.txt", "content": "y" * 5000}, ctx)
    assert out.code == "invalid_arguments" and "append_file" in out.error


async def test_absolute_path_inside_workspace_is_accepted(toolbox, ctx, sandbox):
    out = await toolbox.execute("read_file", {"path": str(sandbox["ws"] / "config.yaml")}, ctx)
    assert out.ok and out.content["path"] == "config.yaml"


async def test_per_conversation_workspace_from_context(tmp_path: Path):
    box = WorkspaceToolbox(tmp_path)
    a, b = ToolContext(run_key="r1", workspace="conv-a"), ToolContext(run_key="r2", workspace="conv-b")
    await box.execute("write_file", {"path": "note.txt", "content": "A"}, a)
    assert (tmp_path / "conv-a" / "note.txt").read_text() == "A"
    assert not (await box.execute("read_file", {"path": "note.txt"}, b)).ok
    bad = await box.execute("read_file", {"path": "x"}, ToolContext(run_key="r", workspace="../etc"))
    assert bad.code == "invalid_arguments"


async def test_tool_infos_and_risk(toolbox):
    infos = {i.spec.name: i for i in await toolbox.list_tools()}
    assert infos["read_file"].risk == "read_only" and infos["read_file"].idempotent
    assert infos["search_files"].risk == "read_only"
    assert infos["write_file"].risk == "low" and infos["append_file"].risk == "low"
    assert infos["read_file"].spec.parameters["required"] == ["path"]


async def test_combined_toolbox_routes_and_rejects_duplicates(toolbox, ctx, tmp_path):
    combined = CombinedToolbox([toolbox])
    assert len(await combined.list_tools()) == 4
    assert (await combined.execute("read_file", {"path": "config.yaml"}, ctx)).ok
    assert (await combined.execute("nope", {}, ctx)).code == "unknown_tool"
    try:
        await CombinedToolbox([toolbox, WorkspaceToolbox(tmp_path)]).list_tools()
    except DuplicateToolError:
        pass
    else:
        raise AssertionError("duplicate names must be refused")

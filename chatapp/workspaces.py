"""Where a conversation's workspace lives on disk: one home for the worker (file tools) and the views."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings


def workspace_path(owner_id: int, conversation_id: int) -> Path:
    return Path(settings.WORKSPACE_ROOT) / f"user-{owner_id}" / f"conversation-{conversation_id}"


def prepare_workspace(workspace: Path, owner_id: int) -> None:
    """A conversation's workspace starts as a copy of its owner's template folder, if there is one."""
    import shutil

    if workspace.exists():
        return
    template = Path(settings.WORKSPACE_ROOT) / f"user-{owner_id}" / "template"
    if template.is_dir():
        shutil.copytree(template, workspace, symlinks=False)
    else:
        workspace.mkdir(parents=True, exist_ok=True)

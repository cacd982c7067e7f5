"""No Docker engine runs here, so the compose file is checked as data: services, commands, health."""

from __future__ import annotations

from pathlib import Path

import yaml

from chatapp.devstack import LISTEN_BACKLOG

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_it_has_the_production_topology():
    services = compose()["services"]
    assert set(services) == {"postgres", "redis", "migrate", "web", "worker"}
    assert (
        services["web"]["command"][:1] == ["daphne"]
        and "chatapp.asgi:application" in services["web"]["command"]
    )
    # The web's accept queue as the local stack sets it (devstack.LISTEN_BACKLOG), in the image too.
    endpoint = f"tcp:port=8000:interface=0.0.0.0:backlog={LISTEN_BACKLOG}"
    assert services["web"]["command"][1:3] == ["-e", endpoint]
    assert services["web"]["sysctls"]["net.core.somaxconn"] >= LISTEN_BACKLOG  # the kernel's cap
    assert f'CMD ["daphne", "-e", "{endpoint}"' in (ROOT / "Dockerfile").read_text()
    worker = services["worker"]["command"]
    assert worker[:4] == ["celery", "-A", "chatapp", "worker"]
    assert worker[worker.index("--pool") + 1] == "threads"
    assert worker[worker.index("--prefetch-multiplier") + 1] == "1"
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]


def test_every_long_running_service_has_a_healthcheck_and_waits_for_its_dependencies():
    services = compose()["services"]
    for name in ("postgres", "redis", "web", "worker"):
        assert services[name]["healthcheck"]["test"], name
    for name in ("web", "worker"):
        depends = services[name]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy"
        assert depends["redis"]["condition"] == "service_healthy"
        assert depends["migrate"]["condition"] == "service_completed_successfully"


def test_app_services_get_their_database_and_redis_from_the_environment():
    services = compose()["services"]
    for name in ("migrate", "web", "worker"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in env["DATABASE_URL"]
        assert env["REDIS_URL"] == "redis://redis:6379/0"
        assert services[name]["env_file"] == ".env"


def test_env_example_names_every_required_variable():
    example = (ROOT / ".env.example").read_text()
    for name in (
        "SECRET_KEY",
        "DEBUG",
        "ALLOWED_HOSTS",
        "CSRF_TRUSTED_ORIGINS",
        "POSTGRES_PASSWORD",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_MODEL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_MODEL",
    ):
        assert f"{name}=" in example, name


def test_the_dockerfile_builds_from_the_repo_files_it_needs():
    dockerfile = (ROOT / "Dockerfile").read_text()
    for path in ("agent", "chatapp", "templates", "static", "manage.py", "pyproject.toml"):
        assert f"COPY {path}" in dockerfile, path
    assert "python:3.12" in dockerfile

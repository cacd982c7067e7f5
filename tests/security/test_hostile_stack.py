"""Issue 16 reproductions through the real stack: daphne, the Celery worker, a hostile model server and
a hostile MCP server (stdio and Streamable HTTP), driven over HTTP as the outside tester did."""

from __future__ import annotations

import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from agent.mcp.catalogue import exposed_name
from chatapp.models import Conversation, McpServer, ProviderConfig, Round, Run, ToolCall, ToolPolicy
from chatapp.secrets import encrypt
from chatapp.services import approvals
from tests import model_process
from tests.integration.client import LiveClient, session_for
from tests.security import hostile_model

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.live]

HOSTILE_MCP = str(Path(__file__).parent / "servers" / "hostile_mcp.py")
CANARY_KEY = "CANARYKEY-7f3a9c1e5b"
CANARY_ENV = "CANARYENV-4d5e6f7a8b"
CANARY_HDR = "CANARYHDR-9q8w7e6r"
CANARIES = (CANARY_KEY, CANARY_ENV, CANARY_HDR)
TERMINAL = ("succeeded", "failed", "cancelled", "denied")


@pytest.fixture(scope="module")
def hostile_url():
    with hostile_model.serve() as url:
        yield url


@pytest.fixture(scope="module")
def hostile_http():
    """The hostile MCP server over Streamable HTTP, one process shared by the module's tests."""
    with model_process.serve(
        lambda port: [sys.executable, HOSTILE_MCP, "--http", str(port)], path="/mcp", quiet=True
    ) as url:
        yield url


@pytest.fixture
def provider(live_stack, hostile_url):
    return ProviderConfig.objects.create(
        name="hostile",
        base_url=hostile_url,
        model="clearloop-demo",
        preset="demo",
        api_key_encrypted=encrypt(CANARY_KEY),
    )


def hostile_servers(http_url: str | None = None, **kw) -> None:
    McpServer.objects.create(
        name="hostile",
        command=sys.executable,
        args=[HOSTILE_MCP],
        env={"API_TOKEN": CANARY_ENV},
        connect_timeout=20,
        **kw,
    )
    if http_url:
        McpServer.objects.create(
            name="hostilehttp",
            transport="http",
            url=http_url,
            headers={"X-Api-Token": CANARY_HDR},
            connect_timeout=20,
        )
    ToolPolicy.objects.create(pattern="hostile*__*", tier="low", approval="never")


def wait_run(run_id: int, statuses=TERMINAL, timeout: float = 90) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if run.status in statuses:
            return run
        time.sleep(0.05)  # polling the database for a state another process reaches
    raise AssertionError(f"run {run_id} stayed {Run.objects.get(pk=run_id).status}")


def send(client: LiveClient, convo: Conversation, text: str) -> Run:
    answer = client.send(convo.pk, text)
    assert answer.status_code == 200, answer.text[:500]
    return Run.objects.filter(conversation=convo).order_by("-pk").first()


def call(tool_name: str, /, **arguments) -> str:
    return f"[[demo:call {tool_name} {json.dumps(arguments)}]]"


def workspace(convo: Conversation) -> Path:
    path = Path(settings.WORKSPACE_ROOT) / f"user-{convo.owner_id}" / f"conversation-{convo.pk}"
    path.mkdir(parents=True, exist_ok=True)
    return path


# --- H1 -------------------------------------------------------------------------------------------


def test_h1_a_catastrophic_regex_holds_neither_the_run_nor_another_users(cast, provider, live_stack):
    alice, bob = (Conversation.objects.create(owner=cast[n], provider=provider) for n in ("alice", "bob"))
    (workspace(alice) / "evil.txt").write_text("\n".join("a" * n + "!" for n in range(25, 1500)))
    a_client = LiveClient(live_stack.base_url, session_for(cast["alice"]))
    b_client = LiveClient(live_stack.base_url, session_for(cast["bob"]))
    started = time.monotonic()
    evil = send(a_client, alice, call("search_files", path=".", pattern="(a+)+$", target="content"))
    other = send(b_client, bob, "hello")
    other = wait_run(other.pk, timeout=60)
    other_done = time.monotonic() - started
    evil = wait_run(evil.pk, timeout=60)
    assert other.status == "succeeded" and other_done < 30, other_done  # was 160 s
    search = ToolCall.objects.get(run=evil, name="search_files")
    assert evil.status == "succeeded" and search.status == "succeeded" and search.duration_ms < 10_000
    assert '"count": 0' in search.result or '"count":0' in search.result


# --- H2 -------------------------------------------------------------------------------------------


def pages_of(client: LiveClient, run: Run) -> dict[str, str]:
    return {
        path: client.http.get(path).text
        for path in (f"/c/{run.conversation_id}/", f"/runs/{run.pk}/fragment/", f"/api/runs/{run.pk}/trace")
    }


def test_h2_a_provider_error_quoting_the_key_never_shows_it(cast, provider, live_stack):
    convo = Conversation.objects.create(owner=cast["alice"], provider=provider)
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))
    run = wait_run(send(client, convo, "ERRKEY").pk)
    assert run.status == "failed" and "Incorrect API key provided" in run.error
    assert CANARY_KEY not in run.error and "[REDACTED]" in run.error
    for path, text in pages_of(client, run).items():
        assert CANARY_KEY not in text, path
    admin = LiveClient(live_stack.base_url, session_for(cast["ada"]))
    assert CANARY_KEY not in admin.http.get(f"/admin/chatapp/run/{run.pk}/change/").text


# --- M2 -------------------------------------------------------------------------------------------


def test_m2_a_disabled_server_leaves_resources_and_prompts(cast, provider, live_stack):
    hostile_servers()
    convo = Conversation.objects.create(owner=cast["alice"], provider=provider)
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))
    assert "hostile://r1" in client.http.get(f"/c/{convo.pk}/context/").text  # the worker's pool has it
    McpServer.objects.filter(name="hostile").update(enabled=False)
    assert "hostile://r1" not in client.http.get(f"/c/{convo.pk}/context/").text
    token = client.csrf(f"/c/{convo.pk}/")
    headers = {"X-CSRFToken": token, "HX-Request": "true", "Referer": live_stack.base_url + "/"}
    client.http.post(
        f"/c/{convo.pk}/context/attach/", data={"server": "hostile", "uri": "hostile://r1"}, headers=headers
    )
    prompt = client.http.post(
        f"/c/{convo.pk}/context/prompt/", data={"server": "hostile", "name": "p1"}, headers=headers
    )
    convo.refresh_from_db()
    assert not convo.attached_context and "PROMPT TEXT" not in prompt.text


# --- L1 -------------------------------------------------------------------------------------------


def test_l1_gateway_honours_a_policy_on_the_listed_name(cast, provider, live_stack):
    hostile_servers(gateway=True)
    listed = exposed_name("hostile", "delete.repo")
    assert listed != "hostile__delete.repo"  # sanitised and shortened with a hash
    ToolPolicy.objects.create(pattern=listed, enabled=False)
    convo = Conversation.objects.create(owner=cast["alice"], provider=provider)
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))
    text = call("mcp_call_tool", server="hostile", tool="delete.repo", arguments={"text": "via gateway"})
    run = wait_run(send(client, convo, text).pk, statuses=(*TERMINAL, "awaiting_approval"))
    gateway_call = ToolCall.objects.get(run=run, name="mcp_call_tool")
    assert gateway_call.status == "denied" and "disabled" in gateway_call.result


# --- L2 -------------------------------------------------------------------------------------------


async def _mutate(url: str) -> None:
    from agent.mcp import McpPool, McpServerConfig

    async with McpPool([McpServerConfig(name="h", transport="http", url=url)]) as pool:
        await pool.call_tool("h", "mutate", {}, timeout=20)


def test_l2_a_silent_definition_change_voids_the_approval(cast, provider, live_stack, hostile_http):
    import asyncio

    McpServer.objects.create(name="hostilehttp", transport="http", url=hostile_http, connect_timeout=20)
    ToolPolicy.objects.create(pattern="hostilehttp__desc", tier="high", approval="always")
    convo = Conversation.objects.create(owner=cast["alice"], provider=provider)
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))
    run = wait_run(
        send(client, convo, call("hostilehttp__desc", text="x")).pk, statuses=("awaiting_approval",)
    )
    pending = ToolCall.objects.get(run=run, name="hostilehttp__desc")
    asyncio.run(_mutate(hostile_http))  # no notifications/tools/list_changed is sent
    approvals.decide(pending.pk, cast["ada"], approve=True, reason="for the original description")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pending.refresh_from_db()
        if pending.status != "approved":
            break
        time.sleep(0.05)  # the worker picks the approval up in another process
    wait_run(run.pk, statuses=("awaiting_approval", *TERMINAL))
    pending.refresh_from_db()
    assert pending.status == "awaiting_approval", pending.status  # voided, asks again; desc never ran
    assert not ToolCall.objects.filter(run=run, status="succeeded", name="hostilehttp__desc").exists()


# --- Canary sweep (item 3) ------------------------------------------------------------------------


def _database_text() -> str:
    out = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        for (table,) in cursor.fetchall():
            cursor.execute(f'SELECT t::text FROM "{table}" t')  # noqa: S608 - table names from the catalog
            out.extend(row[0] for row in cursor.fetchall())
    return "\n".join(out)


def test_canary_sweep_no_planted_secret_shows_anywhere(cast, provider, live_stack, hostile_http, capsys):
    """Secrets planted where secrets live (stored provider key, MCP env, MCP header), then made to echo
    everywhere: a provider error, stdio and HTTP tool results, the model's answers. 0 hits."""
    hostile_servers(hostile_http)
    convo = Conversation.objects.create(owner=cast["alice"], provider=provider)
    client = LiveClient(live_stack.base_url, session_for(cast["alice"]))
    runs = [
        wait_run(send(client, convo, text).pk)
        for text in (
            "ERRKEY",
            call("hostile__echo_env", name="API_TOKEN"),
            call("hostilehttp__echo_headers"),
        )
    ]
    assert [r.status for r in runs] == ["failed", "succeeded", "succeeded"]
    echoed = [c.result for c in ToolCall.objects.filter(run__in=runs[1:])]
    assert all("[REDACTED]" in r for r in echoed), echoed  # the values did come back, redacted
    admin = LiveClient(live_stack.base_url, session_for(cast["ada"]))
    auditor = LiveClient(live_stack.base_url, session_for(cast["otto"]))
    seen = {}
    for run in runs:
        seen |= {f"alice {k}": v for k, v in pages_of(client, run).items()}
        for path in (f"/audit/runs/{run.pk}/", f"/audit/runs/{run.pk}/otel.json"):
            seen[path] = auditor.http.get(path).text
        seen[f"admin run {run.pk}"] = admin.http.get(f"/admin/chatapp/run/{run.pk}/change/").text
    for call_row in ToolCall.objects.filter(run__in=runs):
        seen[f"admin call {call_row.pk}"] = admin.http.get(
            f"/admin/chatapp/toolcall/{call_row.pk}/change/"
        ).text
    for server in McpServer.objects.all():
        seen[f"admin mcp {server.name}"] = admin.http.get(
            f"/admin/chatapp/mcpserver/{server.pk}/change/"
        ).text
    seen["admin provider"] = admin.http.get(f"/admin/chatapp/providerconfig/{provider.pk}/change/").text
    seen["audit export"] = auditor.http.get("/audit/export.jsonl").text
    for fmt in ("md", "json"):
        seen[f"conversation export {fmt}"] = client.http.get(f"/c/{convo.pk}/export.{fmt}").text
    seen["audit log"] = auditor.http.get("/audit/log/").text
    call_command("mcp_export")
    seen["mcp_export"] = capsys.readouterr().out
    seen["database"] = _database_text()
    logs = Path(live_stack.data_dir) / "logs"
    for path in logs.rglob("*"):
        if path.is_file():
            seen[f"log {path.relative_to(logs)}"] = path.read_text(errors="replace")
    assert all(len(text) > 0 for name, text in seen.items() if not name.startswith("log")), [
        n for n, t in seen.items() if not t
    ]
    hits = [(name, canary) for name, text in seen.items() for canary in CANARIES if canary in text]
    assert hits == []


# --- Soak (item 2) --------------------------------------------------------------------------------

HOSTILE_TEXTS = (
    call("search_files", path=".", pattern="(a+)+$", target="content"),
    call("query_database", sql="SELECT hex(randomblob(400000000)) AS h", limit=1),
    call("search_files", path=".", pattern="(x+x+)+y", target="content"),
    call("query_database", sql="SELECT fts3_tokenizer('simple') AS p", limit=1),
)
BENIGN_TEXTS = (
    call("search_files", path=".", pattern="b+$", target="content"),
    call("query_database", sql="SELECT hex(randomblob(16)) AS h", limit=1),
    call("search_files", path=".", pattern="xy", target="content"),
    call("query_database", sql="SELECT 1 AS p", limit=1),
)
# A real model's pace for the criterion: first token after 0.5 s, then 60 tokens a second (the
# pace the integration stack's demo model streams at; hosted chat models answer in 0.3-1 s and stream
# 30-100 tokens a second). "hello" is ~50 chunks: a 1.3 s round.
REAL_PACE = (0.5, 60.0)
# Conditions: the model at zero latency (alone, beside hostile runs, beside benign twins) and at
# REAL_PACE (alone, beside hostile runs). Each round measures every condition once, the second round
# in the reverse order, so that a linear drift of the shared machine's load (or the stack warming
# up) weighs on every condition alike.
SOAK_ROUND = ("alone", "paced hostile", "benign", "paced alone", "hostile")
SOAK_ORDERS = (SOAK_ROUND, tuple(reversed(SOAK_ROUND)))


class OpenPage:
    """A person's chat page, open in a browser: the CSRF token is read once, then every message is one
    POST, as the page's composer sends it. ``LiveClient.send`` loads the conversation page before each
    POST; in the soak those page renders were half of daphne's CPU (py-spy, 2026-12-01), load on the
    shared cores that a person typing into an open page does not make."""

    def __init__(self, client: LiveClient) -> None:
        self.client = client
        self.token = client.csrf("/")

    def send(self, convo: Conversation, text: str) -> Run:
        answer = self.client.http.post(
            f"/c/{convo.pk}/send/",
            data={"message": text},
            headers={"X-CSRFToken": self.token, "HX-Request": "true", "Referer": self.client.base_url + "/"},
        )
        assert answer.status_code == 200, answer.text[:500]
        return Run.objects.filter(conversation=convo).order_by("-pk").first()


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _service_times(runs: list[Run]) -> list[float]:
    done = [Run.objects.get(pk=r.pk) for r in runs]
    failed = [(r.pk, r.status, r.error) for r in done if r.status != "succeeded"]
    assert not failed, failed
    return [(r.finished_at - r.started_at).total_seconds() for r in done]


@pytest.mark.timeout(900)
@pytest.mark.alone  # a slowdown ratio: another pytest process's load beside it moved it past its bound
def test_soak_twenty_hostile_runs_do_not_slow_twenty_normal_ones(cast, provider, live_stack):
    """Issue 16 item 2: 20 normal runs' latency (their time in the worker, picked up to finished) beside
    20 hostile runs (ReDoS searches, oversized SQL values, pointer-leaking SQL) against the same 20
    normal runs on an otherwise idle worker, and against the same runs beside 20 benign twins (the same
    tools over the same files with harmless arguments, so the same load).

    Two rounds measure each condition once (the second in the reverse order); conditions are compared
    by the median over all their runs. Asserted, with the model at zero latency: hostility costs
    nothing beyond load (the worker's CPU and the normal runs' latency beside hostile runs against
    beside benign twins). Then, with the model at a real model's pace (REAL_PACE), the issue's
    criterion: the normal runs within 2x of the idle worker's latency beside 20 hostile runs (1.12-1.16x
    on 2026-12-01 after the per-run cuts; before them 1.39-2.56x, docs/security.md "Soak").

    Why the criterion is measured at a real pace (docs/security.md, "Soak"): against a model that
    answers at once, a run is nothing but the worker's and the database's CPU, and 40 runs started
    within a second on the shared 2 cores take about twice the CPU of 20 (a twin's first round costs
    what a normal run does, hostile or benign), so any run's latency is ~2x or more beside 20 others,
    whatever they send: that measures the machine's cores, not the worker's exposure to hostile
    input. A person's run waits for its model for most of its life; there the criterion says whether
    hostile runs hold the worker, which is what item 2 is about. The zero-latency ratio is reported
    beside it."""
    import os

    from django.contrib.auth import get_user_model

    started_test = time.monotonic()

    def people(prefix: str) -> list[tuple[OpenPage, object]]:
        # One run per person and batch: the per-user limits (item 6) are not what this test measures.
        users = [get_user_model().objects.create_user(f"{prefix}{i}") for i in range(20)]
        return [(OpenPage(LiveClient(live_stack.base_url, session_for(u))), u) for u in users]

    normal_people, twin_people = people("normal"), people("twin")
    twin_texts = {"alone": (), "hostile": HOSTILE_TEXTS, "benign": BENIGN_TEXTS}

    def conversations(group, files: bool, model: ProviderConfig) -> list[tuple[OpenPage, Conversation]]:
        # A new conversation per batch, so every batch's runs read the same (empty) history.
        pairs = [(page, Conversation.objects.create(owner=user, provider=model)) for page, user in group]
        for _, convo in pairs if files else ():
            (workspace(convo) / "evil.txt").write_text("\n".join("a" * n + "!" for n in range(25, 1200)))
        return pairs

    def batch(condition: str, model: ProviderConfig) -> tuple[list[float], list[float]]:
        """The 20 normal runs' service times and model-round durations (ms) under ``condition``."""
        texts = twin_texts[condition.removeprefix("paced ")]
        normal = conversations(normal_people, False, model)
        twins = conversations(twin_people, True, model) if texts else []
        # Four senders per group: the sends take milliseconds, and daphne opens a database connection
        # per request (a shared server's connection slots are not what this test measures).
        with ThreadPoolExecutor(4) as twin_pool, ThreadPoolExecutor(4) as normal_pool:
            twin_runs = twin_pool.map(
                lambda i: twins[i][0].send(twins[i][1], texts[i % len(texts)]), range(len(twins))
            )
            normal_runs = list(normal_pool.map(lambda pc: pc[0].send(pc[1], "hello"), normal))
            twin_runs = list(twin_runs)
        for run in twin_runs:
            assert wait_run(run.pk, timeout=180).status == "succeeded"
        normal_runs = [wait_run(r.pk, timeout=180) for r in normal_runs]
        rounds = Round.objects.filter(run__in=normal_runs).values_list("duration_ms", flat=True)
        return _service_times(normal_runs), list(rounds)

    processes = {
        "worker": live_stack.procs["worker"].pid,
        "daphne": live_stack.procs["web"].pid,
        "test": os.getpid(),
    }
    with hostile_model.serve(pace=REAL_PACE) as paced_url:
        paced = ProviderConfig.objects.create(
            name="paced",
            base_url=paced_url,
            model="clearloop-demo",
            preset="demo",
            api_key_encrypted=encrypt(CANARY_KEY),
        )
        batch("alone", provider)  # warms the stack up (first requests, connections, imports); not measured
        conditions = SOAK_ROUND
        times: dict[str, list[float]] = {c: [] for c in conditions}
        model_ms: dict[str, list[float]] = {c: [] for c in conditions}
        cpu: dict[str, list[dict[str, float]]] = {c: [] for c in conditions}
        order = []
        for rotation in SOAK_ORDERS:
            for condition in rotation:
                before = {name: _cpu_seconds(pid) for name, pid in processes.items()}
                started = time.monotonic()
                service, model = batch(condition, paced if condition.startswith("paced") else provider)
                cpu[condition].append(
                    {"wall": time.monotonic() - started}
                    | {name: _cpu_seconds(pid) - before[name] for name, pid in processes.items()}
                )
                times[condition] += service
                model_ms[condition] += model
                order.append(f"{condition} {statistics.median(service):.2f}")
    median = {c: statistics.median(times[c]) for c in conditions}
    alone, hostile, benign = median["alone"], median["hostile"], median["benign"]
    paced_alone, paced_hostile = median["paced alone"], median["paced hostile"]
    per_batch = {c: {k: round(statistics.median(b[k] for b in v), 2) for k in v[0]} for c, v in cpu.items()}
    figures = (
        f"normal runs' median service time, model at {REAL_PACE[0]} s + {REAL_PACE[1]:.0f} tokens/s: alone "
        f"{paced_alone:.3f} s, beside 20 hostile runs {paced_hostile:.3f} s ({paced_hostile / paced_alone:.2f}x); "
        f"model at zero latency: alone {alone:.3f} s, beside 20 benign twins {benign:.3f} s "
        f"({benign / alone:.2f}x), beside 20 hostile runs {hostile:.3f} s ({hostile / alone:.2f}x); "
        f"their model round (median ms) { ({c: round(statistics.median(v)) for c, v in model_ms.items()}) }; "
        f"CPU s per batch (median) {per_batch}; batches in order: {', '.join(order)}; "
        f"test wall {time.monotonic() - started_test:.0f} s"
    )
    print(f"soak: {figures}")
    # Hostility costs nothing beyond load. The worker's CPU per batch is the steady figure (hostile and
    # benign batches measured within 8 % of each other); latency guards against a held worker, which
    # cost 160 s here before the fixes.
    assert per_batch["hostile"]["worker"] <= 1.25 * per_batch["benign"]["worker"], figures
    assert hostile <= 2 * benign, figures
    # The criterion, with the model at a real model's pace: asserted since a short run costs
    # the worker ~32 ms of CPU instead of ~100 (redaction's literal checks, docs/security.md "Soak"):
    # 1.12-1.16x in four runs, one of them beside a process spinning on one of the two cores.
    assert paced_hostile <= 2 * paced_alone, figures

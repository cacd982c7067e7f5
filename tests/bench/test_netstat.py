"""The browser bench's kernel counters (bench/browser/netstat.py): read from the ``TcpExt`` lines of
``/proc/net/netstat`` by name, and reported as growth over a cell."""

from __future__ import annotations

from bench.browser import netstat

SAMPLE = """TcpExt: SyncookiesSent SyncookiesRecv SyncookiesFailed ListenOverflows ListenDrops TCPAbortOnData
TcpExt: {sent} 118 {failed} {overflows} {drops} 2
IpExt: InNoRoutes ListenOverflows
IpExt: 0 999
"""


def _kernel(monkeypatch, tmp_path, **values: int) -> None:
    path = tmp_path / "netstat"
    path.write_text(SAMPLE.format(**values))
    monkeypatch.setattr(netstat, "SOURCE", path)


def test_the_refused_connections_of_a_cell_are_the_counters_growth(monkeypatch, tmp_path):
    _kernel(monkeypatch, tmp_path, sent=59, failed=59, overflows=314, drops=314)
    before = netstat.tcp_ext()
    assert before == {
        "ListenOverflows": 314,
        "ListenDrops": 314,
        "SyncookiesSent": 59,
        "SyncookiesFailed": 59,
        "TCPAbortOnData": 2,
    }  # TcpExt's, not IpExt's line of the same name
    _kernel(monkeypatch, tmp_path, sent=60, failed=59, overflows=320, drops=321)
    assert netstat.since(before) == {
        "ListenOverflows": 6,
        "ListenDrops": 7,
        "SyncookiesSent": 1,
        "SyncookiesFailed": 0,
        "TCPAbortOnData": 0,
    }


def test_only_a_full_accept_queue_counts_as_refused():
    assert not netstat.refused({"ListenOverflows": 0, "SyncookiesFailed": 0, "TCPAbortOnData": 2})
    assert netstat.refused({"ListenOverflows": 0, "ListenDrops": 3}) and netstat.refused({"SyncookiesFailed": 1})


def test_a_kernel_without_the_file_gives_no_counters(monkeypatch, tmp_path):
    monkeypatch.setattr(netstat, "SOURCE", tmp_path / "absent")
    assert netstat.tcp_ext() == {} and netstat.since({}) == {}


def test_this_machines_kernel_exposes_the_overflow_counter():
    assert "ListenOverflows" in netstat.tcp_ext()

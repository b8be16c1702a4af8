"""Python servers measured by the `peer` report and called by a Rust RemoteRhs; RemoteRhs
from Python; the solve_ivp example."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import (
    TRANSPORTS,
    peer_exe,
    python_echo_server,
    python_server,
    rust_example,
    rust_server,
    shell_line,
)

import peerpipe

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_peer_report_measures_a_python_echo_server_on_every_transport(tmp_path, transport):
    report = tmp_path / "run.json"
    subprocess.run(
        [
            peer_exe(),
            "--spawn",
            shell_line(python_echo_server(transport)),
            "--transport",
            transport,
            "--sizes",
            "500",
            "--dtype",
            "f64,f32",
            "--wait",
            "hybrid",
            "--duration",
            "50ms",
            "--json",
            str(report),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    rows = json.loads(report.read_text())["rows"]
    assert rows and all(r["transport"] == transport for r in rows)
    assert {r["dtype"] for r in rows} >= {"f64", "f32"}
    assert all(r["iterations"] > 0 and r["rtt_ns"]["p50"] > 0 for r in rows)


def rhs_spawn_example() -> Path:
    """examples/rhs_spawn.rs, built (cargo test builds it)."""
    return rust_example("rhs_spawn")


def test_a_rust_remote_rhs_calling_a_python_server_matches_the_library_bit_for_bit():
    result = subprocess.run(
        [str(rhs_spawn_example()), shell_line(python_server("lorenz96_server")), "300", "500"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["bit_identical"] is True
    assert summary["handler"] == "py-lorenz96" and summary["calls"] == 300


def test_remote_rhs_from_python_with_stats():
    n = 40
    y = np.full(n, 8.0)
    y[0] += 0.01
    with peerpipe.RemoteRhs(rust_server("lorenz96", "pipe")) as fun:
        assert fun.functions == ["rhs"]
        d = fun(0.0, y)
        assert d.dtype == np.float64 and d.shape == (n,)
        out = np.empty(n)
        assert fun.eval(0.0, y, out=out) is out
        assert out.tobytes() == d.tobytes()
        # lorenz96 serves rhs(t, y[, F]): the forcing goes as args.
        assert fun(0.0, y, 8.0).tobytes() == d.tobytes()
        assert fun(0.0, y, 9.0).tobytes() != d.tobytes()
        stats = fun.stats()
        assert stats["calls"] == 4
        assert (
            stats["overhead_p50_ns"] > 0
            and stats["round_trip_max_ns"] >= stats["round_trip_p50_ns"]
        )
        assert fun.last_timing.round_trip_ns > 0
        # What the auto wait did: counts that only grow.
        waits = (
            "wait_spun",
            "wait_hits",
            "wait_slept_at_once",
            "wait_dear_yields",
            "wait_moves",
        )
        assert all(isinstance(stats[k], int) and stats[k] >= 0 for k in waits)
        assert stats["wait_hits"] <= stats["wait_spun"]
        with pytest.raises(peerpipe.RemoteError, match=r"needs at least 4 elements"):
            fun(0.0, np.ones(2))
        assert fun(0.0, y).tobytes() == d.tobytes()  # still usable
        with pytest.raises(ValueError, match=r"out must have y's shape \(40,\), got \(3,\)"):
            fun.eval(0.0, y, out=np.empty(3))
    with pytest.raises(ValueError, match=r"RemoteRhs is closed"):
        fun(0.0, y)


def test_the_solve_ivp_example_prints_bit_identical_trajectories():
    pytest.importorskip("scipy")
    env = dict(os.environ, PEERPIPE_PEER=peer_exe())
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "python" / "examples" / "lorenz96_solve_ivp.py"),
            "--t-end",
            "0.5",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "bit-identical: yes" in result.stdout


def test_the_paired_solve_ivp_bench_solves_once_per_wait_and_round(tmp_path):
    pytest.importorskip("scipy")
    env = dict(os.environ, PEERPIPE_PEER=peer_exe())
    out = tmp_path / "pairs.json"
    bench = [sys.executable, str(ROOT / "python" / "bench" / "solve_ivp_pairs.py")]
    result = subprocess.run(
        [*bench, "--rounds", "2", "--waits", "block,auto", "--t-end", "0.2", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads(out.read_text())
    assert doc["waits"] == ["block", "auto"]
    assert len(doc["rounds"]) == 2
    for row in doc["rounds"]:
        assert row["local_s"] > 0
        for wait in ("block", "auto"):
            assert row[wait]["calls"] > 0 and row[wait]["p50_us"] > 0 and row[wait]["solve_s"] > 0
    assert set(doc["main_state"]) <= {0, 1}  # empty when the two rounds' states differ
    assert "block / auto per round" in result.stdout
    refused = subprocess.run(
        [*bench, "--waits", "auto"], capture_output=True, text=True, timeout=60, env=env
    )
    assert refused.returncode != 0 and "two or more different waits" in refused.stderr
    refused = subprocess.run(
        [*bench, "--waits", "sleepy,auto", "--t-end", "0.01"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert refused.returncode != 0 and 'found "sleepy"' in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_python_server_over_tcp_listens_where_it_is_told():
    # An explicit address with port 0 (a free port), as `peer --role server --listen` takes it.
    with peerpipe.Peer.spawn(
        python_server("echo_server", "tcp", "127.0.0.1:0"), transport="tcp"
    ) as peer:
        assert peer.transport == "tcp"
        assert peer.call(np.arange(5.0)).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_a_python_server_over_tcp_listens_on_an_interface_named_by_the_user():
    # The loopback interface by name: its IPv4 address, a free port.
    with peerpipe.Peer.spawn(python_server("echo_server", "tcp", "lo"), transport="tcp") as peer:
        assert peer.call(np.arange(3.0)).tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"transport": "pipe", "listen": "127.0.0.1"}, r"listen is for transport='tcp'"),
        ({"listen": "127.0.0.1"}, r"listen is for transport='tcp'"),
        ({"transport": "tcp", "listen": "localhost"}, r"no interface named \"localhost\""),
        (
            {"transport": "tcp", "listen": "lo:http"},
            r"expected IP, IP:PORT, \[IPv6\]:PORT, INTERFACE or INTERFACE:PORT",
        ),
    ],
)
def test_serve_refuses_a_listen_address_it_cannot_use_before_touching_stdio(kwargs, message):
    with pytest.raises(ValueError, match=message):
        peerpipe.serve(lambda x: x, **kwargs)

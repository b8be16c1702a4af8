"""peerpipe.Fanout: one client calling many servers together, each reply into its own buffer,
one server's failure an exception naming it while the others' replies stand."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import children, peer_exe, python_server

import peerpipe


def echo_servers(n):
    return [python_server("echo_server") for _ in range(n)]


def test_scatter_and_call_each_deliver_every_reply_bit_for_bit():
    before = children()
    x = np.random.default_rng(3).standard_normal(500)
    with peerpipe.Fanout.spawn(echo_servers(3)) as fanout:
        assert len(fanout) == 3
        out = np.zeros((3, 500))
        assert fanout.scatter(x, out) is out
        for row in out:
            assert row.view(np.uint64).tolist() == x.view(np.uint64).tolist()
        xs = [x * (i + 1) for i in range(3)]
        outs = [np.zeros(500) for _ in range(3)]
        fanout.call_each(xs, outs)
        for got, sent in zip(outs, xs):
            assert got.view(np.uint64).tolist() == sent.view(np.uint64).tolist()
        # Strided, reversed, or a field of a structured array: each copied once, the same bits.
        record = np.zeros(500, dtype=[("x", "f8"), ("flag", "i1")])
        record["x"] = x
        views = [np.repeat(x, 2)[::2], x[::-1].copy()[::-1], record["x"]]
        fanout.call_each(views, outs)
        for got in outs:
            assert got.view(np.uint64).tolist() == x.view(np.uint64).tolist()
        fanout.scatter(record["x"], out)
        assert out.view(np.uint64).tolist() == [x.view(np.uint64).tolist()] * 3
    assert children() == before


def test_a_killed_server_is_an_error_naming_it_and_the_others_replies_stand():
    before = children()
    fanout = peerpipe.Fanout.spawn(echo_servers(3), timeout=5.0)
    x, out = np.arange(8.0), np.zeros((3, 8))
    fanout.scatter(x, out)
    victim = [pid for pid in children() - before][0]
    os.kill(victim, signal.SIGKILL)
    out[:] = 0.0
    with pytest.raises(peerpipe.PeerExited) as raised:
        for _ in range(3):  # the death may be seen at the next send or at the reply
            fanout.scatter(x + 1.0, out)
    failed = raised.value.server_index
    assert f"server {failed}" in str(raised.value)
    assert [f[0] for f in raised.value.failures] == [failed]
    for i in range(3):
        if i != failed:
            assert out[i].tolist() == (x + 1.0).tolist(), i
    fanout.close()  # the dead server's peer ended with its error; the others say BYE
    assert children() == before, "every server reaped"


def test_bad_arguments_are_refused_before_anything_is_sent():
    with pytest.raises(TypeError, match="list of commands"):
        peerpipe.Fanout.spawn("python3 server.py")
    with pytest.raises(ValueError, match="no command"):
        peerpipe.Fanout.spawn([])
    with peerpipe.Fanout.spawn(echo_servers(2)) as fanout:
        x = np.ones(4)
        with pytest.raises(ValueError, match=r"shape \(N, len\) with N = 2"):
            fanout.scatter(x, np.zeros((3, 4)))
        with pytest.raises(ValueError, match="xs must hold 2 arrays"):
            fanout.call_each([x], [np.zeros(4), np.zeros(4)])
        with pytest.raises(TypeError, match="float64"):
            fanout.scatter(np.ones(4, dtype=np.float32), np.zeros((2, 4)))
        out = np.zeros((2, 4))
        fanout.scatter(x, out)  # still usable
        assert out.tolist() == [[1.0] * 4] * 2


def test_the_ensemble_example_matches_eight_local_solves_bit_for_bit():
    before = children()
    env = dict(os.environ, PEERPIPE_PEER=peer_exe())
    example = Path(__file__).resolve().parents[1] / "examples" / "ensemble.py"
    result = subprocess.run(
        [sys.executable, str(example), "--steps", "50", "--n", "100"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["identical"] is True, result.stdout
    assert (summary["members"], summary["steps"], summary["n"]) == (8, 50, 100)
    assert summary["gather_p50_ns"] > 0
    assert children() == before


def test_last_gather_ns_times_each_gather():
    with peerpipe.Fanout.spawn(echo_servers(2)) as fanout:
        assert fanout.last_gather_ns is None
        fanout.scatter(np.arange(4.0), np.zeros((2, 4)))
        first = fanout.last_gather_ns
        assert isinstance(first, int) and first > 0


def test_servers_are_spawned_all_at_once(tmp_path):
    # Each server starts only once all four have begun: spawned one after another, the
    # first would wait for the others until its handshake timed out.
    started = tmp_path / "started"
    started.touch()
    line = (
        f"echo x >> {started}; "
        f'while [ "$(wc -l < {started})" -lt 4 ]; do sleep 0.01; done; '
        f"exec {peer_exe()} --role server"
    )
    with peerpipe.Fanout.spawn([line] * 4, timeout=5.0) as fanout:
        out = np.zeros((4, 3))
        fanout.scatter(np.arange(3.0), out)
        assert out.tolist() == [[0.0, 1.0, 2.0]] * 4

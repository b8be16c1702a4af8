"""peerpipe.Fanout: one client calling many servers together, each reply into its own buffer,
one server's failure an exception naming it while the others' replies stand."""

import os
import signal

import numpy as np
import pytest
from conftest import children, python_server

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

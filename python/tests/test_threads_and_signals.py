"""The GIL is released while a call waits; Ctrl-C ends a long wait and closes the peer."""

import os
import signal
import threading
import time

import numpy as np
import pytest
from conftest import children, python_server

import peerpipe


def test_other_threads_run_while_a_call_waits_for_a_slow_reply():
    with peerpipe.Peer.spawn(python_server("slow_server", "0.5")) as peer:
        counts = []
        stop = threading.Event()

        def spin():
            n = 0
            while not stop.is_set():
                n += 1  # pure Python: needs the GIL
            counts.append(n)

        worker = threading.Thread(target=spin)
        worker.start()
        time.sleep(0.05)
        started_at = time.perf_counter()
        reply = peer.call(np.arange(4.0))
        waited = time.perf_counter() - started_at
        stop.set()
        worker.join()
        assert reply.tolist() == [0.0, 1.0, 2.0, 3.0]
        assert waited >= 0.5  # the call really waited for the slow server
        # Had the call held the GIL for its 0.5 s, the worker would have counted only in
        # the 50 ms before it; a free-running loop counts millions per second.
        assert counts[0] > 100_000


def seconds_until_interrupted(action) -> float:
    """Runs `action` while a timer sends this process SIGINT (Ctrl-C) 0.3 s in, and returns the
    seconds until `action` raised KeyboardInterrupt; fails if it returned instead."""
    # A run started in the background (`cmd &`, nohup) begins with SIGINT ignored, and Python
    # then installs no handler of its own: Ctrl-C's handler is put in place for the test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    started = time.perf_counter()
    try:
        action()
    except KeyboardInterrupt:
        return time.perf_counter() - started
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    raise AssertionError("it returned instead of being interrupted")


def test_ctrl_c_during_a_long_wait_raises_keyboard_interrupt_and_closes_the_peer():
    before = children()
    peer = peerpipe.Peer.spawn(python_server("slow_server", "60"))
    pid = peer.server_pid
    waited = seconds_until_interrupted(lambda: peer.call(np.ones(4)))
    # Interrupted, not after the 60 s reply (the ~100 ms figure is in docs/PERFORMANCE.md).
    assert waited < 10
    assert peer.closed
    assert children() == before, f"server {pid} not reaped"
    with pytest.raises(ValueError, match=r"peer is closed \(a call was interrupted\)"):
        peer.call(np.ones(4))
    assert peer.close() is None


def test_a_second_thread_calling_while_a_call_waits_gets_runtime_error():
    with peerpipe.Peer.spawn(python_server("slow_server", "0.5")) as peer:
        first = threading.Thread(target=peer.call, args=(np.ones(3),))
        first.start()
        time.sleep(0.1)
        with pytest.raises(RuntimeError, match="Already borrowed"):
            peer.call(np.ones(3))
        first.join()
        assert peer.call(np.ones(3)).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("make", ["Peer.spawn", "RemoteRhs"])
def test_ctrl_c_during_a_handshake_raises_keyboard_interrupt_and_nothing_is_left(make):
    # A server that never says HELLO: without the interrupt, the spawn would wait its whole
    # 8 s handshake timeout.
    before = children()
    spawn = {
        "Peer.spawn": lambda: peerpipe.Peer.spawn(
            python_server("misbehaving", "silent"), timeout=8.0
        ),
        "RemoteRhs": lambda: peerpipe.RemoteRhs(
            python_server("misbehaving", "silent"), timeout=8.0
        ),
    }[make]
    waited = seconds_until_interrupted(spawn)
    assert waited < 4, "interrupted, not after the 8 s handshake timeout"
    # The silent server was terminated and reaped before KeyboardInterrupt was raised, not
    # left for the 8 s timeout; a spawn that is not interrupted is unaffected.
    assert children() == before, "the silent server outlived the interrupted handshake"
    with peerpipe.Peer.spawn(python_server("echo_server")) as peer:
        assert peer.call(np.arange(3.0)).tolist() == [0.0, 1.0, 2.0]


def test_an_out_a_call_on_another_thread_writes_is_refused_until_that_call_ends():
    out = np.zeros(3)
    slow_cmd, fast_cmd = python_server("slow_server", "0.5"), python_server("slow_server", "0")
    with peerpipe.Peer.spawn(slow_cmd) as slow, peerpipe.Peer.spawn(fast_cmd) as fast:
        first = threading.Thread(target=slow.call, args=(np.ones(3), out))
        first.start()
        time.sleep(0.1)
        with pytest.raises(ValueError, match="out cannot be used: its memory is in use"):
            fast.call(np.full(3, 2.0), out)
        # Reading what the other call writes is refused too, in place or copied (a strided
        # view is copied before it is sent).
        for view in (out, out[::2]):
            with pytest.raises(ValueError, match="x cannot be used: its memory is in use"):
                fast.call(view)
        with pytest.raises(ValueError, match=r"part 0 cannot be used: its memory is in use"):
            fast.call_parts("echo", out[::-1])
        first.join()
        assert out.tolist() == [1.0, 1.0, 1.0]
        # Given back when the call ended: usable again, by either peer.
        assert fast.call(np.full(3, 2.0), out) is out
        assert out.tolist() == [2.0, 2.0, 2.0]

"""The Smalltalk server (clients/smalltalk/peer-squeak, a Squeak VM) under this package's
client: DATA bit for bit, PARTS, RemoteRhs, and a server killed mid-conversation. Needs
Debian's squeak-vm and scratch (the image is made on first use); PEERPIPE_SQUEAK names the
launcher. Skipped without it, unless PEERPIPE_REQUIRE_TOOLS=1."""

import os
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import bits

import peerpipe

LAUNCHER = os.environ.get("PEERPIPE_SQUEAK", "")

if not LAUNCHER or not Path(LAUNCHER).is_file():
    if os.environ.get("PEERPIPE_REQUIRE_TOOLS") == "1":
        raise RuntimeError("PEERPIPE_SQUEAK must name clients/smalltalk/peer-squeak")
    pytest.skip("no Smalltalk server (set PEERPIPE_SQUEAK)", allow_module_level=True)


def awkward_f64(n: int) -> np.ndarray:
    """n values, NaN payloads, a signalling NaN, -0.0, a subnormal and infinities first."""
    special = [
        0x7FF8000000000001,
        0x7FF0000000000001,
        0x8000000000000000,
        1,
        0x7FF0000000000000,
        0xFFF0000000000000,
    ]
    rest = np.random.default_rng(3).standard_normal(n - len(special)).view(np.uint64)
    return np.concatenate([np.array(special, dtype=np.uint64), rest]).view(np.float64)


def lorenz96(x: np.ndarray, forcing: float = 8.0) -> np.ndarray:
    return (np.roll(x, -1) - np.roll(x, 2)) * np.roll(x, 1) - x + forcing


def squeak_vms() -> list:
    out = subprocess.run(["pgrep", "-f", "squeakvm"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def test_the_smalltalk_server_echoes_every_bit_and_every_part():
    x = awkward_f64(500)
    f = np.array([0x7F800001, 0x80000000, 1], dtype=np.uint32).view(np.float32)
    with peerpipe.Peer.spawn([LAUNCHER]) as peer:
        assert peer.server_hello["implementation"].startswith("peerpipe-squeak")
        assert peer.server_hello["pid"] == peer.server_pid
        assert peer.speaks_parts
        assert bits(peer.call(x)) == bits(x)
        assert bits(peer.call(f)) == bits(f)
        m = np.arange(6, dtype=np.int64).reshape(3, 2) - 3
        a, b, c = peer.call_parts("", x[:7], f, m)
        assert bits(a) == bits(x[:7]) and bits(b) == bits(f)
        assert c.dtype == np.int64 and c.shape == (3, 2) and (c == m).all()
        assert peer.last_timing.server_ns > 0
        assert peer.close() == 0


def test_remote_rhs_against_the_smalltalk_lorenz96_is_bit_identical():
    y = np.random.default_rng(5).standard_normal(40)
    rhs = peerpipe.RemoteRhs([LAUNCHER, "--handler", "lorenz96"])
    try:
        assert rhs.functions == ["rhs"]
        assert bits(rhs(0.25, y)) == bits(lorenz96(y))
        assert bits(rhs(0.25, y, 10.0)) == bits(lorenz96(y, 10.0))
        with pytest.raises(peerpipe.RemoteError, match="lorenz96 rhs"):
            rhs(0.25, y[:3])
        assert bits(rhs(0.5, y)) == bits(lorenz96(y)), "the call after an error goes on"
    finally:
        rhs.close()


def test_a_smalltalk_server_killed_mid_conversation_is_an_error_and_nothing_is_left():
    before = set(squeak_vms())
    peer = peerpipe.Peer.spawn([LAUNCHER], timeout=5.0)
    x = np.ones(500)
    assert bits(peer.call(x)) == bits(x)
    vm = peer.server_pid
    assert vm is not None and vm not in before
    os.kill(vm, signal.SIGKILL)
    with pytest.raises((peerpipe.PeerExited, peerpipe.Error)):
        for _ in range(3):
            peer.call(x)
    assert peer.closed
    assert vm not in squeak_vms()
    assert set(squeak_vms()) <= before

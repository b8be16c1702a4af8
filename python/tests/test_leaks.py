"""No child process or descriptor outlives its peer: 200 spawn/call/close cycles, and cycles
of PARTS calls, RemoteRhs and its refusals."""

import gc

import numpy as np
import pytest
from conftest import TRANSPORTS, children, open_fds, rust_server

import peerpipe


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_spawn_call_close_cycles_leave_children_and_descriptors_flat(transport):
    cycles = 200 if transport == "pipe" else 50
    x = np.ones(500)
    out = np.empty_like(x)
    # Warm-up: the first spawn may open descriptors that stay (e.g. /dev/null, caches).
    with peerpipe.Peer.spawn(rust_server("echo", transport), transport=transport) as peer:
        peer.call(x, out)
    gc.collect()
    fds, kids = open_fds(), children()
    for i in range(cycles):
        peer = peerpipe.Peer.spawn(rust_server("echo", transport), transport=transport)
        peer.call(x, out)
        if i % 2:
            assert peer.close() == 0
        else:
            del peer  # dropped without close: reaped all the same
    gc.collect()
    assert children() == kids
    assert open_fds() == fds


def test_parts_calls_remote_rhs_and_refusals_leave_children_and_descriptors_flat():
    x = np.full(40, 8.0)

    def cycle():
        with peerpipe.Peer.spawn(rust_server("lorenz96", "pipe")) as peer:
            peer.call_parts("rhs", 0.0, x, 8.0)
            with pytest.raises(peerpipe.ShapeError):
                peer.call_parts("rhs", 0.0, x, out=(np.empty(3),))
        with peerpipe.RemoteRhs(rust_server("lorenz96", "pipe")) as rhs:
            rhs(0.0, x, 8.0)
        with pytest.raises(peerpipe.Unsupported):
            peerpipe.RemoteRhs(rust_server("echo", "pipe"))  # refused: its server is reaped

    cycle()
    gc.collect()
    fds, kids = open_fds(), children()
    for _ in range(30):
        cycle()
    gc.collect()
    assert children() == kids
    assert open_fds() == fds

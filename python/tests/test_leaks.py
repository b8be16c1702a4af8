"""No child process or descriptor outlives its peer: 200 spawn/call/close cycles."""

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

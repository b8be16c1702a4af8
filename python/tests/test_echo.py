"""Bit-exact echoes of every edge value, both dtypes, every transport, Rust and Python servers."""

import sys

import numpy as np
import pytest
from conftest import (
    TRANSPORTS,
    bits,
    f32_edges,
    f64_edges,
    peer_exe,
    python_echo_server,
    rust_server,
    shell_line,
)

import peerpipe

SERVERS = {
    "rust-echo": lambda t: rust_server("echo", t),
    "py-echo": python_echo_server,
}


@pytest.mark.parametrize("server", sorted(SERVERS))
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_edge_values_cross_unchanged_both_dtypes(transport, server):
    with peerpipe.Peer.spawn(SERVERS[server](transport), transport=transport) as peer:
        assert peer.transport == transport
        for edges in (f64_edges(), f32_edges()):
            # With out= (written in place, same object back) and without (a new array).
            out = np.zeros_like(edges)
            assert peer.call(edges, out) is out
            assert bits(out) == bits(edges)
            fresh = peer.call(edges)
            assert fresh.dtype == edges.dtype and bits(fresh) == bits(edges)
            # Non-contiguous input is copied once, then sent.
            strided = np.repeat(edges, 2)[::2]
            assert not strided.flags.c_contiguous
            assert bits(peer.call(strided)) == bits(edges)
        timing = peer.last_timing
        assert timing.round_trip_ns >= timing.server_ns > 0
        assert timing.transfer_ns == max(
            0, timing.round_trip_ns - timing.server_ns - timing.encode_ns - timing.decode_ns
        )


def test_a_python_handlers_strided_or_reversed_reply_is_copied_out_in_order():
    # The reply is x reversed (a view with a negative stride) for f64, and every other element
    # of x repeated (a strided view equal to x) for f32: both copied out element by element.
    handler = (
        "import numpy as np, peerpipe; "
        "peerpipe.serve(lambda x: x[::-1] if x.dtype == np.float64 else np.repeat(x, 2)[::2])"
    )
    with peerpipe.Peer.spawn([sys.executable, "-c", handler]) as peer:
        f64, f32 = f64_edges(), f32_edges()
        assert bits(peer.call(f64)) == bits(f64[::-1].copy())
        assert bits(peer.call(f32)) == bits(f32)


@pytest.mark.parametrize("transport", ["pipe", "shm-sem", "shm-ring"])
def test_a_server_told_no_transport_serves_the_one_the_client_chose(transport):
    # Only the client names the transport; the server sees what its stdin is.
    server = [peer_exe(), "--role", "server", "--handler", "echo"]
    with peerpipe.Peer.spawn(server, transport=transport) as peer:
        assert peer.transport == transport
        edges = f64_edges()
        assert bits(peer.call(edges)) == bits(edges)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_wire_f32_narrows_float64_like_a_cast(transport):
    x = np.concatenate([f64_edges(), np.linspace(-1e40, 1e40, 11), [1e-46, 0.1]])
    with peerpipe.Peer.spawn(rust_server("echo", transport), transport=transport) as peer:
        out = np.empty_like(x)
        peer.call(x, out, wire="f32")
    with np.errstate(over="ignore", invalid="ignore"):
        expected = x.astype(np.float32).astype(np.float64)
    assert bits(out) == bits(expected)


def test_empty_and_large_arrays():
    with peerpipe.Peer.spawn(rust_server("echo-raw", "pipe")) as peer:
        assert peer.call(np.empty(0)).shape == (0,)
        big = np.random.default_rng(1).standard_normal(1 << 20)
        assert bits(peer.call(big)) == bits(big)


def test_server_hello_names_the_handler_and_implementation():
    with peerpipe.Peer.spawn(rust_server("echo", "pipe")) as peer:
        hello = peer.server_hello
        assert hello["handler"] == "echo"
        assert hello["implementation"].startswith("peerpipe ")
        assert hello["max_frame_bytes"] == 64 << 20
        assert peer.server_pid > 0
        assert "open" in repr(peer)
    assert peer.closed and "closed" in repr(peer)


def test_a_shell_string_is_run_with_sh_c_and_close_returns_the_exit_code():
    line = " ".join(rust_server("echo", "pipe"))
    peer = peerpipe.Peer.spawn(line)
    assert peer.call(np.ones(3)).tolist() == [1.0, 1.0, 1.0]
    assert peer.close() == 0
    assert peer.close() is None  # already closed: nothing to do


def test_spawn_server_passes_transport_and_wait(tmp_path):
    from conftest import peer_exe

    for transport in TRANSPORTS:
        with peerpipe.Peer.spawn_server(
            peer_exe(), "echo", transport=transport, wait="hybrid:20us"
        ) as p:
            assert bits(p.call(f64_edges())) == bits(f64_edges())


def test_a_server_spawned_from_a_shell_line_is_the_spawned_process_itself():
    import os

    with peerpipe.Peer.spawn(shell_line(rust_server("echo", "pipe"))) as peer:
        pid = peer.server_pid
        assert os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "peer"
        with open(f"/proc/{pid}/stat") as stat:
            parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        assert parent == os.getpid(), "the server runs under a shell, not in its place"

"""Shared fixtures: the `peer` binary (PEERPIPE_PEER), the test servers, edge values."""

import os
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

SERVERS = Path(__file__).parent / "servers"
TRANSPORTS = ["pipe", "shm-sem", "shm-ring", "tcp"]


def peer_exe() -> str:
    """The `peer` binary named by PEERPIPE_PEER (.ci/run sets it to target/debug/peer)."""
    path = os.environ.get("PEERPIPE_PEER")
    if not path:
        pytest.fail(
            "PEERPIPE_PEER is not set: build the binary (cargo build --bin peer) and run "
            "PEERPIPE_PEER=target/debug/peer python -m pytest python/tests",
            pytrace=False,
        )
    if not os.access(path, os.X_OK):
        pytest.fail(f"PEERPIPE_PEER={path} is not an executable file", pytrace=False)
    return path


def rust_example(name: str) -> Path:
    """The Rust example NAME (cargo build --example NAME): in the directory PEERPIPE_EXAMPLES
    when it is set (.ci/run sets it when `peer` is the wheel's), else in examples/ beside the
    `peer` binary, where cargo puts both."""
    folder = os.environ.get("PEERPIPE_EXAMPLES")
    path = Path(folder) if folder else Path(peer_exe()).resolve().parent / "examples"
    path = path / name
    if not path.exists():
        pytest.fail(f"{path} is missing: cargo build --example {name}", pytrace=False)
    return path


def rust_server(handler: str, transport: str) -> list:
    """The command of `peer --role server --handler HANDLER --transport KIND`."""
    return [peer_exe(), "--role", "server", "--handler", handler, "--transport", transport]


def python_server(name: str, *args: str) -> list:
    """The command running python/tests/servers/NAME.py with this interpreter."""
    return [sys.executable, str(SERVERS / f"{name}.py"), *args]


def python_echo_server(transport: str) -> list:
    """The Python echo server for a client on `transport`: it finds a pipe or a shared region
    on its stdin by itself; for tcp (whose stdin is the control channel, a pipe) it is told."""
    return python_server("echo_server", *(["tcp"] if transport == "tcp" else []))


def shell_line(argv: list) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def f64_edges() -> np.ndarray:
    """NaN payloads (quiet, signalling, negative), -0.0, subnormals, +-inf, extremes."""
    bits = [
        0x7FF8000000000000,
        0x7FF8000000000001,
        0x7FF0000000000001,
        0xFFF8DEADBEEF0001,
        0x7FF4000000000000,
        0x8000000000000000,
        0x0000000000000001,
        0x800FFFFFFFFFFFFF,
        0x000FFFFFFFFFFFFF,
        0x7FF0000000000000,
        0xFFF0000000000000,
        0x7FEFFFFFFFFFFFFF,
        0x0010000000000000,
        0x3FF0000000000000,
    ]
    return np.array(bits, dtype=np.uint64).view(np.float64)


def f32_edges() -> np.ndarray:
    bits = [
        0x7FC00000,
        0x7FC00001,
        0x7F800001,
        0xFFC0BEEF,
        0x7FA00000,
        0x80000000,
        0x00000001,
        0x807FFFFF,
        0x007FFFFF,
        0x7F800000,
        0xFF800000,
        0x7F7FFFFF,
        0x00800000,
        0x3F800000,
    ]
    return np.array(bits, dtype=np.uint32).view(np.float32)


def bits(a: np.ndarray) -> list:
    return a.view(np.uint64 if a.dtype == np.float64 else np.uint32).tolist()


def children() -> set:
    """Pids of this process's children, alive or zombie."""
    me = os.getpid()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        if ppid == me:
            found.add(int(entry))
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))

"""A Python client leaves nothing behind, however it ends: killed (SIGKILL) or interrupted
(SIGINT, an uncaught KeyboardInterrupt) at a random moment while it calls servers over a pipe
and over shared memory. Within a second of its end no process of its run is alive or
stopped, nothing of it holds shared memory, and its stdout and stderr are at end of stream.

The processes of a run are found anywhere in /proc by a tag in their environment, which
every process the client starts inherits (a server re-parented to init is no longer anyone's
child). A few runs each; PEERPIPE_LEFTOVER_RUNS=N makes N (benches/leftovers.sh).
"""

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import peer_exe

CLIENT = Path(__file__).parent / "clients" / "leftover_client.py"
TAG_VAR = "PEERPIPE_LEFTOVER_TAG"
SETTLE = 1.0  # seconds after the client's end for its run to leave nothing
EXIT_LIMIT = 5.0  # seconds for the client to end after its signal


def runs() -> int:
    value = os.environ.get("PEERPIPE_LEFTOVER_RUNS", "")
    return int(value) if value.isdigit() and int(value) > 0 else 3


def tagged(tag: str) -> list:
    """(pid, state, cmdline) of every live or stopped process carrying `tag`."""
    marker = f"{TAG_VAR}={tag}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        state = stat[stat.rindex(b")") + 2 :].split()[0].decode()
        if state not in ("Z", "X"):
            found.append((int(entry), state, cmdline))
    return found


def shared_memory_of(pid: int) -> list:
    held = []
    try:
        with open(f"/proc/{pid}/maps") as f:
            held += [line.strip() for line in f if "memfd:" in line or "/dev/shm/" in line]
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if "memfd:" in target or "/dev/shm/" in target:
                held.append(f"fd {fd}: {target}")
    except OSError:
        pass
    return held


def reader(stream, chunks: list) -> threading.Thread:
    thread = threading.Thread(target=lambda: chunks.append(stream.read()), daemon=True)
    thread.start()
    return thread


def one_run(sig: int, moment: float, tag: str) -> list:
    """Starts the client, ends it with `sig` `moment` seconds after it said `ready`, and
    returns what its run left behind (empty when nothing)."""
    env = dict(os.environ, **{TAG_VAR: tag})
    # `env --default-signal`: SIGINT has its default action when the client starts (and so
    # becomes KeyboardInterrupt) even if this test runs with it ignored, as a background job
    # of a non-interactive shell does.
    client = subprocess.Popen(
        ["env", "--default-signal=INT", sys.executable, str(CLIENT), peer_exe()],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    found = []
    try:
        ready = client.stdout.readline()
        assert ready == b"ready\n", f"the client did not start: {ready!r} {client.stderr.read()!r}"
        out, err = [], []
        threads = [reader(client.stdout, out), reader(client.stderr, err)]
        time.sleep(moment)
        client.send_signal(sig)
        try:
            client.wait(EXIT_LIMIT)
        except subprocess.TimeoutExpired:
            found.append(f"the client did not end within {EXIT_LIMIT} s")
            client.kill()
            client.wait()
        settled = time.monotonic() + SETTLE
        while True:
            left = tagged(tag)
            open_streams = [t for t in threads if t.is_alive()]
            if not left and not open_streams:
                break
            if time.monotonic() >= settled:
                for pid, state, cmdline in left:
                    held = shared_memory_of(pid)
                    found.append(f"pid {pid} (state {state}) {cmdline!r} holding {held}")
                if open_streams:
                    found.append(f"{len(open_streams)} of stdout/stderr still open")
                break
            time.sleep(0.005)
        if sig == signal.SIGINT:
            assert b"KeyboardInterrupt" in b"".join(err), err
        return found
    finally:
        client.kill()
        client.wait()
        for pid, _, _ in tagged(tag):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_a_python_client_ended_at_a_random_moment_leaves_nothing_behind(sig):
    seed = time.time_ns()
    moments = random.Random(seed)
    results = []
    for i in range(runs()):
        results.append(one_run(sig, moments.uniform(0.0, 0.5), f"{os.getpid()}-py-{i}"))
    dirty = [r for r in results if r]
    how = "SIGKILL" if sig == signal.SIGKILL else "KeyboardInterrupt"
    summary = (
        f"leftovers: python-client {how}: {len(results)} runs, {len(dirty)} left something behind"
    )
    print(f"(moments seeded with {seed})\n{summary}")
    assert not dirty, "\n".join([summary, *("  " + "; ".join(r) for r in dirty)])

"""Paired latency of the Python package beside the Rust client and multiprocessing.Pipe.

The figures are in docs/experiments/python-and-c.md. The 2-core KVM guest they were measured
on has slow spells of 2-4x lasting seconds to minutes, and other work shares its 2 cores, so
every comparison is paired: each round runs every condition once, in a random order, with a
few hundred round trips each, and what is reported is the median over rounds of the per-round
ratio or difference, with its min-max. Conditions (500 float64 each way, hybrid wait, pipes):

  py-client   peerpipe.Peer.call(x, out) -> `peer --role server --handler echo`
  rust-client the crate's Peer::call_f64 (examples/echo_rounds) -> the same kind of server
  mp-pipe     multiprocessing.Pipe: send_bytes(x.tobytes()) / recv_bytes + numpy.frombuffer,
              the child converting the same way (benches/python/mp_pipe.py's loop)
  py-server   the Rust client (examples/echo_rounds) -> peerpipe.serve(lambda x: x)

Every time is wall clock around one call, p50 of the round.

    cargo build --release --bin peer --example echo_rounds
    python python/bench/paired.py --rounds 40 --calls 300 [--json out.json]
"""

import argparse
import json
import multiprocessing as mp
import os
import random
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import peerpipe

ROOT = Path(__file__).resolve().parents[2]
N = 500


def mp_echo(conn, cpu):
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    while True:
        data = conn.recv_bytes()
        if not data:
            return
        conn.send_bytes(np.frombuffer(data, dtype="<f8").tobytes())


class RustRounds:
    """examples/echo_rounds: a persistent Rust client that runs a round when asked."""

    def __init__(self, exe, server_command):
        self.proc = subprocess.Popen(
            [exe, server_command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def round(self, calls):
        self.proc.stdin.write(f"{calls}\n")
        self.proc.stdin.flush()
        p50, _min = self.proc.stdout.readline().split()
        return int(p50)

    def close(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


def p50(samples):
    samples.sort()
    return samples[len(samples) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--target", default=str(ROOT / "target" / "release"))
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--json", help="write every round's p50s here")
    parser.add_argument(
        "--pin",
        choices=["split", "free"],
        default="split",
        help="split: every client on CPU 0, every server on CPU 1 (as `peer --pin split`); "
        "free: the scheduler's choice",
    )
    args = parser.parse_args()
    random.seed(args.seed)
    target = Path(args.target)
    peer_exe = str(target / "peer")
    rounds_exe = str(target / "examples" / "echo_rounds")
    split = args.pin == "split"
    server_cpu = 1 if split else None
    if split:
        os.sched_setaffinity(0, {0})  # this process, and echo_rounds which inherits it
    on_server_cpu = "taskset -c 1 " if split else ""
    rust_server = (
        f"{on_server_cpu}{shlex.quote(peer_exe)} --role server --handler echo --wait hybrid"
    )
    py_server = on_server_cpu + " ".join(
        shlex.quote(a)
        for a in [sys.executable, str(ROOT / "python" / "tests" / "servers" / "echo_server.py")]
    )

    # The multiprocessing child first: forked later, it would inherit the pipes of the
    # processes below and keep them from seeing the end of their input.
    parent, child = mp.Pipe()
    proc = mp.Process(target=mp_echo, args=(child, server_cpu))
    proc.start()
    x = np.linspace(-1.0, 1.0, N)
    out = np.empty_like(x)
    peer = peerpipe.Peer.spawn(shlex.split(rust_server), wait="hybrid")
    rust_vs_rust = RustRounds(rounds_exe, rust_server)
    rust_vs_py = RustRounds(rounds_exe, py_server)

    def py_client(calls):
        samples = []
        call, clock = peer.call, time.perf_counter_ns
        for _ in range(calls):
            start = clock()
            call(x, out)
            samples.append(clock() - start)
        return p50(samples)

    def mp_pipe(calls):
        samples = []
        clock = time.perf_counter_ns
        for _ in range(calls):
            start = clock()
            parent.send_bytes(x.astype("<f8").tobytes())
            reply = np.frombuffer(parent.recv_bytes(), dtype="<f8")
            samples.append(clock() - start)
        assert reply[-1] == x[-1]
        return p50(samples)

    conditions = {
        "py-client": py_client,
        "rust-client": rust_vs_rust.round,
        "mp-pipe": mp_pipe,
        "py-server": rust_vs_py.round,
    }
    for run in conditions.values():  # warm-up
        run(args.calls)
    assert out.tobytes() == x.tobytes()

    rounds = []
    started = time.monotonic()
    for _ in range(args.rounds):
        order = list(conditions)
        random.shuffle(order)
        rounds.append({name: conditions[name](args.calls) for name in order})

    elapsed = time.monotonic() - started
    peer.close()
    rust_vs_rust.close()
    rust_vs_py.close()
    parent.send_bytes(b"")
    proc.join()

    def summary(values):
        return statistics.median(values), min(values), max(values)

    def row(label, values, unit):
        med, lo, hi = summary(values)
        fmt = (lambda v: f"{v:.2f}x") if unit == "x" else (lambda v: f"{v / 1000:+.2f} us")
        print(f"{label:58s} median {fmt(med)}  (min {fmt(lo)}, max {fmt(hi)})")

    print(
        f"500 f64, hybrid, pipe, --pin {args.pin}; {args.rounds} rounds x {args.calls} calls per condition, "
        f"random order per round ({elapsed:.1f} s)"
    )
    for name in conditions:
        med, lo, hi = summary([r[name] for r in rounds])
        print(
            f"  p50 {name:12s} median {med / 1000:6.2f} us  (rounds {lo / 1000:.2f}-{hi / 1000:.2f} us)"
        )
    row(
        "py-client / rust-client (target <= 1.5x)",
        [r["py-client"] / r["rust-client"] for r in rounds],
        "x",
    )
    row("mp-pipe / py-client (target >= 8x)", [r["mp-pipe"] / r["py-client"] for r in rounds], "x")
    row(
        "py-server - rust-server, Rust client (target <= +2 us)",
        [r["py-server"] - r["rust-client"] for r in rounds],
        "us",
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rounds": rounds}, indent=1))


if __name__ == "__main__":
    main()

"""A PARTS call from Python beside the same call from Rust, paired.

Each round runs both, in turn (which goes first alternates): `peerpipe.Peer.call_parts("rhs",
t, y, p, out=(out,))` from this process, and the crate's `Peer::call_parts` in
`examples/echo_rounds --parts`, each against its own `examples/parts_cost --serve` (t: 1 f64,
y: 500 f64, p: 8 f64 out, 500 f64 back, auto wait, pipes). Every time is wall clock around one
call, p50 of the round. Printed: the median over rounds of Python / Rust and of Python - Rust,
with their ranges.

    cargo build --release --example echo_rounds --example parts_cost
    python python/bench/parts_pairs.py [--rounds 30] [--calls 2000]
"""

import argparse
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

import peerpipe

ROOT = Path(__file__).resolve().parents[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--target", default=str(ROOT / "target" / "release"))
    args = parser.parse_args()
    if args.rounds < 1 or args.calls < 1:
        parser.error("--rounds and --calls take a number of at least 1")
    examples = Path(args.target) / "examples"
    server = [str(examples / "parts_cost"), "--serve"]
    for path in (examples / "echo_rounds", examples / "parts_cost"):
        if not path.exists():
            parser.error(
                f"{path} is missing: cargo build --release --example echo_rounds --example parts_cost"
            )
    rust = subprocess.Popen(
        [str(examples / "echo_rounds"), " ".join(server), "--parts"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    t, y, p = 0.25, np.arange(500) * 0.5, np.full(8, 1.5)
    out = np.empty(500)
    samples = [0] * args.calls

    def python_round(peer):
        for i in range(args.calls):
            start = time.perf_counter_ns()
            peer.call_parts("rhs", t, y, p, out=(out,))
            samples[i] = time.perf_counter_ns() - start
        return sorted(samples)[args.calls // 2]

    def rust_round():
        rust.stdin.write(f"{args.calls}\n")
        rust.stdin.flush()
        return int(rust.stdout.readline().split()[0])

    try:
        with peerpipe.Peer.spawn(server) as peer:
            python_round(peer)
            rust_round()
            ratios, diffs = [], []
            print("round  python p50  rust p50")
            for r in range(args.rounds):
                if r % 2 == 0:
                    py = python_round(peer)
                    rs = rust_round()
                else:
                    rs = rust_round()
                    py = python_round(peer)
                ratios.append(py / rs)
                diffs.append(py - rs)
                print(f"{r:5} {py:11} {rs:9}")
            assert np.array_equal(out, y), "the reply is the state"
    finally:
        rust.stdin.close()
        rust.wait(timeout=10)
    print(
        f"python / rust median {statistics.median(ratios):.3f} [{min(ratios):.3f}..{max(ratios):.3f}], "
        f"python - rust median {statistics.median(diffs):.0f} ns [{min(diffs)}..{max(diffs)}] "
        f"over {args.rounds} rounds of {args.calls} calls"
    )


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Two builds of peerpipe, A and B, timed against each other in alternating rounds.

Each build's `examples/echo_rounds` (one persistent `Peer`, 500 f64 per call, auto wait, with
the server `peer --role server --handler echo` of the same build) is asked for a round of N
calls in turn (with `--parts`, PARTS calls instead: t, the 500 f64 and 8 parameters to the
function `rhs` of the same build's `examples/parts_cost --serve`) — A B, then B A, ... — so both builds meet the same machine states. Printed: each
round's p50s, then the median over rounds of B / A with its range and of B - A in ns. Exits 2
on a usage error.

    cargo build --release --bin peer --example echo_rounds --example parts_cost            # B
    (cd OTHER && cargo build --release --bin peer --example echo_rounds --example parts_cost)  # A
    python3 benches/ab_echo.py --a OTHER/target/release --b target/release [--rounds 40] \
        [--calls 2000] [--parts]
"""

import argparse
import os
import statistics
import subprocess
import sys


def start(release_dir, parts):
    exe = os.path.join(release_dir, "examples", "echo_rounds")
    if parts:
        server_exe = os.path.join(release_dir, "examples", "parts_cost")
        server, extra = f"{server_exe} --serve", ["--parts"]
    else:
        server_exe = os.path.join(release_dir, "peer")
        server, extra = f"{server_exe} --role server --handler echo", []
    for path in (exe, server_exe):
        if not os.access(path, os.X_OK):
            sys.exit(
                f"ab_echo: {path} is missing: cargo build --release --bin peer "
                "--example echo_rounds --example parts_cost"
            )
    return subprocess.Popen(
        [exe, server, *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )


def round_of(proc, calls):
    proc.stdin.write(f"{calls}\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        sys.exit("ab_echo: echo_rounds ended early")
    p50, _min = line.split()
    return int(p50)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--a", required=True, help="A's release directory (peer, examples/)"
    )
    parser.add_argument("--b", required=True, help="B's release directory")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument(
        "--parts", action="store_true", help="PARTS calls to rhs, not DATA"
    )
    args = parser.parse_args()
    if args.rounds < 1 or args.calls < 1:
        parser.error("--rounds and --calls take a number of at least 1")
    a, b = start(args.a, args.parts), start(args.b, args.parts)
    try:
        round_of(a, 500)  # warm-up
        round_of(b, 500)
        ratios, diffs = [], []
        print("round    A p50    B p50   B / A")
        for r in range(args.rounds):
            if r % 2 == 0:
                pa = round_of(a, args.calls)
                pb = round_of(b, args.calls)
            else:
                pb = round_of(b, args.calls)
                pa = round_of(a, args.calls)
            ratios.append(pb / pa)
            diffs.append(pb - pa)
            print(f"{r:5} {pa:8} {pb:8}  {pb / pa:6.3f}")
        print(
            f"B / A median {statistics.median(ratios):.3f} [{min(ratios):.3f}..{max(ratios):.3f}], "
            f"B - A median {statistics.median(diffs):.0f} ns [{min(diffs)}..{max(diffs)}] "
            f"over {args.rounds} rounds of {args.calls} calls"
        )
    finally:
        for proc in (a, b):
            proc.stdin.close()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()

"""Round trips of 500 float64 through `peer --role server --handler echo`, as a program makes
them: one process, the default options, placed wherever it is started. Prints the p50, p90
and p99 of the round trip and of the overhead (round trip - server time) over CALLS calls.

    PEERPIPE_PEER=target/release/peer python python/bench/echo_calls.py [--calls 10000] [--wait auto]
    PEERPIPE_PEER=target/release/peer taskset -c 0 python python/bench/echo_calls.py   # one core
"""

import argparse
import os
import shutil
import sys

import numpy as np

import peerpipe


def percentile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--wait", default="auto", help="auto (default), block, spin, hybrid[:DUR]")
    args = parser.parse_args()
    if args.calls < 1 or args.n < 1:
        sys.exit("--calls and --n must be at least 1")
    peer = os.environ.get("PEERPIPE_PEER") or shutil.which("peer")
    if not peer:
        sys.exit("no peer binary: build it (cargo build --release) or set PEERPIPE_PEER")

    x = np.linspace(0.0, 1.0, args.n)
    out = np.empty_like(x)
    server = [peer, "--role", "server", "--handler", "echo", "--wait", args.wait]
    round_trips, overheads = [], []
    with peerpipe.Peer.spawn(server, wait=args.wait) as p:
        for _ in range(args.calls):
            p.call(x, out)
            timing = p.last_timing
            round_trips.append(timing.round_trip_ns)
            overheads.append(timing.round_trip_ns - timing.server_ns)
    if not np.array_equal(x, out):
        sys.exit("the echo differs from what was sent")
    round_trips.sort()
    overheads.sort()
    cpus = sorted(os.sched_getaffinity(0))
    print(f"{args.calls} calls of {args.n} float64, wait {args.wait}, CPUs {cpus}:")
    for name, values in (("round trip", round_trips), ("overhead", overheads)):
        p50, p90, p99 = (percentile(values, q) / 1e3 for q in (0.5, 0.9, 0.99))
        print(f"  {name:<10} p50 {p50:8.2f} us  p90 {p90:8.2f} us  p99 {p99:8.2f} us")


if __name__ == "__main__":
    main()

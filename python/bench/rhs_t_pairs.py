"""What sending t costs a solver's call: RemoteRhs with t against RemoteRhs without, paired.

`RemoteRhs(cmd)` sends t, y (and args) to the server's function `rhs` in one PARTS request;
`RemoteRhs(cmd, autonomous=True)` sends y alone as a DATA request, as RemoteRhs did before
it carried t. Each round times `--calls` calls of each, in turn (which goes first alternates),
each through its own `peer --role server --handler lorenz96` (the same Lorenz-96 derivative
either way, F = 8), and takes the p50 of the wall-clock time per call. Printed: per-round
lines, then the median and range over rounds of (with t) − (without), and each one's
`RemoteRhs.stats()` overhead p50 over the run (round trip − the server's time, which includes
the server reading the request's parts and building its reply). The first reply of each is
checked against the other's, bit for bit.

    cargo build --release --bin peer
    PEERPIPE_PEER=target/release/peer python python/bench/rhs_t_pairs.py [--rounds 20] [--calls 2000] [--n 500]
"""

import argparse
import os
import statistics
import time

import numpy as np

import peerpipe


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--n", type=int, default=500, help="state length (at least 4)")
    args = parser.parse_args()
    if args.rounds < 1 or args.calls < 1 or args.n < 4:
        parser.error("--rounds and --calls take at least 1, --n at least 4")
    peer = os.environ.get("PEERPIPE_PEER", "peer")
    server = [peer, "--role", "server", "--handler", "lorenz96"]
    y = np.sin(np.arange(args.n) * 0.1) + 8.0
    samples = [0] * args.calls

    def round_of(rhs, t):
        for i in range(args.calls):
            start = time.perf_counter_ns()
            rhs(t, y)
            samples[i] = time.perf_counter_ns() - start
        return sorted(samples)[args.calls // 2]

    with (
        peerpipe.RemoteRhs(server) as with_t,
        peerpipe.RemoteRhs(server, autonomous=True) as without,
    ):
        assert np.array_equal(with_t(0.5, y), without(0.5, y)), "the same derivative either way"
        round_of(with_t, 0.5)
        round_of(without, 0.5)
        diffs = []
        print("round  with t  without  (p50 ns per call)")
        for r in range(args.rounds):
            if r % 2 == 0:
                a = round_of(with_t, 0.5)
                b = round_of(without, 0.5)
            else:
                b = round_of(without, 0.5)
                a = round_of(with_t, 0.5)
            diffs.append(a - b)
            print(f"{r:5} {a:7} {b:8}")
        # RemoteRhs's own overhead (round trip - the server's time, which includes reading the
        # request's parts and building the reply), over every call of the run.
        stats = [rhs.stats() for rhs in (with_t, without)]
    overheads = [s["overhead_p50_ns"] for s in stats]
    print(
        f"with t - without, median {statistics.median(diffs):.0f} ns "
        f"[{min(diffs)}..{max(diffs)}] over {args.rounds} rounds of {args.calls} calls"
    )
    print(
        f"RemoteRhs.stats() overhead p50 over the run: with t {overheads[0]} ns, without "
        f"{overheads[1]} ns, difference {overheads[0] - overheads[1]} ns"
    )


if __name__ == "__main__":
    main()

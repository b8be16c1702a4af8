"""Python servers of two builds, paired: `serve_ode` and `serve` of this build against an earlier one.

One client (this build's package) holds four connections: to `peerpipe.serve_ode(fun)` and to
`peerpipe.serve(handler)`, each started once with the earlier build's package (found on
`--base-pythonpath`) and once with this build's, both returning -y for a 500-f64 y. Rounds of
`--calls` calls alternate between the two builds of each server (which goes first alternates);
per round the p50 per call of each. Printed: each server's medians and the median and range
over rounds of (this build) − (the earlier one), and the `serve_ode` servers' mean time per
call as `RemoteRhs.stats()` reports it. The replies are checked equal first.

    git worktree add ../base <commit> && (cd ../base/python && cargo build --release)
    mkdir -p /tmp/base/peerpipe && cp ../base/python/peerpipe/*.py /tmp/base/peerpipe/ &&
      cp ../base/python/target/release/lib_peerpipe.so /tmp/base/peerpipe/_peerpipe.abi3.so
    python python/bench/server_ab.py --base-pythonpath /tmp/base [--rounds 20] [--calls 2000]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import peerpipe

SERVE_ODE = "import peerpipe; peerpipe.serve_ode(lambda t, y: -y)"
SERVE = "import peerpipe; peerpipe.serve(lambda x: -x)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base-pythonpath",
        required=True,
        help="folder holding the earlier build's peerpipe package",
    )
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    if args.rounds < 1 or args.calls < 1:
        parser.error("--rounds and --calls take at least 1")
    this_build = str(Path(peerpipe.__file__).resolve().parents[1])

    def server(pythonpath, code):
        return ["env", f"PYTHONPATH={pythonpath}", sys.executable, "-c", code]

    y = np.sin(np.arange(500) * 0.1)
    samples = [0] * args.calls

    def round_of(call):
        for i in range(args.calls):
            start = time.perf_counter_ns()
            call()
            samples[i] = time.perf_counter_ns() - start
        return sorted(samples)[args.calls // 2]

    with (
        peerpipe.RemoteRhs(server(args.base_pythonpath, SERVE_ODE)) as ode_base,
        peerpipe.RemoteRhs(server(this_build, SERVE_ODE)) as ode_new,
        peerpipe.Peer.spawn(server(args.base_pythonpath, SERVE)) as data_base,
        peerpipe.Peer.spawn(server(this_build, SERVE)) as data_new,
    ):
        assert np.array_equal(ode_base(0.5, y), ode_new(0.5, y)), "the same derivative"
        assert np.array_equal(data_base.call(y), data_new.call(y)), "the same reply"
        pairs = {
            "serve_ode rhs": (lambda: ode_base(0.5, y), lambda: ode_new(0.5, y)),
            "serve handler": (lambda: data_base.call(y), lambda: data_new.call(y)),
        }
        results = {name: [] for name in pairs}
        for r in range(args.rounds):
            for name, (base, new) in pairs.items():
                if r % 2 == 0:
                    b, n = round_of(base), round_of(new)
                else:
                    n, b = round_of(new), round_of(base)
                results[name].append((b, n))
        stats = [rhs.stats() for rhs in (ode_base, ode_new)]
    print(f"{args.rounds} rounds of {args.calls} calls, p50 ns per call")
    for name, rounds in results.items():
        diffs = [n - b for b, n in rounds]
        print(
            f"{name}: earlier build {statistics.median(b for b, _ in rounds):.0f}, this build "
            f"{statistics.median(n for _, n in rounds):.0f}, this - earlier median "
            f"{statistics.median(diffs):.0f} [{min(diffs)}..{max(diffs)}]"
        )
    server_ns = [s["server_ns_total"] // s["calls"] for s in stats]
    print(
        f"serve_ode server time per call (mean): earlier build {server_ns[0]} ns, this build {server_ns[1]} ns"
    )


if __name__ == "__main__":
    main()

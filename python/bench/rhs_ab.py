"""A solver's call against an earlier release: RemoteRhs of two builds, paired, in rounds.

Each arm is a process of its own holding one `RemoteRhs` to its own
`peer --role server --handler lorenz96` (the same Lorenz-96 derivative, F = 8):

- `with t`: this build's `RemoteRhs(cmd)(t, y)`, t and y in one PARTS request;
- `without t`: this build's `RemoteRhs(cmd, autonomous=True)(t, y)`, y alone as DATA;
- `base`: the earlier build's `RemoteRhs(cmd)(t, y)` — its `peerpipe` package found on
  `--base-pythonpath`, its server `--base-peer` — for a build from before RemoteRhs carried t
  (y alone as DATA), the call a user had then.

The arms take turns, one round of `--calls` calls each, the order rotating every round, so
that every arm meets the same machine states; an arm that is not timing waits on its stdin.
Per round, each arm's p50 of the wall-clock time per call; printed, the median and range over
rounds of the differences, and each arm's `RemoteRhs.stats()` overhead p50 (round trip − the
server's time) over its whole run. The arms' first replies are checked bit for bit.

    cargo build --release --bin peer             # this build's server
    git worktree add ../base <commit>             # the earlier build, with its server and package
    (cd ../base && cargo build --release --bin peer && cd python && cargo build --release)
    mkdir -p /tmp/base/peerpipe && cp ../base/python/peerpipe/*.py /tmp/base/peerpipe/ &&
      cp ../base/python/target/release/lib_peerpipe.so /tmp/base/peerpipe/_peerpipe.abi3.so
    PEERPIPE_PEER=target/release/peer python python/bench/rhs_ab.py \\
        --base-pythonpath /tmp/base --base-peer ../base/target/release/peer \\
        [--rounds 20] [--placement free|same|split]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

WORKER = r"""
import json, os, sys, time
import numpy as np
import peerpipe

peer, arm, calls, n, placement = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
server = [peer, "--role", "server", "--handler", "lorenz96"]
# The server inherits the mask this process has when it starts it.
if placement != "free":
    os.sched_setaffinity(0, {1 if placement == "split" else 0})
rhs = peerpipe.RemoteRhs(server, autonomous=True) if arm == "without" else peerpipe.RemoteRhs(server)
if placement == "split":
    os.sched_setaffinity(0, {0})
y = np.sin(np.arange(n) * 0.1) + 8.0
samples = [0] * calls
print(json.dumps({"first": rhs(0.5, y).tolist()}), flush=True)
for line in sys.stdin:
    if line.strip() != "round":
        break
    for i in range(calls):
        start = time.perf_counter_ns()
        rhs(0.5, y)
        samples[i] = time.perf_counter_ns() - start
    print(json.dumps({"p50": sorted(samples)[calls // 2]}), flush=True)
print(json.dumps({"overhead_p50": rhs.stats()["overhead_p50_ns"]}), flush=True)
rhs.close()
"""


class Arm:
    """One arm's worker process, fed a line per round."""

    def __init__(self, name, pythonpath, peer, calls, n, placement):
        env = dict(os.environ)
        if pythonpath is not None:
            env["PYTHONPATH"] = pythonpath
        self.name = name
        self.p50s = []
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, peer, name, str(calls), str(n), placement],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.first = self.read()["first"]

    def read(self):
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"arm {self.name!r} ended early (exit {self.process.wait()})")
        return json.loads(line)

    def round(self):
        self.process.stdin.write("round\n")
        self.process.stdin.flush()
        self.p50s.append(self.read()["p50"])

    def finish(self):
        self.process.stdin.write("done\n")
        self.process.stdin.flush()
        overhead = self.read()["overhead_p50"]
        self.process.stdin.close()
        self.process.wait(timeout=30)
        return overhead

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def spread(values):
    return f"median {statistics.median(values):.0f} ns [{min(values)}..{max(values)}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base-pythonpath", required=True, help="folder holding the base build's peerpipe package"
    )
    parser.add_argument("--base-peer", required=True, help="the base build's peer binary")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--n", type=int, default=500, help="state length (at least 4)")
    parser.add_argument(
        "--placement",
        choices=("free", "same", "split"),
        default="free",
        help="free: the scheduler's choice; same: every client and server on CPU 0; "
        "split: clients on CPU 0, servers on CPU 1",
    )
    args = parser.parse_args()
    if args.rounds < 1 or args.calls < 1 or args.n < 4:
        parser.error("--rounds and --calls take at least 1, --n at least 4")
    peer = os.environ.get("PEERPIPE_PEER", "peer")
    arms = []
    try:
        for name, pythonpath, server in (
            ("with_t", None, peer),
            ("without", None, peer),
            ("base", args.base_pythonpath, args.base_peer),
        ):
            arms.append(Arm(name, pythonpath, server, args.calls, args.n, args.placement))
        if any(arm.first != arms[0].first for arm in arms):
            raise SystemExit("the arms' derivatives differ: not the same model")
        for arm in arms:  # a warm-up round each, not counted
            arm.round()
            arm.p50s.clear()
        print("round  with t  without     base  (p50 ns per call)")
        for r in range(args.rounds):
            for k in range(len(arms)):
                arms[(r + k) % len(arms)].round()
            print(f"{r:5} {arms[0].p50s[-1]:7} {arms[1].p50s[-1]:8} {arms[2].p50s[-1]:8}")
        overheads = [arm.finish() for arm in arms]
    finally:
        for arm in arms:
            arm.kill()
    with_t, without, base = (arm.p50s for arm in arms)
    rounds = f"over {args.rounds} rounds of {args.calls} calls"
    print(f"with t - base:    {spread([a - b for a, b in zip(with_t, base)])} {rounds}")
    print(f"with t - without: {spread([a - b for a, b in zip(with_t, without)])}")
    print(f"without - base:   {spread([a - b for a, b in zip(without, base)])}")
    print(
        f"RemoteRhs.stats() overhead p50 over the run: with t {overheads[0]} ns, without "
        f"{overheads[1]} ns, base {overheads[2]} ns; with t - base {overheads[0] - overheads[2]} ns"
    )


if __name__ == "__main__":
    main()

"""SciPy's solve_ivp on Lorenz-96 through RemoteRhs, one wait strategy against another, in pairs.

A solve with its right-hand side in a `peer` server makes ~540 calls in ~15 ms. On a virtual
machine whose CPUs have slower spells, from tens of milliseconds to minutes long, two runs of
the same program a second apart can read 2.5 us and 7 us with nothing changed, so a spread
across separate runs says as much about the machine as about the wait. Here every round solves the same problem once per
wait, in a random order, moments apart, each through a RemoteRhs of its own (its own server,
learning from nothing, as a fresh program's would). The last wait of --waits is the reference
(spin, by default: both sides spinning, the best any wait does on two idle CPUs); the rounds
whose reference lies within 1.5x of its fastest round, as it does in the rounds on either side
(a round beside a slower one may straddle the change), are the main state, and the first
wait's spread is judged there. Every solve is checked bit-identical to a local one.

    PEERPIPE_PEER=target/release/peer python python/bench/solve_ivp_pairs.py \
        [--rounds 30] [--waits auto,spin] [--method RK45] [--n 500] [--t-end 2.0] [--json out.json]

Prints each round's overhead p50 (round trip - server time) per wait, then per wait its range
over all rounds and over the main state, the median per-round ratio of the first wait to the
reference, and the remote solve's time over the local one's (a local solve with a numpy
right-hand side runs in every round too, in the same random order). Exits 1 if a solve was not
bit-identical.
"""

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import peerpipe

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from lorenz96_solve_ivp import F, local_rhs  # noqa: E402

MAIN_STATE = 1.5


def spread(values):
    if not values:
        return "no rounds"
    low, high = min(values), max(values)
    return f"{low:.2f}-{high:.2f} us (max / min {high / low:.2f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--waits", default="auto,spin", help="two or more, the reference last")
    parser.add_argument("--method", default="RK45", choices=["RK45", "BDF"])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--t-end", type=float, default=2.0)
    parser.add_argument("--json", help="write every round's figures here")
    args = parser.parse_args()
    waits = args.waits.split(",")
    if len(waits) < 2 or len(set(waits)) != len(waits):
        sys.exit("--waits: give two or more different waits, the reference last")
    if args.rounds < 1 or args.n < 4:
        sys.exit("--rounds must be at least 1 and --n at least 4")
    peer = os.environ.get("PEERPIPE_PEER") or shutil.which("peer")
    if not peer:
        sys.exit("no peer binary: build it (cargo build --release) or set PEERPIPE_PEER")

    y0 = np.full(args.n, F)
    y0[0] += 0.01
    t_span = (0.0, args.t_end)
    options = dict(method=args.method, t_eval=np.linspace(*t_span, 51), rtol=1e-6, atol=1e-9)
    local = solve_ivp(local_rhs, t_span, y0, **options)

    def timed(fun):
        started = time.perf_counter()
        solution = solve_ivp(fun, t_span, y0, **options)
        return solution, time.perf_counter() - started

    rounds = []
    print("round " + " ".join(f"{w:>8}" for w in waits) + "   (overhead p50, us)")
    for index in range(args.rounds):
        row = {}
        for wait in random.sample(waits + ["local"], len(waits) + 1):
            if wait == "local":
                row["local_s"] = timed(local_rhs)[1]
                continue
            server = [peer, "--role", "server", "--handler", "lorenz96", "--wait", wait]
            try:
                remote_rhs = peerpipe.RemoteRhs(server, wait=wait)
            except ValueError as e:
                sys.exit(f"--waits: {e}")
            with remote_rhs as fun:
                remote, seconds = timed(fun)
                stats = fun.stats()
            if remote.y.tobytes() != local.y.tobytes():
                sys.exit(f"round {index + 1}, wait {wait}: the solve is not bit-identical")
            row[wait] = {
                "p50_us": stats["overhead_p50_ns"] / 1e3,
                "p99_us": stats["overhead_p99_ns"] / 1e3,
                "calls": stats["calls"],
                "solve_s": seconds,
            }
        rounds.append(row)
        print(f"{index + 1:5} " + " ".join(f"{row[w]['p50_us']:8.2f}" for w in waits), flush=True)

    reference = waits[-1]
    p50 = {w: [row[w]["p50_us"] for row in rounds] for w in waits}
    fastest = min(p50[reference])
    calm = [value <= MAIN_STATE * fastest for value in p50[reference]]
    # A state can change between two solves of one round: a round beside one out of the main
    # state may straddle the change, and is left out with it.
    main_rounds = [i for i in range(len(calm)) if all(calm[max(i - 1, 0) : i + 2])]
    print(
        f"\n{args.method}, n = {args.n}, {args.rounds} rounds; main state: {len(main_rounds)} "
        f"rounds, where {reference} lay within {MAIN_STATE}x of its fastest, as in the rounds "
        f"beside them"
    )
    for wait in waits:
        in_main = [p50[wait][i] for i in main_rounds]
        print(f"  {wait:>8}: all rounds {spread(p50[wait])}; main state {spread(in_main)}")
    for wait in waits[:-1]:
        ratios = [a / b for a, b in zip(p50[wait], p50[reference])]
        print(
            f"  {wait} / {reference} per round: median {statistics.median(ratios):.2f}, "
            f"{min(ratios):.2f}-{max(ratios):.2f}"
        )
    for wait in waits:
        ratios = [row[wait]["solve_s"] / row["local_s"] for row in rounds]
        print(
            f"  {wait:>8}: remote solve / local solve {min(ratios):.2f}-{max(ratios):.2f} "
            f"(median {statistics.median(ratios):.2f})"
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(
                {
                    "method": args.method,
                    "n": args.n,
                    "waits": waits,
                    "main_state": main_rounds,
                    "rounds": rounds,
                },
                out,
            )


if __name__ == "__main__":
    main()

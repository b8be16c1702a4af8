"""Two models stepping together: a heat rod of 2 x CELLS cells (explicit Euler, the left end
held at 1, the right at 0), the left half in this process, the right half in a server that is
this script too (``--serve``, a ``peerpipe.Session`` loop). Each step the client calls
``exchange`` with its last cell and gets the server's first; the server replies before it
steps, so both halves compute at the same time. At the end the client calls ``state`` with its
half and gets the server's, and the whole rod is checked bit for bit against the same rod
stepped in one process.

    python python/examples/heat_rod.py [--cells 100] [--steps 10000] [--blocks 10] [--wait auto]
        [--placement free|same|split]

Between blocks of steps it times as many ``ping`` calls (the same exchange, neither side
computing) and as many steps of a copy of this half while the server is idle, so that a step,
the bare round trip and the half computed alone meet the same machine states. Printed, every
figure a p50 (the median over steps): a split step and its two parts here (the exchange, then
this half's compute), this half computed alone, the server's half, the bare round trip, one
process stepping the whole rod, whether a split step stays within the slower half's compute
+ 1.3 x the bare round trip, and the whole rod's compute per step above which splitting it in
two pays on this machine (twice the exchange: a split step costs the exchange and half the
compute, one process the whole compute); a JSON line ends the output. Exits 1 unless
bit-identical.
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import peerpipe

R = 0.25  # the diffusion number: stable for explicit Euler below 0.5
LEFT_END, RIGHT_END = 1.0, 0.0


class Rod:
    """Cells stepped by explicit Euler in buffers of their own (no array made per step)."""

    def __init__(self, u):
        self.u = u
        self.padded = np.empty(len(u) + 2)
        self.work = np.empty(len(u))

    def step(self, left, right):
        """One step with ``left`` and ``right`` the cells beside these: u + R (l - 2u + r),
        the same operations in the same order for a cell wherever the rod is split."""
        p, w = self.padded, self.work
        p[0], p[1:-1], p[-1] = left, self.u, right
        np.multiply(p[1:-1], 2.0, out=w)
        np.subtract(p[:-2], w, out=w)
        np.add(w, p[2:], out=w)
        np.multiply(w, R, out=w)
        np.add(p[1:-1], w, out=self.u)


def initial(first, n):
    return np.abs(np.sin(np.arange(first, first + n, dtype=np.float64) * 0.37))


def serve(cells, wait):
    """The right half: reply first, step after."""
    rod = Rod(initial(cells, cells))
    u = rod.u
    computes = []
    with peerpipe.Session(
        ["exchange", "ping", "state"], name="heat-rod-right", wait=wait
    ) as session:
        while (call := session.recv()) is not None:
            function, parts = call
            if function == "exchange":
                session.reply(u[:1])
                started = time.perf_counter_ns()
                rod.step(parts[0][0], RIGHT_END)
                computes.append(time.perf_counter_ns() - started)
            elif function == "ping":
                session.reply(u[:1])
            else:  # "state": the client's half came with it; ours and our timing go back
                p50 = int(statistics.median(computes)) if computes else 0
                session.reply(u, np.array([p50, len(computes)], dtype=np.int64))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=100)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--wait", default="auto")
    parser.add_argument(
        "--placement",
        choices=["free", "same", "split"],
        default="free",
        help="same: both on CPU 0; split: this process on CPU 0, the server on CPU 1; free: the scheduler's choice",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cells < 2 or args.blocks < 1 or args.steps < args.blocks:
        parser.error("--cells takes at least 2, --blocks at least 1, --steps at least --blocks")
    if args.serve:
        serve(args.cells, args.wait)
        return 0

    n = args.cells
    server = [sys.executable, __file__, "--serve", "--cells", str(n), "--wait", args.wait]
    if args.placement != "free":
        os.sched_setaffinity(0, {0})
    if args.placement == "split":
        server = ["taskset", "-c", "1", *server]
    rod, theirs, edge = Rod(initial(0, n)), np.empty(1), np.empty(1)
    u = rod.u
    scratch = Rod(u.copy())  # this half stepped alone, between blocks: the rod is not touched
    steps, exchanges, computes, pings, alone_half = [], [], [], [], []
    clock = time.perf_counter_ns
    with peerpipe.Peer.spawn(server, wait=args.wait) as peer:
        done = 0
        for block in range(args.blocks):
            count = args.steps - done if block + 1 == args.blocks else args.steps // args.blocks
            for _ in range(count):
                started = clock()
                peer.call_parts("exchange", u[-1:], out=(theirs,))
                exchanged = clock()
                rod.step(LEFT_END, theirs[0])
                stepped = clock()
                steps.append(stepped - started)
                exchanges.append(exchanged - started)
                computes.append(stepped - exchanged)
            done += count
            for _ in range(count):
                started = clock()
                peer.call_parts("ping", u[-1:], out=(edge,))
                pings.append(clock() - started)
            for _ in range(count):
                started = clock()
                scratch.step(LEFT_END, edge[0])
                alone_half.append(clock() - started)
        right, (server_compute_ns, server_steps) = peer.call_parts("state", u)

    whole, alone = Rod(initial(0, 2 * n)), []
    for _ in range(args.steps):
        started = clock()
        whole.step(LEFT_END, RIGHT_END)
        alone.append(clock() - started)
    identical = bool(
        np.array_equal(whole.u.view(np.uint64), np.concatenate((u, right)).view(np.uint64))
    )
    if server_steps != args.steps:
        print(
            f"heat_rod: the server stepped {server_steps} times, not {args.steps}", file=sys.stderr
        )
        return 1

    figures = {
        "cells": n,
        "steps": args.steps,
        "wait": args.wait,
        "placement": args.placement,
        "identical": identical,
        "step_p50_ns": int(statistics.median(steps)),
        "exchange_p50_ns": int(statistics.median(exchanges)),
        "compute_p50_ns": int(statistics.median(computes)),
        "compute_alone_p50_ns": int(statistics.median(alone_half)),
        "server_compute_p50_ns": int(server_compute_ns),
        "ping_p50_ns": int(statistics.median(pings)),
        "one_process_p50_ns": int(statistics.median(alone)),
    }
    f = figures
    # A split step costs the exchange plus this half's compute, one process the whole rod's:
    # with the halves computing at once, splitting pays once the whole rod's compute per step
    # (2 x a half's) exceeds 2 x the exchange.
    f["split_pays_above_ns"] = 2 * f["exchange_p50_ns"]
    f["split_pays"] = f["step_p50_ns"] < f["one_process_p50_ns"]
    bound = max(f["compute_p50_ns"], f["server_compute_p50_ns"]) + 1.3 * f["ping_p50_ns"]
    f["within"] = f["step_p50_ns"] <= bound
    us = lambda ns: f"{ns / 1000:7.1f} us"  # noqa: E731
    slower = f["compute_p50_ns"] / max(f["compute_alone_p50_ns"], 1)
    print(
        f"heat rod, 2 x {n} cells, {args.steps} steps ({args.placement}, wait {args.wait}), "
        f"p50s over steps: bit-identical to one process: {identical}"
    )
    print(f"  split step            {us(f['step_p50_ns'])}  = exchange + this half's compute:")
    print(
        f"    exchange            {us(f['exchange_p50_ns'])}  the call: send our edge, get theirs "
        f"(the server replies first, then steps)"
    )
    print(
        f"    compute here        {us(f['compute_p50_ns'])}  this half's step, right after the "
        f"exchange, while the server steps its half"
    )
    print(
        f"  this half alone       {us(f['compute_alone_p50_ns'])}  the same step with the server "
        f"idle: beside the server's step it took {slower:.1f}x as long"
    )
    print(
        f"  server's half         {us(f['server_compute_p50_ns'])}  its step, hidden while this "
        f"side computes too"
    )
    print(f"  bare round trip       {us(f['ping_p50_ns'])}  the same call, neither side computing")
    print(
        f"  slower half + 1.3 x bare round trip {bound / 1000:.1f} us: the split step is "
        + ("within it" if f["within"] else "over it")
    )
    half = f["compute_alone_p50_ns"] / max(f["one_process_p50_ns"], 1)
    print(
        f"  one process           {us(f['one_process_p50_ns'])}  the whole rod's step (half the "
        f"cells alone took {half:.0%} of it"
        + ("; a step's fixed cost, five numpy calls, outweighs its cells)" if half > 0.7 else ")")
    )
    print(
        f"  splitting pays above  {us(f['split_pays_above_ns'])}  of one process's step: 2 x the "
        f"exchange, if each half computes as fast beside the other as alone"
    )
    print(
        f"  here                  {us(f['one_process_p50_ns'])}  "
        + ("the split is faster" if f["split_pays"] else "one process is faster")
    )
    print(json.dumps(figures))
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())

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
computing), so that a step and the bare round trip meet the same machine states. Printed: the
step p50, its exchange and compute parts here, the server's compute per step, the bare round
trip p50, one process's step, and whether a step stays within the slower half's compute + 1.3 x
the bare round trip; a JSON line ends the output. Exits 1 unless bit-identical.
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
    compute_ns = steps = 0
    with peerpipe.Session(
        ["exchange", "ping", "state"], name="heat-rod-right", wait=wait
    ) as session:
        while (call := session.recv()) is not None:
            function, parts = call
            if function == "exchange":
                session.reply(u[:1])
                started = time.perf_counter_ns()
                rod.step(parts[0][0], RIGHT_END)
                compute_ns += time.perf_counter_ns() - started
                steps += 1
            elif function == "ping":
                session.reply(u[:1])
            else:  # "state": the client's half came with it; ours and our timing go back
                session.reply(u, np.array([compute_ns, steps], dtype=np.int64))


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
    steps, exchanges, computes, pings = [], [], [], []
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
        "server_compute_ns": int(server_compute_ns // max(server_steps, 1)),
        "ping_p50_ns": int(statistics.median(pings)),
        "one_process_ns": int(statistics.median(alone)),
    }
    bound = (
        max(figures["compute_p50_ns"], figures["server_compute_ns"]) + 1.3 * figures["ping_p50_ns"]
    )
    figures["within"] = figures["step_p50_ns"] <= bound
    f = figures
    print(
        f"heat rod, 2 x {n} cells, {args.steps} steps ({args.placement}, wait {args.wait}): bit-identical to one process: {identical}"
    )
    print(
        f"  per step p50 {f['step_p50_ns']} ns: exchange {f['exchange_p50_ns']} ns "
        f"({100 * f['exchange_p50_ns'] / f['step_p50_ns']:.0f} %), compute here {f['compute_p50_ns']} ns; "
        f"the server's compute {f['server_compute_ns']} ns per step (mean)"
    )
    print(
        f"  bare round trip (ping) p50 {f['ping_p50_ns']} ns; one process: {f['one_process_ns']} ns per step; "
        f"slower half + 1.3 x bare = {bound:.0f} ns: {'within' if f['within'] else 'over'}"
    )
    print(json.dumps(figures))
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())

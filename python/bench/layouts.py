"""What an input's layout costs `Peer.call`: a 500-f64 x contiguous, strided (every other
element of 1,000) and as a field of a structured array (a stride of 12 bytes, unaligned), each
echoed by `peer --role server --handler echo`. The two non-contiguous ones are copied once before
the call. Blocks of `--calls` calls rotate between the three layouts, `--rounds` times; printed:
each layout's median time per call over the blocks, and the median over rounds of (layout) −
(contiguous) in the same round. Each layout's reply is compared bit for bit with x first, and
one that differs is named (a build before the strided copy sent a field's bytes as if they were
contiguous).

    python python/bench/layouts.py [--rounds 15] [--calls 2000]

Two builds compare by running it alternately with each build's package first on PYTHONPATH
(see server_ab.py for how to lay an earlier build's package out).
"""

import argparse
import statistics
import time

import numpy as np

import peerpipe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()

    n = 500
    every_other = np.random.default_rng(1).standard_normal(2 * n)[::2]
    record = np.zeros(n, dtype=[("value", "f8"), ("flag", "i4")])
    record["value"] = every_other
    layouts = {
        "contiguous": np.ascontiguousarray(every_other),
        "strided": every_other,
        "field": record["value"],
    }
    out = np.empty(n)
    per_call = {name: [] for name in layouts}
    wrong = []
    with peerpipe.Peer.spawn_server("peer", "echo") as peer:
        for name, x in layouts.items():
            peer.call(x, out)
            if out.tobytes() != layouts["contiguous"].tobytes():
                wrong.append(name)
        for _ in range(args.calls):
            peer.call(layouts["contiguous"], out)
        for _ in range(args.rounds):
            for name, x in layouts.items():
                start = time.perf_counter_ns()
                for _ in range(args.calls):
                    peer.call(x, out)
                per_call[name].append((time.perf_counter_ns() - start) / args.calls)
    contiguous = per_call["contiguous"]
    line = [f"{peerpipe.__file__}:"]
    for name, times in per_call.items():
        line.append(f"{name} {statistics.median(times):.0f} ns")
        if name != "contiguous":
            added = [t - c for t, c in zip(times, contiguous, strict=True)]
            line.append(f"(+{statistics.median(added):.0f})")
    if wrong:
        line.append(f"WRONG REPLIES: {', '.join(wrong)}")
    print(" ".join(line))


if __name__ == "__main__":
    main()

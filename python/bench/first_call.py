"""The first call to a freshly spawned Python server against its second, over many spawns.

A server started with `peerpipe.serve(lambda y: -K * y)` (and one with `peerpipe.serve_ode`,
its `rhs(t, y)` the same) is spawned `--spawns` times; after each spawn returns, its first call
and its second call of `--n` float64 are timed on this side (wall clock around the call), and
the server closed. A second line per server shows the same calls outside the server's handler:
each call's round trip minus the server's own time (the reply's), so without the model's run,
which is slower the first time (Python specialises code as it runs it, numpy caches its
choices) and which no server can warm without calling the model. With `--gap-ms G` this side sleeps G ms before each of the two calls, so that
the second, too, finds both processes idle (as a first call does: the spawn's return wakes this
side, and the server has stopped spinning for a request by then); without it, the second call
follows the first at once, both sides still spinning. Printed per server: the median and range over spawns of the first call, of
the second, and of first / second. With `--c-client PATH` (capi/examples/python_model.c, built
against libpeerpipe), that program is run `--spawns` times too: it spawns the same `serve`
model with `pp_spawn` and prints its first and second call's round trips.

    python python/bench/first_call.py [--spawns 10] [--n 200] [--gap-ms 0] [--c-client ./python_model]
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import peerpipe

SERVE = "import peerpipe; K = 2.0; peerpipe.serve(lambda y: -K * y)"
SERVE_ODE = "import peerpipe; K = 2.0; peerpipe.serve_ode(lambda t, y: -K * y)"
MODEL_PY = Path(__file__).resolve().parents[2] / "capi" / "examples" / "model.py"


def timed(call, outside=None, timing=None):
    """The wall-clock time of `call`; with `outside` (a list) and `timing` (the caller's
    `last_timing` after the call), also appends the call's round trip minus the server's own
    time: what the call paid outside the server's handler."""
    start = time.perf_counter_ns()
    call()
    took = time.perf_counter_ns() - start
    if outside is not None:
        last = timing()
        outside.append(last.round_trip_ns - last.server_ns)
    return took


def idle(gap_ms):
    if gap_ms > 0:
        time.sleep(gap_ms / 1000)


def serve_pair(n, gap_ms, outside):
    y, out = np.linspace(0.0, 1.0, n), np.empty(n)
    with peerpipe.Peer.spawn([sys.executable, "-c", SERVE]) as peer:
        pair = []
        for _ in range(2):
            idle(gap_ms)
            pair.append(
                timed(lambda: peer.call(y, out), pair_outside := [], lambda: peer.last_timing)
            )
            outside.append(pair_outside[0])
    assert np.array_equal(out, -2.0 * y)
    return pair[0], pair[1]


def serve_ode_pair(n, gap_ms, outside):
    y = np.linspace(0.0, 1.0, n)
    with peerpipe.RemoteRhs([sys.executable, "-c", SERVE_ODE]) as rhs:
        pair = []
        for _ in range(2):
            idle(gap_ms)
            pair.append(timed(lambda: rhs(0.0, y), pair_outside := [], lambda: rhs.last_timing))
            outside.append(pair_outside[0])
        assert np.array_equal(rhs(0.0, y), -2.0 * y)
    return pair[0], pair[1]


def c_pair(client):
    def run():
        return subprocess.run(
            [client, sys.executable, str(MODEL_PY)], capture_output=True, text=True, check=True
        )

    done = run()
    figures = {}
    for line in done.stdout.splitlines():
        words = line.split()
        if len(words) == 4 and words[1] == "call" and words[3] == "ns":
            figures[words[0]] = int(words[2])
    if set(figures) != {"first", "second"}:
        sys.exit(f"{client} printed no 'first call N ns' and 'second call N ns':\n{done.stdout}")
    return figures["first"], figures["second"]


def summary(name, pairs, outside=None):
    """Prints the first and second calls (wall clock) and their ratio; with `outside` (each
    spawn's first and second call's round trip minus the server's time, in turn), the same
    for what the calls paid outside the server's handler."""

    def show(values, unit):
        return f"{statistics.median(values):.3f}{unit} [{min(values):.3f}-{max(values):.3f}]"

    def line(label, pairs):
        firsts = [f / 1e6 for f, _ in pairs]
        seconds = [s / 1e6 for _, s in pairs]
        ratios = [f / s for f, s in pairs]
        print(
            f"{label:<22} first {show(firsts, ' ms')}  second {show(seconds, ' ms')}  "
            f"first/second {show(ratios, 'x')}"
        )

    line(name, pairs)
    if outside:
        line(f"{name} outside handler", list(zip(outside[0::2], outside[1::2])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=10)
    parser.add_argument("--n", type=int, default=200, help="float64 per call")
    parser.add_argument(
        "--gap-ms",
        type=float,
        default=0.0,
        help="sleep before each timed call (not with --c-client)",
    )
    parser.add_argument("--c-client", help="capi/examples/python_model.c, built")
    args = parser.parse_args()
    if args.spawns < 1 or args.n < 1 or args.gap_ms < 0:
        parser.error("--spawns and --n take at least 1, --gap-ms at least 0")
    if args.gap_ms > 0 and args.c_client:
        parser.error("--gap-ms idles the Python clients only: the C client calls back to back")
    print(
        f"{args.spawns} spawns, {args.n} float64, {args.gap_ms:g} ms idle before each call; "
        "median [min-max] over spawns"
    )
    outside = []
    summary(
        "serve", [serve_pair(args.n, args.gap_ms, outside) for _ in range(args.spawns)], outside
    )
    outside = []
    pairs = [serve_ode_pair(args.n, args.gap_ms, outside) for _ in range(args.spawns)]
    summary("serve_ode", pairs, outside)
    if args.c_client:
        summary("C pp_spawn", [c_pair(args.c_client) for _ in range(args.spawns)])


if __name__ == "__main__":
    main()

"""SciPy's solve_ivp (RK45, or BDF with --method BDF) on Lorenz-96, n = 500, with the right-hand side computed by
`peer --role server --handler lorenz96` in another process, against the same integration
with a local numpy right-hand side evaluated in the server's order. The two trajectories must
be bit-identical; the overhead per call of going remote is printed.

The forcing F is a parameter, passed as SciPy passes parameters: `solve_ivp(fun, ...,
args=(F,))` calls `fun(t, y, F)`, and RemoteRhs sends t, y and F to the server's function
`rhs(t, y, F)` in every call -- nothing is left out (Lorenz-96 does not depend on t; a model
that does gets it).

    PEERPIPE_PEER=target/release/peer python python/examples/lorenz96_solve_ivp.py [--n 500] [--t-end 2.0]
    PEERPIPE_PEER=target/release/peer python python/examples/lorenz96_solve_ivp.py --method BDF --n 200 --t-end 0.5

BDF, a stiff solver, estimates its Jacobian by finite differences: n calls in a row with a
little numpy work between them, a pattern in which the scheduler tends to put the two
processes on one core.

The local right-hand side evaluates the server's formula in the server's order
(lorenz96.py), so both sides compute the same bits.
"""

import argparse
import sys
import time

import numpy as np
from scipy.integrate import solve_ivp

import peerpipe
from lorenz96 import F, find_peer, rhs


def local_rhs(t, x, forcing=F):
    """The server's Lorenz-96 (lorenz96.py), as solve_ivp calls it."""
    return rhs(x, forcing)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--t-end", type=float, default=2.0)
    parser.add_argument("--transport", default="pipe", choices=["pipe", "shm-sem", "shm-ring"])
    parser.add_argument("--method", default="RK45", choices=["RK45", "BDF"])
    parser.add_argument("--wait", default="auto", help="auto (default), block, spin, hybrid[:DUR]")
    parser.add_argument("--forcing", type=float, default=F, help=f"F (default {F})")
    args = parser.parse_args()

    y0 = np.full(args.n, F)
    y0[0] += 0.01
    t_span = (0.0, args.t_end)
    t_eval = np.linspace(*t_span, 51)
    options = dict(method=args.method, t_eval=t_eval, rtol=1e-6, atol=1e-9, args=(args.forcing,))

    solve_ivp(local_rhs, t_span, y0, **options)  # once untimed: the first solve pays warm-up
    started = time.perf_counter()
    local = solve_ivp(local_rhs, t_span, y0, **options)
    local_s = time.perf_counter() - started

    server = [
        find_peer(),
        "--role",
        "server",
        "--handler",
        "lorenz96",
        "--transport",
        args.transport,
        "--wait",
        args.wait,
    ]
    with peerpipe.RemoteRhs(server, transport=args.transport, wait=args.wait) as fun:
        started = time.perf_counter()
        remote = solve_ivp(fun, t_span, y0, **options)
        remote_s = time.perf_counter() - started
        stats = fun.stats()

    identical = (
        local.status == remote.status == 0
        and local.nfev == remote.nfev
        and local.y.shape == remote.y.shape
        and local.y.tobytes() == remote.y.tobytes()
        and local.t.tobytes() == remote.t.tobytes()
    )
    calls = stats["calls"]
    print(
        f"Lorenz-96 n={args.n}, F={args.forcing}, {args.method} over t = {t_span}, "
        f"{args.transport}, wait {args.wait}: {calls} right-hand-side calls"
    )
    print(f"local numpy rhs : {local_s * 1e3:8.1f} ms, nfev {local.nfev}")
    print(f"remote (peer)   : {remote_s * 1e3:8.1f} ms, nfev {remote.nfev}")
    print(
        f"overhead per call (round trip - server time): p50 {stats['overhead_p50_ns'] / 1e3:.2f} us, "
        f"p99 {stats['overhead_p99_ns'] / 1e3:.2f} us; whole solve difference per call "
        f"{(remote_s - local_s) / max(calls, 1) * 1e6:.2f} us"
    )
    if args.wait == "auto":
        print(
            f"client waits: {stats['wait_spun']} spun ({stats['wait_hits']} answered within the "
            f"spin), {stats['wait_slept_at_once']} slept at once, {stats['wait_probes']} probes, "
            f"{stats['wait_stopped_spinning']} switches to sleeping, "
            f"{stats['wait_contended']} spins that found the core wanted, "
            f"{stats['wait_dear_yields']} yields that ran another task, "
            f"{stats['wait_moves']} moves to an idle CPU"
        )
    print(f"bit-identical: {'yes' if identical else 'NO'}")
    if not identical:
        diff = np.max(np.abs(local.y - remote.y)) if local.y.shape == remote.y.shape else None
        print(f"max abs difference: {diff}")
        sys.exit(1)


if __name__ == "__main__":
    main()

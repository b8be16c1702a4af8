#!/usr/bin/env python3
"""The Lorenz-96 exchange of python_client.py, with numpy arrays.

Wire format: docs/PROTOCOL.md. The framing (PeerClient: HELLO, requests,
reply checks, BYE) comes from python_client.py beside this file; only the
payload conversion differs. An f64 payload is little-endian binary64, so

    payload = x.astype("<f8").tobytes()          # numpy -> wire
    d = numpy.frombuffer(reply, dtype="<f8")     # wire -> numpy, no copy

    python3 python_numpy_client.py --peer target/debug/peer

Prints "numpy not installed; skipping" and exits 0 when numpy is missing.
"""

import argparse
import os
import sys
import time

try:
    import numpy as np
except ImportError:
    np = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_client import F64, PeerClient, PeerError  # noqa: E402


def call_f64(peer, x):
    """One f64 request from a numpy array; the reply as a read-only float64
    array viewing the received bytes."""
    x = np.ascontiguousarray(x, dtype="<f8")
    peer.send(F64, x.tobytes(), x.size)
    return np.frombuffer(peer.recv().payload, dtype="<f8")


def lorenz96(x, forcing=8.0):
    """§9's formula, vectorised. Each ufunc rounds its own binary64 result and
    numpy does not fuse separate operations, so the order
    ((x[i+1] - x[i-2]) * x[i-1] - x[i]) + F is kept and the result matches
    the server bit for bit."""
    return (np.roll(x, -1) - np.roll(x, 2)) * np.roll(x, 1) - x + forcing


def rk4_step(f, x, dt):
    k1 = f(x)
    k2 = f(x + dt / 2 * k1)
    k3 = f(x + dt / 2 * k2)
    k4 = f(x + dt * k3)
    return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def same_bits(a, b):
    """Bit-for-bit equality (NaN payloads and -0.0 included)."""
    return a.shape == b.shape and np.array_equal(a.view("<u8"), b.view("<u8"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--peer", default="peer", help="path of the peer binary (default: peer on PATH)"
    )
    ap.add_argument("--handler", default="lorenz96")
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--dt", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if np is None:
        print("numpy not installed; skipping")
        return 0

    rng = np.random.default_rng(args.seed)
    x0 = (8.0 + rng.standard_normal(args.n)).astype("<f8")
    cmd = [args.peer, "--role", "server", "--handler", args.handler]
    try:
        with PeerClient(cmd) as peer:
            local = (lambda x: x.copy()) if peer.handler in ("echo", "echo-raw") else lorenz96
            d = call_f64(peer, x0)
            if not same_bits(d, local(x0)):
                i = int(np.flatnonzero(d.view("<u8") != local(x0).view("<u8"))[0])
                print(
                    f"FAIL: derivative differs at index {i}: remote {d[i]!r} local {local(x0)[i]!r}"
                )
                return 1
            calls, remote_s = 0, 0.0

            def remote(x):
                nonlocal calls, remote_s
                t = time.perf_counter()
                d = call_f64(peer, x)
                remote_s += time.perf_counter() - t
                calls += 1
                return d

            xr = xl = x0
            for step in range(1, args.steps + 1):
                xr = rk4_step(remote, xr, args.dt)
                xl = rk4_step(local, xl, args.dt)
                if not same_bits(xr, xl):
                    print(f"FAIL: RK4 step {step} differs")
                    return 1
            handler = peer.handler
    except PeerError as e:
        print(f"FAIL: {e}")
        return 1
    print(
        f"ok: numpy {np.__version__}, {handler} n={args.n} derivative and {args.steps} RK4 steps "
        f"({calls} remote calls) "
        f"bit-identical to local numpy; round trip {remote_s / max(calls, 1) * 1e6:.1f} us/call; "
        f"BYE ok, exit 0"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""An ensemble: eight Lorenz-96 members, each with its own forcing and its own server, called
together at every step with one ``peerpipe.Fanout.call_each`` -- and checked bit for bit against
eight solves in this process. The Python twin of ``examples/ensemble.rs``.

    PEERPIPE_PEER=target/release/peer python python/examples/ensemble.py            # eight local servers
    PEERPIPE_PEER=target/release/peer python python/examples/ensemble.py --launcher "srun -w n{node} -N1 -n1"

``--launcher``, when given, is put before each server's command line, with ``{member}``
replaced by the member's index and ``{node}`` by the index modulo 2: a launcher such as
``srun``. The servers speak tcp (``peer --role server --handler lorenz96 --forcing F
--transport tcp``), so that the same program works with and without a launcher: each server
announces an address the client can reach (docs/USAGE.md, "On a cluster"). Every member takes
``--steps`` forward-Euler steps (dt = 0.01) of n = ``--n`` from the same nudged state; forcing
8.0, 8.1, ..., 8.7. The local right-hand side evaluates the server's formula in the server's
order (lorenz96.py), so both compute the same bits. Exits 0 only when every
trajectory matches its local solve bit for bit; the last line printed is one JSON object.
"""

import argparse
import json
import shlex
import sys

import numpy as np

import peerpipe
from lorenz96 import F, find_peer, rhs

MEMBERS = 8
DT = 0.01


def forcing(member):
    """The forcing of `member`: 8.0, 8.1, ... (as examples/ensemble.rs computes it)."""
    return F + 0.1 * member


def server_lines(peer, launcher):
    """One shell line per member: the launcher (with {member} and {node} filled in), then the
    server with that member's forcing."""
    lines = []
    for m in range(MEMBERS):
        prefix = launcher.replace("{member}", str(m)).replace("{node}", str(m % 2))
        server = (
            f"{shlex.quote(peer)} --role server --handler lorenz96 "
            f"--forcing {forcing(m)!r} --transport tcp"
        )
        lines.append(f"{prefix} {server}".strip())
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=500, help="state length (default 500)")
    parser.add_argument("--steps", type=int, default=200, help="Euler steps (default 200)")
    parser.add_argument("--launcher", default="", help="prefix of each server's command line")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per gather")
    args = parser.parse_args()
    if args.n < 4 or args.steps < 1:
        parser.error("--n takes at least 4 (Lorenz-96's stencil) and --steps at least 1")

    start = np.full(args.n, F)
    start[0] += 0.01
    remote = np.tile(start, (MEMBERS, 1))
    local = remote.copy()
    d_remote = np.empty_like(remote)
    gathers = []
    first_difference = None
    lines = server_lines(find_peer(), args.launcher)
    with peerpipe.Fanout.spawn(lines, transport="tcp", timeout=args.timeout) as fanout:
        for step in range(args.steps):
            fanout.call_each(remote, d_remote)
            gathers.append(fanout.last_gather_ns)
            for m in range(MEMBERS):
                remote[m] += DT * d_remote[m]
                local[m] += DT * rhs(local[m], forcing(m))
                same = remote[m].view(np.uint64) == local[m].view(np.uint64)
                if first_difference is None and not same.all():
                    first_difference = (m, step)
    identical = first_difference is None
    if identical:
        print(f"all {MEMBERS} members match their local solves bit for bit")
    else:
        print("member {} first differs at step {}".format(*first_difference))
    summary = {
        "members": MEMBERS,
        "steps": args.steps,
        "n": args.n,
        "identical": identical,
        "gather_p50_ns": int(np.median(gathers)),
    }
    print(json.dumps(summary))
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())

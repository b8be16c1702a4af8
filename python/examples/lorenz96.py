"""What the Lorenz-96 examples in this folder share: the model as the `peer` server computes it
(src/lorenz96.rs), in numpy, and where to find `peer`.

The server's formula:
    d[i] = (x[(i+1) % n] - x[(i-2) % n]) * x[(i-1) % n] - x[i] + F
evaluated left to right in binary64 with no fused multiply-add. numpy evaluates each of those
four operations as its own elementwise IEEE operation, in that order, so both sides compute
the same bits.
"""

import os
import shutil
import sys

import numpy as np

F = 8.0


def rhs(x, forcing=F):
    """The server's Lorenz-96 at state `x`, in the server's evaluation order."""
    d = np.subtract(np.roll(x, -1), np.roll(x, 2))  # x[i+1] - x[i-2]
    np.multiply(d, np.roll(x, 1), out=d)  # (...) * x[i-1]
    np.subtract(d, x, out=d)  # (...) - x[i]
    np.add(d, forcing, out=d)  # (...) + F
    return d


def find_peer():
    """The `peer` binary: $PEERPIPE_PEER, else `peer` on the PATH, else a build in target/."""
    path = os.environ.get("PEERPIPE_PEER") or shutil.which("peer")
    for candidate in (path, "target/release/peer", "target/debug/peer"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("no peer binary: build it (cargo build --release) or set PEERPIPE_PEER")

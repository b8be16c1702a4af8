"""peerpipe.serve_ode with a model of tests/odes.py, by argv[1] (duffing or robertson): its
fun as `rhs` and, unless argv[2] is "no-jac", its Jacobian as `jac`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from odes import MODELS  # noqa: E402

import peerpipe  # noqa: E402

fun, jac = MODELS[sys.argv[1]]
if len(sys.argv) > 2 and sys.argv[2] == "no-jac":
    jac = None
peerpipe.serve_ode(fun, jac, name=f"py-{sys.argv[1]}")

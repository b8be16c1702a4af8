"""ODE servers that answer badly, by argv[1]:

- `raw`: peerpipe.serve(functions=...) whose rhs replies one value fewer than y has and whose
  jac replies a vector of 3 where a 2 x 2 matrix is expected: replies of another shape, which
  the client reports (ShapeError).
- `checked`: peerpipe.serve_ode(fun, jac), whose fun, by t, returns the wrong shape (t = -1),
  complex values (t = -2) or raises (t = -3), else -y; its jac returns a (2, 3) array at
  t = -1, else -I. serve_ode refuses the bad results itself (an ERROR reply naming them).
"""

import sys

import numpy as np

import peerpipe


def fun(t, y):
    if t == -1.0:
        return np.zeros(len(y) + 1)
    if t == -2.0:
        return y * 1j
    if t == -3.0:
        raise ZeroDivisionError("no derivative at t = -3")
    return -y


def jac(t, y):
    if t == -1.0:
        return np.zeros((len(y), len(y) + 1))
    return -np.eye(len(y))


if sys.argv[1] == "raw":
    peerpipe.serve(
        functions={"rhs": lambda t, y, *p: y[1:], "jac": lambda t, y, *p: np.zeros(3)},
        name="py-bad-raw",
    )
else:
    peerpipe.serve_ode(fun, jac, name="py-bad-checked")

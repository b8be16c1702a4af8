"""ODE servers that answer badly, by argv[1]:

- `raw`: peerpipe.serve(functions=...) whose rhs replies one value fewer than y has and whose
  jac replies a vector of 3 where a 2 x 2 matrix is expected: replies of another shape, which
  the client reports (ShapeError).
- `checked`: peerpipe.serve_ode(fun, jac), whose fun, by t, returns the wrong shape (t = -1),
  complex values (t = -2) or raises (t = -3); -y as a strided view (t = -4), as a list of
  ints (t = -5, the values 1, 2, ...), big-endian (t = -6) or a field of a structured array,
  its stride 12 bytes (t = -7), or a masked array, its first value masked (t = -8) or none
  (t = -9); else -y. Its jac returns a
  (2, 3) array at t = -1, [[1, 2], [3, 4]] in Fortran order at t = -4, else -I. serve_ode
  refuses the bad results itself (an ERROR reply naming them) and reads the others as
  np.asarray(result, dtype=float) would.
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
    if t == -4.0:
        return np.stack([-y, y], axis=1)[:, 0]
    if t == -5.0:
        return list(range(1, len(y) + 1))
    if t == -6.0:
        return (-y).astype(">f8")
    if t == -7.0:
        record = np.zeros(len(y), dtype=[("value", "f8"), ("flag", "i4")])
        record["value"] = -y
        return record["value"]
    if t in (-8.0, -9.0):
        return np.ma.masked_array(-y, mask=[t == -8.0] + [False] * (len(y) - 1))
    return -y


def jac(t, y):
    if t == -1.0:
        return np.zeros((len(y), len(y) + 1))
    if t == -4.0:
        return np.asfortranarray([[1.0, 2.0], [3.0, 4.0]])
    return -np.eye(len(y))


if sys.argv[1] == "raw":
    peerpipe.serve(
        functions={"rhs": lambda t, y, *p: y[1:], "jac": lambda t, y, *p: np.zeros(3)},
        name="py-bad-raw",
    )
else:
    peerpipe.serve_ode(fun, jac, name="py-bad-checked")

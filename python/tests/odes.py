"""The ODE models of the solve_ivp tests, written once for the local solve and for the Python
server (servers/ode_server.py) -- and in the order of examples/ode_server.rs, the Rust server,
so that all three compute the same bits: each operation a separate IEEE binary64 operation,
left to right, and cos from the C library (math.cos, which Rust's f64::cos also calls).

- Forced Duffing, x'' + d x' + a x + b x^3 = g cos(w t), args (d, a, b, g, w), default
  (0.3, -1.0, 1.0, 0.5, 1.2); `y` of shape (2,) or, vectorized, (2, k).
- Robertson's stiff kinetics, args (k1, k2, k3), default (0.04, 3e7, 1e4), and its Jacobian.
"""

import math

import numpy as np

DUFFING = (0.3, -1.0, 1.0, 0.5, 1.2)
ROBERTSON = (0.04, 3e7, 1e4)


def duffing(t, y, d=0.3, a=-1.0, b=1.0, g=0.5, w=1.2):
    y0, y1 = y[0], y[1]
    return np.array([y1, -d * y1 - a * y0 - b * y0 * y0 * y0 + g * math.cos(w * t)])


def duffing_jac(t, y, d=0.3, a=-1.0, b=1.0, g=0.5, w=1.2):
    y0 = y[0]
    return np.array([[0.0, 1.0], [-a - 3.0 * b * y0 * y0, -d]])


def robertson(t, y, k1=0.04, k2=3e7, k3=1e4):
    y0, y1, y2 = y[0], y[1], y[2]
    return np.array([-k1 * y0 + k3 * y1 * y2, k1 * y0 - k3 * y1 * y2 - k2 * y1 * y1, k2 * y1 * y1])


def robertson_jac(t, y, k1=0.04, k2=3e7, k3=1e4):
    y1, y2 = y[1], y[2]
    return np.array(
        [
            [-k1, k3 * y2, k3 * y1],
            [k1, -k3 * y2 - 2.0 * k2 * y1, -k3 * y1],
            [0.0, 2.0 * k2 * y1, 0.0],
        ]
    )


MODELS = {"duffing": (duffing, duffing_jac), "robertson": (robertson, robertson_jac)}

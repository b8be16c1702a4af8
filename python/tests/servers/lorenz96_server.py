"""Lorenz-96 (F = 8) in numpy, in the server's evaluation order, written into `out` in place:
d[i] = (x[i+1] - x[i-2]) * x[i-1] - x[i] + F, indices mod n, each operation a separate
elementwise IEEE binary64 operation (numpy fuses nothing), so it matches src/lorenz96.rs bit
for bit."""

import numpy as np

import peerpipe

F = 8.0


def lorenz96(x, out):
    np.subtract(np.roll(x, -1), np.roll(x, 2), out=out)
    np.multiply(out, np.roll(x, 1), out=out)
    np.subtract(out, x, out=out)
    np.add(out, F, out=out)
    return out


if __name__ == "__main__":
    peerpipe.serve(lorenz96, name="py-lorenz96")

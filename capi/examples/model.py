"""A model in Python for a C program: dy/dt = -K y, served on stdin/stdout.

capi/examples/python_model.c spawns it (`python_model PYTHON model.py`) and calls it once per
Euler step. Any Python that has the peerpipe package installed runs it, e.g. a venv's
(`python_model ~/venv/bin/python model.py`).
"""

import peerpipe

K = 2.0

if __name__ == "__main__":
    peerpipe.serve(lambda y: -K * y)  # one float64 array in, one out, until the client closes

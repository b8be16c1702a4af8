"""peerpipe.serve(functions=...): functions of several typed parts, for the call_parts tests;
argv[1], when given, is the max_frame_bytes it announces; argv[2] "echo" adds a DATA echo
handler beside the functions.

- step(t, y, p)     -> y * p[i % len(p)] + t, one part of y's length
- observe(y)        -> (min, max, sum) as one f64[3] part
- outer(y)          -> the n x n matrix y y^T, one matrix part
- wrong-shape(y)    -> y[1:]: one element fewer than asked
- echo(*parts)      -> the parts unchanged (dtype, shape, values)
- numbers()         -> 2.5 and 7, a float and an int: two one-element parts
- nothing()         -> (): a reply of no parts
- fail(*parts)      -> raises ValueError("out of cheese")
- none(*parts)      -> None, which is not a reply
- sleep(seconds)    -> waits `seconds`, then returns them
"""

import sys
import time

import numpy as np

import peerpipe


def step(t, y, p):
    return y * np.resize(p, len(y)) + t[0]


def observe(y):
    return np.array([y.min(), y.max(), y.sum()])


def fail(*parts):
    raise ValueError("out of cheese")


def sleep(seconds):
    time.sleep(seconds[0])
    return seconds


FUNCTIONS = {
    "step": step,
    "observe": observe,
    "outer": lambda y: np.outer(y, y),
    "wrong-shape": lambda y: y[1:],
    "echo": lambda *parts: parts,
    "numbers": lambda: (2.5, 7),
    "nothing": lambda: (),
    "fail": fail,
    "none": lambda *parts: None,
    "sleep": sleep,
}

if __name__ == "__main__":
    max_frame_bytes = int(sys.argv[1]) if len(sys.argv) > 1 else None
    handler = (lambda x: x) if len(sys.argv) > 2 and sys.argv[2] == "echo" else None
    peerpipe.serve(handler, functions=FUNCTIONS, name="py-parts", max_frame_bytes=max_frame_bytes)

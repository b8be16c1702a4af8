"""peerpipe.serve(functions=...): functions of several typed parts, for the call_parts tests;
argv[1], when given and not "default", is the max_frame_bytes it announces; argv[2] "echo"
adds a DATA echo handler beside the functions, "field" one that echoes the request as a field
of a structured array.

- step(t, y, p)     -> y * p[i % len(p)] + t, one part of y's length
- observe(y)        -> (min, max, sum) as one f64[3] part
- outer(y)          -> the n x n matrix y y^T, one matrix part
- wrong-shape(y)    -> y[1:]: one element fewer than asked
- echo(*parts)      -> the parts unchanged (dtype, shape, values)
- fields(*parts)    -> the parts' values as fields of structured arrays (strides that are not
                       a multiple of the element's size, the elements unaligned)
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


def as_field(a):
    """`a`'s values as the first field of a structured array: a view whose strides are not a
    multiple of the element's size."""
    record = np.zeros(a.shape, dtype=[("value", a.dtype), ("flag", "i1")])
    record["value"] = a
    return record["value"]


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
    "fields": lambda *parts: tuple(as_field(p) for p in parts),
    "numbers": lambda: (2.5, 7),
    "nothing": lambda: (),
    "fail": fail,
    "none": lambda *parts: None,
    "sleep": sleep,
}

if __name__ == "__main__":
    max_frame_bytes = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "default" else None
    handlers = {"echo": lambda x: x, "field": as_field}
    handler = handlers[sys.argv[2]] if len(sys.argv) > 2 else None
    peerpipe.serve(handler, functions=FUNCTIONS, name="py-parts", max_frame_bytes=max_frame_bytes)

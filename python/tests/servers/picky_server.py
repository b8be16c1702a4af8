"""Echoes arrays whose first element is not negative; raises ValueError for the others,
returns a list (not an array) for arrays of length 3 and a 2-D array for arrays of length 6."""

import numpy as np

import peerpipe


def picky(x):
    if len(x) and x[0] < 0:
        raise ValueError(f"no negative numbers, got {x[0]}")
    if len(x) == 3:
        return x.tolist()
    if len(x) == 6:
        return x.reshape(2, 3)
    return np.asarray(x)


peerpipe.serve(picky)

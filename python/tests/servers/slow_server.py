"""An echo server that sleeps SECONDS (argv[1]) before each reply: a long computation."""

import sys
import time

import peerpipe

delay = float(sys.argv[1])


def slow(x):
    time.sleep(delay)
    return x


peerpipe.serve(slow, name="py-slow")

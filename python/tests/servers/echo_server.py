"""A Python echo server: peerpipe.serve(lambda x: x) on whatever transport it was spawned with."""

import peerpipe

peerpipe.serve(lambda x: x, name="py-echo")

"""A Python echo server: peerpipe.serve(lambda x: x) on whatever transport it was spawned with
(a pipe or a shared region, found on stdin), or on the transport named by argv[1] ("tcp": it
listens -- on argv[2] when given, an address or an interface -- announces its address on stdout and
serves the client that connects)."""

import sys

import peerpipe

transport = sys.argv[1] if len(sys.argv) > 1 else None
listen = sys.argv[2] if len(sys.argv) > 2 else None
peerpipe.serve(lambda x: x, name="py-echo", transport=transport, listen=listen)

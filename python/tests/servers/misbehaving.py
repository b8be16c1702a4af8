"""Servers that break the rules, by argv[1]: `garbage` (32 bytes that are no header, then
waits), `silent` (never says HELLO), `hello-then-exit-3` (HELLO, then exits 3 on the first
request), `hello-then-silent` (HELLO, then never replies)."""

import os
import struct
import sys
import time

MODE = sys.argv[1]
out = sys.stdout.buffer


def hello():
    payload = b"version=1\nmax_frame_bytes=67108864\nrole=server\nhandler=misbehaving\n"
    pad = (-len(payload)) % 8
    header = b"PEER" + bytes([1, 1, 0, 0]) + struct.pack("<QQQ", 0, len(payload), 0)
    out.write(header + payload + b"\0" * pad)
    out.flush()


if MODE == "garbage":
    out.write(b"NOT A PEERPIPE HEADER, JUST TEXT")
    out.flush()
    time.sleep(30)
elif MODE == "silent":
    time.sleep(30)
elif MODE == "hello-then-exit-3":
    hello()
    sys.stdin.buffer.read(1)  # the client's HELLO
    os._exit(3)
elif MODE == "hello-then-silent":
    hello()
    time.sleep(30)

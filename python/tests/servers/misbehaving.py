"""Servers that break the rules, by argv[1]: `garbage` (32 bytes that are no header, then
waits), `silent` (never says HELLO), `hello-then-exit-3` (HELLO, then exits 3 on the first
request), `hello-then-silent` (HELLO, then never replies), `error-then-silent` (answers the
first request with ERROR "handler failed: out of cheese", then never replies)."""

import os
import struct
import sys
import time

MODE = sys.argv[1]
out = sys.stdout.buffer


def read_frame():
    """(seq, payload) of the next frame on stdin."""
    header = sys.stdin.buffer.read(32)
    seq, count, _ = struct.unpack("<QQQ", header[8:32])
    width = {0: 1, 1: 4, 2: 8}[header[6]]
    body = sys.stdin.buffer.read(count * width + (-(count * width)) % 8)
    return seq, body[: count * width]


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
elif MODE == "error-then-silent":
    hello()
    read_frame()  # the client's HELLO
    seq, _ = read_frame()
    message = b"handler failed: out of cheese"
    header = b"PEER" + bytes([1, 3, 0, 0]) + struct.pack("<QQQ", seq, len(message), 0)
    out.write(header + message + b"\0" * ((-len(message)) % 8))
    out.flush()
    time.sleep(30)

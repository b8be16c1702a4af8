#!/usr/bin/env python3
"""A peerpipe client in plain Python: wire format v1 over a child process's pipes.

Written from docs/PROTOCOL.md alone (section numbers below, like "§6", refer to
it), using only the standard library. Copy it into your project and adapt it.

    python3 python_client.py --peer target/debug/peer
    python3 python_client.py --server "python3 python_server.py"
    python3 python_client.py -- ssh HOST peer --role server --handler lorenz96

As a library:

    from python_client import PeerClient

    with PeerClient(["peer", "--role", "server", "--handler", "lorenz96"]) as peer:
        d = peer.call_f64(x)            # one request, one reply, list of floats
        ...                             # leaving the block sends BYE, waits for BYE
                                        # and checks that the server exited with 0

    PARTS (§15), with a server whose HELLO says parts=1: a function name and
    several typed parts per request, replies of their own shape:

        dy = peer.call_parts("rhs", [(F64, [t]), (F64, y)])   # -> list of Part
        dy[0].values                                          # (f64, f64)
        jac = peer.call_parts("jac", [(F64, [t]), (F64, y)], expect=[(F64, 4, 2)])

The script's main() evaluates the Lorenz-96 derivative remotely for a random
state, checks it bit for bit against a local Python evaluation, runs a few RK4
steps both ways, and prints a one-line summary. Against a server that
announces parts=1 it also calls the default function with the state as one
f64 part, which must give the same derivative. It exits non-zero on any
mismatch.

Every read and write has a deadline (select() on the pipes), so a stalled or
dead server raises PeerTimeout instead of hanging. select() on pipes is POSIX
only: Linux and macOS, not Windows.
"""

import argparse
import collections
import math
import os
import random
import select
import shlex
import struct
import subprocess
import sys
import time

# --- wire format constants (§2, §3, Constants) -------------------------------

HEADER = struct.Struct("<4sBBBBQQQ")  # magic version kind dtype flags seq count aux
HEADER_LEN = 32
MAGIC = b"PEER"
VERSION = 1

HELLO, DATA, ERROR, BYE, PARTS = 1, 2, 3, 4, 5
KIND_NAMES = {HELLO: "HELLO", DATA: "DATA", ERROR: "ERROR", BYE: "BYE", PARTS: "PARTS"}

BYTES, F32, F64 = 0, 1, 2
DTYPE_NAMES = {BYTES: "bytes", F32: "f32", F64: "f64"}
WIDTH = {BYTES: 1, F32: 4, F64: 8}

# PARTS (§15): part dtypes add i64 to the frame dtypes; limits of one PARTS payload
I64 = 3
PART_DTYPE_NAMES = {BYTES: "bytes", F32: "f32", F64: "f64", I64: "i64"}
PART_WIDTH = {BYTES: 1, F32: 4, F64: 8, I64: 8}
PART_FORMAT = {BYTES: "B", F32: "f", F64: "d", I64: "q"}  # struct codes, after "<" and a count
MAX_PARTS = 64
MAX_NAME_LEN = 64
NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-")
PREAMBLE = struct.Struct("<IHH")  # parts, name_len, reserved
DESCRIPTOR = struct.Struct("<BBHIQ")  # dtype, flags, reserved, cols, count

DEFAULT_MAX_FRAME_BYTES = 64 << 20  # 67108864, what we announce unless told otherwise
MAX_CONTROL_PAYLOAD = 65536  # cap on HELLO and ERROR payloads, whatever max_frame_bytes says
U64_MAX = (1 << 64) - 1

IMPL = "peerpipe-python-example 0.1.0"


# --- errors ------------------------------------------------------------------


class PeerError(Exception):
    """Anything that went wrong talking to the server."""


class PeerTimeout(PeerError):
    """The server did not send (or accept) the expected bytes in time."""


class ProtocolError(PeerError):
    """The server's bytes break a rule of the protocol (§10), or the stream ended
    where it must not (§8). The connection is unusable afterwards.

    `seq` is what a case-B ERROR about this frame would carry: the header's seq
    field when all 32 header bytes arrived, else 0 (§6). `check` names the check
    of a PARTS payload that failed ("T1" ... "T10", §15), or is None."""

    def __init__(self, message, seq=0, check=None):
        super().__init__(message)
        self.seq = seq
        self.check = check


class PartsNotSupported(PeerError):
    """A PARTS call to a server whose HELLO does not announce parts=1 (§15).
    Nothing was sent; the connection is still usable for DATA requests."""


class ReplyShapeError(PeerError):
    """A PARTS reply of another shape than the caller expected (§15). The reply
    was read whole, so the connection is still usable. `parts` holds the reply."""

    def __init__(self, seq, expected, found, parts):
        super().__init__(
            f"reply to seq {seq} has another shape than expected: "
            f"expected {describe_shape(expected)}, found {describe_shape(found)}"
        )
        self.seq = seq
        self.expected = expected
        self.found = found
        self.parts = parts


class ServerError(PeerError):
    """The server answered with an ERROR frame; `message` is its text.

    Case A (§6): the handler rejected the request and the conversation goes on.
    Case B: the server found a rule violation and is closing; `closing` is True
    when the client already knows that (the ERROR did not answer the oldest
    request). Otherwise the next read shows an end of stream."""

    def __init__(self, message, seq, aux, closing=False):
        what = "reported a violation and is closing" if closing else f"rejected request seq {seq}"
        super().__init__(f"server {what}: {message}")
        self.message = message
        self.seq = seq
        self.aux = aux
        self.closing = closing


# --- frames (§2, §3) -----------------------------------------------------------

Frame = collections.namedtuple("Frame", "kind dtype flags seq count aux payload")


def padding_len(payload_len):
    """Zero bytes after a payload so the frame length is a multiple of 8 (§3)."""
    return (8 - payload_len % 8) % 8


def encode_frame(kind, dtype, seq, count, payload=b"", aux=0, flags=0):
    """One complete frame: header, payload, zero padding. No checks: the
    conformance script uses this to build malformed frames on purpose."""
    header = HEADER.pack(MAGIC, VERSION, kind, dtype, flags, seq, count, aux)
    return header + bytes(payload) + b"\0" * padding_len(len(payload))


def check_header(header, max_frame_bytes, parts=True):
    """Steps 2-9 of the receiver checklist (§10) on 32 header bytes.

    Returns (kind, dtype, flags, seq, count, aux, payload_len). Raises
    ProtocolError carrying the header's seq. Step 10 (is this kind allowed now)
    depends on the conversation and is the caller's job. With parts=False the
    receiver does not speak PARTS, and kind 5 is an unknown kind (step 4)."""
    magic, version, kind, dtype, flags, seq, count, aux = HEADER.unpack(header)
    if magic != MAGIC:
        raise ProtocolError(f"bad magic: expected {MAGIC!r}, found {magic!r}", seq)
    if version != VERSION:
        raise ProtocolError(f"unsupported version: expected 1, found {version}", seq)
    if kind not in KIND_NAMES or (kind == PARTS and not parts):
        if parts:
            known = "2 (DATA), 3 (ERROR), 4 (BYE) or 5 (PARTS)"
        else:
            known = "2 (DATA), 3 (ERROR) or 4 (BYE)"
        raise ProtocolError(f"unknown frame kind {kind}: expected 1 (HELLO), {known}", seq)
    if dtype not in WIDTH:
        raise ProtocolError(f"unknown dtype {dtype}", seq)
    if flags != 0:
        raise ProtocolError(f"reserved flags set: expected 0, found {flags:#04x}", seq)
    if kind != DATA and dtype != BYTES:
        raise ProtocolError(
            f"malformed {KIND_NAMES[kind]} frame: expected dtype 0 (bytes), "
            f"found dtype {dtype} ({DTYPE_NAMES[dtype]})",
            seq,
        )
    if kind == BYE and count != 0:
        raise ProtocolError(f"malformed BYE frame: expected count 0, found count {count}", seq)
    payload_len = count * WIDTH[dtype]  # Python ints do not overflow; check by hand
    if payload_len > U64_MAX:
        raise ProtocolError(
            f"payload length overflows u64: count {count} x {WIDTH[dtype]} bytes", seq
        )
    limit = max_frame_bytes
    if kind in (HELLO, ERROR):
        limit = min(limit, MAX_CONTROL_PAYLOAD)
    if payload_len > limit:
        raise ProtocolError(f"frame too large: payload of {payload_len} bytes exceeds {limit}", seq)
    return kind, dtype, flags, seq, count, aux, payload_len


def encode_hello(max_frame_bytes=DEFAULT_MAX_FRAME_BYTES, impl=IMPL):
    """Our HELLO payload (§4): key=value lines, each ending in a bare newline."""
    return f"version=1\nmax_frame_bytes={max_frame_bytes}\nimpl={impl}\n".encode()


def check_server_hello(theirs, ours):
    """§4: a HELLO equal to ours came from a command that echoes its input (cat), not a server."""
    if theirs == ours:
        raise ProtocolError(
            "the peer sent back our own HELLO: is the command echoing its input, like cat?"
        )


def check_server_role(info):
    """§4: a server's HELLO says role=server; anything else is not a peerpipe server."""
    role = info.get("role")
    if role != "server":
        found = "no role" if role is None else f"role={role!r}"
        raise ProtocolError(
            f"bad HELLO from the server: expected role=server, found {found}: "
            "is the command a peerpipe server?"
        )


def parse_hello(payload):
    """Validate a HELLO payload (§4) and return its keys as a dict of strings.
    Raises ValueError naming the first problem."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"HELLO is not UTF-8: {e}") from None
    if not text.endswith("\n"):
        raise ValueError("the last HELLO line lacks its newline")
    info = {}
    for line in text[:-1].split("\n"):
        if "=" not in line:
            raise ValueError(f"HELLO line without '=': {line!r}")
        key, value = line.split("=", 1)
        info[key] = value
    if "version" not in info:
        raise ValueError("HELLO lacks the required key version")
    if info["version"] != "1":
        raise ValueError(f"HELLO version: expected 1, found {info['version']!r}")
    mfb = info.get("max_frame_bytes")
    if mfb is None:
        raise ValueError("HELLO lacks the required key max_frame_bytes")
    if not (mfb.isascii() and mfb.isdigit() and int(mfb) <= U64_MAX):
        raise ValueError(f"HELLO max_frame_bytes is not a u64: {mfb!r}")
    return info


# --- PARTS payloads (§15) ------------------------------------------------------


class Part(collections.namedtuple("Part", "dtype values cols raw")):
    """One part of a PARTS frame.

    dtype   BYTES, F32, F64 or I64
    values  the elements: a tuple of floats (F32, F64) or ints (I64), or bytes (BYTES)
    cols    0 for a vector; else a row-major matrix of `cols` columns
    raw     the elements' little-endian bytes, exactly as on the wire

    The first three fields are what encode_parts_payload takes, so a Part can be
    sent again as it is; it is then sent from `raw`, bit for bit (unpacking f32
    with struct quiets signalling NaNs, §3, so `values` may differ in them)."""

    __slots__ = ()

    @property
    def count(self):
        return len(self.raw) // PART_WIDTH[self.dtype]

    @property
    def shape(self):
        """(dtype, count, cols), as describe_shape and ReplyShapeError show it."""
        return (self.dtype, self.count, self.cols)


def make_part(dtype, data, cols=0):
    """A Part from a dtype, the elements (a sequence of numbers, or bytes-like
    holding them little-endian) and cols. Raises ValueError for a part that
    §15 does not allow."""
    if dtype not in PART_WIDTH:
        raise ValueError(
            f"unknown part dtype {dtype}: expected 0 (bytes), 1 (f32), 2 (f64) or 3 (i64)"
        )
    width = PART_WIDTH[dtype]
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        if len(raw) % width:
            raise ValueError(f"{len(raw)} bytes is not a whole number of {PART_DTYPE_NAMES[dtype]}")
    else:
        data = list(data)
        raw = struct.pack(f"<{len(data)}{PART_FORMAT[dtype]}", *data)
    count = len(raw) // width
    if not 0 <= cols <= 0xFFFFFFFF:
        raise ValueError(f"cols {cols} is not a u32")
    if cols and count % cols:
        raise ValueError(f"{count} elements are not a multiple of {cols} columns")
    values = raw if dtype == BYTES else struct.unpack(f"<{count}{PART_FORMAT[dtype]}", raw)
    return Part(dtype, values, cols, raw)


def as_part(item):
    """A Part from a Part, or from a tuple (dtype, data) or (dtype, data, cols)."""
    if isinstance(item, Part):
        return make_part(item.dtype, item.raw, item.cols)
    if len(item) not in (2, 3):
        raise ValueError(f"a part is (dtype, values) or (dtype, values, cols), not {item!r}")
    return make_part(*item)


def check_name(name):
    """The function name as bytes; ValueError unless §15 allows it."""
    raw = name.encode("ascii", "replace") if isinstance(name, str) else bytes(name)
    if len(raw) > MAX_NAME_LEN:
        raise ValueError(f"function name of {len(raw)} bytes, at most {MAX_NAME_LEN}")
    for i, b in enumerate(raw):
        if b not in NAME_BYTES:
            raise ValueError(
                f"function name has byte {b:#04x} at {i}: "
                "expected letters, digits, '_', '.', ':' or '-'"
            )
    return raw


def encode_parts_payload(name, parts):
    """A PARTS payload (§15): preamble, name padded to 8, one 16-byte descriptor
    per part, then each part's bytes padded to 8. name is "" in a reply (and
    for the server's default function). parts: Parts or (dtype, data[, cols])."""
    name = check_name(name)
    parts = [as_part(p) for p in parts]
    if len(parts) > MAX_PARTS:
        raise ValueError(f"{len(parts)} parts, at most {MAX_PARTS}")
    out = [PREAMBLE.pack(len(parts), len(name), 0), name, b"\0" * padding_len(len(name))]
    out += [DESCRIPTOR.pack(p.dtype, 0, 0, p.cols, p.count) for p in parts]
    for p in parts:
        out += [p.raw, b"\0" * padding_len(len(p.raw))]
    return b"".join(out)


def decode_parts_payload(payload, reply=False, seq=0):
    """Check a PARTS payload (§15, T1-T10 in order, T10 only when reply=True) and
    return (name, parts): the function name as str and a list of Parts. Raises
    ProtocolError(message, seq, check) at the first failure; nothing is
    allocated for a part before the whole table has passed."""

    def fail(check, message):
        return ProtocolError(f"bad part table: {message} (§15 {check})", seq, check)

    n = len(payload)
    if n < PREAMBLE.size:  # T1
        raise fail("T1", f"payload of {n} bytes is shorter than the 8-byte preamble")
    n_parts, name_len, reserved = PREAMBLE.unpack_from(payload, 0)
    if n_parts > MAX_PARTS:  # T2
        raise fail("T2", f"{n_parts} parts, at most {MAX_PARTS}")
    if name_len > MAX_NAME_LEN:  # T3
        raise fail("T3", f"function name of {name_len} bytes, at most {MAX_NAME_LEN}")
    if reserved:  # T4
        raise fail("T4", f"reserved bytes 6-7 are {reserved:#06x}, expected 0")
    name_end = PREAMBLE.size + name_len
    table_end = name_end + padding_len(name_len) + DESCRIPTOR.size * n_parts
    if table_end > n:  # T5
        raise fail("T5", f"table of {table_end} bytes does not fit in a payload of {n}")
    name = payload[PREAMBLE.size : name_end]
    for i, b in enumerate(name):  # T6
        if b not in NAME_BYTES:
            raise fail(
                "T6",
                f"function name has byte {b:#04x} at {i}: "
                "expected letters, digits, '_', '.', ':' or '-'",
            )
    for i, b in enumerate(payload[name_end : name_end + padding_len(name_len)]):
        if b:
            raise fail("T6", f"nonzero padding after the function name: byte {i} is {b:#04x}")
    spans = []  # (dtype, cols, start, length, padded end) of each part
    offset = table_end
    for i in range(n_parts):  # T7, descriptor by descriptor
        at = name_end + padding_len(name_len) + DESCRIPTOR.size * i
        dtype, flags, res, cols, count = DESCRIPTOR.unpack_from(payload, at)
        if dtype not in PART_WIDTH:
            raise fail(
                "T7",
                f"part {i} has dtype {dtype}: expected 0 (bytes), 1 (f32), 2 (f64) or 3 (i64)",
            )
        if flags:
            raise fail("T7", f"part {i} has flags {flags:#04x}, expected 0")
        if res:
            raise fail("T7", f"part {i}: reserved bytes 2-3 are {res:#06x}, expected 0")
        if cols and count % cols:
            raise fail("T7", f"part {i} has {count} elements, not a multiple of its {cols} columns")
        length = count * PART_WIDTH[dtype]
        if length > U64_MAX:  # Python ints do not overflow: check the u64 range by hand
            raise fail(
                "T7", f"part {i} length overflows u64: count {count} × {PART_WIDTH[dtype]} bytes"
            )
        end = offset + length + padding_len(length)
        if end > U64_MAX or end > n:
            raise fail(
                "T7",
                f"part {i} of {length} bytes at offset {offset} ends past the payload of {n} bytes",
            )
        spans.append((dtype, cols, offset, length, end))
        offset = end
    if offset != n:  # T8
        raise fail("T8", f"{n - offset} bytes after the last part")
    for i, (_, _, start, length, end) in enumerate(spans):  # T9
        for j, b in enumerate(payload[start + length : end]):
            if b:
                raise fail("T9", f"nonzero padding after part {i}: byte {j} is {b:#04x}")
    name = name.decode("ascii")
    if reply and name:  # T10
        raise fail("T10", f'a reply names function "{name}"')
    parts = []
    for dtype, cols, start, length, _ in spans:
        raw = bytes(payload[start : start + length])
        count = length // PART_WIDTH[dtype]
        values = raw if dtype == BYTES else struct.unpack(f"<{count}{PART_FORMAT[dtype]}", raw)
        parts.append(Part(dtype, values, cols, raw))
    return name, parts


def describe_shape(shape):
    """'1 part: f64[500]', '2 parts: f64[2], f64[2×2]' for a list of (dtype, count, cols)."""
    items = []
    for dtype, count, cols in shape:
        name = PART_DTYPE_NAMES.get(dtype, f"dtype {dtype}")
        items.append(f"{name}[{count // cols}×{cols}]" if cols else f"{name}[{count}]")
    noun = "part" if len(items) == 1 else "parts"
    return f"{len(items)} {noun}" + (": " + ", ".join(items) if items else "")


def normalize_shape(expect):
    """An expected reply shape, [(dtype, count) or (dtype, count, cols), ...],
    as a list of (dtype, count, cols); None stays None (any shape)."""
    if expect is None:
        return None
    return [tuple(e) if len(e) == 3 else (e[0], e[1], 0) for e in expect]


# --- the child process and its pipes, with deadlines -------------------------


class PeerProcess:
    """A spawned server: exact reads and complete writes on its pipes, each with
    a deadline, plus clean-up. Knows nothing about frames."""

    def __init__(self, cmd, stderr=None):
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, bufsize=0
            )
        except OSError as e:
            raise PeerError(f"cannot start {cmd[0]!r}: {e}") from None
        self.cmd = list(cmd)
        self.fd_in = self.proc.stdin.fileno()  # we write the server's stdin
        self.fd_out = self.proc.stdout.fileno()  # we read the server's stdout
        os.set_blocking(self.fd_in, False)  # so a full pipe cannot block a write forever

    def write(self, data, timeout):
        """Write all of data. Raises PeerTimeout, or BrokenPipeError when the
        server no longer reads."""
        deadline = time.monotonic() + timeout
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PeerTimeout(f"server did not accept {len(view)} more bytes in {timeout:g} s")
            _, writable, _ = select.select([], [self.fd_in], [], remaining)
            if writable:
                try:
                    view = view[os.write(self.fd_in, view) :]
                except BlockingIOError:
                    pass

    def read(self, n, deadline):
        """Read n bytes; fewer only at end of stream. Raises PeerTimeout."""
        buf = bytearray()
        while len(buf) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PeerTimeout(f"no data from the server in time (have {len(buf)} of {n} bytes)")
            readable, _, _ = select.select([self.fd_out], [], [], remaining)
            if readable:
                chunk = os.read(self.fd_out, n - len(buf))
                if not chunk:
                    break  # end of stream
                buf += chunk
        return bytes(buf)

    def close_stdin(self):
        if not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass

    def wait(self, timeout):
        """Reap the child; return its exit status. Raises PeerTimeout."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise PeerTimeout(f"server still running {timeout:g} s after the end") from None

    def kill(self, grace=0.5):
        """TERM, then KILL after a grace period; reap. Safe to call twice."""
        self.close_stdin()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


def read_frame(pipe, max_frame_bytes, timeout, parts=True):
    """Read one frame (§10 steps 1-9, 11, 12). Returns a Frame, or None for an
    end of stream exactly at a frame boundary. Raises ProtocolError or
    PeerTimeout. parts=False: kind 5 is an unknown kind (a v1-only receiver)."""
    deadline = time.monotonic() + timeout
    header = pipe.read(HEADER_LEN, deadline)
    if not header:
        return None
    if len(header) < HEADER_LEN:
        raise ProtocolError(f"truncated header: got {len(header)} of {HEADER_LEN} bytes", 0)
    kind, dtype, flags, seq, count, aux, payload_len = check_header(header, max_frame_bytes, parts)
    payload = pipe.read(payload_len, deadline)
    if len(payload) < payload_len:
        raise ProtocolError(f"truncated payload: got {len(payload)} of {payload_len} bytes", seq)
    pad_len = padding_len(payload_len)
    padding = pipe.read(pad_len, deadline)
    if len(padding) < pad_len:
        raise ProtocolError(f"truncated padding: got {len(padding)} of {pad_len} bytes", seq)
    for i, b in enumerate(padding):
        if b:
            raise ProtocolError(f"nonzero padding: byte {i} of the padding is {b:#04x}", seq)
    return Frame(kind, dtype, flags, seq, count, aux, payload)


# --- the client ----------------------------------------------------------------

Reply = collections.namedtuple("Reply", "seq dtype count aux payload")
PartsReply = collections.namedtuple("PartsReply", "seq aux parts")


class PeerClient:
    """A connection to one `peer --role server` child process.

    call_f64 / call_f32 / call_bytes / call_raw send one request and wait for
    its reply. For pipelining, send() several requests and recv() their replies
    in the same order; keep what is in flight well below the pipe capacity
    (64 KiB by default on Linux, §5). Replies are checked: seq, kind, dtype,
    count, padding. An ERROR reply raises ServerError with the server's text.

    call_parts / send_parts + recv send PARTS requests (§15): a function name
    and several typed parts, answered by parts of the reply's own shape. Only
    to a server whose HELLO says parts=1 (`self.parts`); otherwise they raise
    PartsNotSupported before sending anything. `self.functions` lists the
    names the server announced."""

    def __init__(
        self, cmd, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES, timeout=10.0, stderr=None, hello=None
    ):
        self.timeout = timeout
        self.max_frame_bytes = max_frame_bytes  # what we accept, announced in our HELLO
        # unanswered requests: (seq, DATA, dtype, count) or (seq, PARTS, None, expected shape)
        self.pending = collections.deque()
        self.next_seq = 1
        self.broken = False
        self.pipe = PeerProcess(cmd, stderr=stderr)
        try:
            # §4: write our HELLO before reading anything, then read the server's.
            payload = encode_hello(max_frame_bytes) if hello is None else hello
            self.pipe.write(encode_frame(HELLO, BYTES, 0, len(payload), payload), timeout)
            frame = self._read("the server's HELLO")
            if frame is None:
                raise ProtocolError(f"server closed the stream before its HELLO{self._exit_note()}")
            if frame.kind == ERROR:
                raise ServerError(
                    frame.payload.decode("utf-8", "replace"), frame.seq, frame.aux, closing=True
                )
            if frame.kind != HELLO:
                raise ProtocolError(f"unexpected {KIND_NAMES[frame.kind]} frame: expected HELLO")
            check_server_hello(frame.payload, payload)
            try:
                self.server_info = parse_hello(frame.payload)
            except ValueError as e:
                raise ProtocolError(f"bad HELLO from the server: {e}") from None
            check_server_role(self.server_info)
            self.server_max_frame_bytes = int(self.server_info["max_frame_bytes"])
            self.handler = self.server_info.get("handler")
            self.parts = self.server_info.get("parts") == "1"  # §15: reads PARTS requests
            self.functions = tuple(f for f in self.server_info.get("functions", "").split(",") if f)
        except BaseException:
            self.abort()
            raise

    # context manager: close() on success, abort() on an exception
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False

    def _read(self, what):
        try:
            return read_frame(self.pipe, self.max_frame_bytes, self.timeout)
        except PeerTimeout as e:
            self.broken = True
            raise PeerTimeout(f"waiting for {what}: {e}{self._exit_note()}") from None
        except ProtocolError as e:
            self.broken = True
            raise ProtocolError(f"in {what}: {e}", e.seq, e.check) from None

    def _fail(self, message, check=None):
        self.broken = True
        self.abort()
        raise ProtocolError(message, check=check)

    # --- pipelined primitives ---------------------------------------------

    def send(self, dtype, payload, count=None):
        """Write one DATA request; return its seq. count defaults to
        len(payload) // width(dtype)."""
        if self.broken:
            raise PeerError("connection is no longer usable")
        if count is None:
            count, rest = divmod(len(payload), WIDTH[dtype])
            if rest:
                raise ValueError(
                    f"{len(payload)} bytes is not a whole number of {DTYPE_NAMES[dtype]}"
                )
        if count * WIDTH[dtype] != len(payload):
            raise ValueError(
                f"payload of {len(payload)} bytes does not hold {count} {DTYPE_NAMES[dtype]}"
            )
        if len(payload) > self.server_max_frame_bytes:  # §3: respect the peer's limit
            raise ValueError(
                f"payload of {len(payload)} bytes exceeds the server's max_frame_bytes "
                f"{self.server_max_frame_bytes}"
            )
        seq = self.next_seq
        self.next_seq += 1
        try:
            self.pipe.write(encode_frame(DATA, dtype, seq, count, payload), self.timeout)
        except (PeerError, OSError) as e:
            self.broken = True
            raise PeerError(f"cannot send request seq {seq}: {e}{self._exit_note()}") from None
        self.pending.append((seq, DATA, dtype, count))
        return seq

    def send_parts(self, function, parts, expect=None):
        """Write one PARTS request (§15) calling `function` ("" for the server's
        default function) with `parts`, each a Part or (dtype, data[, cols]):
        data is a sequence of numbers or bytes-like little-endian elements.
        expect, when given, is the reply's shape, [(dtype, count[, cols]), ...];
        recv() raises ReplyShapeError for another one. Returns the seq.
        Raises PartsNotSupported, without sending, when the server's HELLO
        lacks parts=1."""
        if self.broken:
            raise PeerError("connection is no longer usable")
        if not self.parts:
            impl = self.server_info.get("impl", "impl not announced")
            raise PartsNotSupported(
                f"PARTS requests are not supported by the server ({impl}, which does not "
                "announce parts=1); it serves DATA requests only"
            )
        payload = encode_parts_payload(function, parts)
        if len(payload) > self.server_max_frame_bytes:  # §3: respect the peer's limit
            raise ValueError(
                f"PARTS payload of {len(payload)} bytes exceeds the server's max_frame_bytes "
                f"{self.server_max_frame_bytes}"
            )
        seq = self.next_seq
        self.next_seq += 1
        try:
            self.pipe.write(encode_frame(PARTS, BYTES, seq, len(payload), payload), self.timeout)
        except (PeerError, OSError) as e:
            self.broken = True
            raise PeerError(f"cannot send request seq {seq}: {e}{self._exit_note()}") from None
        self.pending.append((seq, PARTS, None, normalize_shape(expect)))
        return seq

    def recv(self):
        """Read the reply to the oldest unanswered request; return a Reply (to
        DATA) or a PartsReply (to PARTS). Raises ServerError for an ERROR reply,
        ReplyShapeError for a PARTS reply of another shape than expected (the
        connection goes on), ProtocolError for anything the protocol does not
        allow here (the connection is closed)."""
        if not self.pending:
            raise PeerError("recv() with no request outstanding")
        seq, kind, dtype, count = self.pending[0]
        frame = self._read(f"the reply to request seq {seq}")
        if frame is None:
            self._fail(
                f"server closed the stream with {len(self.pending)} request(s) unanswered"
                f"{self._exit_note()}"
            )
        if frame.kind == ERROR:
            message = frame.payload.decode("utf-8", "replace")
            if frame.seq != seq:  # not a reply: the server's case-B report (§6)
                self.broken = True
                raise ServerError(message, frame.seq, frame.aux, closing=True)
            self.pending.popleft()
            raise ServerError(message, frame.seq, frame.aux)
        if frame.kind == BYE:  # the server ends the conversation: answer BYE, close (§6 table)
            try:
                self.pipe.write(encode_frame(BYE, BYTES, frame.seq, 0), self.timeout)
            except (PeerError, OSError):
                pass
            self._fail(f"server sent BYE with {len(self.pending)} request(s) unanswered")
        if frame.kind not in (DATA, PARTS):
            self._fail(f"unexpected {KIND_NAMES[frame.kind]} frame after the handshake")
        if frame.seq != seq:
            self._fail(f"reply seq {frame.seq}, expected {seq} (the oldest unanswered request)")
        if frame.kind != kind:  # §15: DATA to PARTS, or PARTS to DATA, is a violation
            self._fail(
                f"{KIND_NAMES[frame.kind]} reply to the {KIND_NAMES[kind]} request seq {seq}"
            )
        if kind == PARTS:
            return self._parts_reply(frame, count)
        if (frame.dtype, frame.count) != (dtype, count):
            self._fail(
                f"reply to seq {seq} is {frame.count} x {DTYPE_NAMES[frame.dtype]}, "
                f"expected {count} x {DTYPE_NAMES[dtype]}"
            )
        self.pending.popleft()
        return Reply(frame.seq, frame.dtype, frame.count, frame.aux, frame.payload)

    def _parts_reply(self, frame, expected):
        try:
            _, parts = decode_parts_payload(frame.payload, reply=True, seq=frame.seq)
        except ProtocolError as e:
            self._fail(f"in the reply to request seq {frame.seq}: {e}", e.check)
        self.pending.popleft()
        found = [p.shape for p in parts]
        if expected is not None and found != expected:
            raise ReplyShapeError(frame.seq, expected, found, parts)
        return PartsReply(frame.seq, frame.aux, parts)

    # --- one request, one reply -------------------------------------------

    def call_raw(self, dtype, payload, count=None):
        """Send raw little-endian payload bytes; return the reply's payload
        bytes. Bit-exact for every value, including signalling NaNs."""
        self.send(dtype, payload, count)
        return self.recv().payload

    def call_f64(self, values):
        """f64 request from a sequence of floats; returns a list of floats.
        struct's "<d" keeps every f64 bit pattern (§3)."""
        n = len(values)
        return list(struct.unpack(f"<{n}d", self.call_raw(F64, struct.pack(f"<{n}d", *values), n)))

    def call_f32(self, values):
        """f32 request; values are rounded to binary32. Note (§3): struct's "<f"
        quiets signalling NaNs; use call_raw(F32, ...) to keep every bit."""
        n = len(values)
        return list(struct.unpack(f"<{n}f", self.call_raw(F32, struct.pack(f"<{n}f", *values), n)))

    def call_bytes(self, data):
        """dtype 0 request; returns the reply's bytes."""
        return self.call_raw(BYTES, bytes(data), len(data))

    def call_parts(self, function, parts, expect=None):
        """One PARTS request (§15), one reply: calls `function` ("" = the
        server's default) with `parts` and returns the reply's list of Parts.
        See send_parts for parts and expect. Raises PartsNotSupported when the
        server does not announce parts=1, ServerError when it refuses the call
        (an unknown function, parts the function does not take), ReplyShapeError
        for a reply of another shape than `expect`."""
        self.send_parts(function, parts, expect)
        reply = self.recv()
        return reply.parts

    # --- ending -----------------------------------------------------------------

    def close(self, timeout=None):
        """Send BYE, read the replies still owed (ERROR replies among them are
        ignored), expect BYE with our seq, then end of stream; reap the server
        and check that it exited with status 0 (§7). Returns the exit status."""
        timeout = self.timeout if timeout is None else timeout
        if self.broken:
            self.abort()
            raise PeerError("connection was broken; server terminated")
        try:
            bye_seq = self.next_seq
            self.next_seq += 1
            self.pipe.write(encode_frame(BYE, BYTES, bye_seq, 0), timeout)
            while self.pending:
                try:
                    self.recv()
                except ServerError as e:
                    if e.closing:
                        raise
                except ReplyShapeError:
                    pass
            frame = self._read("BYE in answer to ours")
            if frame is None or frame.kind != BYE:
                got = "end of stream" if frame is None else KIND_NAMES[frame.kind]
                raise ProtocolError(f"expected BYE in answer to our BYE, got {got}")
            if frame.seq != bye_seq:
                raise ProtocolError(f"BYE answered with seq {frame.seq}, expected {bye_seq}")
            if self._read("end of stream after BYE") is not None:
                raise ProtocolError("server sent a frame after its BYE")
            self.pipe.close_stdin()
            status = self.pipe.wait(timeout)
        except BaseException:
            self.abort()
            raise
        self.pipe.proc.stdout.close()
        if status != 0:
            raise PeerError(f"server exited with status {status} after BYE")
        return status

    def abort(self):
        """Stop using the connection: terminate and reap the server."""
        self.broken = True
        self.pipe.kill()

    def _exit_note(self):
        status = self.pipe.proc.poll()
        return "" if status is None else f" (server exited with status {status})"


# --- Lorenz-96, evaluated locally --------------------------------------------


def lorenz96(x, forcing=8.0):
    """d[i] = (x[i+1] - x[i-2]) * x[i-1] - x[i] + F, indices mod n, evaluated
    left to right exactly as §9 prescribes. Python floats are binary64 and
    every operation rounds separately, so this matches the server bit for bit."""
    n = len(x)
    return [(x[(i + 1) % n] - x[(i - 2) % n]) * x[(i - 1) % n] - x[i] + forcing for i in range(n)]


def rk4_step(f, x, dt):
    """One classic Runge-Kutta step; four evaluations of f."""
    k1 = f(x)
    k2 = f([xi + dt / 2 * ki for xi, ki in zip(x, k1)])
    k3 = f([xi + dt / 2 * ki for xi, ki in zip(x, k2)])
    k4 = f([xi + dt * ki for xi, ki in zip(x, k3)])
    return [xi + dt / 6 * (a + 2 * b + 2 * c + d) for xi, a, b, c, d in zip(x, k1, k2, k3, k4)]


def f64_bits(values):
    """The values' binary64 bit patterns, for comparing bit for bit."""
    return struct.pack(f"<{len(values)}d", *values)


def first_difference(a, b):
    """Index of the first element whose bits differ, or None."""
    if len(a) != len(b):
        return min(len(a), len(b))
    for i, (u, v) in enumerate(zip(a, b)):
        if struct.pack("<d", u) != struct.pack("<d", v):
            return i
    return None


def server_command(args):
    if args.command:
        return args.command
    prefix = shlex.split(args.server) if args.server else [args.peer]
    return [*prefix, "--role", "server", "--handler", args.handler]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--peer", default="peer", help="path of the peer binary (default: peer on PATH)"
    )
    ap.add_argument(
        "--server",
        help="server command instead of the peer binary, split like a shell line (no shell "
        "runs it); --role server --handler HANDLER are appended",
    )
    ap.add_argument("--handler", default="lorenz96", help="server handler (default: lorenz96)")
    ap.add_argument("--n", type=int, default=500, help="state size (default: 500)")
    ap.add_argument("--steps", type=int, default=5, help="RK4 steps (default: 5)")
    ap.add_argument("--dt", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "command", nargs="*", help="full server command instead of --peer/--handler, after --"
    )
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    x0 = [8.0 + rng.gauss(0.0, 1.0) for _ in range(args.n)]
    cmd = server_command(args)
    try:
        with PeerClient(cmd) as peer:
            # What the server should compute, by the handler it announced (§9).
            if peer.handler in ("echo", "echo-raw"):
                local = list
            elif peer.handler in ("lorenz96", None):
                local = lorenz96
            else:
                print(f"FAIL: unknown handler {peer.handler!r}")
                return 1

            # One derivative, compared bit for bit.
            t0 = time.perf_counter()
            remote_d = peer.call_f64(x0)
            rtt_first = time.perf_counter() - t0
            i = first_difference(remote_d, local(x0))
            if i is not None:
                print(
                    f"FAIL: derivative differs at index {i}: remote {remote_d[i]!r} "
                    f"local {local(x0)[i]!r}"
                )
                return 1

            # RK4 trajectories: remote derivative versus local derivative.
            calls, server_ns, t_remote = 0, 0, 0.0

            def remote(x):
                nonlocal calls, server_ns, t_remote
                t = time.perf_counter()
                peer.send(F64, f64_bits(x), len(x))
                reply = peer.recv()
                t_remote += time.perf_counter() - t
                calls += 1
                server_ns += reply.aux
                return list(struct.unpack(f"<{len(x)}d", reply.payload))

            xr, xl = x0, x0
            for step in range(1, args.steps + 1):
                xr = rk4_step(remote, xr, args.dt)
                xl = rk4_step(local, xl, args.dt)
                i = first_difference(xr, xl)
                if i is not None:
                    print(f"FAIL: RK4 step {step} differs at index {i}: {xr[i]!r} vs {xl[i]!r}")
                    return 1
            parts_note = ""
            if peer.parts:
                # §15: a PARTS request without a name calls the server's default
                # function, the one a DATA request calls.
                reply = peer.call_parts("", [(F64, x0)], expect=[(F64, len(x0))])
                i = first_difference(list(reply[0].values), local(x0))
                if i is not None:
                    print(f"FAIL: PARTS reply differs from the local derivative at index {i}")
                    return 1
                parts_note = "; PARTS call of the default function bit-identical too"
            handler, impl = peer.handler, peer.server_info.get("impl", "?")
        # leaving the with block: BYE, BYE back, exit status 0 checked
    except PeerError as e:
        print(f"FAIL: {e}")
        return 1

    mean_us = t_remote / calls * 1e6 if calls else math.nan
    server_us = server_ns / calls / 1e3 if calls else math.nan
    print(
        f"ok: {handler} n={args.n} derivative and {args.steps} RK4 steps ({calls} remote calls) "
        f"bit-identical to local Python; round trip {mean_us:.1f} us/call "
        f"(server {server_us:.1f} us, first {rtt_first * 1e6:.0f} us); "
        f"server impl={impl}{parts_note}; BYE answered, exit status 0"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

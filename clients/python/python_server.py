#!/usr/bin/env python3
"""A peerpipe server in plain Python: wire format v1 with PARTS (§15), on stdin and stdout.

Written from docs/PROTOCOL.md alone (section numbers like "§15" refer to it),
using only the standard library; the framing and the PARTS codec come from
python_client.py beside this file. It is the reference server for clients
written from the document: python_client.py and conformance.py run against it.

    python3 python_server.py [--handler echo|echo-raw|lorenz96] [--max-frame-bytes N]
                             [--timeout S] [--v1-only]

It accepts `--role server` too, so a command line written for `peer --role
server` works with it (`conformance.py --server "python3 python_server.py"`).

What it serves:

  DATA requests    the handler of --handler, as `peer` does (§9): echo and
                   echo-raw return the request; lorenz96 its derivative.
  PARTS requests   (§15) by function name:
    ""  (no name)  the default function, the one DATA calls: echo returns the
                   request's parts unchanged (dtype, cols and bytes); lorenz96
                   takes one f64 part of n >= 4 and returns its derivative.
    rhs            forced Duffing oscillator, fun(t, y, *args): see duffing_rhs
    jac            its Jacobian, a 2 x 2 matrix part: see duffing_jac
    observe        f64[n], n >= 1 -> f64[3] = (min, max, sum): see observe

Its HELLO says role=server, handler=NAME, parts=1 and functions=rhs,jac,observe.
An unknown function, or parts a function does not take, gets an ERROR and the
conversation goes on (case A); a malformed frame or part table gets an ERROR
with the header's seq, then the server closes and exits 1 (case B, §6).

--v1-only makes it a strict version-1 server that does not speak PARTS: no
parts= or functions= in its HELLO, and kind 5 is an unknown frame kind (a rule
violation, case B). It is the test double for a new client against an old
server: such a client must refuse to send PARTS at all (§15).

As a library, serve your own functions:

    import math, sys
    from python_client import F64
    from python_server import Reject, serve

    def norm(parts):                     # a list of python_client.Part
        if [p.shape for p in parts] != [(F64, 3, 0)]:
            raise Reject("norm takes one f64[3]")   # -> ERROR, case A
        x = parts[0].values
        return [(F64, [math.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])])]

    sys.exit(serve({"norm": norm}))

Timeouts (like peer's, §1): 10 s for the client's HELLO and for the rest of a
frame once its first byte has arrived (--timeout); no limit between requests.
"""

import argparse
import math
import os
import select
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_client as pc
from python_client import BYE, BYTES, DATA, ERROR, F64, HELLO, PARTS

IMPL = "peerpipe-python-server 0.1.0"
HANDLERS = ("echo", "echo-raw", "lorenz96")


class Reject(Exception):
    """Raised by a function or handler that refuses a request: the server replies
    ERROR with this text and the conversation goes on (§6, case A)."""


class Violation(Exception):
    """A rule violation (§6, case B): ERROR with `seq`, then close and exit 1."""

    def __init__(self, message, seq=0):
        super().__init__(message)
        self.seq = seq


class Closing(Exception):
    """Close without an ERROR (nothing arrived to answer) and exit with status 1."""


class Stalled(Exception):
    """The client sent part of something and then nothing within the deadline."""

    def __init__(self, got, wanted):
        super().__init__(f"got {got} of {wanted} bytes")
        self.got = got


# --- the built-in functions ------------------------------------------------------------------

DUFFING_DEFAULT_P = (0.3, -1.0, 1.0, 0.5, 1.2)  # delta, alpha, beta, gamma, omega


def duffing_rhs(t, y, p=DUFFING_DEFAULT_P):
    """Forced Duffing oscillator, SciPy's fun(t, y, *args) with y = [x, v] and
    p = (delta, alpha, beta, gamma, omega):

        dy[0] = y1
        dy[1] = -d*y1 - a*y0 - b*(y0*y0*y0) + g*cos(w*t)

    evaluated in IEEE-754 binary64, round to nearest even, each operation
    rounded separately (no fused multiply-add, no reassociation), in exactly
    this order:

        s1 = -d * y1          (the negation is exact: (-d)*y1 == -(d*y1))
        s2 = a * y0
        s3 = s1 - s2
        c  = (y0 * y0) * y0   (y0*y0*y0, not y0**3: pow() rounds once, differently)
        s4 = b * c            (not ((b*y0)*y0)*y0, which is what b*y0*y0*y0 means)
        s5 = s3 - s4
        s6 = w * t
        s7 = cos(s6)          (the C library's cos, as Python's math.cos and Rust's f64::cos)
        s8 = g * s7
        dy[1] = s5 + s8

    Every step but cos is exact IEEE arithmetic and reproduces bit for bit in
    any language; cos is not correctly rounded everywhere, so two libraries can
    differ in the last bit of s7.

    Test vectors, default p, y = [1.0, 2.0]:
      t = 0.0 (cos(0) = 1 exactly): dy = [2.0, -0.09999999999999998]
          = 0x4000000000000000 0xbfb9999999999998 (not -0.1: the order shows)
      t = 0.5 (cos(0.6) from glibc): dy = [2.0, -0.1873321925451608]
          = 0x4000000000000000 0xbfc7fa80543c16a2"""
    d, a, b, g, w = p
    y0, y1 = y
    return [y1, -d * y1 - a * y0 - b * (y0 * y0 * y0) + g * math.cos(w * t)]


def duffing_jac(t, y, p=DUFFING_DEFAULT_P):
    """The Jacobian of duffing_rhs with respect to y, row-major (cols 2):

        [[0.0,                      1.0],
         [-a - (3.0*b)*(y0*y0),      -d]]

    J[1][0] is evaluated as s1 = 3.0 * b; s2 = y0 * y0; s3 = s1 * s2;
    J[1][0] = (-a) - s3. It does not depend on t, which it takes anyway:
    SciPy calls jac(t, y, *args) like fun. Default p, y = [-0.75, 0.125]:
    [0.0, 1.0, -0.6875, -0.3] = 0x0 0x3ff0000000000000 0xbfe6000000000000
    0xbfd3333333333333."""
    d, a, b, _g, _w = p
    y0 = y[0]
    return [0.0, 1.0, -a - 3.0 * b * (y0 * y0), -d]


def _duffing_args(name, parts):
    """(t, y, p) from the parts t: f64[1], y: f64[2] and optionally p: f64[5]."""
    shapes = [p.shape for p in parts]
    want = [(F64, 1, 0), (F64, 2, 0), (F64, 5, 0)]
    if shapes not in (want[:2], want):
        raise Reject(
            f"{name}(t, y[, p]) takes t: f64[1], y: f64[2] and optionally "
            f"p: f64[5] (delta, alpha, beta, gamma, omega); found {pc.describe_shape(shapes)}"
        )
    t = parts[0].values[0]
    y = parts[1].values
    p = parts[2].values if len(parts) == 3 else DUFFING_DEFAULT_P
    return t, y, p


def rhs(parts):
    """rhs(t: f64[1], y: f64[2][, p: f64[5]]) -> f64[2]: duffing_rhs."""
    return [(F64, duffing_rhs(*_duffing_args("rhs", parts)))]


def jac(parts):
    """jac(t: f64[1], y: f64[2][, p: f64[5]]) -> f64[4] with cols 2: duffing_jac."""
    return [(F64, duffing_jac(*_duffing_args("jac", parts)), 2)]


def observe(parts):
    """observe(x: f64[n]), n >= 1 -> f64[3] = (min, max, sum), a reply of
    another length than the request. One pass from x[0]: lo = hi = s = x[0];
    then for each later v, in order: lo = v if v < lo; hi = v if v > hi;
    s = s + v. (So a NaN counts only as x[0], and of -0.0 and 0.0 the first
    one seen stays.)"""
    shapes = [p.shape for p in parts]
    if len(shapes) != 1 or shapes[0][0] != F64 or shapes[0][2] != 0 or shapes[0][1] < 1:
        raise Reject(f"observe(x) takes one f64 vector of at least 1 element; "
                     f"found {pc.describe_shape(shapes)}")
    x = parts[0].values
    lo = hi = s = x[0]
    for v in x[1:]:
        if v < lo:
            lo = v
        if v > hi:
            hi = v
        s = s + v
    return [(F64, [lo, hi, s])]


BUILTIN_FUNCTIONS = {"rhs": rhs, "jac": jac, "observe": observe}


# --- DATA handlers and default functions (§9) -------------------------------------------------


def data_handler(handler):
    """The DATA handler of --handler: (dtype, count, payload) -> (dtype, count, payload)."""

    def echo(dtype, count, payload):
        return dtype, count, payload

    def lorenz96(dtype, count, payload):
        if dtype != F64:
            raise Reject(f"lorenz96: wrong dtype: expected f64, found {pc.DTYPE_NAMES[dtype]}")
        if count < 4:
            raise Reject(f"lorenz96: state of {count} elements, at least 4")
        x = list(struct.unpack(f"<{count}d", payload))
        return F64, count, struct.pack(f"<{count}d", *pc.lorenz96(x))

    return lorenz96 if handler == "lorenz96" else echo


def default_function(handler):
    """The PARTS function without a name: what a DATA request calls (§15)."""

    def echo(parts):
        return list(parts)

    def lorenz96(parts):
        shapes = [p.shape for p in parts]
        if len(shapes) != 1 or shapes[0][0] != F64 or shapes[0][2] != 0 or shapes[0][1] < 4:
            raise Reject(f"lorenz96 takes one f64 vector of at least 4 elements; "
                         f"found {pc.describe_shape(shapes)}")
        return [(F64, pc.lorenz96(list(parts[0].values)))]

    return lorenz96 if handler == "lorenz96" else echo


# --- the server ----------------------------------------------------------------------------------


class Input:
    """Exact reads from a descriptor, each under a deadline (None: none)."""

    def __init__(self, fd):
        self.fd = fd

    def read(self, n, deadline):
        buf = bytearray()
        while len(buf) < n:
            timeout = None
            if deadline is not None:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    raise Stalled(len(buf), n)
            readable, _, _ = select.select([self.fd], [], [], timeout)
            if not readable:
                continue
            chunk = os.read(self.fd, min(n - len(buf), 1 << 20))
            if not chunk:
                break  # end of stream
            buf += chunk
        return bytes(buf)


class Server:
    """One conversation on two descriptors: HELLOs, then requests until BYE or
    the end of the stream. run() returns the exit status."""

    def __init__(self, in_fd, out_fd, functions=None, handler="echo", default=None,
                 max_frame_bytes=pc.DEFAULT_MAX_FRAME_BYTES, timeout=10.0, v1_only=False):
        functions = dict(BUILTIN_FUNCTIONS if functions is None else functions)
        for name in functions:
            pc.check_name(name)  # ValueError unless §15 allows the name
            if not name:
                raise ValueError("the function without a name is `default`, not in `functions`")
        self.input = Input(in_fd)
        self.out_fd = out_fd
        self.functions = {} if v1_only else functions
        self.handler = handler
        self.data = data_handler(handler)
        self.default = default or default_function(handler)
        self.max_frame_bytes = max_frame_bytes
        self.timeout = timeout
        self.v1_only = v1_only
        self.client_max_frame_bytes = None  # known from the client's HELLO

    def hello_payload(self):
        lines = [
            "version=1",
            f"max_frame_bytes={self.max_frame_bytes}",
            "role=server",
            f"handler={self.handler}",
            f"impl={IMPL}",
            f"pid={os.getpid()}",
        ]
        if not self.v1_only:
            lines.append("parts=1")
            if self.functions:
                lines.append("functions=" + ",".join(self.functions))
        return ("\n".join(lines) + "\n").encode()

    def write(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.out_fd, view):]

    def error_frame(self, seq, message, aux=0):
        """An ERROR frame whose UTF-8 message fits what the client accepts (§6)."""
        limit = pc.MAX_CONTROL_PAYLOAD
        if self.client_max_frame_bytes is not None:
            limit = min(limit, self.client_max_frame_bytes)
        text = message.encode("utf-8")[:limit].decode("utf-8", "ignore").encode("utf-8")
        return pc.encode_frame(ERROR, BYTES, seq, len(text), text, aux=aux)

    def run(self):
        try:
            self.write(pc.encode_frame(HELLO, BYTES, 0, len(self.hello_payload()),
                                       self.hello_payload()))
            self.read_client_hello()
            return self.serve_requests()
        except Violation as v:
            try:  # best effort: the client may be gone already (§6)
                self.write(self.error_frame(v.seq, str(v)))
            except OSError:
                pass
            return self.end(1, str(v))
        except Closing as e:
            return self.end(1, str(e))
        except BrokenPipeError:
            return self.end(1, "the client closed its end of the stream (broken pipe)")

    def end(self, status, message=None):
        os.close(self.out_fd)
        if message:
            print(f"python_server.py: error: {message}", file=sys.stderr, flush=True)
        return status

    def check_header(self, header):
        """Steps 2-9 of §10; returns (kind, dtype, seq, count, payload length)."""
        try:
            kind, dtype, _flags, seq, count, _aux, n = pc.check_header(
                header, self.max_frame_bytes, parts=not self.v1_only)
        except pc.ProtocolError as e:
            raise Violation(str(e), e.seq) from None
        return kind, dtype, seq, count, n

    def read_body(self, seq, n, deadline):
        try:
            payload = self.input.read(n, deadline)
        except Stalled as s:
            raise Violation(f"timed out inside a payload: got {s.got} of {n} bytes", seq) from None
        if len(payload) < n:
            raise Violation(f"truncated payload: got {len(payload)} of {n} bytes", seq)
        pad = pc.padding_len(n)
        try:
            padding = self.input.read(pad, deadline)
        except Stalled as s:
            raise Violation(f"timed out inside padding: got {s.got} of {pad} bytes", seq) from None
        if len(padding) < pad:
            raise Violation(f"truncated padding: got {len(padding)} of {pad} bytes", seq)
        for i, b in enumerate(padding):
            if b:
                raise Violation(
                    f"nonzero padding: byte {i} of the padding is {b:#04x}, expected 0", seq)
        return payload

    def read_client_hello(self):
        deadline = time.monotonic() + self.timeout
        try:
            header = self.input.read(pc.HEADER_LEN, deadline)
        except Stalled as s:
            if s.got == 0:  # nothing at all: no frame to answer
                raise Closing(f"no HELLO from the client in {self.timeout:g} s") from None
            raise Violation(f"timed out inside the HELLO header: got {s.got} of 32 bytes") from None
        if len(header) < pc.HEADER_LEN:
            what = "truncated stream before HELLO" if not header else "truncated header"
            raise Violation(f"{what}: got {len(header)} of 32 bytes")
        kind, _dtype, seq, _count, n = self.check_header(header)
        if kind != HELLO:
            raise Violation(f"unexpected {pc.KIND_NAMES[kind]} frame: expected HELLO", seq)
        payload = self.read_body(seq, n, deadline)
        try:
            info = pc.parse_hello(payload)
        except ValueError as e:
            raise Violation(f"bad HELLO: {e}", seq) from None
        self.client_max_frame_bytes = int(info["max_frame_bytes"])

    def serve_requests(self):
        while True:
            first = self.input.read(1, None)  # between requests: no deadline (§1)
            if not first:
                return self.end(0)  # a clean end of stream (§8)
            deadline = time.monotonic() + self.timeout
            try:
                header = first + self.input.read(pc.HEADER_LEN - 1, deadline)
            except Stalled as s:
                raise Violation(f"timed out inside a header: got {s.got + 1} of 32 bytes") from None
            if len(header) < pc.HEADER_LEN:
                raise Violation(f"truncated header: got {len(header)} of 32 bytes")
            t0 = time.perf_counter_ns()  # aux: from just after the header (§5)
            kind, dtype, seq, count, n = self.check_header(header)
            if kind in (HELLO, ERROR):  # §10 step 10: not from a client, not now
                expected = "DATA or BYE" if self.v1_only else "DATA, PARTS or BYE"
                raise Violation(f"unexpected {pc.KIND_NAMES[kind]} frame: expected {expected}", seq)
            if kind == BYE:  # §7: answer BYE with its seq, close, exit 0
                self.write(pc.encode_frame(BYE, BYTES, seq, 0))
                return self.end(0)
            payload = self.read_body(seq, n, deadline)
            if kind == DATA:
                self.answer_data(seq, dtype, count, payload, t0)
            else:
                self.answer_parts(seq, payload, t0)

    def reply(self, kind, dtype, seq, count, payload, t0):
        """Write a reply, or ERROR (case A) if it would exceed the client's limit (§5)."""
        if len(payload) > self.client_max_frame_bytes:
            raise Reject(f"reply of {len(payload)} bytes exceeds the client's max_frame_bytes "
                         f"{self.client_max_frame_bytes}")
        aux = time.perf_counter_ns() - t0
        self.write(pc.encode_frame(kind, dtype, seq, count, payload, aux=aux))

    def reject(self, seq, message, t0):
        self.write(self.error_frame(seq, message, aux=time.perf_counter_ns() - t0))

    def answer_data(self, seq, dtype, count, payload, t0):
        try:
            rdtype, rcount, rpayload = self.data(dtype, count, payload)
            self.reply(DATA, rdtype, seq, rcount, rpayload, t0)
        except Reject as e:
            self.reject(seq, str(e), t0)

    def answer_parts(self, seq, payload, t0):
        try:
            name, parts = pc.decode_parts_payload(payload, reply=False, seq=seq)
        except pc.ProtocolError as e:  # T1-T9: a rule violation (case B)
            raise Violation(str(e), seq) from None
        try:
            if name:
                function = self.functions.get(name)
                if function is None:
                    have = ", ".join(self.functions) or "no function by name"
                    raise Reject(f'unknown function "{name}": this server has {have}')
            else:
                function = self.default
            try:
                out = pc.encode_parts_payload("", function(parts))
            except Reject:
                raise
            except Exception as e:  # noqa: BLE001 - a faulty function answers ERROR, case A
                label = name or "the default function"
                print(f"python_server.py: {label}: {type(e).__name__}: {e}", file=sys.stderr)
                raise Reject(f"{label} failed: {type(e).__name__}: {e}") from None
            self.reply(PARTS, BYTES, seq, len(out), out, t0)
        except Reject as e:
            self.reject(seq, str(e), t0)


def protect_stdout():
    """Move the protocol to private descriptors and point fd 1 at stderr and
    fd 0 at /dev/null, so a stray print cannot corrupt the stream (§1).
    Returns (in_fd, out_fd)."""
    in_fd, out_fd = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return in_fd, out_fd


def serve(functions=None, default=None, argv=None):
    """Parse the command line (see the module doc), serve one conversation on
    stdin/stdout with `functions` ({name: function(parts) -> parts}; default:
    rhs, jac, observe) and `default` (the function without a name; default:
    what --handler says), and return the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=["server"], default="server", help="accepted, like peer's")
    ap.add_argument("--handler", choices=HANDLERS, default="echo",
                    help="what DATA requests and PARTS requests without a name call "
                    "(default: echo)")
    ap.add_argument("--max-frame-bytes", type=int, default=pc.DEFAULT_MAX_FRAME_BYTES,
                    help="largest payload accepted, announced in the HELLO (default: 64 MiB)")
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="seconds for the client's HELLO and for the rest of a frame (default 10)")
    ap.add_argument("--v1-only", action="store_true",
                    help="a strict version-1 server: no PARTS, kind 5 is an unknown kind")
    args = ap.parse_args(argv)
    if not 0 <= args.max_frame_bytes <= pc.U64_MAX:
        ap.error("--max-frame-bytes must be a u64")
    in_fd, out_fd = protect_stdout()
    server = Server(in_fd, out_fd, functions, args.handler, default, args.max_frame_bytes,
                    args.timeout, args.v1_only)
    return server.run()


if __name__ == "__main__":
    sys.exit(serve())

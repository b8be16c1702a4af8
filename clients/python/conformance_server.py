"""The raw side of conformance.py: one server process spoken to byte by byte, with every read
under a deadline, and the `Failure` a check raises.

Standard library only; the framing comes from python_client.py beside this file.
"""

import os
import shlex
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_client as pc  # noqa: E402
from python_client import BYTES, DATA, ERROR, HELLO  # noqa: E402

SEQ = 0x0102030405060708  # distinct bytes: a byte-order mistake shows in the ERROR's seq
U64_MAX = pc.U64_MAX


class Failure(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise Failure(why)


def server_prefix(opts):
    """The server command before `--role server --handler NAME ...`: --server
    split like a shell line (no shell runs it), else the --peer binary."""
    return shlex.split(opts.server) if getattr(opts, "server", None) else [opts.peer]


# --- a raw conversation with one server process --------------------------------


class Server:
    """One server child process. Raw bytes in, checked frames out."""

    def __init__(self, opts, handler="echo", extra=()):
        self.opts = opts
        self.cmd = [*server_prefix(opts), "--role", "server", "--handler", handler, *extra]
        self.stderr = tempfile.TemporaryFile()
        self.pipe = pc.PeerProcess(self.cmd, stderr=self.stderr)
        self.max_frame_bytes = pc.DEFAULT_MAX_FRAME_BYTES  # what our HELLOs announce

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.pipe.kill()
        self.stderr.close()
        return False

    def send(self, data, tolerate_epipe=False):
        try:
            self.pipe.write(data, self.opts.timeout)
        except BrokenPipeError:
            if not tolerate_epipe:
                raise Failure("server closed its stdin while we wrote (EPIPE)") from None

    def send_hello(self, payload=None, seq=0):
        payload = (
            pc.encode_hello(self.max_frame_bytes, "conformance.py 0.1.0")
            if payload is None
            else payload
        )
        self.send(pc.encode_frame(HELLO, BYTES, seq, len(payload), payload))

    def frame(self, what="a frame"):
        """Next frame from the server, or None at a clean end of stream."""
        try:
            return pc.read_frame(self.pipe, self.max_frame_bytes, self.opts.timeout)
        except pc.PeerTimeout as e:
            raise Failure(f"waiting for {what}: {e}") from None
        except pc.ProtocolError as e:
            raise Failure(
                f"waiting for {what}, the server's bytes break the protocol: {e}"
            ) from None

    def expect_frame(self, kind, what):
        f = self.frame(what)
        expect(f is not None, f"end of stream while waiting for {what}{self.status_note()}")
        if f.kind != kind:
            text = f": {f.payload.decode('utf-8', 'replace')}" if f.kind == ERROR else ""
            raise Failure(f"expected {what}, got {pc.KIND_NAMES[f.kind]} seq {f.seq}{text}")
        return f

    def hello(self):
        """Read and check the server's HELLO; return its keys."""
        f = self.expect_frame(HELLO, "the server's HELLO")
        expect(f.seq == 0 and f.aux == 0, f"HELLO seq {f.seq} aux {f.aux}, both should be 0")
        try:
            return pc.parse_hello(f.payload)
        except ValueError as e:
            raise Failure(f"server HELLO invalid: {e}") from None

    def handshake(self):
        self.send_hello()
        return self.hello()

    def request(self, dtype, payload, seq, count=None, aux=0):
        count = len(payload) // pc.WIDTH[dtype] if count is None else count
        self.send(pc.encode_frame(DATA, dtype, seq, count, payload, aux=aux))

    def reply(self, seq, dtype, count):
        """Read a DATA reply and check seq, dtype and count; return the payload."""
        f = self.frame(f"the reply to seq {seq}")
        expect(
            f is not None, f"end of stream instead of the reply to seq {seq}{self.status_note()}"
        )
        if f.kind == ERROR:
            raise Failure(f"ERROR for seq {f.seq}: {f.payload.decode('utf-8', 'replace')}")
        expect(f.kind == DATA, f"expected DATA, got {pc.KIND_NAMES[f.kind]}")
        expect(f.seq == seq, f"reply seq {f.seq:#x}, expected {seq:#x}")
        expect(
            (f.dtype, f.count) == (dtype, count),
            f"reply is {f.count} x dtype {f.dtype}, expected {count} x dtype {dtype}",
        )
        return f.payload

    def error_frame(self, seq, what, frame=False):
        """Read an ERROR with the given seq; check its shape; return its text
        (or the frame, with frame=True)."""
        f = self.expect_frame(ERROR, f"ERROR ({what})")
        expect(f.seq == seq, f"ERROR seq {f.seq:#x}, expected {seq:#x}")
        expect(f.dtype == BYTES and f.count == len(f.payload), "ERROR shape")
        try:
            text = f.payload.decode("utf-8")
        except UnicodeDecodeError:
            raise Failure("ERROR message is not UTF-8") from None
        expect(text.strip() != "", "ERROR message is empty")
        return f if frame else text

    def expect_eof(self, what="end of stream"):
        f = self.frame(what)
        if f is not None:
            raise Failure(f"expected {what}, got {pc.KIND_NAMES[f.kind]} seq {f.seq}")

    def exit_status(self):
        self.pipe.close_stdin()
        try:
            return self.pipe.wait(self.opts.timeout)
        except pc.PeerTimeout as e:
            raise Failure(str(e)) from None

    def stderr_text(self):
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")

    def status_note(self):
        status = self.pipe.proc.poll()
        return (
            ""
            if status is None
            else f" (server exited with {status}: {self.stderr_text().strip()!r})"
        )

    def expect_exit(self, zero):
        status = self.exit_status()
        err = self.stderr_text()
        expect("panicked" not in err, f"server panicked: {err.strip()!r}")
        if zero:
            expect(status == 0, f"exit status {status}, expected 0; stderr {err.strip()!r}")
        else:
            expect(
                status > 0,
                f"exit status {status}, expected a non-zero exit"
                f"{' (killed by a signal)' if status < 0 else ''}",
            )
            # §1: a non-zero exit comes with a one-line message on stderr.
            expect(err.endswith("\n") and err.strip() != "", f"no line on stderr: {err!r}")
        return err

#!/usr/bin/env python3
"""PARTS (§15) from both ends in Python: the client of python_client.py against
the server of python_server.py, and both against the golden frames of fixtures/.

    python3 clients/python/test_parts.py                       (-v: each test's name)
    python3 clients/python/test_parts.py --peer target/debug/peer

Standard library only (unittest). Every read has a deadline, so a stuck
server fails a test instead of hanging it. What is checked:

- the client's PARTS codec against every golden PARTS frame: the §15 worked
  example and its reply encode byte for byte; every valid fixture decodes to
  its values file and encodes back; every malformed one fails the check its
  README row names (T1-T10, §10 step 7), with that message;
- the client against the reference server: the worked example echoed by the
  default function, rhs (t changes the answer; bit for bit with a local
  evaluation and its test vectors), jac as a 2 x 2 matrix part, observe
  100 -> 3, an unknown function (case A) and the next call answered, a reply
  of another shape than expected, pipelining PARTS with DATA, and the clear
  error a --v1-only server gives before anything is sent;
- the client against a canned server that answers with each malformed
  fixture, or with the wrong kind: the client refuses the reply (naming the
  check) and stops;
- with --peer PATH, the client against `PATH --role server --handler echo`:
  if its HELLO says parts=1, the worked example's parts come back from the
  default function and an unknown function gets case A; if not, the client
  refuses PARTS calls before sending anything.
"""

import math
import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_client as pc
import python_server as ps
from python_client import BYTES, F32, F64, I64, PARTS

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, os.pardir, os.pardir, "fixtures")
SERVER = [sys.executable, os.path.join(HERE, "python_server.py")]
TIMEOUT = 10.0
WORKED = [(F64, [0.5]), (F64, [1.0, 2.0]), (F64, [3.0])]


def bits(values):
    return struct.pack(f"<{len(values)}d", *values)


def load_fixtures():
    """fixtures/make_fixtures.py as a module, or None outside the repository."""
    path = os.path.join(FIXTURES, "make_fixtures.py")
    if not os.path.exists(path):
        return None
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_fixtures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MF = load_fixtures()


def fixture(name):
    with open(os.path.join(FIXTURES, name + ".bin"), "rb") as f:
        return f.read()


def payload_of(frame):
    count = pc.HEADER.unpack(frame[:32])[6]
    return frame[32 : 32 + count]


def parse_values_file(name):
    """fixtures/values/NAME.txt of a PARTS fixture: (name, [(dtype, cols, raw)])."""
    fmt = {"bytes": (BYTES, "<B"), "f32": (F32, "<I"), "f64": (F64, "<Q"), "i64": (I64, "<Q")}
    function, parts = None, []
    with open(os.path.join(FIXTURES, "values", name + ".txt"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("name "):
                function = line[5:].strip('"')
            elif line.startswith("part "):
                _, _index, dtype, _, cols, _, count = line.split()
                parts.append([fmt[dtype][0], int(cols), int(count), fmt[dtype][1], b""])
            else:
                part = parts[-1]
                part[4] += struct.pack(part[3], int(line, 16))
    for dtype, _cols, count, _f, raw in parts:
        assert len(raw) == count * pc.PART_WIDTH[dtype]
    return function, [(dtype, cols, raw) for dtype, cols, _c, _f, raw in parts]


@unittest.skipIf(MF is None, "fixtures/ not found beside clients/python/")
class GoldenFrames(unittest.TestCase):
    """The client's codec against fixtures/*.bin, written by make_fixtures.py."""

    def test_worked_example_and_its_reply_encode_byte_for_byte(self):
        payload = pc.encode_parts_payload("rhs", WORKED)
        frame = pc.encode_frame(PARTS, BYTES, 7, len(payload), payload)
        self.assertEqual(frame, fixture("parts_rhs_request"))
        payload = pc.encode_parts_payload("", [(F64, [-1.0, 0.25])])
        frame = pc.encode_frame(PARTS, BYTES, 7, len(payload), payload, aux=4321)
        self.assertEqual(frame, fixture("parts_rhs_reply"))

    def test_every_valid_fixture_decodes_to_its_values_and_encodes_back(self):
        for name, _data, _fn, _parts, role, _desc in MF.PARTS_VALID:
            with self.subTest(name):
                data = fixture(name)
                kind, dtype, _flags, seq, count, aux, _n = pc.check_header(data[:32], 4096)
                self.assertEqual((kind, dtype, len(data)), (PARTS, BYTES, 32 + count))
                function, parts = pc.decode_parts_payload(payload_of(data), reply=role == "reply")
                want_function, want = parse_values_file(name)
                self.assertEqual(function, want_function)
                self.assertEqual([(p.dtype, p.cols, p.raw) for p in parts], want)
                payload = pc.encode_parts_payload(function, parts)
                self.assertEqual(pc.encode_frame(PARTS, BYTES, seq, count, payload, aux=aux), data)

    def test_every_malformed_fixture_fails_the_check_its_row_names(self):
        for name, _data, seq, check, message, _given, _role, _desc in MF.PARTS_MALFORMED:
            with self.subTest(name):
                data = fixture(name)
                with self.assertRaises(pc.ProtocolError) as caught:
                    header = pc.check_header(data[:32], 4096)
                    pc.decode_parts_payload(payload_of(data), reply=True, seq=header[3])
                self.assertIn(message, str(caught.exception))
                self.assertEqual(caught.exception.seq, seq)
                self.assertEqual(caught.exception.check, None if check.startswith("§") else check)

    def test_a_reply_naming_a_function_is_a_valid_request(self):
        data = fixture("bad_parts_reply_names_function")
        function, parts = pc.decode_parts_payload(payload_of(data), reply=False)
        self.assertEqual((function, [p.values for p in parts]), ("rhs", [(-1.0, 0.25)]))


class ReferenceServer(unittest.TestCase):
    """python_client.PeerClient against python_server.py."""

    def connect(self, *args):
        return pc.PeerClient([*SERVER, *args], timeout=TIMEOUT)

    def test_hello_announces_parts_and_the_functions(self):
        with self.connect() as peer:
            self.assertTrue(peer.parts)
            self.assertEqual(peer.functions, ("rhs", "jac", "observe"))
            self.assertEqual(peer.handler, "echo")

    def test_worked_example_parts_come_back_from_the_default_echo(self):
        with self.connect() as peer:
            reply = peer.call_parts("", WORKED)
            self.assertEqual([(p.dtype, p.cols, p.values) for p in reply],
                             [(F64, 0, (0.5,)), (F64, 0, (1.0, 2.0)), (F64, 0, (3.0,))])

    def test_echo_keeps_every_bit_dtype_and_cols(self):
        sent = [
            (F32, struct.pack("<3I", 0x7FA12345, 0x80000000, 0x00000001)),  # sNaN, -0.0, subnormal
            (F64, struct.pack("<2Q", 0x7FF0000000000001, 0xFFF123456789ABCD), 2),
            (I64, [-(1 << 63), (1 << 63) - 1]),
            (BYTES, b"\x00\xff\x80"),
            (F64, []),
        ]
        with self.connect() as peer:
            reply = peer.call_parts("", sent)
        want = [pc.as_part(p) for p in sent]
        self.assertEqual([(p.dtype, p.cols, p.raw) for p in reply],
                         [(p.dtype, p.cols, p.raw) for p in want])

    def test_rhs_depends_on_t_and_matches_the_local_evaluation_bit_for_bit(self):
        y = [1.0, 2.0]
        with self.connect() as peer:
            at0 = peer.call_parts("rhs", [(F64, [0.0]), (F64, y)], expect=[(F64, 2)])[0]
            at05 = peer.call_parts("rhs", [(F64, [0.5]), (F64, y)], expect=[(F64, 2)])[0]
            p = [0.1, 1.0, -0.5, 2.0, math.pi]
            with_p = peer.call_parts("rhs", [(F64, [0.5]), (F64, y), (F64, p)])[0]
        # The test vector of duffing_rhs: cos(0) = 1, so no libm is involved.
        self.assertEqual(at0.raw, struct.pack("<2Q", 0x4000000000000000, 0xBFB9999999999998))
        self.assertNotEqual(at0.raw, at05.raw, "rhs ignored t")
        self.assertEqual(at05.raw, bits(ps.duffing_rhs(0.5, y)))
        self.assertEqual(with_p.raw, bits(ps.duffing_rhs(0.5, y, p)))
        self.assertNotEqual(with_p.raw, at05.raw, "rhs ignored p")
        # The documented order: (-d*y1 - a*y0) - b*((y0*y0)*y0) + g*cos(w*t)
        t, (y0, y1), (d, a, b, g, w) = 0.5, y, ps.DUFFING_DEFAULT_P
        want = -d * y1 - a * y0 - b * (y0 * y0 * y0) + g * math.cos(w * t)
        self.assertEqual(at05.values[1], want)

    def test_jac_is_a_2x2_matrix_part(self):
        with self.connect() as peer:
            (j,) = peer.call_parts("jac", [(F64, [2.0]), (F64, [-0.75, 0.125])],
                                   expect=[(F64, 4, 2)])
        self.assertEqual((j.dtype, j.cols, j.count), (F64, 2, 4))
        self.assertEqual(j.raw, struct.pack("<4Q", 0, 0x3FF0000000000000, 0xBFE6000000000000,
                                            0xBFD3333333333333))

    def test_observe_turns_100_values_into_3(self):
        x = [math.sin(i) * i for i in range(100)]
        with self.connect() as peer:
            (out,) = peer.call_parts("observe", [(F64, x)], expect=[(F64, 3)])
        s = x[0]
        for v in x[1:]:
            s = s + v
        self.assertEqual(out.values, (min(x), max(x), s))

    def test_a_reply_of_another_shape_is_an_error_of_the_call_only(self):
        with self.connect() as peer:
            with self.assertRaises(pc.ReplyShapeError) as caught:
                peer.call_parts("observe", [(F64, [1.0] * 100)], expect=[(F64, 100)])
            self.assertIn("expected 1 part: f64[100], found 1 part: f64[3]", str(caught.exception))
            self.assertEqual(caught.exception.parts[0].values, (1.0, 1.0, 100.0))
            self.assertEqual(peer.call_parts("", [(F64, [7.0])])[0].values, (7.0,))

    def test_unknown_function_is_refused_and_the_next_call_answered(self):
        with self.connect() as peer:
            with self.assertRaises(pc.ServerError) as caught:
                peer.call_parts("rhs2", [(F64, [0.0]), (F64, [1.0, 2.0])])
            self.assertFalse(caught.exception.closing)
            self.assertIn('unknown function "rhs2": this server has rhs, jac, observe',
                          caught.exception.message)
            self.assertEqual(len(peer.call_parts("rhs", [(F64, [0.0]), (F64, [1.0, 2.0])])), 1)
            self.assertEqual(peer.call_f64([1.5]), [1.5])

    def test_parts_a_function_does_not_take_are_refused_and_the_next_call_answered(self):
        with self.connect() as peer:
            with self.assertRaises(pc.ServerError) as caught:
                peer.call_parts("rhs", WORKED)  # p of 1 element: rhs takes 5
            self.assertIn("found 3 parts: f64[1], f64[2], f64[1]", caught.exception.message)
            self.assertEqual(peer.call_parts("observe", [(F64, [2.0])])[0].values, (2.0, 2.0, 2.0))

    def test_parts_and_data_pipelined_are_answered_in_order(self):
        with self.connect("--handler", "lorenz96") as peer:
            x = [float(i) for i in range(6)]
            seqs = [
                peer.send_parts("", [(F64, x)]),
                peer.send(F64, bits(x)),
                peer.send_parts("observe", [(F64, x)]),
                peer.send_parts("nope", []),
                peer.send(F64, bits(x)),
            ]
            replies = [peer.recv(), peer.recv(), peer.recv()]
            with self.assertRaises(pc.ServerError):
                peer.recv()
            replies.append(peer.recv())
        self.assertEqual([r.seq for r in replies], [seqs[0], seqs[1], seqs[2], seqs[4]])
        self.assertEqual(replies[0].parts[0].raw, bits(pc.lorenz96(x)))
        self.assertEqual(replies[1].payload, bits(pc.lorenz96(x)))
        self.assertEqual(replies[2].parts[0].values, (0.0, 5.0, 15.0))

    def test_a_v1_only_server_gets_no_parts_request_and_a_clear_error(self):
        with self.connect("--v1-only") as peer:
            self.assertFalse(peer.parts)
            self.assertEqual(peer.functions, ())
            with self.assertRaises(pc.PartsNotSupported) as caught:
                peer.call_parts("rhs", WORKED)
            self.assertEqual(
                str(caught.exception),
                "PARTS requests are not supported by the server (peerpipe-python-server "
                "0.1.0, which does not announce parts=1); it serves DATA requests only",
            )
            self.assertEqual(peer.call_f64([1.0, -0.0]), [1.0, -0.0])  # nothing was sent

    def test_a_v1_only_server_rejects_kind_5_as_an_unknown_kind(self):
        stderr = tempfile.TemporaryFile()
        pipe = pc.PeerProcess([*SERVER, "--v1-only"], stderr=stderr)
        try:
            hello = pc.encode_hello()
            pipe.write(pc.encode_frame(pc.HELLO, BYTES, 0, len(hello), hello), TIMEOUT)
            pipe.write(fixture("parts_rhs_request") if MF else b"", TIMEOUT)
            self.assertEqual(pc.read_frame(pipe, 1 << 20, TIMEOUT).kind, pc.HELLO)
            error = pc.read_frame(pipe, 1 << 20, TIMEOUT)
            self.assertEqual((error.kind, error.seq), (pc.ERROR, 7))
            self.assertIn(b"unknown frame kind 5", error.payload)
            self.assertIsNone(pc.read_frame(pipe, 1 << 20, TIMEOUT))
            pipe.close_stdin()
            self.assertEqual(pipe.wait(TIMEOUT), 1)
            stderr.seek(0)
            self.assertIn(b"error: unknown frame kind 5", stderr.read())
        finally:
            pipe.kill()
            stderr.close()


# A server that announces parts=1, reads our HELLO and one request, then writes
# the bytes of the file named by argv[1], and waits for us to go.
CANNED_SERVER = r"""
import os, struct, sys
reply = open(sys.argv[1], "rb").read()
hello = b"version=1\nmax_frame_bytes=67108864\nrole=server\nhandler=echo\nimpl=canned 0\nparts=1\n"
def write(data):
    while data:
        data = data[os.write(1, data):]
def read(n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(0, n - len(buf))
        if not chunk:
            sys.exit(0)
        buf += chunk
    return buf
def read_frame():
    _, _, kind, dtype, _, _, count, _ = struct.unpack("<4sBBBBQQQ", read(32))
    n = count * {0: 1, 1: 4, 2: 8}[dtype]
    read(n + (8 - n % 8) % 8)
write(struct.pack("<4sBBBBQQQ", b"PEER", 1, 1, 0, 0, 0, len(hello), 0) + hello
      + bytes((8 - len(hello) % 8) % 8))
read_frame()
read_frame()
write(reply)
os.read(0, 1)
"""


@unittest.skipIf(MF is None, "fixtures/ not found beside clients/python/")
class BrokenReplies(unittest.TestCase):
    """The client refuses every malformed PARTS reply, naming the check."""

    def canned(self, path):
        return pc.PeerClient([sys.executable, "-c", CANNED_SERVER, path], timeout=TIMEOUT)

    def test_every_malformed_fixture_as_a_reply_is_refused_naming_its_check(self):
        for name, _data, seq, check, message, _given, _role, _desc in MF.PARTS_MALFORMED:
            with self.subTest(name):
                peer = self.canned(os.path.join(FIXTURES, name + ".bin"))
                try:
                    peer.next_seq = seq  # so that the reply's seq is the one awaited
                    with self.assertRaises(pc.ProtocolError) as caught:
                        peer.call_parts("", [])
                    self.assertIn(message, str(caught.exception))
                    self.assertEqual(caught.exception.check,
                                     None if check.startswith("§") else check)
                    self.assertTrue(peer.broken)
                finally:
                    peer.abort()

    def test_a_data_reply_to_a_parts_request_is_a_violation(self):
        peer = self.canned(os.path.join(FIXTURES, "data_f64_empty.bin"))  # DATA, seq 3
        try:
            peer.next_seq = 3
            with self.assertRaises(pc.ProtocolError) as caught:
                peer.call_parts("", [])
            self.assertIn("DATA reply to the PARTS request seq 3", str(caught.exception))
        finally:
            peer.abort()

    def test_a_parts_reply_to_a_data_request_is_a_violation(self):
        peer = self.canned(os.path.join(FIXTURES, "parts_rhs_reply.bin"))  # PARTS, seq 7
        try:
            peer.next_seq = 7
            with self.assertRaises(pc.ProtocolError) as caught:
                peer.call_f64([1.0])
            self.assertIn("PARTS reply to the DATA request seq 7", str(caught.exception))
        finally:
            peer.abort()

    def test_the_worked_reply_is_accepted(self):
        peer = self.canned(os.path.join(FIXTURES, "parts_rhs_reply.bin"))
        try:
            peer.next_seq = 7
            reply = peer.call_parts("rhs", WORKED, expect=[(F64, 2)])
            self.assertEqual(reply[0].values, (-1.0, 0.25))
        finally:
            peer.abort()


class PeerBinary(unittest.TestCase):
    """The client against `peer` (with --peer PATH)."""

    peer = None  # set from --peer

    def setUp(self):
        if self.peer is None:
            self.skipTest("no --peer PATH given")

    def test_parts_against_peer_as_its_hello_announces(self):
        cmd = [self.peer, "--role", "server", "--handler", "echo"]
        with pc.PeerClient(cmd, timeout=TIMEOUT) as peer:
            if not peer.parts:
                with self.assertRaises(pc.PartsNotSupported) as caught:
                    peer.call_parts("", WORKED)
                self.assertIn("which does not announce parts=1", str(caught.exception))
                self.assertEqual(peer.call_f64([2.5]), [2.5])
                return
            reply = peer.call_parts("", WORKED, expect=[(F64, 1), (F64, 2), (F64, 1)])
            self.assertEqual([p.values for p in reply], [(0.5,), (1.0, 2.0), (3.0,)])
            with self.assertRaises(pc.ServerError) as caught:
                peer.call_parts("conformance.no-such-function", WORKED)
            self.assertFalse(caught.exception.closing)
            self.assertEqual(peer.call_parts("", [(I64, [-1])])[0].values, (-1,))


def main(argv):
    if "--peer" in argv:  # ours, not unittest's
        i = argv.index("--peer")
        PeerBinary.peer = argv[i + 1]
        del argv[i : i + 2]
    unittest.main(argv=argv)


if __name__ == "__main__":
    main(sys.argv)

"""Peer.call_parts and serve(functions=...): several typed parts to a function by name, replies
of their own shape, and every refusal -- against Python servers (servers/parts_server.py),
the `peer` binary's lorenz96 and a server that speaks only v1."""

import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import TRANSPORTS, bits, children, python_server, rust_server

import peerpipe

ROOT = Path(__file__).resolve().parents[2]


def parts_server(*args: str) -> list:
    return python_server("parts_server", *args)


def v1_only_server() -> list:
    """The stdlib reference server as an old one: its HELLO announces no parts=1."""
    return [sys.executable, str(ROOT / "clients" / "python" / "python_server.py"), "--v1-only"]


@pytest.mark.parametrize("transport", TRANSPORTS[:3])
def test_time_state_and_parameters_go_to_a_named_function_bit_for_bit(transport):
    rng = np.random.default_rng(7)
    y = rng.standard_normal(500) * 1e3
    p = rng.standard_normal(8)
    with peerpipe.Peer.spawn(parts_server(), transport=transport) as peer:
        assert peer.speaks_parts
        assert peer.functions[:3] == ["step", "observe", "outer"]
        assert peer.server_hello["parts"] is True
        assert peer.server_hello["functions"] == peer.functions
        for t in (0.0, 1.3, -2.5e-300, 1e308):
            (reply,) = peer.call_parts("step", t, y, p)
            assert reply.dtype == np.float64 and reply.shape == (500,)
            local = np.array([y[i] * p[i % 8] + t for i in range(500)])
            assert bits(reply) == bits(local), t
        assert peer.last_timing.round_trip_ns > 0
        # 100 values in, 3 out: a reply of its own shape.
        (observed,) = peer.call_parts("observe", y[:100])
        assert observed.shape == (3,)
        assert bits(observed) == bits(np.array([y[:100].min(), y[:100].max(), y[:100].sum()]))


def test_replies_land_in_out_arrays_without_allocation_and_shapes_are_checked():
    y = np.arange(1.0, 5.0)
    with peerpipe.Peer.spawn(parts_server()) as peer:
        out = np.empty(3)
        got = peer.call_parts("observe", y, out=(out,))
        assert got[0] is out and out.tolist() == [1.0, 4.0, 10.0]
        # An n x n matrix part comes back as (n, n), row-major.
        (jac,) = peer.call_parts("outer", y)
        assert jac.shape == (4, 4) and jac.tobytes() == np.outer(y, y).tobytes()
        square = np.empty((4, 4))
        peer.call_parts("outer", y, out=[square])
        assert square.tobytes() == jac.tobytes()
        # A vector where a matrix comes is another shape: ShapeError, and the peer goes on.
        with pytest.raises(peerpipe.ShapeError) as info:
            peer.call_parts("outer", y, out=(np.empty(16),))
        assert str(info.value).endswith("expected 1 part: f64[16], found 1 part: f64[4x4]")
        with pytest.raises(peerpipe.ShapeError, match=r"expected 2 parts: f64\[3\], f64\[1\]"):
            peer.call_parts("observe", y, out=(np.empty(3), np.empty(1)))
        assert not peer.closed
        # out must be a tuple (or list) of arrays that can be written in place.
        for out, cls, message in [
            (np.empty(3), TypeError, r"out must be a tuple of arrays.*out=\(a,\)"),
            ((np.empty(6)[::2],), ValueError, r"out\[0\] must be C-contiguous"),
            ((np.empty((4, 4), order="F"),), ValueError, r"out\[0\] must be C-contiguous"),
            ((np.empty(3, dtype=complex),), TypeError, r"out\[0\] must have dtype float64"),
            (([0.0, 0.0, 0.0],), TypeError, r"out\[0\] must be a numpy array, got list"),
            ((np.empty((1, 1, 3)),), ValueError, r"out\[0\] must be 1-D or 2-D"),
        ]:
            with pytest.raises(cls, match=message):
                peer.call_parts("observe", y, out=out)
        read_only = np.empty(3)
        read_only.flags.writeable = False
        with pytest.raises(ValueError, match=r"out\[0\] cannot be used"):
            peer.call_parts("observe", y, out=(read_only,))
        assert peer.call_parts("observe", y)[0].tolist() == [1.0, 4.0, 10.0]


def test_every_part_dtype_and_matrices_travel_unchanged():
    parts = [
        np.arange(6.0).reshape(2, 3),
        np.array([1.5, -0.0, np.inf], dtype=np.float32),
        np.array([-(2**63), 2**63 - 1, 0], dtype=np.int64),
        np.frombuffer(b"\x00\xffpeer", dtype=np.uint8),
        np.empty((0, 4)),
        np.empty(0),
    ]
    with peerpipe.Peer.spawn(parts_server()) as peer:
        echoed = peer.call_parts("echo", *parts)
        assert len(echoed) == len(parts)
        for sent, came in zip(parts, echoed):
            assert (came.dtype, came.shape) == (sent.dtype, sent.shape)
            assert came.tobytes() == sent.tobytes()
        # Python numbers and bytes are one-element parts (f64, i64) and bytes parts.
        t, n, raw, half = peer.call_parts("echo", 0.25, 42, b"abc", np.float32(0.5))
        assert (t.dtype, t.tolist()) == (np.float64, [0.25])
        assert (n.dtype, n.tolist()) == (np.int64, [42])
        assert (raw.dtype, raw.tobytes()) == (np.uint8, b"abc")
        assert (half.dtype, half.tolist()) == (np.float32, [0.5])
        (copied,) = peer.call_parts("echo", bytearray(b"xy"))
        assert copied.tobytes() == b"xy"
        # Non-contiguous and Fortran-ordered arrays are copied once, in row-major order.
        f = np.asfortranarray(np.arange(6.0).reshape(2, 3))
        strided = np.arange(10.0)[::3]
        got_f, got_s = peer.call_parts("echo", f, strided)
        assert got_f.tolist() == f.tolist() and got_s.tolist() == strided.tolist()
        # Replies of numbers, and of no parts at all.
        x, k = peer.call_parts("numbers")
        assert (x.dtype, x.tolist(), k.dtype, k.tolist()) == (np.float64, [2.5], np.int64, [7])
        assert peer.call_parts("nothing") == ()


def test_bad_parts_are_refused_before_anything_is_sent():
    with peerpipe.Peer.spawn(parts_server()) as peer:
        cases = [
            (np.array([1, "a"], dtype=object), TypeError, r"part 0 must have dtype .* got object"),
            (np.ones(3, dtype=complex), TypeError, r"part 0 must have dtype .*got complex128"),
            (np.ones(3, dtype=bool), TypeError, r"part 0 must have dtype .*got bool"),
            (np.ones(3, dtype=">f8"), TypeError, r"native byte order"),
            (np.ones((2, 2, 2)), ValueError, r"part 0 must be 1-D or 2-D, got a 3-D array"),
            (np.array(1.0), ValueError, r"part 0 must be 1-D or 2-D, got a 0-D array"),
            (np.ones((3, 0)), ValueError, r"part 0 is a matrix of no columns"),
            (True, TypeError, r"part 0 is a bool"),
            ("rhs", TypeError, r"part 0 must be a numpy array .* got str"),
            ([1.0, 2.0], TypeError, r"part 0 must be a numpy array .* got list"),
            (2**64, ValueError, r"part 0 is an int beyond the range of i64"),
            (1j, TypeError, r"got complex"),
            (np.complex128(1j), TypeError, r"got complex128"),
        ]
        for value, cls, message in cases:
            with pytest.raises(cls, match=message):
                peer.call_parts("echo", value)
        with pytest.raises(ValueError, match=r"function name.*' '"):
            peer.call_parts("ech o", 1.0)
        with pytest.raises(ValueError, match=r"more than 64 parts"):
            peer.call_parts("echo", *([1.0] * 65))
        assert not peer.closed
        # Nothing was sent: the conversation is in step, and seq 1 is the next call's.
        with pytest.raises(peerpipe.RemoteError) as info:
            peer.call_parts("fail")
        assert info.value.seq == 1


def test_a_reply_of_the_wrong_shape_is_a_shape_error_and_the_next_call_succeeds():
    with peerpipe.Peer.spawn(parts_server()) as peer:
        y = np.array([1.0, 2.0, 3.0, 4.0])
        with pytest.raises(peerpipe.ShapeError) as info:
            peer.call_parts("wrong-shape", y, out=(np.empty(4),))
        error = info.value
        assert isinstance(error, peerpipe.ProtocolError)  # old `except ProtocolError` catches it
        assert error.kind == "shape"
        assert str(error) == (
            "reply to seq 1 has another shape than expected: expected 1 part: f64[4], found 1 "
            "part: f64[3]"
        )
        assert (error.seq, error.expected, error.found) == (1, "1 part: f64[4]", "1 part: f64[3]")
        assert not peer.closed
        out = np.empty(3)
        peer.call_parts("wrong-shape", y, out=(out,))
        assert out.tolist() == [2.0, 3.0, 4.0]


def test_an_unknown_function_is_a_remote_error_naming_the_servers_and_the_next_call_succeeds():
    with peerpipe.Peer.spawn(parts_server()) as peer:
        with pytest.raises(peerpipe.RemoteError) as info:
            peer.call_parts("obsrve", np.ones(3))
        assert 'unknown function "obsrve": this server has step, observe, outer' in str(info.value)
        assert not peer.closed
        assert peer.call_parts("observe", np.ones(3))[0].tolist() == [1.0, 1.0, 3.0]
        # A DATA request to a server of functions only is refused naming them too.
        with pytest.raises(peerpipe.RemoteError, match=r"serves functions by name \(step, "):
            peer.call(np.ones(3))
        assert peer.call_parts("observe", np.ones(2))[0].tolist() == [1.0, 1.0, 2.0]


def test_a_python_function_that_raises_or_returns_nothing_is_a_remote_error():
    with peerpipe.Peer.spawn(parts_server()) as peer:
        with pytest.raises(peerpipe.RemoteError, match=r"fail: ValueError: out of cheese"):
            peer.call_parts("fail", 1.0)
        with pytest.raises(peerpipe.RemoteError, match=r"none: TypeError: the function returned"):
            peer.call_parts("none")
        with pytest.raises(peerpipe.RemoteError, match=r"step: TypeError: .*missing"):
            peer.call_parts("step", 1.0)
        assert peer.call_parts("numbers")[0].tolist() == [2.5]


def test_a_server_with_a_handler_and_functions_serves_both():
    with peerpipe.Peer.spawn(parts_server("67108864", "echo")) as peer:
        assert peer.call(np.arange(3.0)).tolist() == [0.0, 1.0, 2.0]
        assert peer.call_parts("observe", np.arange(3.0))[0].tolist() == [0.0, 2.0, 3.0]
        assert peer.server_hello["handler"] == "py-parts"
        # One array to the default function sent as PARTS is the same call as DATA: the
        # handler answers it, in the request's form.
        (echoed,) = peer.call_parts("", np.arange(3.0))
        assert echoed.tolist() == [0.0, 1.0, 2.0]
        with pytest.raises(peerpipe.RemoteError, match="expected one array of f64, f32 or bytes"):
            peer.call_parts("", np.arange(3.0), np.arange(2.0))


def test_a_request_larger_than_the_server_accepts_is_refused_and_the_peer_stays_usable():
    with peerpipe.Peer.spawn(parts_server("4096", "echo")) as peer:
        with pytest.raises(peerpipe.TooLarge, match=r"exceeds max_frame_bytes 4096"):
            peer.call_parts("observe", np.ones(1000))
        with pytest.raises(peerpipe.TooLarge):
            peer.call(np.ones(1000))
        assert not peer.closed
        assert peer.call_parts("observe", np.ones(10))[0].tolist() == [1.0, 1.0, 10.0]
        assert peer.call(np.ones(2)).tolist() == [1.0, 1.0]


def test_the_peer_binarys_lorenz96_serves_rhs_with_time_and_forcing():
    y = np.full(40, 8.0)
    y[0] += 0.01
    with peerpipe.Peer.spawn(rust_server("lorenz96", "pipe")) as peer:
        assert peer.functions == ["rhs"]
        (default,) = peer.call_parts("rhs", 0.0, y)
        assert default.tobytes() == peer.call(y).tobytes()  # DATA: the same model, F = 8
        (forced,) = peer.call_parts("rhs", 0.0, y, 10.0)
        assert forced.tobytes() != default.tobytes()
        with pytest.raises(peerpipe.RemoteError, match=r"expected t as 1 f64, found 2"):
            peer.call_parts("rhs", np.zeros(2), y)


def test_a_new_client_and_a_v1_only_server_talk_v1_and_parts_are_unsupported():
    with peerpipe.Peer.spawn(v1_only_server()) as peer:
        assert not peer.speaks_parts and peer.functions == []
        assert peer.call(np.arange(3.0)).tolist() == [0.0, 1.0, 2.0]
        with pytest.raises(peerpipe.Unsupported) as info:
            peer.call_parts("rhs", 0.0, np.ones(2))
        message = str(info.value)
        assert message.startswith("PARTS requests are not supported by the server (")
        assert "does not announce parts=1" in message
        assert info.value.kind == "unsupported"
        assert not peer.closed  # nothing was sent
        assert peer.call(np.arange(2.0)).tolist() == [0.0, 1.0]


def test_serve_refuses_what_it_cannot_serve_before_touching_stdio():
    cases = [
        ({}, TypeError, r"serve needs something to serve"),
        ({"functions": {}}, TypeError, r"serve needs something to serve"),
        ({"functions": [("f", print)]}, TypeError, r"functions must be a dict"),
        ({"functions": {"f": 3}}, TypeError, r"functions\['f'\] must be callable, got int"),
        ({"functions": {1: print}}, TypeError, r"a name must be a str"),
        ({"functions": {"r h s": print}}, ValueError, r"function name.*' '"),
        ({"functions": {"f": print}, "in_place": True}, TypeError, r"in_place is for the handler"),
    ]
    for kwargs, cls, message in cases:
        with pytest.raises(cls, match=message):
            peerpipe.serve(**kwargs)


def test_ctrl_c_during_a_long_call_parts_raises_keyboard_interrupt_and_closes_the_peer():
    from test_threads_and_signals import seconds_until_interrupted

    before = children()
    peer = peerpipe.Peer.spawn(parts_server())
    waited = seconds_until_interrupted(lambda: peer.call_parts("sleep", 60.0))
    assert waited < 10  # interrupted, not after the 60 s reply
    assert peer.closed
    assert children() == before
    with pytest.raises(ValueError, match=r"peer is closed \(a call was interrupted\)"):
        peer.call_parts("observe", np.ones(2))


def unaligned(n: int) -> np.ndarray:
    """A float64 array of n zeros one byte off its alignment (as np.frombuffer can make)."""
    a = np.zeros(n * 8 + 1, dtype=np.uint8)[1:].view(np.float64)
    assert not a.flags.aligned and a.flags.c_contiguous
    return a


def test_an_unaligned_part_is_copied_once_and_an_unaligned_out_refused():
    a = unaligned(5)
    a[:] = np.arange(5.0) * 1.5
    with peerpipe.Peer.spawn(parts_server()) as peer:
        (echoed,) = peer.call_parts("echo", a, 0.5)[:1]
        assert bits(echoed) == bits(np.arange(5.0) * 1.5)
        with pytest.raises(
            ValueError, match=r"out\[0\] must be contiguous, in C order and aligned"
        ):
            peer.call_parts("echo", np.ones(5), out=(unaligned(5),))
        # Refused before anything was sent: the next call is answered.
        assert peer.call_parts("echo", np.ones(2))[0].tolist() == [1.0, 1.0]
    with peerpipe.Peer.spawn(rust_server("echo", "pipe")) as peer:
        assert bits(peer.call(a)) == bits(np.arange(5.0) * 1.5)
        with pytest.raises(ValueError, match=r"out must be contiguous, in C order and aligned"):
            peer.call(np.ones(5), unaligned(5))


def as_field(a: np.ndarray) -> np.ndarray:
    """`a`'s values as the first field of a structured array: a view whose strides are not a
    multiple of the element's size, most of its elements unaligned."""
    record = np.zeros(a.shape, dtype=[("value", a.dtype), ("flag", "i1")])
    record["value"] = a
    field = record["value"]
    assert all(stride % a.itemsize for stride in field.strides) and not field.flags.aligned
    return field


def test_arrays_whose_strides_are_not_a_multiple_of_the_element_size_travel_intact():
    rng = np.random.default_rng(11)
    y, m = rng.standard_normal(7), rng.standard_normal((3, 4))
    n, f = np.arange(-5, 5, dtype=np.int64), rng.standard_normal(6).astype(np.float32)
    sent = (y, m, n, f)
    with peerpipe.Peer.spawn(parts_server()) as peer:
        for replies in (
            peer.call_parts("echo", *(as_field(a) for a in sent)),  # read by the client
            peer.call_parts("fields", *sent),  # read by the server, from its function's reply
        ):
            for a, back in zip(sent, replies, strict=True):
                assert (back.dtype, back.shape) == (a.dtype, a.shape)
                assert back.tobytes() == a.tobytes()
        (back,) = peer.call_parts("echo", as_field(y)[::-2])
        assert back.tobytes() == y[::-2].tobytes()
    with peerpipe.Peer.spawn(rust_server("echo", "pipe")) as peer:
        assert bits(peer.call(as_field(y))) == bits(y)
        out = np.empty(6, dtype=np.float32)
        peer.call(as_field(f), out)
        assert bits(out) == bits(f)
    with peerpipe.Peer.spawn(parts_server("default", "field")) as peer:
        assert bits(peer.call(y)) == bits(y)  # the server's handler replies with a field


def test_a_masked_array_with_masked_values_is_refused_and_one_without_is_sent():
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])
    unmasked = np.ma.masked_array([1.0, 2.0, 3.0], mask=False)  # as netCDF4 returns arrays
    refused = r"is a masked array with masked values, whose mask cannot be sent"
    with peerpipe.Peer.spawn(parts_server()) as peer:
        with pytest.raises(TypeError, match=rf"part 1 {refused}: pass numpy.ma.filled"):
            peer.call_parts("echo", np.ones(2), masked)
        with pytest.raises(TypeError, match=rf"part 0 {refused}"):
            peer.call_parts("echo", masked[::-1])  # copied, not lent: refused the same
        with pytest.raises(TypeError, match=rf"out\[0\] {refused}"):
            peer.call_parts("echo", np.ones(3), out=(masked,))
        assert masked.data.tolist() == [1.0, 2.0, 3.0], "nothing was written"
        (back,) = peer.call_parts("echo", unmasked)
        assert type(back) is np.ndarray and back.tolist() == [1.0, 2.0, 3.0]
    with peerpipe.Peer.spawn(rust_server("echo", "pipe")) as peer:
        with pytest.raises(TypeError, match=rf"x {refused}"):
            peer.call(masked)
        assert peer.call(unmasked).tolist() == [1.0, 2.0, 3.0]
        assert peer.call(np.ma.filled(masked, 0.0)).tolist() == [1.0, 0.0, 3.0]


def test_an_out_that_shares_memory_with_a_part_or_another_out_is_refused():
    buf = np.arange(8.0)
    with peerpipe.Peer.spawn(parts_server()) as peer:
        in_use = r"cannot be used: its memory is in use by this call or another in flight"
        with pytest.raises(ValueError, match=rf"out\[0\] {in_use}"):
            peer.call_parts("echo", buf[:4], out=(buf[2:6],))
        with pytest.raises(ValueError, match=rf"out\[1\] {in_use}"):
            peer.call_parts("echo", np.ones(2), np.ones(2), out=(buf[:2], buf[1:3]))
        assert buf.tolist() == list(np.arange(8.0)), "nothing was written"
        # Disjoint views of one array, and one array read twice, are fine.
        peer.call_parts("echo", buf[:4], buf[:4], out=(buf[4:], np.empty(4)))
        assert buf.tolist() == [0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0]

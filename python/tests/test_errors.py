"""Every error: the exception classes, their messages (the Rust crate's), bad input."""

import numpy as np
import pytest
from conftest import children, python_server, rust_server

import peerpipe


def test_the_exception_hierarchy():
    for cls in (
        peerpipe.Timeout,
        peerpipe.PeerExited,
        peerpipe.ProtocolError,
        peerpipe.RemoteError,
        peerpipe.TooLarge,
        peerpipe.Interrupted,
        peerpipe.ShapeError,
        peerpipe.Unsupported,
    ):
        assert issubclass(cls, peerpipe.Error)
    assert issubclass(peerpipe.Timeout, TimeoutError)
    assert issubclass(peerpipe.Error, Exception)


def test_a_silent_server_is_a_timeout_naming_what_was_awaited_and_is_reaped():
    before = children()
    with pytest.raises(
        peerpipe.Timeout, match=r"timed out after 300ms waiting for the server's HELLO"
    ):
        peerpipe.Peer.spawn(python_server("misbehaving", "silent"), timeout=0.3)
    assert children() == before


def test_a_timeout_is_also_a_builtin_timeout_error():
    with pytest.raises(TimeoutError):
        peerpipe.Peer.spawn(python_server("misbehaving", "hello-then-silent"), timeout=0.3).call(
            np.ones(4)
        )


def test_a_server_that_goes_silent_mid_call_times_out_and_closes_the_peer():
    before = children()
    peer = peerpipe.Peer.spawn(python_server("misbehaving", "hello-then-silent"), timeout=0.3)
    with pytest.raises(peerpipe.Timeout, match=r"waiting for the reply to seq 1"):
        peer.call(np.ones(4))
    assert peer.closed
    with pytest.raises(ValueError, match=r"peer is closed \(after an earlier error\)"):
        peer.call(np.ones(4))
    assert children() == before


def test_a_timeout_after_an_error_reply_carries_the_servers_words():
    before = children()
    peer = peerpipe.Peer.spawn(python_server("misbehaving", "error-then-silent"), timeout=0.3)
    with pytest.raises(peerpipe.RemoteError, match="out of cheese"):
        peer.call(np.ones(4))
    with pytest.raises(
        peerpipe.Timeout,
        match=r"waiting for the reply to seq 2; the server's last ERROR, for seq 1, said: "
        r"handler failed: out of cheese",
    ):
        peer.call(np.ones(4))
    assert peer.closed
    assert children() == before


def test_a_server_that_exits_is_peer_exited_with_its_status():
    before = children()
    peer = peerpipe.Peer.spawn(python_server("misbehaving", "hello-then-exit-3"))
    with pytest.raises(peerpipe.PeerExited, match=r"exited with status 3") as info:
        peer.call(np.ones(4))
    assert info.value.status == "exited with status 3"
    assert (info.value.exit_code, info.value.signal) == (3, None)
    assert peer.closed
    assert children() == before


def test_a_server_killed_by_a_signal_is_peer_exited_naming_the_signal():
    import os
    import signal

    peer = peerpipe.Peer.spawn(rust_server("echo", "pipe"))
    os.kill(peer.server_pid, signal.SIGKILL)
    with pytest.raises(peerpipe.PeerExited, match=r"killed by signal 9 \(SIGKILL\)") as info:
        for _ in range(100):
            peer.call(np.ones(4))
    assert info.value.status == "was killed by signal 9 (SIGKILL)"
    assert (info.value.exit_code, info.value.signal) == (None, signal.SIGKILL)


def test_a_server_that_exits_before_hello_is_peer_exited():
    with pytest.raises(peerpipe.PeerExited, match=r"exited with status 7"):
        peerpipe.Peer.spawn("exit 7")


def test_garbage_from_the_server_is_a_protocol_error_naming_the_magic():
    before = children()
    with pytest.raises(peerpipe.ProtocolError, match=r'bad magic: expected "PEER"'):
        peerpipe.Peer.spawn(python_server("misbehaving", "garbage"))
    assert children() == before


def test_a_wrong_transport_is_a_protocol_error_naming_the_region():
    # The server expects shm-ring, the client gives it a pipe.
    with pytest.raises(peerpipe.PeerExited):
        peerpipe.Peer.spawn(rust_server("echo", "shm-ring"), transport="pipe", timeout=2.0)


def test_an_error_reply_is_a_remote_error_and_the_peer_stays_usable():
    with peerpipe.Peer.spawn(rust_server("lorenz96", "pipe")) as peer:
        with pytest.raises(
            peerpipe.RemoteError, match=r"needs at least 4 elements, found 2"
        ) as info:
            peer.call(np.ones(2))
        assert info.value.seq == 1
        assert "lorenz96" in info.value.message
        assert not peer.closed
        assert peer.call(np.full(4, 8.0)).tolist() == [0.0] * 4  # (8 - 8) * 8 - 8 + 8


def test_a_python_handler_exception_is_a_remote_error_with_its_text():
    with peerpipe.Peer.spawn(python_server("picky_server")) as peer:
        assert peer.server_hello["handler"] == "picky"
        with pytest.raises(
            peerpipe.RemoteError, match=r"picky: ValueError: no negative numbers, got -1.0"
        ):
            peer.call(np.array([-1.0, 2.0]))
        with pytest.raises(
            peerpipe.RemoteError,
            match=r"picky: TypeError: the handler's reply must be a 1-D numpy array.*got list",
        ):
            peer.call(np.ones(3))
        with pytest.raises(
            peerpipe.RemoteError,
            match=r"picky: ValueError: the handler's reply must be 1-D, got a 2-D array of shape "
            r"\(2, 3\); return one 1-D array, e\.g\. result\.ravel\(\)",
        ):
            peer.call(np.ones(6))
        assert peer.call(np.ones(2)).tolist() == [1.0, 1.0]


# The one table from the crate's error kinds to exceptions (python/src/errors.rs); the C
# ABI maps the same kinds to its PP_E* codes.
KIND_TO_EXCEPTION = {
    "invalid_argument": ValueError,
    "timeout": peerpipe.Timeout,
    "peer_exited": peerpipe.PeerExited,
    "closed": peerpipe.PeerExited,
    "protocol": peerpipe.ProtocolError,
    "too_large": peerpipe.TooLarge,
    "remote": peerpipe.RemoteError,
    "not_found": FileNotFoundError,
    "interrupted": peerpipe.Interrupted,
    "shape": peerpipe.ShapeError,
    "unsupported": peerpipe.Unsupported,
    "io": OSError,
}


def test_every_error_kind_maps_to_its_exception():
    from peerpipe import _peerpipe

    kinds = _peerpipe._error_kinds()
    assert sorted(kinds) == sorted(KIND_TO_EXCEPTION), "a kind without its line in the table"
    for kind in kinds:
        assert _peerpipe._exception_for_kind(kind) is KIND_TO_EXCEPTION[kind], kind
    assert issubclass(peerpipe.TooLarge, peerpipe.ProtocolError)
    assert issubclass(peerpipe.ShapeError, peerpipe.ProtocolError)
    assert issubclass(peerpipe.Unsupported, peerpipe.Error)
    assert issubclass(peerpipe.Interrupted, peerpipe.Error)


def test_a_missing_command_is_file_not_found_naming_the_program():
    expected = r'cannot start "/nonexistent/peer-server": No such file or directory \(os error 2\)'
    with pytest.raises(FileNotFoundError, match=expected) as info:
        peerpipe.Peer.spawn(["/nonexistent/peer-server", "--role", "server"])
    assert info.value.kind == "not_found"
    assert info.value.errno == 2


def test_a_missing_program_in_a_shell_line_is_file_not_found_naming_it():
    with pytest.raises(FileNotFoundError, match=r'cannot start "target/release/pear": No such'):
        peerpipe.Peer.spawn("target/release/pear --role server")


def test_a_program_that_is_not_executable_is_a_permission_error_naming_it():
    with pytest.raises(PermissionError, match=r'cannot start "/etc/passwd": Permission denied'):
        peerpipe.Peer.spawn(["/etc/passwd"])


def test_spawn_server_with_a_missing_path_names_it_and_uses_no_other_peer():
    with pytest.raises(FileNotFoundError, match=r'cannot start "target/release/pear": No such'):
        peerpipe.Peer.spawn_server("target/release/pear", "echo")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"transport": "carrier-pigeon"}, r"invalid transport"),
        ({"wait": "sleepy"}, r"expected auto, auto:stay, block, spin, hybrid or hybrid:DUR"),
        ({"timeout": -1.0}, r"timeout must be a non-negative number"),
        ({"path": "copy"}, r"expected zero-copy or codec"),
    ],
)
def test_bad_options_are_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        peerpipe.Peer.spawn(rust_server("echo", "pipe"), **kwargs)


def test_bad_cmd_is_a_type_or_value_error():
    with pytest.raises(TypeError, match=r"cmd must be a list of strings"):
        peerpipe.Peer.spawn(42)
    with pytest.raises(ValueError, match=r"cmd is an empty list"):
        peerpipe.Peer.spawn([])


def test_bad_arrays_are_type_and_value_errors_with_clear_messages():
    with peerpipe.Peer.spawn(rust_server("echo", "pipe")) as peer:
        x = np.ones(4)
        cases = [
            (
                (np.ones((2, 2)),),
                {},
                ValueError,
                r"x must be 1-D, got a 2-D array of shape \(2, 2\)",
            ),
            (
                (np.ones(4, dtype=np.int64),),
                {},
                TypeError,
                r"x must have dtype float64 or float32.*got int64",
            ),
            (
                ([1.0, 2.0],),
                {},
                TypeError,
                r"x must be a 1-D numpy array of float64 or float32, got list",
            ),
            ((x, np.ones(3)), {}, ValueError, r"out must have x's length 4, got 3"),
            (
                (x, np.ones(4, dtype=np.float32)),
                {},
                TypeError,
                r"out must have x's dtype float64, got float32",
            ),
            ((x, np.ones(8)[::2]), {}, ValueError, r"out must be contiguous"),
            ((x, x), {}, ValueError, r"out cannot be used"),
            ((x,), {"wire": "f16"}, ValueError, r"wire must be 'f64', 'f32' or None"),
            ((x.astype(np.float32),), {"wire": "f64"}, ValueError, r"wire='f64' needs a float64 x"),
        ]
        for args, kwargs, cls, message in cases:
            with pytest.raises(cls, match=message):
                peer.call(*args, **kwargs)
        read_only = np.ones(4)
        read_only.flags.writeable = False
        with pytest.raises(ValueError, match=r"out cannot be used"):
            peer.call(x, read_only)
        # Nothing was sent by any of these: the peer is still in step.
        assert peer.call(x).tolist() == [1.0] * 4


def test_an_array_of_more_dimensions_is_refused_saying_what_to_pass_instead():
    with peerpipe.Peer.spawn(rust_server("echo", "pipe")) as peer:
        x = np.arange(6.0).reshape(2, 3)
        with pytest.raises(
            ValueError,
            match=r"^x must be 1-D, got a 2-D array of shape \(2, 3\); a call sends one 1-D "
            r"array: pass x\.ravel\(\) to send its values in order \(and reshape the reply\), "
            r"or call once per row$",
        ):
            peer.call(x)
        with pytest.raises(
            ValueError,
            match=r"^out must be 1-D, got a 2-D array of shape \(2, 3\); the reply is written "
            r"into one 1-D array: pass a 1-D out of the request's length$",
        ):
            peer.call(x.ravel(), np.empty((2, 3)))
        # What the message says to do works.
        assert peer.call(x.ravel()).reshape(x.shape).tolist() == x.tolist()


def test_a_closed_peer_raises_value_error():
    peer = peerpipe.Peer.spawn(rust_server("echo", "pipe"))
    peer.close()
    with pytest.raises(ValueError, match=r"^peer is closed$"):
        peer.call(np.ones(4))

"""RemoteRhs as SciPy calls it -- fun(t, y, *args), jac(t, y, *args), vectorized -- against
peerpipe.serve_ode (servers/ode_server.py) and the Rust example server (examples/ode_server.rs):
solve_ivp through them is bit-identical to the local solve; nothing is dropped, and what
cannot be sent is refused before anything is."""

import math

import numpy as np
import pytest
from conftest import children, python_server, rust_example, rust_server
from odes import DUFFING, ROBERTSON, duffing, duffing_jac, robertson, robertson_jac
from test_parts import v1_only_server

import peerpipe

solve_ivp = pytest.importorskip("scipy.integrate").solve_ivp


def rust_ode_server(model: str) -> list:
    """examples/ode_server.rs, built, serving MODEL."""
    return [str(rust_example("ode_server")), model]


SERVERS = {
    "python": lambda model: python_server("ode_server", model),
    "rust": rust_ode_server,
}


class Counted:
    """`fun` counting its calls: what a remote one makes as round trips (SciPy's nfev leaves
    out the evaluations of a finite-difference Jacobian)."""

    def __init__(self, fun):
        self.fun, self.calls = fun, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fun(*args)


def assert_same_solution(remote, local):
    """The same steps, the same bits, the same work."""
    assert local.status == 0 and remote.status == 0, (local.message, remote.message)
    assert remote.t.tobytes() == local.t.tobytes()
    assert remote.y.shape == local.y.shape and remote.y.tobytes() == local.y.tobytes()
    assert (remote.nfev, remote.njev, remote.nlu) == (local.nfev, local.njev, local.nlu)


def test_the_c_librarys_cos_is_what_both_servers_and_the_local_model_evaluate():
    # The bit-identity below rests on Rust's f64::cos and Python's math.cos agreeing: both
    # call the C library's cos. Checked directly on the forcing term, 2000 values of t.
    ts = np.linspace(0.0, 50.0, 2000)
    with peerpipe.RemoteRhs(rust_ode_server("duffing")) as rhs:
        for t in ts:
            remote = rhs(t, np.zeros(2))[1]
            assert remote == 0.5 * math.cos(1.2 * t), t


@pytest.mark.parametrize("server", ["python", "rust"])
@pytest.mark.parametrize("method", ["RK45", "Radau", "BDF"])
@pytest.mark.parametrize("args", [None, DUFFING], ids=["no-args", "args"])
def test_forced_duffing_through_remote_rhs_is_bit_identical_to_the_local_solve(
    server, method, args
):
    options = dict(method=method, args=args)
    fun = Counted(duffing)
    local = solve_ivp(fun, (0.0, 50.0), [1.0, 0.0], **options)
    with peerpipe.RemoteRhs(SERVERS[server]("duffing")) as rhs:
        remote = solve_ivp(rhs, (0.0, 50.0), [1.0, 0.0], **options)
        assert rhs.stats()["calls"] == fun.calls
    assert_same_solution(remote, local)
    assert local.nfev > 100


@pytest.mark.parametrize("server", ["python", "rust"])
def test_t_and_args_change_the_answer(server):
    with peerpipe.RemoteRhs(SERVERS[server]("duffing")) as rhs:
        y = np.zeros(2)
        at_zero, later = rhs(0.0, y), rhs(1.3, y)
        assert at_zero.tolist() == [0.0, 0.5]
        assert later[1] == 0.5 * math.cos(1.2 * 1.3) and later[1] != at_zero[1]
        stronger = rhs(1.3, y, 0.3, -1.0, 1.0, 0.9, 1.2)
        assert stronger[1] == 0.9 * math.cos(1.2 * 1.3)
        # An int t and numpy scalars are real numbers too.
        assert rhs(np.float32(0.0), y, *map(np.float64, DUFFING)).tolist() == [0.0, 0.5]
        assert rhs(0, y).tolist() == [0.0, 0.5]
        for t, state in [(0.0, [1.0, 0.0]), (37.5, [-1.2, 0.4])]:
            state = np.array(state)
            assert rhs(t, state).tobytes() == duffing(t, state).tobytes()
            assert rhs.jac(t, state).tobytes() == duffing_jac(t, state).tobytes()
            assert rhs.jac(t, state).shape == (2, 2)


def test_each_result_is_a_new_array_of_its_own():
    # Results are made unfilled and written whole by the call: each one owns its memory, and
    # a later call neither changes it nor hands out the same memory again.
    with peerpipe.RemoteRhs(SERVERS["rust"]("duffing")) as rhs:
        y, elsewhere = np.array([1.0, 0.0]), np.array([-1.2, 0.4])
        first, jac = rhs(0.0, y), rhs.jac(0.0, y)
        kept = first.copy(), jac.copy()
        for result in (first, jac):
            assert result.flags.owndata and result.flags.writeable and result.flags.c_contiguous
        assert rhs(5.0, elsewhere).tobytes() == duffing(5.0, elsewhere).tobytes()
        assert rhs.jac(5.0, elsewhere).tobytes() == duffing_jac(5.0, elsewhere).tobytes()
        assert first.tobytes() == kept[0].tobytes() and jac.tobytes() == kept[1].tobytes()
        again = rhs(0.0, y)
        assert again.tobytes() == first.tobytes() and not np.shares_memory(again, first)


def test_a_jacobian_too_large_to_hold_is_a_memory_error_before_anything_is_sent():
    with peerpipe.RemoteRhs(SERVERS["rust"]("duffing")) as rhs:
        # Its n x n Jacobian would take 512 TiB, more than an address space holds.
        with pytest.raises(MemoryError):
            rhs.jac(0.0, np.zeros(2**23))
        assert rhs.stats()["calls"] == 0
        assert rhs.jac(0.0, np.array([1.0, 0.0])).shape == (2, 2)


@pytest.mark.parametrize("server", ["python", "rust"])
@pytest.mark.parametrize("method", ["BDF", "Radau"])
@pytest.mark.parametrize("args", [None, ROBERTSON], ids=["no-args", "args"])
def test_robertson_with_a_remote_jacobian_is_bit_identical_to_the_local_solve(server, method, args):
    options = dict(method=method, rtol=1e-6, atol=1e-10, args=args)
    y0 = [1.0, 0.0, 0.0]
    local = solve_ivp(robertson, (0.0, 1e5), y0, jac=robertson_jac, **options)
    with peerpipe.RemoteRhs(SERVERS[server]("robertson")) as rhs:
        assert rhs.functions == ["rhs", "jac"]
        remote = solve_ivp(rhs, (0.0, 1e5), y0, jac=rhs.jac, **options)
        # With an analytic Jacobian every evaluation is counted: nfev rhs, njev jac calls.
        assert rhs.stats()["calls"] == local.nfev + local.njev
    assert_same_solution(remote, local)
    assert local.njev > 0


@pytest.mark.parametrize("server", ["python", "rust"])
@pytest.mark.parametrize("method", ["RK45", "BDF"])
def test_vectorized_calls_are_one_call_each_and_bit_identical(server, method):
    options = dict(method=method, args=DUFFING, vectorized=True)
    fun = Counted(duffing)
    local = solve_ivp(fun, (0.0, 50.0), [1.0, 0.0], **options)
    with peerpipe.RemoteRhs(SERVERS[server]("duffing"), vectorized=True) as rhs:
        assert rhs.vectorized
        remote = solve_ivp(rhs, (0.0, 50.0), [1.0, 0.0], **options)
        assert rhs.stats()["calls"] == fun.calls  # each (n, k) evaluation one round trip
        columns = np.array([[1.0, 0.0, -1.2], [0.0, 0.5, 0.4]])
        assert rhs(2.0, columns).tobytes() == duffing(2.0, columns).tobytes()
        assert rhs(2.0, columns[:, 0]).shape == (2,)  # a single state still works
    assert_same_solution(remote, local)


def test_a_server_without_rhs_is_refused_at_construction_naming_it():
    before = children()
    with pytest.raises(peerpipe.Unsupported) as info:
        peerpipe.RemoteRhs(rust_server("echo", "pipe"))
    message = str(info.value)
    assert message.startswith("the server (peerpipe 0.1.0, handler echo, which serves no ")
    assert 'does not serve a function "rhs"' in message
    assert "peerpipe.serve_ode" in message and "autonomous=True" in message
    assert info.value.kind == "unsupported"
    with pytest.raises(peerpipe.Unsupported, match=r"whose HELLO does not announce parts=1"):
        peerpipe.RemoteRhs(v1_only_server())
    with pytest.raises(peerpipe.Unsupported, match=r"which serves step, observe, outer"):
        peerpipe.RemoteRhs(python_server("parts_server"))
    assert children() == before, "a refused server was left running"


def test_autonomous_sends_the_state_alone_and_still_checks_t_and_args():
    y = np.arange(3.0)
    with peerpipe.RemoteRhs(v1_only_server(), autonomous=True) as rhs:
        assert rhs.autonomous and rhs.functions == []
        assert rhs(0.5, y).tolist() == [0.0, 1.0, 2.0]  # the v1 echo server's "derivative"
        out = np.empty(3)
        assert rhs.eval(7.0, y, out=out) is out and out.tolist() == [0.0, 1.0, 2.0]
        with pytest.raises(TypeError, match=r"t must be a real number"):
            rhs(None, y)
        with pytest.raises(TypeError, match=r"autonomous=True.*takes no args, got 1"):
            rhs(0.0, y, 1.0)
        with pytest.raises(peerpipe.Unsupported, match=r"PARTS requests are not supported"):
            rhs.jac(0.0, y)
        assert rhs(1.0, y).tolist() == [0.0, 1.0, 2.0]
        assert rhs.stats()["calls"] == 3
    # lorenz96 serves rhs too; autonomous=True makes its calls DATA, the same numbers.
    x = np.full(40, 8.0)
    x[0] += 0.01
    with peerpipe.RemoteRhs(rust_server("lorenz96", "pipe"), autonomous=True, wire="f64") as a:
        with peerpipe.RemoteRhs(rust_server("lorenz96", "pipe")) as b:
            assert a(0.0, x).tobytes() == b(0.0, x).tobytes()
            # y as a field of a structured array (a stride of 9 bytes): the same numbers.
            record = np.zeros(40, dtype=[("y", "f8"), ("flag", "i1")])
            record["y"] = x
            assert b(0.0, record["y"]).tobytes() == b(0.0, x).tobytes()
    with peerpipe.RemoteRhs(rust_ode_server("duffing")) as rhs:
        y = np.array([0.3, -1.7])
        record = np.zeros(2, dtype=[("y", "f8"), ("flag", "i1")])
        record["y"] = y
        assert rhs.jac(2.0, record["y"]).tobytes() == rhs.jac(2.0, y).tobytes()


def test_bad_t_y_and_args_are_refused_before_anything_is_sent():
    y = np.array([1.0, 0.0])
    with peerpipe.RemoteRhs(rust_ode_server("duffing")) as rhs:
        cases = [
            ((None, y), TypeError, r"^t must be a real number \(a float or an int\), got NoneType"),
            ((np.array([0.0]), y), TypeError, r"^t must be a real number.*got ndarray"),
            (("0", y), TypeError, r"^t must be a real number.*got str"),
            ((1j, y), TypeError, r"^t must be a real number.*got complex"),
            ((True, y), TypeError, r"^t must be a real number.*got bool"),
            ((0.0, [1.0, 0.0]), TypeError, r"y must be a numpy array of float64, got list"),
            ((0.0, np.array([1, 0])), TypeError, r"y must have dtype float64, got int64"),
            ((0.0, np.ones((2, 1))), ValueError, r"y must be 1-D, got shape \(2, 1\).*vectorized"),
            ((0.0, np.ones((2, 1, 1))), ValueError, r"y must be 1-D, got a 3-D array"),
            ((0.0, y, 0.3, "a"), TypeError, r"args\[1\] must be a real number.*got str 'a'"),
            ((0.0, y, np.ones(5)), TypeError, r"args\[0\] must be a real number.*got ndarray"),
            ((0.0, y, None), TypeError, r"args\[0\] must be a real number.*got NoneType"),
        ]
        for args, cls, message in cases:
            with pytest.raises(cls, match=message):
                rhs(*args)
        with pytest.raises(TypeError, match=r"args\[0\] must be a real number"):
            rhs.jac(0.0, y, "d")
        with pytest.raises(ValueError, match=r"out must have y's shape \(2,\), got \(3,\)"):
            rhs.eval(0.0, y, out=np.empty(3))
        with pytest.raises(TypeError, match=r"out must be a float64 numpy array"):
            rhs.eval(0.0, y, out=np.empty(2, dtype=np.float32))
        # Nothing was sent by any of these.
        assert rhs.stats()["calls"] == 0
        assert rhs(0.0, y).tolist() == [0.0, 0.5]
        # A non-contiguous y is copied once.
        assert rhs(0.0, np.array([1.0, 9.0, 0.0])[::2]).tolist() == [0.0, 0.5]


def test_option_combinations_that_would_drop_something_are_refused_before_spawning():
    before = children()
    with pytest.raises(ValueError, match=r"wire='f32' narrows the state of DATA calls"):
        peerpipe.RemoteRhs(rust_ode_server("duffing"), wire="f32")
    with pytest.raises(ValueError, match=r"vectorized=True needs the server's rhs"):
        peerpipe.RemoteRhs(rust_ode_server("duffing"), autonomous=True, vectorized=True)
    assert children() == before


def test_replies_of_another_shape_are_shape_errors_and_the_rhs_stays_usable():
    y = np.array([1.0, 2.0])
    with peerpipe.RemoteRhs(python_server("bad_ode_server", "raw")) as rhs:
        with pytest.raises(peerpipe.ShapeError, match=r"expected 1 part: f64\[2\], found 1 part"):
            rhs(0.0, y)
        with pytest.raises(peerpipe.ShapeError, match=r"expected 1 part: f64\[2x2\], found"):
            rhs.jac(0.0, y)
        with pytest.raises(peerpipe.ShapeError):
            rhs(0.0, y)  # still open: the same answer again, not "closed"


def test_serve_ode_refuses_results_of_the_wrong_shape_or_kind_and_goes_on():
    y = np.array([1.0, 2.0])
    with peerpipe.RemoteRhs(python_server("bad_ode_server", "checked")) as rhs:
        with pytest.raises(
            peerpipe.RemoteError,
            match=r"rhs: ValueError: returned an array of shape \(3,\), expected \(2,\) "
            r"\(the shape of y\)",
        ):
            rhs(-1.0, y)
        with pytest.raises(peerpipe.RemoteError, match=r"rhs: TypeError: returned complex128"):
            rhs(-2.0, y)
        with pytest.raises(peerpipe.RemoteError, match=r"rhs: ZeroDivisionError: no derivative"):
            rhs(-3.0, y)
        with pytest.raises(
            peerpipe.RemoteError, match=r"jac: ValueError: returned an array of shape \(2, 3\)"
        ):
            rhs.jac(-1.0, y)
        with pytest.raises(peerpipe.RemoteError, match=r"expected 0 parameters|takes 2"):
            rhs(0.0, y, 1.0)
        assert rhs(0.0, y).tolist() == [-1.0, -2.0]
        assert rhs.jac(0.0, y).tolist() == [[-1.0, -0.0], [-0.0, -1.0]]
        # Results that are not C-ordered float64 arrays are read as np.asarray(r, dtype=float).
        assert rhs(-4.0, y).tolist() == [-1.0, -2.0]  # a strided view
        assert rhs(-5.0, y).tolist() == [1.0, 2.0]  # a list of ints
        assert rhs(-6.0, y).tolist() == [-1.0, -2.0]  # big-endian
        assert rhs(-7.0, y).tolist() == [-1.0, -2.0]  # a stride of 12 bytes
        with pytest.raises(peerpipe.RemoteError, match=r"rhs: TypeError: returned a masked array"):
            rhs(-8.0, y)
        assert rhs(-9.0, y).tolist() == [-1.0, -2.0]  # masked, but no value is
        with pytest.raises(TypeError, match=r"y is a masked array with masked values"):
            rhs(0.0, np.ma.masked_array(y, mask=[True, False]))
        assert rhs.jac(-4.0, y).tolist() == [[1.0, 2.0], [3.0, 4.0]]  # Fortran order


def test_a_jacobian_the_server_does_not_serve_is_a_remote_error_naming_what_it_has():
    with peerpipe.RemoteRhs(python_server("ode_server", "duffing", "no-jac")) as rhs:
        assert rhs.functions == ["rhs"]
        with pytest.raises(
            peerpipe.RemoteError, match=r'unknown function "jac": this server has rhs'
        ):
            rhs.jac(0.0, np.zeros(2))
        assert rhs(0.0, np.zeros(2)).tolist() == [0.0, 0.5]


def test_an_error_that_ends_the_conversation_closes_the_rhs():
    rhs = peerpipe.RemoteRhs(python_server("misbehaving", "hello-then-exit-3"), autonomous=True)
    with pytest.raises(peerpipe.PeerExited, match=r"exited with status 3"):
        rhs(0.0, np.ones(4))
    with pytest.raises(ValueError, match=r"RemoteRhs is closed \(after an earlier error\)"):
        rhs(0.0, np.ones(4))
    rhs.close()
    with pytest.raises(ValueError, match=r"^RemoteRhs is closed$"):
        rhs(0.0, np.ones(4))


def test_reset_stats_starts_every_count_afresh_between_two_solves():
    with peerpipe.RemoteRhs(python_server("ode_server", "duffing")) as rhs:
        first = solve_ivp(rhs, (0.0, 5.0), [1.0, 0.0], method="RK45", args=DUFFING)
        before = rhs.stats()
        assert before["calls"] == first.nfev and before["round_trip_ns_total"] > 0
        assert before["wait_spun"] + before["wait_slept_at_once"] > 0
        rhs.reset_stats()
        after = rhs.stats()
        assert set(after) == set(before)  # the same keys, every count and sum back to 0
        for key, value in after.items():
            if key != "wait_spinning":
                assert value == 0, (key, value)
        second = solve_ivp(rhs, (0.0, 2.0), [1.0, 0.0], method="RK45", args=DUFFING)
        stats = rhs.stats()
        assert stats["calls"] == second.nfev < first.nfev
        assert stats["round_trip_ns_total"] > 0 and stats["round_trip_p50_ns"] > 0
    with pytest.raises(ValueError, match="closed"):
        rhs.reset_stats()

"""Type stubs of the native module peerpipe._peerpipe (re-exported by the peerpipe package)."""

from os import PathLike
from typing import Any, Callable, Dict, List, Literal, Optional, Sequence, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

Transport = Literal["pipe", "shm-sem", "shm-ring", "tcp"]
F64 = npt.NDArray[np.float64]
F32 = npt.NDArray[np.float32]
PartValue = Union[npt.NDArray[Any], float, int, bytes, bytearray, np.generic]
"""A value that travels as one PARTS part: a 1-D (vector) or 2-D (row-major matrix) numpy array
of float64, float32, int64 or uint8 (bytes); a float (one f64); an int (one i64); a numpy scalar
of those dtypes (one element); bytes or bytearray."""

class Error(Exception):
    """Base class of every error peerpipe raises; the message is the Rust crate's.

    Which exception a Rust error becomes depends only on its kind, one table (every exception
    raised for a Rust error, built-in ones included, has ``kind``):

    ================  ==========================================================
    kind              exception
    ================  ==========================================================
    invalid_argument  ValueError
    timeout           Timeout (also a TimeoutError)
    peer_exited       PeerExited (status, exit_code, signal)
    closed            PeerExited (status, exit_code, signal all None)
    protocol          ProtocolError
    too_large         TooLarge (a ProtocolError)
    remote            RemoteError (seq, message)
    not_found         FileNotFoundError (errno 2; the message names the program)
    interrupted       Interrupted
    shape             ShapeError (a ProtocolError; seq, expected, found)
    unsupported       Unsupported
    io                OSError (its subclass by errno, e.g. PermissionError)
    ================  ==========================================================
    """

    kind: str
    """The Rust error's kind: "timeout", "protocol", ... (see the table above)."""

class Timeout(Error, TimeoutError):
    """The handshake or a reply took longer than ``timeout``. The peer is closed and its
    server terminated and reaped."""

class PeerExited(Error):
    """The server process ended or closed its end. The peer is closed."""

    status: Optional[str]
    """How it ended ('exited with status 3', 'was killed by signal 9 (SIGKILL)'), if known."""
    exit_code: Optional[int]
    """Its exit status (3), when it exited and that is known."""
    signal: Optional[int]
    """The signal that killed it (9), when one did and that is known."""

class ProtocolError(Error):
    """The other side broke wire format v1. The peer is closed and its server reaped."""

class TooLarge(ProtocolError):
    """A frame is larger than its receiver's ``max_frame_bytes``. A request refused before it
    was sent (larger than the server accepts) leaves the peer usable; a reply too large for
    this side closes it."""

class ShapeError(ProtocolError):
    """A reply had another shape (number of parts, dtype, length, matrix columns) than the
    caller expects; the message names both ("expected 1 part: f64[500], found 1 part: f64[3]").
    The reply was read whole: the peer stays usable. A ProtocolError, so ``except
    ProtocolError`` catches it too."""

    seq: int
    """The sequence number of the request."""
    expected: str
    """The parts the caller expects, e.g. "1 part: f64[500]"."""
    found: str
    """The parts that came, e.g. "1 part: f64[3]"."""

class Unsupported(Error):
    """The server does not speak what the call needs: PARTS requests (a server whose HELLO
    lacks parts=1), or, for RemoteRhs, a function ``rhs``. Nothing was sent; the peer stays
    usable. The message names the server and what to do instead."""

class Interrupted(Error):
    """The wait was given up on request; the server was terminated and reaped."""

class RemoteError(Error):
    """The server answered with an ERROR frame. The peer stays usable."""

    seq: int
    """The sequence number of the rejected request."""
    message: str
    """The server's own text."""

def _error_kinds() -> list[str]:
    """The name of every kind of Rust error (for the test of the exception table)."""

def _exception_for_kind(kind: str) -> Optional[type]:
    """The exception class the table gives ``kind``; None when the table lacks it."""

class CallTiming:
    """Where the time of one round trip went, in nanoseconds."""

    @property
    def round_trip_ns(self) -> int:
        """The whole call, from before encoding to after decoding."""
    @property
    def server_ns(self) -> int:
        """Server time, from reading the request header to writing the reply."""
    @property
    def encode_ns(self) -> int:
        """Converting the request into wire bytes (0 on the zero-copy path, which converts nothing)."""
    @property
    def decode_ns(self) -> int:
        """Converting the reply from wire bytes."""
    @property
    def transfer_ns(self) -> int:
        """Moving bytes and waiting: round trip - encode - decode - server (never negative)."""

class Peer:
    """A conversation with a server process. A context manager: leaving the block closes it.

    One thread at a time: a second thread calling while a call waits gets RuntimeError.
    """

    @staticmethod
    def spawn(
        cmd: Union[Sequence[str], str],
        *,
        transport: Transport = "pipe",
        wait: str = "auto",
        timeout: Optional[float] = 10.0,
        max_frame_bytes: Optional[int] = None,
        path: Literal["zero-copy", "codec"] = "zero-copy",
    ) -> "Peer":
        """Spawns ``cmd`` (a list of arguments, run without a shell, or a string run with
        ``sh -c``) with its stdin and stdout connected to this process, and exchanges HELLOs.

        ``transport``: "pipe", "shm-sem"/"shm-ring" (the server's stdin is then a shared
        region, which ``peerpipe.serve`` and ``peer --role server`` recognise by themselves), or "tcp" (the server listens, announces
        its address and a token on its stdout, and this side connects: PROTOCOL.md section 14;
        ``peerpipe.serve(..., transport="tcp")`` and ``peer --role server --transport tcp``
        do). ``wait``: "auto" (the default: spin while the
        server answers within the spin (50 us) -- block while spinning does not pay -- both processes on one core, or other work
        holding the cores -- try spinning again now and then, and move this side's thread to an
        idle CPU when it keeps handing its core to the server), "auto:stay" (auto, leaving
        the thread where the scheduler puts it),
        "block" (least CPU), "spin" (burns a core) or "hybrid[:50us]" (spin, then
        block). ``timeout``: seconds for the handshake and for each reply (None: no
        limit). ``max_frame_bytes``: largest reply accepted (default 64 MiB). The GIL is
        released during the handshake, and Ctrl-C interrupts it within about 100 ms (the server
        being started is terminated and reaped before ``KeyboardInterrupt`` is raised).

        ``cmd`` as a list runs without a shell; as a string, a simple command (words only) runs
        as ``sh -c 'exec CMD'``, so the spawned process is the server itself (``server_pid``).

        Raises FileNotFoundError (not there) or OSError (e.g. PermissionError) naming the
        program when ``cmd`` cannot be started, Timeout,
        PeerExited or ProtocolError when the handshake fails, ValueError for bad options.
        """
    @staticmethod
    def spawn_server(
        peer_exe: Union[str, "PathLike[str]"],
        handler: str = "echo",
        *,
        transport: Transport = "pipe",
        wait: str = "auto",
        timeout: Optional[float] = 10.0,
        max_frame_bytes: Optional[int] = None,
        path: Literal["zero-copy", "codec"] = "zero-copy",
    ) -> "Peer":
        """Spawns ``peer_exe --role server --handler HANDLER`` with the same wait strategy,
        frame limit and transport (handlers: echo, echo-raw, lorenz96, lorenz96-f32).

        A path (with a ``/``) is used as it is: FileNotFoundError naming it when it is not
        there. A bare name ("peer") is looked for in PEERPIPE_PEER, then on PATH."""
    @overload
    def call(
        self, x: F64, out: Optional[F64] = None, *, wire: Optional[Literal["f64", "f32"]] = None
    ) -> F64: ...
    @overload
    def call(
        self, x: F32, out: Optional[F32] = None, *, wire: Optional[Literal["f32"]] = None
    ) -> F32: ...
    def call(self, x: Any, out: Any = None, *, wire: Optional[str] = None) -> Any:
        """Sends the 1-D float64 or float32 array ``x`` and returns the reply.

        The reply has x's dtype and length. With ``out`` (same dtype and length, contiguous,
        writeable) it is written there and ``out`` is returned: no allocation per call.
        Without, a new array is returned. A non-contiguous ``x`` (strided, reversed, unaligned,
        a field of a structured array) is copied once before sending; a masked array with
        masked values raises TypeError (one with none is sent as its values). ``wire="f32"`` narrows float64 to f32 on the wire (like ``x.astype(float32)``)
        and widens the reply back into float64.

        The GIL is released while the call waits. Ctrl-C raises KeyboardInterrupt within
        about 100 ms; the server is then terminated and reaped and the peer closed. Do not
        change ``x`` or ``out`` from another thread during a call.

        Raises TypeError (not an array, wrong dtype), ValueError (not 1-D, ``out`` of the
        wrong length, non-contiguous or read-only ``out``, closed peer), RemoteError (the
        server's ERROR reply; the peer stays usable), Timeout, PeerExited or ProtocolError
        (the peer is then closed).
        """
    def call_parts(
        self, function: str, *parts: PartValue, out: Optional[Sequence[npt.NDArray[Any]]] = None
    ) -> Tuple[npt.NDArray[Any], ...]:
        """Calls the server's ``function`` ("" for its default function) with ``parts`` in one
        PARTS request and returns the reply's parts: ``peer.call_parts("rhs", t, y, p)``.

        Each part is a 1-D numpy array (a vector) or a 2-D one (a row-major matrix) of float64,
        float32, int64 or uint8 (bytes); a float (one f64), an int (one i64, not a bool), a
        numpy scalar (one element of its dtype), or bytes/bytearray. A non-contiguous array,
        or a Fortran-ordered matrix, is copied once into row-major order; anything else
        (object, complex, bool or string arrays, 0-D or 3-D arrays, masked arrays with masked
        values, bool, str, lists) raises TypeError or ValueError naming the part, before
        anything is sent.

        Without ``out``: a tuple of new arrays, one per reply part, of the part's dtype (uint8
        for bytes) and shape ((count,) for a vector, (rows, cols) for a matrix) -- whatever
        shape the server replied. With ``out`` (a tuple or list of arrays, one per expected
        part: 1-D for a vector, 2-D for a matrix, C-contiguous and writeable): the reply must
        have exactly those parts, and is written into them (``out`` is returned as a tuple);
        another shape raises ShapeError naming the expected and the found, and the peer stays
        usable.

        The GIL is released while the call waits; Ctrl-C raises KeyboardInterrupt within
        about 100 ms and closes the peer (its server terminated and reaped), as for ``call``.

        Raises Unsupported (the server does not speak PARTS; nothing sent), ValueError (a bad
        function name, more than 64 parts), TooLarge (larger than the server accepts; the peer
        stays usable), RemoteError (an unknown function -- the message names the server's --
        or the function's own error; the peer stays usable), ShapeError, and Timeout,
        PeerExited or ProtocolError after which the peer is closed.
        """
    @property
    def speaks_parts(self) -> bool:
        """True when the server reads PARTS requests (its HELLO says parts=1)."""
    @property
    def functions(self) -> list[str]:
        """The functions the server serves by name, as its HELLO announced them ([] if none)."""
    @property
    def last_timing(self) -> CallTiming:
        """Timing of the most recent successful call."""
    @property
    def server_hello(self) -> Dict[str, Any]:
        """The server's HELLO: max_frame_bytes, handler, implementation and pid (the server's
        process id on its own machine; None if absent), parts (it reads PARTS requests) and
        functions (the names it serves)."""
    @property
    def server_pid(self) -> Optional[int]:
        """The id of the local process that serves, when this peer spawned it and it can be
        known; None for a server on another machine (through ssh or srun), whose own id is
        ``server_hello["pid"]``."""
    @property
    def transport(self) -> Transport:
        """The transport in use."""
    @property
    def closed(self) -> bool:
        """True once closed (by close(), Ctrl-C or an error)."""
    def close(self) -> Optional[int]:
        """Says BYE, waits for the server to exit and reaps it. Returns its exit code (minus
        the signal number if a signal ended it); None when already closed."""
    def __enter__(self) -> "Peer": ...
    def __exit__(self, exc_type: Any = None, exc: Any = None, tb: Any = None) -> bool: ...

class RemoteRhs:
    """A right-hand side ``fun(t, y, *args)`` and its Jacobian ``jac(t, y, *args)`` evaluated by
    a server process, called exactly as ``scipy.integrate.solve_ivp`` calls them::

        rhs = RemoteRhs(["python3", "model.py"])          # model.py: peerpipe.serve_ode(fun, jac)
        sol = solve_ivp(rhs, (0, 50), y0, method="Radau", args=(0.3, -1.0), jac=rhs.jac)

    Every call sends ``t``, ``y`` and ``args`` (floats) to the server's function ``rhs`` in one
    PARTS request; ``jac`` calls its function ``jac``. Nothing is dropped: a server that does
    not announce a function ``rhs`` (a DATA-only handler, a server that speaks only v1) is
    refused at construction, unless ``autonomous=True`` says the derivative depends on ``y``
    alone and takes no ``args``. A context manager.

    The GIL is released during each evaluation; Ctrl-C is seen when the evaluation returns
    (each bounded by ``timeout``).
    """

    def __init__(
        self,
        cmd: Union[Sequence[str], str],
        *,
        transport: Transport = "pipe",
        wait: str = "auto",
        timeout: Optional[float] = 10.0,
        max_frame_bytes: Optional[int] = None,
        wire: Literal["f64", "f32"] = "f64",
        autonomous: bool = False,
        vectorized: bool = False,
    ) -> None:
        """Spawns ``cmd`` as the derivative server (as ``Peer.spawn``).

        ``autonomous=True``: calls send the state alone as a DATA request to the server's
        default handler (``t`` is still checked; ``args`` are refused), for a server that
        serves no ``rhs``. ``wire="f32"`` narrows those DATA calls to f32 on the wire; it is
        refused without ``autonomous=True`` (``rhs`` calls travel as f64).
        ``vectorized=True``: ``y`` may be (n, k), k states sent as one matrix part in one
        call, for ``solve_ivp(..., vectorized=True)``; the server's ``rhs`` must answer (n, k)
        (``serve_ode`` and ``examples/ode_server.rs`` do).

        Raises Unsupported (naming the server and what to do; its server is closed first)
        when it does not serve ``rhs`` and ``autonomous`` is False; ValueError, before anything
        is spawned, for ``wire="f32"`` without ``autonomous`` and for ``autonomous`` with
        ``vectorized``; otherwise as ``Peer.spawn``.
        """
    def __call__(self, t: float, y: F64, *args: float) -> F64:
        """``fun(t, y, *args)``: the derivative at ``(t, y)`` as a new float64 array of y's
        shape, one round trip.

        ``t`` and each of ``args`` must be real numbers (float, int -- not bool --, numpy
        float or integer scalars): anything else raises TypeError naming it (``args[1]``).
        ``y`` must be a float64 numpy array, 1-D (or (n, k) with ``vectorized=True``; without
        it, a 2-D ``y`` raises ValueError saying so); a non-contiguous one is copied once.
        Nothing is sent before these checks pass. Raises RemoteError (the server's error;
        still usable), ShapeError (a reply of another shape; still usable), and Timeout,
        PeerExited or ProtocolError, after which it is closed."""
    def eval(self, t: float, y: F64, *args: float, out: F64) -> F64:
        """``fun(t, y, *args)`` written into ``out`` (float64, y's shape, C-contiguous,
        writeable): no allocation. Returns ``out``. Checks and errors as ``__call__``."""
    def jac(self, t: float, y: F64, *args: float) -> F64:
        """``jac(t, y, *args)``: the server's Jacobian at ``(t, y)`` (its function ``jac``) as a
        new (n, n) float64 array, ``J[i, j]`` = d f_i / d y_j, for ``solve_ivp(...,
        jac=rhs.jac)``. ``y`` must be 1-D. A server without ``jac`` answers RemoteError naming
        the functions it has; checks and other errors as ``__call__``."""
    @property
    def functions(self) -> list[str]:
        """The functions the server serves by name, as its HELLO announced them."""
    @property
    def autonomous(self) -> bool:
        """True when calls send the state alone as DATA (made with ``autonomous=True``)."""
    @property
    def vectorized(self) -> bool:
        """True when ``y`` may be (n, k) (made with ``vectorized=True``)."""
    def stats(self) -> Dict[str, int]:
        """Timing of the calls since the RemoteRhs was made or ``reset_stats()`` last ran
        (docs/USAGE.md, "What RemoteRhs.stats() says", describes every key): calls; *_ns_total sums (round_trip, server, encode, decode,
        transfer); mean_round_trip_ns; overhead_{p50,p90,p99,max}_ns (round trip - server
        time per call) and round_trip_{p50,p90,p99,max}_ns; and what this side's waits did
        under wait="auto": wait_spun (waits that spun), wait_hits (of them, answered within
        the spin), wait_slept_at_once, wait_probes, wait_stopped_spinning (switches to
        sleeping), wait_contended (spins after which yielding the CPU ran another task),
        wait_dear_yields (waits that did not spin whose yield handed the core to another
        task than the server, after which such waits stop yielding first for a while),
        wait_spinning (spinning now) and wait_moves (moves of this side's thread to an idle
        CPU, off a core shared with the server). Every evaluation counts: ``__call__``,
        ``eval``, ``jac`` and vectorized calls alike."""
    def reset_stats(self) -> None:
        """Starts ``stats()`` afresh, e.g. between two solves: its counts, sums, percentiles
        and wait counts are then those of the calls made after this. ``wait_spinning`` (a
        state) and ``last_timing`` are left as they are."""
    @property
    def last_timing(self) -> CallTiming:
        """Timing of the most recent successful call."""
    def close(self) -> None:
        """Says BYE and reaps the server; nothing when already closed."""
    def __enter__(self) -> "RemoteRhs": ...
    def __exit__(self, exc_type: Any = None, exc: Any = None, tb: Any = None) -> bool: ...

class Fanout:
    """Many servers called together: every request is sent before any reply is read, so N
    servers that each take a millisecond answer a gather in about a millisecond, not N. Each
    reply lands in its own buffer. One server's failure raises the exception of its error's
    kind (``PeerExited``, ``Timeout``, ``RemoteError``, ...) with ``server_index``, ``server``
    (its command) and ``failures`` (``(index, server, message)`` for every server that failed)
    set, while the other servers' replies stand in ``out``. The GIL is released during a
    gather, which the fan-out's ``timeout`` bounds (Ctrl-C is seen when it ends). A context
    manager."""

    @staticmethod
    def spawn(
        cmds: Sequence[Union[Sequence[str], str]],
        *,
        transport: Transport = "pipe",
        wait: str = "auto",
        timeout: Optional[float] = 10.0,
        max_frame_bytes: Optional[int] = None,
    ) -> "Fanout":
        """Spawns one server per command (as ``Peer.spawn`` takes it), all at once, so that
        slow starts (``srun``, ``ssh``) overlap; a failure terminates the servers that did
        start and names the first one that failed."""
    def __len__(self) -> int: ...
    @property
    def last_gather_ns(self) -> Optional[int]:
        """Nanoseconds the last ``scatter`` or ``call_each`` took, from its first send to its
        last reply (or failure); ``None`` before the first."""
    def scatter(self, x: F64, out: Any) -> Any:
        """Sends ``x`` (1-D float64) to every server and gathers the replies into ``out``: a
        float64 array of shape (N, len(x)) or a list of N arrays; returns ``out``."""
    def call_each(self, xs: Sequence[F64], out: Any) -> Any:
        """Sends ``xs[i]`` to server i and gathers the replies into ``out[i]``; returns ``out``.
        A non-contiguous ``xs[i]`` is copied once before anything is sent."""
    def close(self) -> None:
        """Says BYE to every server and reaps it; nothing when already closed."""
    def __enter__(self) -> "Fanout": ...
    def __exit__(self, *exc: Any) -> bool: ...

class Session:
    """A server whose loop is yours: receive a call, reply, then compute -- so that two coupled
    models step at the same time (the client computes while this side does)::

        with peerpipe.Session(["exchange", "state"]) as session:
            while (call := session.recv()) is not None:
                function, parts = call
                session.reply(mine[:1])  # the client goes on from here...
                mine = step(mine, parts[0][0])  # ...while this side steps

    Opened over this process's stdin and stdout (a server spawned by ``Peer.spawn``): the
    HELLO announces ``functions`` and ``name``. One answer per call, in order: ``reply`` or
    ``reject`` the call received last before the next ``recv`` (else ``ValueError``). DATA
    requests and calls to functions not in ``functions`` are answered with ERROR by the session
    itself. A context manager; the other options are ``serve``'s.
    """

    def __init__(
        self,
        functions: Sequence[str],
        *,
        name: str = "python",
        transport: Optional[Transport] = None,
        wait: str = "auto",
        max_frame_bytes: Optional[int] = None,
        frame_timeout: Optional[float] = 10.0,
        listen: Optional[str] = None,
    ) -> None: ...
    def recv(self, timeout: Optional[float] = None) -> Optional[Tuple[str, Tuple[Any, ...]]]:
        """The next call as ``(function, parts)``, each part a new numpy array (a float64
        vector, a 2-D matrix, ...), or ``None`` once the client has said BYE or gone (see
        ``ending``). ``timeout``: seconds to wait for a call, then ``peerpipe.Timeout``
        (nothing is consumed; call again). The GIL is released while waiting; Ctrl-C raises
        ``KeyboardInterrupt`` within about 100 ms."""
    def reply(self, *parts: Any) -> None:
        """Answers the call received last; each argument is one part (an array, a float, an
        int or bytes, as in ``Peer.call_parts``). ``ValueError`` when no call waits for an
        answer, or when the parts cannot make a reply (the client then gets ERROR saying so)."""
    def reject(self, message: str) -> None:
        """Answers the call received last with ERROR carrying ``message``; serving goes on."""
    @property
    def functions(self) -> List[str]:
        """The functions announced in the HELLO."""
    @property
    def ending(self) -> Optional[str]:
        """How the conversation ended: "bye", "end-of-stream", or None while it goes on."""
    def close(self) -> None:
        """Closes the session; the client sees the end of the stream. Idempotent."""
    def __enter__(self) -> "Session": ...
    def __exit__(self, *exc: Any) -> bool: ...

def serve(
    handler: Union[Callable[[Any], Any], Callable[[Any, Any], Any], None] = None,
    *,
    functions: Optional[Dict[str, Callable[..., Any]]] = None,
    transport: Optional[Transport] = None,
    wait: str = "auto",
    in_place: Optional[bool] = None,
    name: Optional[str] = None,
    max_frame_bytes: Optional[int] = None,
    frame_timeout: Optional[float] = 10.0,
    listen: Optional[str] = None,
) -> Dict[str, Any]:
    """Serves requests on this process's stdin/stdout with ``handler`` (DATA requests) and
    ``functions`` (PARTS requests by name), one or both, until the client says BYE or closes;
    returns {"replies", "rejected", "ending", "transport"}.

    ``handler(x)`` returns a 1-D float64/float32 array (or ``handler(x, out)`` fills ``out``,
    of x's dtype and length; chosen by the number of positional parameters unless
    ``in_place`` says). ``x`` is a new array per request, so the handler may keep it. An
    exception in the handler becomes an ERROR reply ("NAME: Type: message") and serving goes
    on.

    ``functions={"observe": f, ...}``: each is announced in the HELLO (``Peer.functions``) and
    called as ``f(*parts)`` with the request's parts as new numpy arrays -- copies, which it
    may keep: 1-D for a vector, (rows, cols) for a matrix, uint8 for bytes. What it returns is
    the reply's parts: one array, float, int or bytes is one part (as ``Peer.call_parts`` takes
    them); a tuple or list is one part per item (so ``[1.0, 2.0]`` is two parts of one value;
    return ``np.array([1.0, 2.0])`` for one part of two), ``()`` no parts. An exception, or a
    value that is no part (None, a string, a complex array), becomes an ERROR reply
    ("NAME: Type: message") and serving goes on; so does a call of a function it does not
    serve (the message names those it does). Without a ``handler``, a DATA request gets an
    ERROR naming the functions. Names are 1-64 ASCII letters, digits and ``_ . : -``.

    ``transport=None`` serves what the spawning client chose (a pipe, or the shm-sem /
    shm-ring region it passed as stdin), so ``peer --spawn "python3 model.py" --transport
    shm-ring`` works unchanged. ``transport="tcp"`` must be said: stdin is then a pipe all
    the same (the control channel, over ssh or srun), and the server listens, under Slurm, on
    the local address that routes to ``$SLURM_LAUNCH_NODE_IPADDR``, else on the address of
    ``$SSH_CONNECTION``, else on 127.0.0.1 -- or on ``listen`` ("IP", "IP:PORT",
    "[IPv6]:PORT", "INTERFACE" or "INTERFACE:PORT"; ValueError for anything else, for an
    interface that is not there, or without ``transport="tcp"``) --, announces
    it with a token on stdout, and serves the one client that connects with that token before
    ``frame_timeout`` (10 s when None: nothing listens without a deadline). ``name`` is
    announced in HELLO (default: the handler's __name__, else "python"). After the call
    starts, fd 1 points at stderr: print() goes to the log, never into the stream. Runs with
    the GIL released between requests.

    Raises TypeError when there is nothing to serve, ``functions`` is not a dict of str to
    callables, or ``in_place`` is given without a handler; ValueError for a bad function name;
    all before stdin/stdout are touched.
    """

def serve_ode(
    fun: Callable[..., Any],
    jac: Optional[Callable[..., Any]] = None,
    *,
    name: Optional[str] = None,
    transport: Optional[Transport] = None,
    wait: str = "auto",
    max_frame_bytes: Optional[int] = None,
    frame_timeout: Optional[float] = 10.0,
    listen: Optional[str] = None,
) -> Dict[str, Any]:
    """Serves SciPy's ``fun(t, y, *args)`` as the function ``rhs`` and, when given,
    ``jac(t, y, *args)`` as ``jac``, for ``RemoteRhs`` (Python's or Rust's) to call; the same
    functions ``solve_ivp`` would call locally. Returns as ``serve``.

    Each is called with ``t`` a float, ``y`` a new float64 array of shape (n,) -- or (n, k)
    for a vectorized call, ``rhs`` only -- and the parameters the client sent as floats (none
    when it sent none, so default parameter values apply). The result is read as SciPy reads
    it (``np.asarray``, then float64; a list is fine) and must have y's shape for ``rhs``,
    (n, n) for ``jac``; a result of another shape or of complex, bool or object values, or an
    exception, becomes an ERROR reply naming it ("rhs: ValueError: returned an array of shape
    (3,), expected (2,) (the shape of y)") and serving goes on. ``name`` is announced in the
    HELLO (default: fun's __name__). The other options are ``serve``'s.
    """

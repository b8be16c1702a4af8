"""peerpipe: exchange packed float64/float32 arrays with another process over pipes or shared
memory, and see where every microsecond of a round trip goes.

The Python face of the Rust crate ``peerpipe`` (a binding, not a second implementation):

- :class:`Peer` -- spawn a server process and call it: ``peer.call(x, out)`` (one array),
  ``peer.call_parts("rhs", t, y, p)`` (several typed parts to a function by name).
- :func:`serve` -- be the server: answer requests with a Python callable, and calls of
  functions by name (``functions={"observe": f}``).
- :class:`Fanout` -- one client calling many servers together, each reply into its own buffer.
- :class:`Session` -- be the server with a loop of your own: receive a call, reply, then
  compute, so that two coupled models step at the same time.
- :class:`RemoteRhs` -- a right-hand side ``fun(t, y, *args)`` and its Jacobian
  ``jac(t, y, *args)`` for ``scipy.integrate.solve_ivp``, evaluated by a server process;
  :func:`serve_ode` serves SciPy's ``fun`` and ``jac`` as such a server.
- Errors: :class:`Error` and its subclasses :class:`Timeout` (also a ``TimeoutError``),
  :class:`PeerExited`, :class:`ProtocolError` (and its :class:`TooLarge` and
  :class:`ShapeError`), :class:`Interrupted`, :class:`RemoteError` and :class:`Unsupported`;
  which one is raised depends on the Rust error's kind (its ``kind`` attribute), one table
  (see ``Error``).

The GIL is released while a call waits; Ctrl-C during a call's wait raises
``KeyboardInterrupt`` within about 100 ms and leaves the peer closed (its server terminated and
reaped). Ctrl-C during a spawn's handshake is seen as soon.
"""

from ._peerpipe import (
    CallTiming,
    Error,
    Fanout,
    Interrupted,
    Peer,
    PeerExited,
    ProtocolError,
    RemoteError,
    RemoteRhs,
    ShapeError,
    Timeout,
    TooLarge,
    Unsupported,
    __version__,
    Session,
    serve,
    serve_ode,
)

__all__ = [
    "CallTiming",
    "Error",
    "Fanout",
    "Interrupted",
    "Peer",
    "PeerExited",
    "ProtocolError",
    "RemoteError",
    "RemoteRhs",
    "Session",
    "ShapeError",
    "Timeout",
    "TooLarge",
    "Unsupported",
    "__version__",
    "serve",
    "serve_ode",
]

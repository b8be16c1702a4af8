"""peerpipe: exchange packed float64/float32 arrays with another process over pipes or shared
memory, and see where every microsecond of a round trip goes.

The Python face of the Rust crate ``peerpipe`` (a binding, not a second implementation):

- :class:`Peer` -- spawn a server process and call it: ``peer.call(x, out)``.
- :func:`serve` -- be the server: answer requests with a Python callable.
- :class:`RemoteRhs` -- a right-hand side ``fun(t, y)`` for ``scipy.integrate.solve_ivp``,
  evaluated by a server process.
- Errors: :class:`Error` and its subclasses :class:`Timeout` (also a ``TimeoutError``),
  :class:`PeerExited`, :class:`ProtocolError` (and its :class:`TooLarge`),
  :class:`Interrupted` and :class:`RemoteError`; which one is raised depends on the Rust
  error's kind (its ``kind`` attribute), one table (see ``Error``).

The GIL is released while a call waits; Ctrl-C during a call's wait raises
``KeyboardInterrupt`` within about 100 ms and leaves the peer closed (its server terminated and
reaped). Ctrl-C during a spawn's handshake is seen as soon.
"""

from ._peerpipe import (
    CallTiming,
    Error,
    Interrupted,
    Peer,
    PeerExited,
    ProtocolError,
    RemoteError,
    RemoteRhs,
    Timeout,
    TooLarge,
    __version__,
    serve,
)

__all__ = [
    "CallTiming",
    "Error",
    "Interrupted",
    "Peer",
    "PeerExited",
    "ProtocolError",
    "RemoteError",
    "RemoteRhs",
    "Timeout",
    "TooLarge",
    "__version__",
    "serve",
]

//! The server side: [`serve`] runs the protocol loop for any [`Handler`].
//!
//! The loop writes its HELLO, reads the client's, then answers every request — DATA or PARTS,
//! which the handler sees alike, as a [`Request`] — with exactly one reply of the request's
//! form or ERROR, carrying the request's seq, in order, until BYE or a clean end of
//! stream. A request the handler rejects gets ERROR and the conversation goes on; a frame that
//! breaks the format gets ERROR (with its seq where the header could be read) and ends the
//! loop with that error.
//!
//! A server of your own is a handler and a call to [`serve`]; see `examples/custom_server.rs`.
//!
//! One concern per file: `handler` is what a server's code sees and answers ([`Handler`],
//! [`Request`], its one [`Array`], [`Response`]); `functions` serves functions by name ([`Functions`]); `options` the
//! settings and the summary ([`ServeOptions`], [`ServeSummary`]); `stdio` takes a server
//! process's stdin and stdout as its transport ([`StdioOptions`]); `conversation` answers
//! each request of one conversation, which [`serve`] drives with a handler and [`Session`]
//! with the caller's own loop. This file holds those two entry points.

use crate::error::Result;
use crate::transport::{Transport, TransportKind};

mod conversation;
mod functions;
mod handler;
mod options;
mod session;
mod stdio;

use conversation::Conversation;
pub use functions::{Function, Functions};
pub use handler::{Array, Handler, Request, Response};
pub use options::{DEFAULT_FRAME_TIMEOUT, Ending, ServeOptions, ServeSummary};
pub use session::{Next, Session};
pub use stdio::{
    StdioOptions, stdio_tcp_transport, stdio_transport, stdio_transport_of, stdio_transport_with,
};

/// Serves this process's stdin and stdout with `handler` until BYE or end of stream:
/// [`stdio_transport_with`], then [`serve`] with `options.serve`. Returns the transport served
/// and what was done.
///
/// # Errors
/// Those of [`stdio_transport_with`] and [`serve`].
pub fn serve_stdio<H: Handler + ?Sized>(
    handler: &mut H,
    options: &StdioOptions,
) -> Result<(TransportKind, ServeSummary)> {
    let (kind, mut transport) = stdio_transport_with(options)?;
    let summary = serve(&mut transport, handler, &options.serve)?;
    Ok((kind, summary))
}

/// Runs the server side of one conversation over `transport` until BYE or end of stream.
///
/// # Errors
/// Any protocol violation by the client (after an ERROR frame was sent to it, best effort), end of
/// stream before HELLO or inside a frame ([`Error::Truncated`](crate::Error::Truncated)), a timeout
/// inside a frame, or an I/O failure.
pub fn serve<H: Handler + ?Sized>(
    transport: &mut Transport,
    handler: &mut H,
    options: &ServeOptions,
) -> Result<ServeSummary> {
    Conversation::new(transport, options).run(handler)
}

//! The handshake: this side's HELLO out, the server's HELLO in, checked.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::calls::retarget;
use super::data_frames::grow;
use super::options::Options;
use super::words::LastWords;
use super::{Peer, State};
use crate::clock;
use crate::error::{Error, Result};
use crate::frame::{self, HEADER_LEN, Header, Hello, Kind};
use crate::process::{ChildGuard, OWN_HELLO_ECHOED};
use crate::transport::{Deadline, INTERRUPT_CHECK, Transport};

/// The context of [`Error::PeerClosed`] when the server ends its output before a HELLO.
const BEFORE_HELLO: &str = concat!("before sending HELLO; ", crate::process::speak_peerpipe!());

/// The context of [`Error::PeerClosed`] when the server ended before reading this side's HELLO
/// (the write met `EPIPE`) and had printed nothing.
const BEFORE_READING_HELLO: &str = concat!(
    "while sending, before reading our HELLO or sending one; ",
    crate::process::speak_peerpipe!()
);

/// `error`, the failure to read the first header of `printed`, as the refusal of a program
/// that is no server when `printed` does not open with the magic: a [`Error::BadHello`]
/// that shows what it printed and says what a server is. A header that opens with the magic
/// comes from a server, which broke the format or ended early: `error` as it is.
fn not_a_server(printed: &[u8], error: Error) -> Error {
    let opening = printed.len().min(frame::MAGIC.len());
    if printed[..opening] == frame::MAGIC[..opening] {
        return error;
    }
    let more = if printed.len() == HEADER_LEN { "…" } else { "" };
    Error::BadHello {
        reason: format!(
            "the program is not a peerpipe server: it sent {:?}{more} first, where a \
             HELLO frame was due ({error}); {}",
            String::from_utf8_lossy(printed),
            crate::process::SPEAK_PEERPIPE
        ),
    }
}

impl Peer {
    /// Talks to a server over an existing transport (e.g. one end of [`Transport::pair`]),
    /// exchanging HELLOs first.
    ///
    /// # Errors
    /// Any handshake error.
    pub fn connect(transport: Transport, options: Options) -> Result<Peer> {
        let mut peer = Peer::new(transport, None, options);
        peer.handshake(None)?;
        Ok(peer)
    }

    pub(super) fn new(transport: Transport, child: Option<ChildGuard>, options: Options) -> Peer {
        Peer {
            transport,
            child,
            stderr: None,
            options,
            server_hello: Hello::default(),
            next_seq: 1,
            pending: VecDeque::new(),
            scratch: Vec::new(),
            state: State::Open,
            said: LastWords::default(),
            table: crate::parts::Table::default(),
            parts_frame: crate::zerocopy::AlignedBuf::new(),
        }
    }

    pub(super) fn handshake(&mut self, interrupted: Option<&dyn Fn() -> bool>) -> Result<()> {
        let result = self.exchange_hellos(interrupted);
        result.map_err(|e| self.fail(e, "during the handshake"))
    }

    /// The header of the server's HELLO by `deadline`, and how many of its bytes came before
    /// the stream ended (all of them, or fewer: what a program that is no server printed);
    /// with `interrupted`, waited for in slices of [`INTERRUPT_CHECK`] (a slice that ends
    /// with nothing read has consumed nothing), asking `interrupted` between them.
    pub(super) fn recv_hello_header(
        &mut self,
        deadline: Deadline,
        interrupted: Option<&dyn Fn() -> bool>,
    ) -> Result<([u8; HEADER_LEN], usize)> {
        let mut raw = [0u8; HEADER_LEN];
        let Some(interrupted) = interrupted else {
            return self.transport.recv_exact(&mut raw, deadline).map(|got| (raw, got));
        };
        loop {
            let slice = deadline.or_idle_until(Instant::now() + INTERRUPT_CHECK);
            match self.transport.recv_exact(&mut raw, slice).map(|got| (raw, got)) {
                Err(Error::Timeout { .. }) if !deadline.passed(Instant::now()) => {
                    if interrupted() {
                        return Err(Error::Interrupted { during: "while waiting for HELLO" });
                    }
                }
                other => return other,
            }
        }
    }

    pub(super) fn exchange_hellos(&mut self, interrupted: Option<&dyn Fn() -> bool>) -> Result<()> {
        let hello = Hello {
            max_frame_bytes: self.options.max_frame_bytes,
            implementation: Some(frame::implementation_name()),
            ..Hello::default()
        };
        let ours = hello.to_payload();
        let payload = &ours;
        let header = Header::control(Kind::Hello, 0, payload.len() as u64).to_bytes();
        let deadline = Deadline::after(self.options.timeout);
        if let Err(error) = self.transport.send_frame(&header, payload, deadline) {
            return Err(self.ended_before_our_hello(error));
        }
        // The clock of the calls' split is chosen (and calibrated) while the server answers,
        // not in the first call.
        clock::init();
        let (raw, got) = self
            .recv_hello_header(deadline, interrupted)
            .map_err(|e| retarget(e, "the server's HELLO"))?;
        if got == 0 {
            return Err(Error::PeerClosed { context: BEFORE_HELLO });
        }
        let header = match got {
            HEADER_LEN => Header::parse(&raw, self.options.max_frame_bytes),
            _ => Err(Error::Truncated {
                what: "header",
                expected: HEADER_LEN as u64,
                got: got as u64,
            }),
        };
        let header = header.map_err(|e| not_a_server(&raw[..got], e))?;
        let payload = self.recv_control_payload(&header, deadline)?;
        match header.kind {
            Kind::Hello => {}
            Kind::Error => {
                return Err(Error::Remote {
                    seq: header.seq,
                    message: String::from_utf8_lossy(payload).into_owned(),
                });
            }
            found => return Err(Error::UnexpectedKind { expected: "HELLO", found }),
        }
        if payload == ours.as_slice() {
            return Err(Error::BadHello { reason: OWN_HELLO_ECHOED.to_owned() });
        }
        let hello = Hello::parse(payload)?;
        if !hello.is_server() {
            let found = match &hello.role {
                None => "no role".to_owned(),
                Some(role) => format!("role={role:?}"),
            };
            return Err(Error::BadHello {
                reason: format!(
                    "expected role=server in the server's HELLO, found {found}: is the command \
                     a peerpipe server? (docs/PROTOCOL.md §4)"
                ),
            });
        }
        self.server_hello = hello;
        Ok(())
    }

    /// `error`, the failure to send this side's HELLO, said better when the program ended
    /// without reading it: what it printed before it ended, read within a moment, shows
    /// whether it was a server at all ([`not_a_server`]).
    fn ended_before_our_hello(&mut self, error: Error) -> Error {
        if !matches!(error, Error::PeerClosed { .. }) {
            return error;
        }
        let moment = Deadline::after(Some(Duration::from_millis(100)));
        match self.recv_hello_header(moment, None) {
            Ok((_, 0)) => Error::PeerClosed { context: BEFORE_READING_HELLO },
            Ok((raw, got)) => not_a_server(&raw[..got], error),
            Err(_) => error,
        }
    }

    /// Reads a control payload (bounded by [`frame::MAX_CONTROL_PAYLOAD`] in `Header::parse`)
    /// into the scratch buffer.
    pub(super) fn recv_control_payload(
        &mut self,
        header: &Header,
        deadline: Deadline,
    ) -> Result<&[u8]> {
        let len = header.payload_bytes()? as usize;
        if header.kind == Kind::Data {
            return Ok(&[]);
        }
        grow(&mut self.scratch, len);
        self.transport.recv_payload(&mut self.scratch[..len], deadline)?;
        Ok(&self.scratch[..len])
    }
}

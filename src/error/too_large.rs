//! Where a frame too large was refused, and the way out that the message of
//! [`Error::FrameTooLarge`](super::Error::FrameTooLarge) names for it: the limit to raise is not
//! the same one on each side.

/// Which side refused a frame too large for it, so that
/// [`Error::FrameTooLarge`](super::Error::FrameTooLarge) can name the limit to raise where the
/// reader of the message can raise it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefusedBy {
    /// This client, before sending a request beyond the server's `max_frame_bytes` (from
    /// its HELLO): nothing was sent, and the connection stays usable.
    Client,
    /// A server, on receiving a request beyond its own `max_frame_bytes`.
    Server,
    /// The receiver of a frame beyond its own `max_frame_bytes`: a client reading a reply, or
    /// a frame decoded on its own.
    Receiver,
    /// The receiver of a HELLO or ERROR frame beyond the fixed cap on control payloads
    /// ([`crate::frame::MAX_CONTROL_PAYLOAD`]), which no option raises.
    ControlCap,
}

impl RefusedBy {
    /// What the message says after `exceeds max_frame_bytes M`: whose limit it is and how to
    /// raise it.
    ///
    /// ```
    /// use peerpipe::Error;
    /// use peerpipe::error::RefusedBy;
    /// let err = Error::FrameTooLarge {
    ///     payload_bytes: 134217728,
    ///     max_frame_bytes: 67108864,
    ///     refused_by: RefusedBy::Client,
    /// };
    /// let text = err.to_string();
    /// assert!(text.starts_with(
    ///     "frame too large: payload of 134217728 bytes exceeds max_frame_bytes 67108864, the \
    ///      server's limit"
    /// ));
    /// assert!(text.contains("`Options::max_frame_bytes` in Rust"), "{text}");
    /// ```
    pub fn remedy(self) -> &'static str {
        match self {
            RefusedBy::Client => {
                ", the server's limit (from its HELLO); nothing was sent. Raise it on both \
                 sides: `Options::max_frame_bytes` in Rust, `max_frame_bytes=` in Python, \
                 `pp_options_set_max_frame_bytes` in C and `--max-frame-bytes` for `peer` set \
                 this side's limit and that of a `peer` server spawned by handler name; a server \
                 started by a command of yours needs its own (`peer --role server \
                 --max-frame-bytes N`, `peerpipe.serve(..., max_frame_bytes=N)`)"
            }
            RefusedBy::Server => {
                ", this server's limit: start the server with a larger one (`peer --role server \
                 --max-frame-bytes N`, `ServeOptions::max_frame_bytes` in Rust, \
                 `peerpipe.serve(..., max_frame_bytes=N)` in Python, \
                 `pp_options_set_max_frame_bytes` and `pp_serve_stdio_f64_with` in C)"
            }
            RefusedBy::Receiver => {
                ", this side's limit: raise it with `Options::max_frame_bytes` in Rust, \
                 `max_frame_bytes=` in Python, `pp_options_set_max_frame_bytes` in C or \
                 `--max-frame-bytes` for `peer`"
            }
            RefusedBy::ControlCap => {
                ", the cap on HELLO and ERROR payloads whatever max_frame_bytes is: the sender \
                 broke the protocol (docs/PROTOCOL.md §3)"
            }
        }
    }
}

/// What a server's ERROR says after `reply of N bytes exceeds the client's max_frame_bytes M`:
/// the limit is the client's, raised where the client is set up.
pub(crate) const RAISE_THE_CLIENTS_LIMIT: &str = "; raise the client's limit: \
    `Options::max_frame_bytes` in Rust, `max_frame_bytes=` in Python, \
    `pp_options_set_max_frame_bytes` in C or `--max-frame-bytes` for `peer`";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn text(refused_by: RefusedBy) -> String {
        Error::FrameTooLarge { payload_bytes: 9, max_frame_bytes: 8, refused_by }.to_string()
    }

    #[test]
    fn every_side_keeps_the_opening_and_names_its_own_way_out() {
        for (side, names) in [
            (
                RefusedBy::Client,
                &[
                    "the server's limit",
                    "nothing was sent",
                    "`Options::max_frame_bytes`",
                    "`max_frame_bytes=` in Python",
                    "`pp_options_set_max_frame_bytes` in C",
                    "`--max-frame-bytes` for `peer`",
                ][..],
            ),
            (
                RefusedBy::Server,
                &[
                    "this server's limit",
                    "`peer --role server --max-frame-bytes N`",
                    "`ServeOptions::max_frame_bytes`",
                    "`peerpipe.serve(..., max_frame_bytes=N)`",
                    "`pp_serve_stdio_f64_with`",
                ][..],
            ),
            (RefusedBy::Receiver, &["this side's limit", "`Options::max_frame_bytes`"][..]),
            (RefusedBy::ControlCap, &["HELLO and ERROR payloads"][..]),
        ] {
            let text = text(side);
            assert!(
                text.starts_with("frame too large: payload of 9 bytes exceeds max_frame_bytes 8"),
                "{text}"
            );
            for name in names {
                assert!(text.contains(name), "{side:?}: no {name} in {text}");
            }
        }
        assert!(!text(RefusedBy::Server).contains("`Options::max_frame_bytes`"));
        assert!(!text(RefusedBy::ControlCap).contains("--max-frame-bytes"));
    }
}

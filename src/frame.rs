//! Wire format v1: the 32-byte header, payload sizing, padding and HELLO payloads.
//!
//! This module is pure: bytes in, values out. It knows nothing of descriptors or processes.
//! `docs/PROTOCOL.md` is the normative description; the constants here implement it.
//!
//! ```text
//! offset size field
//!      0    4 magic    "PEER"
//!      4    1 version  1
//!      5    1 kind     1 HELLO, 2 DATA, 3 ERROR, 4 BYE
//!      6    1 dtype    0 bytes, 1 f32, 2 f64
//!      7    1 flags    0
//!      8    8 seq      u64 LE
//!     16    8 count    u64 LE, elements of dtype
//!     24    8 aux      u64 LE, server nanoseconds in a reply, else 0
//! ```

use crate::error::{Error, RefusedBy, Result};

/// The four magic bytes that open every frame: ASCII `PEER`.
pub const MAGIC: [u8; 4] = *b"PEER";
/// The protocol version this crate speaks.
pub const VERSION: u8 = 1;
/// Length of a frame header in bytes.
pub const HEADER_LEN: usize = 32;
/// Frames are padded with zero bytes to a multiple of this many bytes.
pub const FRAME_ALIGN: usize = 8;
/// Default largest payload a receiver accepts: 64 MiB, enough for 8 Mi doubles.
pub const DEFAULT_MAX_FRAME_BYTES: u64 = 64 * 1024 * 1024;
/// Largest HELLO or ERROR payload a receiver accepts, whatever its `max_frame_bytes`.
///
/// A HELLO arrives before the peer's limits are known, so it gets a small fixed cap.
pub const MAX_CONTROL_PAYLOAD: u64 = 64 * 1024;

const _: () = assert!(HEADER_LEN.is_multiple_of(FRAME_ALIGN));
const _: () = assert!(4 + 1 + 1 + 1 + 1 + 8 + 8 + 8 == HEADER_LEN);

pub use crate::wire::{Dtype, Kind};

impl Kind {
    /// Parses a kind byte.
    ///
    /// # Errors
    /// [`Error::UnknownKind`] for any byte other than 1–5.
    pub fn from_byte(byte: u8) -> Result<Kind> {
        match byte {
            1 => Ok(Kind::Hello),
            2 => Ok(Kind::Data),
            3 => Ok(Kind::Error),
            4 => Ok(Kind::Bye),
            5 => Ok(Kind::Parts),
            found => Err(Error::UnknownKind { found }),
        }
    }
}

impl Dtype {
    /// Parses a dtype byte.
    ///
    /// # Errors
    /// [`Error::UnknownDtype`] for any byte other than 0–2.
    pub fn from_byte(byte: u8) -> Result<Dtype> {
        match byte {
            0 => Ok(Dtype::Bytes),
            1 => Ok(Dtype::F32),
            2 => Ok(Dtype::F64),
            found => Err(Error::UnknownDtype { found }),
        }
    }
}

/// Number of zero bytes that follow a payload of `payload_len` bytes (0–7).
///
/// ```
/// assert_eq!(peerpipe::frame::padding_len(0), 0);
/// assert_eq!(peerpipe::frame::padding_len(12), 4);
/// assert_eq!(peerpipe::frame::padding_len(4000), 0);
/// ```
pub const fn padding_len(payload_len: usize) -> usize {
    (FRAME_ALIGN - payload_len % FRAME_ALIGN) % FRAME_ALIGN
}

/// A decoded, validated frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// What the frame is for.
    pub kind: Kind,
    /// Element type of the payload.
    pub dtype: Dtype,
    /// Sequence number: set by the requester, echoed by the reply.
    pub seq: u64,
    /// Number of `dtype` elements in the payload.
    pub count: u64,
    /// Server nanoseconds in a DATA or ERROR reply; 0 elsewhere.
    pub aux: u64,
}

impl Header {
    /// A DATA header for `count` elements of `dtype`.
    pub const fn data(seq: u64, dtype: Dtype, count: u64) -> Header {
        Header { kind: Kind::Data, dtype, seq, count, aux: 0 }
    }

    /// A control header (HELLO, ERROR, BYE) with a byte payload of `len` bytes.
    pub const fn control(kind: Kind, seq: u64, len: u64) -> Header {
        Header { kind, dtype: Dtype::Bytes, seq, count: len, aux: 0 }
    }

    /// A PARTS header for a payload of `len` bytes (docs/PROTOCOL.md §15).
    pub const fn parts(seq: u64, len: u64) -> Header {
        Header { kind: Kind::Parts, dtype: Dtype::Bytes, seq, count: len, aux: 0 }
    }

    /// Payload length in bytes, `count × width(dtype)`.
    ///
    /// # Errors
    /// [`Error::LengthOverflow`] when the product does not fit in a `u64`.
    pub fn payload_bytes(&self) -> Result<u64> {
        let width = self.dtype.width();
        // Not `ok_or`: it builds the error, and drops it, on every call (of every frame).
        match self.count.checked_mul(width) {
            Some(bytes) => Ok(bytes),
            None => Err(Error::LengthOverflow { count: self.count, width }),
        }
    }

    /// Serialises the header into its 32 wire bytes.
    ///
    /// ```
    /// use peerpipe::frame::{Dtype, Header};
    /// let bytes = Header::data(7, Dtype::F64, 3).to_bytes();
    /// assert_eq!(bytes, [
    ///     b'P', b'E', b'E', b'R', 1, 2, 2, 0, // magic, version, kind DATA, dtype f64, flags
    ///     7, 0, 0, 0, 0, 0, 0, 0,             // seq 7
    ///     3, 0, 0, 0, 0, 0, 0, 0,             // count 3
    ///     0, 0, 0, 0, 0, 0, 0, 0,             // aux 0
    /// ]);
    /// ```
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0..4].copy_from_slice(&MAGIC);
        out[4] = VERSION;
        out[5] = self.kind as u8;
        out[6] = self.dtype as u8;
        out[7] = 0;
        out[8..16].copy_from_slice(&self.seq.to_le_bytes());
        out[16..24].copy_from_slice(&self.count.to_le_bytes());
        out[24..32].copy_from_slice(&self.aux.to_le_bytes());
        out
    }

    /// Parses and validates 32 header bytes against every header rule of wire format v1:
    /// magic, version, kind, dtype, flags, control-frame shape, length overflow and
    /// `max_frame_bytes` (HELLO and ERROR payloads are also capped at [`MAX_CONTROL_PAYLOAD`]).
    ///
    /// Nothing is allocated; the caller may size a buffer by [`Header::payload_bytes`] once this
    /// returns `Ok`.
    ///
    /// # Errors
    /// The variant of [`Error`] named after the first rule broken, checked in the order above.
    pub fn parse(bytes: &[u8; HEADER_LEN], max_frame_bytes: u64) -> Result<Header> {
        // Every DATA or PARTS frame of a call passes here twice per side: its first eight bytes
        // are checked in one compare, and anything else takes the rule-by-rule path below,
        // which also names what is wrong.
        // Words only, no single bytes: the caller's copy of the header then stays four words,
        // and reading them back does not wait on narrower stores.
        let opening = read_u64(bytes, 0);
        if opening & !DTYPE_BYTE_MASK == DATA_OPENING {
            let dtype = match (opening >> 48) as u8 {
                0 => Some(Dtype::Bytes),
                1 => Some(Dtype::F32),
                2 => Some(Dtype::F64),
                _ => None,
            };
            if let Some(dtype) = dtype {
                let header = Header {
                    kind: Kind::Data,
                    dtype,
                    seq: read_u64(bytes, 8),
                    count: read_u64(bytes, 16),
                    aux: read_u64(bytes, 24),
                };
                if header.count.checked_mul(dtype.width()).is_some_and(|n| n <= max_frame_bytes) {
                    return Ok(header);
                }
            }
        }
        if opening == PARTS_OPENING {
            let count = read_u64(bytes, 16);
            if count <= max_frame_bytes {
                return Ok(Header {
                    kind: Kind::Parts,
                    dtype: Dtype::Bytes,
                    seq: read_u64(bytes, 8),
                    count,
                    aux: read_u64(bytes, 24),
                });
            }
        }
        Header::parse_rule_by_rule(bytes, max_frame_bytes)
    }

    /// [`Header::parse`], one rule at a time in the documented order.
    #[cold]
    fn parse_rule_by_rule(bytes: &[u8; HEADER_LEN], max_frame_bytes: u64) -> Result<Header> {
        let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
        if magic != MAGIC {
            return Err(Error::BadMagic { found: magic });
        }
        if bytes[4] != VERSION {
            return Err(Error::UnsupportedVersion { expected: VERSION, found: bytes[4] });
        }
        let kind = Kind::from_byte(bytes[5])?;
        let dtype = Dtype::from_byte(bytes[6])?;
        if bytes[7] != 0 {
            return Err(Error::ReservedFlags { found: bytes[7] });
        }
        let header = Header {
            kind,
            dtype,
            seq: read_u64(bytes, 8),
            count: read_u64(bytes, 16),
            aux: read_u64(bytes, 24),
        };
        if kind != Kind::Data && dtype != Dtype::Bytes {
            return Err(Error::MalformedControl {
                kind,
                expected: "dtype 0 (bytes)",
                found: format!("dtype {} ({dtype})", dtype as u8),
            });
        }
        if kind == Kind::Bye && header.count != 0 {
            return Err(Error::MalformedControl {
                kind,
                expected: "count 0",
                found: format!("count {}", header.count),
            });
        }
        let payload_bytes = header.payload_bytes()?;
        let limit = match kind {
            Kind::Hello | Kind::Error => max_frame_bytes.min(MAX_CONTROL_PAYLOAD),
            Kind::Data | Kind::Bye | Kind::Parts => max_frame_bytes,
        };
        if payload_bytes > limit {
            let refused_by =
                if limit < max_frame_bytes { RefusedBy::ControlCap } else { RefusedBy::Receiver };
            return Err(Error::FrameTooLarge { payload_bytes, max_frame_bytes: limit, refused_by });
        }
        Ok(header)
    }

    /// The seq field of raw header bytes, readable even when the header is invalid; used to
    /// address the ERROR reply to a malformed frame.
    pub fn raw_seq(bytes: &[u8; HEADER_LEN]) -> u64 {
        read_u64(bytes, 8)
    }
}

/// The first eight bytes of a DATA header, flags 0, dtype byte 0 (little-endian word).
const DATA_OPENING: u64 =
    u64::from_le_bytes([MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], VERSION, Kind::Data as u8, 0, 0]);

/// The first eight bytes of a PARTS header: flags 0, dtype 0 (bytes), as every PARTS frame has.
const PARTS_OPENING: u64 =
    u64::from_le_bytes([MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], VERSION, Kind::Parts as u8, 0, 0]);

/// The dtype byte (offset 6) within the first eight bytes of a header.
const DTYPE_BYTE_MASK: u64 = 0xff << 48;

fn read_u64(bytes: &[u8; HEADER_LEN], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// Checks that the padding after a payload is all zero.
///
/// # Errors
/// [`Error::NonzeroPadding`] naming the first nonzero byte.
pub fn check_padding(padding: &[u8]) -> Result<()> {
    match padding.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(index) => Err(Error::NonzeroPadding { index, found: padding[index] }),
    }
}

/// A frame parsed from a byte slice, its payload borrowed from that slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRef<'a> {
    /// The validated header.
    pub header: Header,
    /// The payload bytes, without padding.
    pub payload: &'a [u8],
}

/// Parses one complete frame from the start of `input`, returning it and the number of bytes
/// it occupies (header + payload + padding). Never reads past `input` and never allocates.
///
/// # Errors
/// Any header error of [`Header::parse`]; [`Error::Truncated`] naming the part that was cut
/// short and how many bytes it had; [`Error::NonzeroPadding`].
///
/// ```
/// use peerpipe::frame::{decode_frame, encode_frame, Dtype, Header};
/// let bytes = encode_frame(&Header::data(1, Dtype::Bytes, 3), b"abc");
/// assert_eq!(bytes.len(), 40); // 32 header + 3 payload + 5 padding
/// let (frame, used) = decode_frame(&bytes, 1024).unwrap();
/// assert_eq!((frame.payload, used), (&b"abc"[..], 40));
/// ```
pub fn decode_frame(input: &[u8], max_frame_bytes: u64) -> Result<(FrameRef<'_>, usize)> {
    let Some(header_bytes) = input.first_chunk::<HEADER_LEN>() else {
        return Err(Error::Truncated {
            what: "header",
            expected: HEADER_LEN as u64,
            got: input.len() as u64,
        });
    };
    let header = Header::parse(header_bytes, max_frame_bytes)?;
    // Validated against max_frame_bytes above, so it fits in usize on every supported target.
    let payload_bytes = header.payload_bytes()?;
    let payload_len = usize::try_from(payload_bytes).map_err(|_| Error::FrameTooLarge {
        payload_bytes,
        max_frame_bytes,
        refused_by: RefusedBy::Receiver,
    })?;
    let rest = &input[HEADER_LEN..];
    if rest.len() < payload_len {
        return Err(Error::Truncated {
            what: "payload",
            expected: payload_len as u64,
            got: rest.len() as u64,
        });
    }
    let (payload, rest) = rest.split_at(payload_len);
    let pad = padding_len(payload_len);
    if rest.len() < pad {
        return Err(Error::Truncated {
            what: "padding",
            expected: pad as u64,
            got: rest.len() as u64,
        });
    }
    check_padding(&rest[..pad])?;
    Ok((FrameRef { header, payload }, HEADER_LEN + payload_len + pad))
}

/// Builds a complete frame (header, payload, zero padding) in a new `Vec`.
///
/// The header's `count` is written as given; the caller keeps it consistent with `payload`.
pub fn encode_frame(header: &Header, payload: &[u8]) -> Vec<u8> {
    let pad = padding_len(payload.len());
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len() + pad);
    out.extend_from_slice(&header.to_bytes());
    out.extend_from_slice(payload);
    out.resize(out.len() + pad, 0);
    out
}

/// The `role=` value a server's HELLO carries ([`Hello::role`]).
pub const ROLE_SERVER: &str = "server";

/// The contents of a HELLO payload.
///
/// A server's HELLO says `role=server`; a client rejects a HELLO without it, which is how a
/// command that echoes its input (`cat`) is told from a server: its HELLO is the client's own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hello {
    /// Largest payload this side accepts, in bytes.
    pub max_frame_bytes: u64,
    /// `server` ([`ROLE_SERVER`]) from a server; `None` from a client.
    pub role: Option<String>,
    /// The server's handler name; `None` from a client.
    pub handler: Option<String>,
    /// Implementation name and version, e.g. `peerpipe 0.1.0`.
    pub implementation: Option<String>,
    /// The process id of the server, on its own machine (`pid=`); `None` from a client or a
    /// server that does not say. Informational: a client uses it only to find which local
    /// process to measure when it spawned the server through a shell.
    pub pid: Option<u32>,
    /// `parts=1`: the server reads PARTS requests (docs/PROTOCOL.md §15).
    pub parts: bool,
    /// `functions=`: the functions the server serves by name; empty when it says none.
    pub functions: Vec<String>,
}

impl Hello {
    /// A server's HELLO: `role=server`, its handler, this crate's `impl=` and this process's
    /// `pid=`.
    pub fn server(max_frame_bytes: u64, handler: &str) -> Hello {
        Hello {
            max_frame_bytes,
            role: Some(ROLE_SERVER.to_owned()),
            handler: Some(handler.to_owned()),
            implementation: Some(implementation_name()),
            pid: Some(std::process::id()),
            parts: true,
            functions: Vec::new(),
        }
    }

    /// True when this HELLO says `role=server`.
    pub fn is_server(&self) -> bool {
        self.role.as_deref() == Some(ROLE_SERVER)
    }

    /// Renders the `key=value` lines, each ending in `\n`, starting with `version=1`, then
    /// `max_frame_bytes`, `role`, `handler`, `impl`, `pid`, `parts` and `functions` when
    /// present.
    ///
    /// ```
    /// use peerpipe::frame::Hello;
    /// let client = Hello { max_frame_bytes: 4096, ..Hello::default() };
    /// assert_eq!(client.to_payload(), b"version=1\nmax_frame_bytes=4096\n");
    /// let server = Hello { role: Some("server".into()), handler: Some("echo".into()), ..client };
    /// assert_eq!(server.to_payload(), b"version=1\nmax_frame_bytes=4096\nrole=server\nhandler=echo\n");
    /// ```
    pub fn to_payload(&self) -> Vec<u8> {
        let mut text = format!("version={VERSION}\nmax_frame_bytes={}\n", self.max_frame_bytes);
        if let Some(role) = &self.role {
            text.push_str(&format!("role={role}\n"));
        }
        if let Some(handler) = &self.handler {
            text.push_str(&format!("handler={handler}\n"));
        }
        if let Some(implementation) = &self.implementation {
            text.push_str(&format!("impl={implementation}\n"));
        }
        if let Some(pid) = self.pid {
            text.push_str(&format!("pid={pid}\n"));
        }
        if self.parts {
            text.push_str("parts=1\n");
        }
        if !self.functions.is_empty() {
            text.push_str(&format!("functions={}\n", self.functions.join(",")));
        }
        text.into_bytes()
    }

    /// Parses a HELLO payload. Unknown keys are ignored.
    ///
    /// # Errors
    /// [`Error::BadHello`] when the payload is not UTF-8, a line lacks `=` or its final `\n`,
    /// `version` is missing or not 1, or `max_frame_bytes` is missing or not a number.
    pub fn parse(payload: &[u8]) -> Result<Hello> {
        let bad = |reason: String| Error::BadHello { reason };
        let text =
            std::str::from_utf8(payload).map_err(|e| bad(format!("payload is not UTF-8 ({e})")))?;
        if !text.is_empty() && !text.ends_with('\n') {
            return Err(bad("last line does not end in \\n".into()));
        }
        let (mut version, mut max_frame_bytes, mut handler, mut implementation) =
            (None, None, None, None);
        let (mut role, mut pid, mut parts, mut functions) = (None, None, false, Vec::new());
        // split_terminator, not lines(): a '\r' before the '\n' stays part of the value.
        for line in text.split_terminator('\n') {
            let (key, value) =
                line.split_once('=').ok_or_else(|| bad(format!("line {line:?} has no '='")))?;
            match key {
                "version" => version = Some(value),
                "max_frame_bytes" => max_frame_bytes = Some(value),
                "handler" => handler = Some(value.to_owned()),
                "impl" => implementation = Some(value.to_owned()),
                "role" => role = Some(value.to_owned()),
                // Informational: a value that is not a process id is ignored, not an error.
                "pid" => pid = value.parse::<u32>().ok().filter(|&p| p > 0),
                // Only `1` says the server reads PARTS; any other value says it does not.
                "parts" => parts = value == "1",
                "functions" => {
                    functions =
                        value.split(',').filter(|f| !f.is_empty()).map(str::to_owned).collect()
                }
                _ => {}
            }
        }
        match version {
            Some("1") => {}
            Some(other) => return Err(bad(format!("version: expected 1, found {other:?}"))),
            None => return Err(bad("missing required key version".into())),
        }
        // A repeated key takes its last value (PROTOCOL.md §4); only that one is validated.
        let value =
            max_frame_bytes.ok_or_else(|| bad("missing required key max_frame_bytes".into()))?;
        let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
        let max_frame_bytes = value.parse::<u64>().ok().filter(|_| digits).ok_or_else(|| {
            bad(format!("max_frame_bytes: expected decimal digits, found {value:?}"))
        })?;
        Ok(Hello { max_frame_bytes, role, handler, implementation, pid, parts, functions })
    }
}

/// `impl=` value this crate announces: `peerpipe <version>`.
pub fn implementation_name() -> String {
    format!("peerpipe {}", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-compare paths for DATA and PARTS headers and the rule-by-rule path agree on
    /// every header: each byte of the opening word at each value, and counts around every
    /// limit.
    #[test]
    fn the_data_fast_path_accepts_and_rejects_exactly_what_the_rules_do() {
        let outcome = |result: Result<Header>| format!("{result:?}");
        let mut checked = 0;
        let limits = [0, 7, 8, 4000, u64::MAX - 1, u64::MAX];
        let counts = [0, 1, 500, 501, u64::MAX / 8, u64::MAX / 8 + 1, u64::MAX / 4 + 1, u64::MAX];
        let headers = [
            |count| Header::data(9, Dtype::Bytes, count),
            |count| Header::data(9, Dtype::F32, count),
            |count| Header::data(9, Dtype::F64, count),
            |count| Header::parts(9, count),
        ];
        for header in headers {
            for count in counts {
                let valid = header(count).to_bytes();
                for at in 0..8 {
                    for byte in 0..=255u8 {
                        let mut bytes = valid;
                        bytes[at] = byte;
                        for limit in limits {
                            assert_eq!(
                                outcome(Header::parse(&bytes, limit)),
                                outcome(Header::parse_rule_by_rule(&bytes, limit)),
                                "header {bytes:?}, max_frame_bytes {limit}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 4 * counts.len() * 8 * 256 * limits.len());
    }
}

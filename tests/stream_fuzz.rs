//! The server loop fed arbitrary client streams: valid conversations, and valid frames mixed
//! with corruptions. `serve` runs on a thread over two pipes or a shared-memory region, the
//! transport drawn for each case (see `stream_model::run_server_on`);
//! the test writes the stream, closes its end, and reads everything the server writes.
//!
//! What is asserted, for every stream:
//! - `serve` returns (a watchdog aborts the binary after 30 s) and never panics;
//! - the server's output is a sequence of valid frames (`frame::decode_frame`), beginning with
//!   its HELLO;
//! - it is exactly what `stream_model::predict` derives from the pure decoder and the receiver
//!   checklist of `docs/PROTOCOL.md` (see `stream_model::check` for the list).
//!
//! In particular, for a valid conversation (HELLO, DATA of any dtype and bit pattern, then BYE
//! or a close at a frame boundary): `serve` returns `Ok`; every DATA request gets exactly one
//! reply, in request order, carrying its seq; `echo` and `echo-raw` replies are bit-exact copies
//! of the request; a BYE is answered with a BYE carrying its seq. For a corrupted stream:
//! either the corruption did not make the stream invalid before it ended (a flipped payload bit,
//! a cut exactly at a frame boundary, anything after BYE), and the run is that of a valid
//! conversation, or `serve` returns `Err` and the last frame of the output is an ERROR, with
//! aux 0, the offending header's seq (0 if the header was cut short), and the text of the
//! error `serve` returned.
//!
//! Cases are limited (64 per property) so the file runs in a few seconds in debug builds.

mod common;
mod stream_model;

use common::{F32_EDGE_BITS, F64_EDGE_BITS, Watchdog, client_hello, control_frame, secs};
use peerpipe::frame::{self, Dtype, HEADER_LEN, Header, Hello, Kind};
use peerpipe::server::{Ending, ServeSummary};
use peerpipe::transport::TransportKind;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use stream_model::{HANDLERS, Run, check, options, parse_output, predict, run_server_on};

/// The server's limit in most cases: 1 MiB, as `peer` would be started for tests.
const MAX: u64 = 1 << 20;

const CASES: u32 = 64;

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

/// A DATA request: its seq, dtype and payload (count = payload length / width).
#[derive(Clone, Debug)]
struct Request {
    seq: u64,
    dtype: Dtype,
    payload: Vec<u8>,
}

impl Request {
    fn count(&self) -> u64 {
        self.payload.len() as u64 / self.dtype.width()
    }

    fn frame(&self) -> Vec<u8> {
        frame::encode_frame(&Header::data(self.seq, self.dtype, self.count()), &self.payload)
    }
}

/// A valid conversation: HELLO, requests, then optionally BYE and bytes after it (which the
/// server must never read).
#[derive(Clone, Debug)]
struct Conversation {
    client_max: u64,
    requests: Vec<Request>,
    bye: Option<u64>,
    after_bye: Vec<u8>,
}

/// Where a frame lies in a stream.
#[derive(Clone, Copy, Debug)]
struct Span {
    start: usize,
    payload_len: usize,
    end: usize,
}

impl Conversation {
    /// The stream's bytes and the span of each frame (HELLO first).
    fn bytes(&self) -> (Vec<u8>, Vec<Span>) {
        let mut frames = vec![(client_hello(self.client_max), hello_payload_len(self.client_max))];
        for request in &self.requests {
            frames.push((request.frame(), request.payload.len()));
        }
        if let Some(seq) = self.bye {
            frames.push((common::bye(seq), 0));
        }
        let mut bytes = Vec::new();
        let mut spans = Vec::new();
        for (frame, payload_len) in frames {
            spans.push(Span { start: bytes.len(), payload_len, end: bytes.len() + frame.len() });
            bytes.extend_from_slice(&frame);
        }
        bytes.extend_from_slice(&self.after_bye);
        (bytes, spans)
    }
}

fn hello_payload_len(client_max: u64) -> usize {
    let hello = Hello {
        max_frame_bytes: client_max,
        implementation: Some("peerpipe-tests 0".into()),
        ..Hello::default()
    };
    hello.to_payload().len()
}

/// Elements of `dtype` as little-endian bytes: edge values (NaNs with payloads, -0.0,
/// subnormals, infinities) and arbitrary bit patterns.
fn elements(dtype: Dtype, count: usize) -> BoxedStrategy<Vec<u8>> {
    match dtype {
        Dtype::Bytes => vec(any::<u8>(), count).boxed(),
        Dtype::F32 => vec(prop_oneof![select(F32_EDGE_BITS.to_vec()), any::<u32>()], count)
            .prop_map(|bits| bits.iter().flat_map(|b| b.to_le_bytes()).collect())
            .boxed(),
        Dtype::F64 => vec(prop_oneof![select(F64_EDGE_BITS.to_vec()), any::<u64>()], count)
            .prop_map(|bits| bits.iter().flat_map(|b| b.to_le_bytes()).collect())
            .boxed(),
    }
}

fn request() -> impl Strategy<Value = Request> {
    let seq = prop_oneof![3 => 0u64..16, 1 => any::<u64>()];
    let dtype = select(&[Dtype::Bytes, Dtype::F32, Dtype::F64][..]);
    (seq, dtype, prop_oneof![3 => 0usize..12, 1 => 12usize..80]).prop_flat_map(
        |(seq, dtype, count)| {
            elements(dtype, count).prop_map(move |payload| Request { seq, dtype, payload })
        },
    )
}

/// A client limit: usually generous, sometimes small enough to get requests rejected and
/// ERROR messages cut, sometimes 0.
fn client_max() -> impl Strategy<Value = u64> {
    prop_oneof![4 => Just(u64::MAX), 2 => Just(MAX), 2 => 1u64..200, 1 => Just(0u64)]
}

fn conversation() -> impl Strategy<Value = Conversation> {
    (
        client_max(),
        vec(request(), 0..8),
        proptest::option::of(any::<u64>()),
        prop_oneof![3 => Just(Vec::new()), 1 => vec(any::<u8>(), 1..64)],
    )
        .prop_map(|(client_max, requests, bye, after_bye)| Conversation {
            client_max,
            requests,
            after_bye: if bye.is_some() { after_bye } else { Vec::new() },
            bye,
        })
}

/// A way to break a stream.
#[derive(Clone, Debug)]
enum Corruption {
    /// Flip one bit anywhere.
    FlipBit { at: Index, bit: u8 },
    /// Flip one bit of a header (magic, version, kind, dtype, flags, seq, count, aux).
    FlipHeaderBit { frame: Index, byte: usize, bit: u8 },
    /// End the stream early.
    Truncate { at: Index },
    /// Insert garbage bytes.
    Insert { at: Index, garbage: Vec<u8> },
    /// Set a padding byte of a frame that has padding.
    BadPadding { frame: Index, pad_byte: Index, value: u8 },
    /// Overwrite a header's count with a huge value.
    HugeCount { frame: Index, count: u64 },
    /// Insert a whole frame that is out of place: a second HELLO, an ERROR, a BYE with a
    /// payload count, or a DATA of unknown dtype.
    InsertFrame { before: Index, which: u8, seq: u64 },
    /// Remove the client's HELLO.
    DropHello,
}

fn corruption() -> impl Strategy<Value = Corruption> {
    let huge = select(
        &[
            u64::MAX,
            u64::MAX / 4 + 1,
            u64::MAX / 8 + 1,
            1 << 61,
            1 << 40,
            1 << 32,
            MAX + 1,
            MAX / 8 + 1,
            65_537,
            257,
            129,
        ][..],
    );
    prop_oneof![
        3 => (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Corruption::FlipBit { at, bit }),
        3 => (any::<Index>(), 0usize..HEADER_LEN, 0u8..8)
            .prop_map(|(frame, byte, bit)| Corruption::FlipHeaderBit { frame, byte, bit }),
        2 => any::<Index>().prop_map(|at| Corruption::Truncate { at }),
        2 => (any::<Index>(), vec(any::<u8>(), 1..40))
            .prop_map(|(at, garbage)| Corruption::Insert { at, garbage }),
        2 => (any::<Index>(), any::<Index>(), 1u8..=255)
            .prop_map(|(frame, pad_byte, value)| Corruption::BadPadding { frame, pad_byte, value }),
        2 => (any::<Index>(), huge).prop_map(|(frame, count)| Corruption::HugeCount { frame, count }),
        2 => (any::<Index>(), 0u8..4, any::<u64>())
            .prop_map(|(before, which, seq)| Corruption::InsertFrame { before, which, seq }),
        1 => Just(Corruption::DropHello),
    ]
}

/// An out-of-place frame for [`Corruption::InsertFrame`].
fn stray_frame(which: u8, seq: u64) -> Vec<u8> {
    match which {
        0 => {
            let hello = Hello { max_frame_bytes: 4096, ..Hello::default() };
            control_frame(Kind::Hello, seq, &hello.to_payload())
        }
        1 => control_frame(Kind::Error, seq, "a client has no business sending ERROR".as_bytes()),
        2 => {
            // BYE must have count 0.
            frame::encode_frame(&Header::control(Kind::Bye, seq, 8), &[0; 8])
        }
        _ => {
            let mut data = frame::encode_frame(&Header::data(seq, Dtype::F64, 1), &[0; 8]);
            data[6] = 3; // unknown dtype
            data
        }
    }
}

/// Applies `corruptions` in order. Frame-level corruptions address the frames of the original
/// stream; once a corruption has shifted bytes (insert, truncate), later frame-level ones are
/// applied to the original offsets as they now stand, which is still a corruption.
fn corrupt(bytes: &mut Vec<u8>, spans: &[Span], corruptions: &[Corruption]) {
    for corruption in corruptions {
        if bytes.is_empty() {
            return;
        }
        let frame_at = |index: &Index| spans[index.index(spans.len())];
        match corruption {
            Corruption::FlipBit { at, bit } => {
                let at = at.index(bytes.len());
                bytes[at] ^= 1 << bit;
            }
            Corruption::FlipHeaderBit { frame, byte, bit } => {
                let at = frame_at(frame).start + byte;
                if at < bytes.len() {
                    bytes[at] ^= 1 << bit;
                }
            }
            Corruption::Truncate { at } => {
                let at = at.index(bytes.len());
                bytes.truncate(at);
            }
            Corruption::Insert { at, garbage } => {
                let at = at.index(bytes.len() + 1);
                bytes.splice(at..at, garbage.iter().copied());
            }
            Corruption::BadPadding { frame, pad_byte, value } => {
                let span = frame_at(frame);
                let padding = span.start + HEADER_LEN + span.payload_len..span.end;
                if !padding.is_empty() && padding.end <= bytes.len() {
                    let at = padding.start + pad_byte.index(padding.len());
                    bytes[at] = *value;
                }
            }
            Corruption::HugeCount { frame, count } => {
                let at = frame_at(frame).start + 16;
                if at + 8 <= bytes.len() {
                    bytes[at..at + 8].copy_from_slice(&count.to_le_bytes());
                }
            }
            Corruption::InsertFrame { before, which, seq } => {
                let at = frame_at(before).start.min(bytes.len());
                bytes.splice(at..at, stray_frame(*which, *seq));
            }
            Corruption::DropHello => {
                let end = spans[0].end.min(bytes.len());
                bytes.drain(..end);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/// Runs the server on `input` and checks the run against the model.
fn run_and_check(
    transport: TransportKind,
    handler: &str,
    input: &[u8],
    max: u64,
) -> Result<Run, TestCaseError> {
    let run = run_server_on(transport, handler, input, &options(max));
    if let Err(why) = check(handler, input, max, &run) {
        return Err(TestCaseError::fail(format!(
            "{transport}, handler {handler}, max_frame_bytes {max}, input {} bytes: {why}",
            input.len()
        )));
    }
    Ok(run)
}

/// The ending, stated without the model: when `serve` fails, the output ends with an ERROR of
/// aux 0 (a case-B report); when it succeeds, the output is its HELLO, one frame per request
/// it counted (DATA or a case-A ERROR), and a BYE exactly when it ended with BYE.
fn check_ending(run: &Run) -> Result<(), TestCaseError> {
    let frames = parse_output(&run.output).map_err(TestCaseError::fail)?;
    let last = &frames.last().expect("at least the HELLO").header;
    match &run.result {
        Err(error) => {
            prop_assert_eq!(last.kind, Kind::Error, "serve failed ({}) without an ERROR", error);
            prop_assert_eq!(last.aux, 0);
        }
        Ok(summary) => {
            let bye = summary.ending == Ending::Bye;
            let answered = (summary.replies + summary.rejected) as usize;
            prop_assert_eq!(frames.len(), 1 + answered + usize::from(bye), "{:?}", summary);
            prop_assert_eq!(last.kind == Kind::Bye, bye, "{:?} ends with {:?}", summary, last);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn a_valid_conversation_gets_one_reply_per_request_in_order_and_bit_exact(
        transport in select(&TransportKind::EVERY[..]),
        handler in select(&HANDLERS[..]),
        conversation in conversation(),
    ) {
        let _watchdog = Watchdog::new(secs(30));
        let (input, _) = conversation.bytes();
        let run = run_and_check(transport, handler, &input, MAX)?;

        // The same, stated without the model.
        let frames = parse_output(&run.output).map_err(TestCaseError::fail)?;
        let summary = run.result.as_ref().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let n = conversation.requests.len();
        prop_assert_eq!(summary.replies + summary.rejected, n as u64);
        let expected_ending = if conversation.bye.is_some() { Ending::Bye } else { Ending::EndOfStream };
        prop_assert_eq!(summary.ending, expected_ending);
        prop_assert_eq!(frames.len(), 1 + n + usize::from(conversation.bye.is_some()));
        for (request, reply) in conversation.requests.iter().zip(&frames[1..]) {
            prop_assert_eq!(reply.header.seq, request.seq);
            let fits = request.payload.len() as u64 <= conversation.client_max;
            if handler != "lorenz96" && fits {
                prop_assert_eq!(reply.header.kind, Kind::Data);
                prop_assert_eq!((reply.header.dtype, reply.header.count), (request.dtype, request.count()));
                prop_assert_eq!(&reply.payload, &request.payload, "echo must be bit-exact");
            } else {
                prop_assert!(matches!(reply.header.kind, Kind::Data | Kind::Error));
            }
        }
        if let Some(seq) = conversation.bye {
            let bye = &frames.last().unwrap().header;
            prop_assert_eq!((bye.kind, bye.seq), (Kind::Bye, seq));
        }
    }

    #[test]
    fn a_corrupted_stream_ends_in_error_or_cleanly_before_the_corruption_matters(
        transport in select(&TransportKind::EVERY[..]),
        handler in select(&HANDLERS[..]),
        max in prop_oneof![3 => Just(MAX), 1 => Just(256u64), 1 => Just(72u64)],
        conversation in conversation(),
        corruptions in vec(corruption(), 1..3),
    ) {
        let _watchdog = Watchdog::new(secs(30));
        let (mut input, spans) = conversation.bytes();
        corrupt(&mut input, &spans, &corruptions);
        let run = run_and_check(transport, handler, &input, max)?;
        check_ending(&run)?;
        prop_assert_eq!(run.result.is_ok(), predict(handler, &input, max).is_clean());
    }

    #[test]
    fn garbage_after_a_valid_hello_ends_in_error_or_cleanly(
        transport in select(&TransportKind::EVERY[..]),
        handler in select(&HANDLERS[..]),
        garbage in vec(any::<u8>(), 0..600),
    ) {
        let _watchdog = Watchdog::new(secs(30));
        let mut input = client_hello(u64::MAX);
        input.extend_from_slice(&garbage);
        let run = run_and_check(transport, handler, &input, MAX)?;
        check_ending(&run)?;
    }

    #[test]
    fn garbage_from_the_first_byte_ends_in_error(
        transport in select(&TransportKind::EVERY[..]),
        handler in select(&HANDLERS[..]),
        garbage in vec(any::<u8>(), 0..600),
    ) {
        let _watchdog = Watchdog::new(secs(30));
        let run = run_and_check(transport, handler, &garbage, MAX)?;
        check_ending(&run)?;
        // Arbitrary bytes are not a HELLO (a 1-in-2^32 magic aside, then much more).
        prop_assert!(run.result.is_err() || garbage.starts_with(b"PEER"));
    }
}

// ---------------------------------------------------------------------------------------------
// Deterministic cases
// ---------------------------------------------------------------------------------------------

/// Every golden fixture, as the first frame and after a valid HELLO, against every handler:
/// the model and the server agree on each (the malformed ones end in ERROR).
#[test]
fn every_fixture_frame_gets_the_modelled_answer() {
    let _watchdog = Watchdog::new(secs(30));
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut fixtures: Vec<_> = std::fs::read_dir(&dir)
        .expect("list fixtures/")
        .map(|entry| entry.expect("fixture entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "bin"))
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 20, "expected the checked-in fixtures, found {fixtures:?}");
    for path in fixtures {
        let bytes = std::fs::read(&path).expect("read fixture");
        let mut after_hello = client_hello(u64::MAX);
        after_hello.extend_from_slice(&bytes);
        for (transport, handler) in
            TransportKind::EVERY.iter().flat_map(|t| HANDLERS.map(|h| (t, h)))
        {
            for input in [&bytes, &after_hello] {
                let run = run_server_on(*transport, handler, input, &options(MAX));
                if let Err(why) = check(handler, input, MAX, &run) {
                    panic!("{}, {transport}, handler {handler}: {why}", path.display());
                }
            }
        }
    }
}

/// A stream of many pipelined requests of changing sizes, larger than a pipe holds, so the
/// server's guessed reads miss and read ahead, and the writer runs concurrently.
#[test]
fn a_long_pipelined_stream_of_changing_sizes_is_answered_in_order() {
    let _watchdog = Watchdog::new(secs(30));
    let mut input = client_hello(u64::MAX);
    let mut expected = 0;
    for i in 0..600u64 {
        let count = [0, 1, 3, 8, 100, 1000, 7][i as usize % 7];
        let dtype = [Dtype::F64, Dtype::F32, Dtype::Bytes][i as usize % 3];
        let payload: Vec<u8> =
            (0..count * dtype.width()).map(|b| (b ^ i.wrapping_mul(31)) as u8).collect();
        input.extend(frame::encode_frame(&Header::data(i, dtype, count), &payload));
        expected += 1;
    }
    input.extend(common::bye(9999));
    assert!(input.len() > 4 * 65536, "the stream should exceed a default pipe several times");
    // Not over TCP: its end in this process is written whole before it is read, and 429 KB
    // exceed what loopback buffers hold unread (`stream_model::TCP_UNREAD_BYTES`).
    for (transport, handler) in
        TransportKind::ALL.iter().flat_map(|t| ["echo", "echo-raw"].map(|h| (*t, h)))
    {
        let run = run_and_check(transport, handler, &input, MAX).unwrap_or_else(|e| panic!("{e}"));
        let summary = run.result.expect("a valid conversation");
        assert_eq!(summary, ServeSummary { replies: expected, rejected: 0, ending: Ending::Bye });
    }
}

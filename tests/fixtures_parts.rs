//! Golden PARTS frames (docs/PROTOCOL.md §15): the checked-in `fixtures/parts_*.bin` and
//! `fixtures/bad_parts_*.bin`, written by `python3 fixtures/make_fixtures.py` from the
//! specification and independently of this crate, are the oracle.
//!
//! For each valid fixture: the frame decodes, its part table parses in the role the fixture
//! has, the parts hold the values of `fixtures/values/NAME.txt` bit for bit, and the crate's
//! table writer with those parts gives the file back byte for byte. For each malformed one:
//! the frame decodes (it is well framed) and its part table is refused, before any value is
//! read, with exactly the message `fixtures/README.md` gives.

use std::path::{Path, PathBuf};

use peerpipe::Error;
use peerpipe::frame::{self, Header, Kind};
use peerpipe::parts::{self, PartDtype, Role, Table, pad8};

/// The `max_frame_bytes` the PARTS fixtures are decoded with (fixtures/README.md).
const MAX_FRAME_BYTES: u64 = 4096;

fn fixture(name: &str) -> (PathBuf, Vec<u8>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(format!("{name}.bin"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, bytes)
}

/// One part of a values file: dtype, cols and the element bit patterns.
#[derive(Debug, PartialEq)]
struct ListedPart {
    dtype: PartDtype,
    cols: u32,
    count: u64,
    bits: Vec<u64>,
}

/// Parses `fixtures/values/NAME.txt`: `name "…"`, then `part I: DTYPE cols C count N` and one
/// `0x…` line per element; `#` starts a comment.
fn listed(name: &str) -> (String, Vec<ListedPart>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/values/{name}.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut function = None;
    let mut parts: Vec<ListedPart> = Vec::new();
    for line in text.lines().map(|l| l.split('#').next().unwrap().trim()) {
        if let Some(quoted) = line.strip_prefix("name ") {
            function = Some(quoted.trim_matches('"').to_owned());
        } else if line.starts_with("part ") {
            let words: Vec<&str> = line.split_whitespace().collect();
            let dtype = match words[2] {
                "bytes" => PartDtype::Bytes,
                "f32" => PartDtype::F32,
                "f64" => PartDtype::F64,
                "i64" => PartDtype::I64,
                other => panic!("{name}: dtype {other:?}"),
            };
            let (cols, count) = (words[4].parse().unwrap(), words[6].parse().unwrap());
            parts.push(ListedPart { dtype, cols, count, bits: Vec::new() });
        } else if let Some(hex) = line.strip_prefix("0x") {
            let bits = u64::from_str_radix(hex, 16).unwrap_or_else(|e| panic!("{name}: {e}"));
            parts.last_mut().expect("a value before any part").bits.push(bits);
        } else {
            assert!(line.is_empty(), "{name}: unexpected line {line:?}");
        }
    }
    (function.unwrap_or_else(|| panic!("{name}: no name line")), parts)
}

/// The element bit patterns of a part's wire bytes.
fn bits_of(dtype: PartDtype, bytes: &[u8]) -> Vec<u64> {
    match dtype {
        PartDtype::Bytes => bytes.iter().map(|&b| u64::from(b)).collect(),
        PartDtype::F32 => bytes
            .chunks_exact(4)
            .map(|c| u64::from(u32::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        PartDtype::F64 | PartDtype::I64 => {
            bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
        }
    }
}

const VALID: [(&str, Role); 11] = [
    ("parts_rhs_request", Role::Request),
    ("parts_rhs_reply", Role::Reply),
    ("parts_empty_request", Role::Request),
    ("parts_f32_odd", Role::Request),
    ("parts_i64", Role::Request),
    ("parts_bytes", Role::Request),
    ("parts_matrix", Role::Request),
    ("parts_f64_special", Role::Request),
    ("parts_reply_3_dtypes", Role::Reply),
    ("parts_empty_parts", Role::Request),
    ("parts_max_64_parts_name_64", Role::Request),
];

#[test]
fn every_valid_parts_fixture_holds_its_listed_values_and_is_what_the_table_writes() {
    for (name, role) in VALID {
        let (path, bytes) = fixture(name);
        let (frame, used) = frame::decode_frame(&bytes, MAX_FRAME_BYTES)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!((frame.header.kind, used), (Kind::Parts, bytes.len()), "{name}");
        let view = parts::parse(frame.payload, role).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (function, listed) = listed(name);
        assert_eq!(view.function(), function, "{name}");
        let found: Vec<ListedPart> = view
            .iter()
            .map(|p| ListedPart {
                dtype: p.shape().dtype,
                cols: p.shape().cols,
                count: p.shape().count,
                bits: bits_of(p.shape().dtype, p.bytes()),
            })
            .collect();
        assert_eq!(found, listed, "{name}");
        assert!(listed.iter().all(|p| p.bits.len() as u64 == p.count), "{name}: a count");
        // The crate writes the same frame from the same parts.
        let mut table = Table::default();
        table.write(view.function(), view.shapes()).unwrap();
        let mut payload = table.as_bytes().to_vec();
        for part in view.iter() {
            payload.extend_from_slice(part.bytes());
            payload.resize(payload.len() + pad8(part.bytes().len() as u64) as usize, 0);
        }
        let header = Header {
            aux: frame.header.aux,
            ..Header::parts(frame.header.seq, table.payload_len())
        };
        assert_eq!(frame::encode_frame(&header, &payload), bytes, "{name}");
    }
}

/// Every malformed table, with the message fixtures/README.md gives for it.
const MALFORMED: [(&str, &str); 29] = [
    ("bad_parts_preamble_5", "payload of 5 bytes is shorter than the 8-byte preamble"),
    ("bad_parts_preamble_0", "payload of 0 bytes is shorter than the 8-byte preamble"),
    ("bad_parts_65_parts", "65 parts, at most 64"),
    ("bad_parts_parts_u32_max", "4294967295 parts, at most 64"),
    ("bad_parts_name_65", "function name of 65 bytes, at most 64"),
    ("bad_parts_reserved_1", "reserved bytes 6-7 are 0x0001, expected 0"),
    ("bad_parts_reserved_8000", "reserved bytes 6-7 are 0x8000, expected 0"),
    ("bad_parts_table_past_end", "table of 56 bytes does not fit in a payload of 40"),
    ("bad_parts_name_past_end", "table of 24 bytes does not fit in a payload of 16"),
    (
        "bad_parts_name_space",
        "function name has byte 0x20 at 3: expected letters, digits, '_', '.', ':' or '-'",
    ),
    (
        "bad_parts_name_nul",
        "function name has byte 0x00 at 3: expected letters, digits, '_', '.', ':' or '-'",
    ),
    (
        "bad_parts_name_0x80",
        "function name has byte 0x80 at 3: expected letters, digits, '_', '.', ':' or '-'",
    ),
    (
        "bad_parts_name_comma",
        "function name has byte 0x2c at 3: expected letters, digits, '_', '.', ':' or '-'",
    ),
    ("bad_parts_name_padding", "nonzero padding after the function name: byte 2 is 0x07"),
    ("bad_parts_dtype_4", "part 1 has dtype 4: expected 0 (bytes), 1 (f32), 2 (f64) or 3 (i64)"),
    (
        "bad_parts_dtype_255",
        "part 0 has dtype 255: expected 0 (bytes), 1 (f32), 2 (f64) or 3 (i64)",
    ),
    ("bad_parts_descriptor_flags", "part 1 has flags 0x01, expected 0"),
    ("bad_parts_descriptor_reserved", "part 2: reserved bytes 2-3 are 0x0100, expected 0"),
    ("bad_parts_cols_not_divisor", "part 0 has 5 elements, not a multiple of its 2 columns"),
    (
        "bad_parts_count_overflow",
        "part 0 length overflows u64: count 2305843009213693952 × 8 bytes",
    ),
    (
        "bad_parts_part_past_end",
        "part 1 of 4000 bytes at offset 64 ends past the payload of 96 bytes",
    ),
    (
        "bad_parts_last_part_unpadded",
        "part 0 of 4 bytes at offset 24 ends past the payload of 28 bytes",
    ),
    (
        "bad_parts_offset_overflow",
        "part 0 of 18446744073709551608 bytes at offset 40 ends past the payload of 40 bytes",
    ),
    (
        "bad_parts_padded_length_wraps",
        "part 0 of 18446744073709551615 bytes at offset 24 ends past the payload of 24 bytes",
    ),
    ("bad_parts_trailing_bytes", "8 bytes after the last part"),
    ("bad_parts_trailing_no_parts", "8 bytes after the last part"),
    ("bad_parts_padding_between", "nonzero padding after part 0: byte 3 is 0x07"),
    ("bad_parts_padding_last", "nonzero padding after part 1: byte 2 is 0xaa"),
    ("bad_parts_reply_names_function", "a reply names function \"rhs\""),
];

#[test]
fn every_malformed_part_table_is_refused_with_the_documented_message() {
    for (name, message) in MALFORMED {
        let (path, bytes) = fixture(name);
        let (frame, _) = frame::decode_frame(&bytes, MAX_FRAME_BYTES)
            .unwrap_or_else(|e| panic!("{}: well framed, yet {e}", path.display()));
        assert_eq!(frame.header.kind, Kind::Parts, "{name}");
        let role =
            if name == "bad_parts_reply_names_function" { Role::Reply } else { Role::Request };
        match parts::parse(frame.payload, role) {
            Err(e @ Error::BadPartTable(_)) => {
                assert_eq!(e.to_string(), format!("bad part table: {message}"), "{name}")
            }
            other => panic!("{name}: expected a bad part table, got {other:?}"),
        }
    }
    // The one well-formed request among them.
    let (_, bytes) = fixture("bad_parts_reply_names_function");
    let (frame, _) = frame::decode_frame(&bytes, MAX_FRAME_BYTES).unwrap();
    assert_eq!(parts::parse(frame.payload, Role::Request).unwrap().function(), "rhs");
}

#[test]
fn a_parts_frame_with_a_numeric_dtype_is_refused_at_the_header() {
    let (_, bytes) = fixture("bad_parts_header_dtype_f64");
    let err = frame::decode_frame(&bytes, MAX_FRAME_BYTES).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed PARTS frame: expected dtype 0 (bytes), found dtype 2 (f64)"
    );
}

#[test]
fn every_bad_parts_fixture_is_listed_here() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("bad_parts_") || n.starts_with("parts_"))
        .collect();
    on_disk.sort();
    let mut here: Vec<String> = VALID
        .iter()
        .map(|(n, _)| *n)
        .chain(MALFORMED.iter().map(|(n, _)| *n))
        .chain(["bad_parts_header_dtype_f64"])
        .map(|n| format!("{n}.bin"))
        .collect();
    here.sort();
    assert_eq!(on_disk, here);
}

//! What the fuzz targets check of a PARTS payload (docs/PROTOCOL.md §15), shared by the
//! `frame_decoder` and `parts_table` targets.

use peerpipe::Error;
use peerpipe::parts::{self, DESCRIPTOR_LEN, PREAMBLE_LEN, Role, Table, pad8};

/// `parts::parse` in both roles, against the contract its docs and §15 state:
///
/// - nothing panics, and a failure is always `Error::BadPartTable`;
/// - an accepted table tiles the payload exactly: preamble, name padded to 8, one 16-byte
///   descriptor per part, then every part at a multiple of 8 with zero padding, the last one
///   ending at the payload's end;
/// - its table re-encodes (`Table::write`) to the payload's first bytes, and the lengths
///   `Table::payload_len` and `parts::payload_len` give agree with the payload's;
/// - a reply is accepted exactly when the request is and names no function.
pub fn check_parts(payload: &[u8]) {
    let request = parts::parse(payload, Role::Request);
    let reply = parts::parse(payload, Role::Reply);
    match (&request, &reply) {
        (Ok(view), Ok(_)) => assert!(view.function().is_empty(), "a reply named a function"),
        (Ok(view), Err(Error::BadPartTable(_))) => {
            assert!(!view.function().is_empty(), "reply refused though it names no function")
        }
        (Err(Error::BadPartTable(a)), Err(Error::BadPartTable(b))) => {
            assert_eq!(a, b, "the roles differ only in T10");
            return;
        }
        other => panic!("parse failed with another error than BadPartTable: {other:?}"),
    }
    let view = request.expect("accepted");
    let name = view.function().len();
    let mut at = PREAMBLE_LEN + name + pad8(name as u64) as usize + view.len() * DESCRIPTOR_LEN;
    let base = payload.as_ptr() as usize;
    for part in view.iter() {
        let bytes = part.bytes();
        assert_eq!(bytes.as_ptr() as usize - base, at, "part not where its offsets put it");
        assert_eq!(at % 8, 0, "part not 8-byte aligned in the payload");
        let shape = part.shape();
        assert_eq!(bytes.len() as u64, shape.byte_len().expect("accepted"));
        if shape.cols > 0 {
            assert_eq!(shape.count % u64::from(shape.cols), 0, "ragged matrix accepted");
        }
        let end = at + bytes.len();
        let padded = end + pad8(bytes.len() as u64) as usize;
        assert!(payload[end..padded].iter().all(|&b| b == 0), "nonzero padding accepted");
        at = padded;
    }
    assert_eq!(at, payload.len(), "the parts do not end at the payload's end");
    let mut table = Table::default();
    table.write(view.function(), view.shapes()).expect("an accepted table re-encodes");
    assert_eq!(table.as_bytes(), &payload[..table.as_bytes().len()], "table re-encodes");
    assert_eq!(table.payload_len(), payload.len() as u64);
    if view.function().is_empty() {
        assert_eq!(parts::payload_len(view.shapes()), Some(payload.len() as u64));
    }
}

use super::*;
use crate::Error;

/// A payload calling `name` with `parts` (each `(dtype, cols, wire bytes)`), padding included.
fn payload(name: &str, parts: &[(PartDtype, u32, Vec<u8>)]) -> Vec<u8> {
    let mut table = Table::default();
    let shapes = parts.iter().map(|(dtype, cols, bytes)| Shape {
        dtype: *dtype,
        count: bytes.len() as u64 / dtype.width(),
        cols: *cols,
    });
    table.write(name, shapes).unwrap();
    let mut out = table.as_bytes().to_vec();
    for (_, _, bytes) in parts {
        out.extend_from_slice(bytes);
        out.resize(out.len() + pad8(bytes.len() as u64) as usize, 0);
    }
    assert_eq!(out.len() as u64, table.payload_len());
    out
}

fn f64s(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn fault(bytes: &[u8], role: Role) -> TableFault {
    match parse(bytes, role) {
        Err(Error::BadPartTable(fault)) => fault,
        other => panic!("expected a table fault, got {other:?}"),
    }
}

#[test]
fn a_table_written_is_parsed_back_part_for_part() {
    let nan = f64::from_bits(0x7ff8_0000_0000_0001);
    let bytes = payload(
        "rhs",
        &[
            (PartDtype::F64, 0, f64s(&[0.5])),
            (PartDtype::F32, 0, [1.0f32, -2.5, 3.0].iter().flat_map(|x| x.to_le_bytes()).collect()),
            (PartDtype::I64, 0, (-3i64).to_le_bytes().to_vec()),
            (PartDtype::Bytes, 0, b"abc".to_vec()),
            (PartDtype::F64, 2, f64s(&[1.0, -0.0, nan, 4.0])),
        ],
    );
    let view = parse(&bytes, Role::Request).unwrap();
    assert_eq!(view.function(), "rhs");
    let shapes: Vec<String> = view.shapes().map(|s| s.to_string()).collect();
    assert_eq!(shapes, ["f64[1]", "f32[3]", "i64[1]", "bytes[3]", "f64[2x2]"]);
    assert_eq!(view.get(2).unwrap().bytes(), (-3i64).to_le_bytes());
    assert_eq!(view.get(3).unwrap().bytes(), b"abc");
    let mut matrix = [0.0; 4];
    PartMut::f64(&mut matrix).matrix(2).unwrap().fill_from(&view.get(4).unwrap()).unwrap();
    assert_eq!(matrix.map(f64::to_bits), [1.0, -0.0, nan, 4.0].map(f64::to_bits));
    assert!(view.get(5).is_none());
}

#[test]
fn the_worked_example_of_the_protocol_is_what_the_table_writes() {
    let bytes = payload(
        "rhs",
        &[
            (PartDtype::F64, 0, f64s(&[0.5])),
            (PartDtype::F64, 0, f64s(&[1.0, 2.0])),
            (PartDtype::F64, 0, f64s(&[3.0])),
        ],
    );
    assert_eq!(bytes.len(), 96);
    assert_eq!(&bytes[..16], [3, 0, 0, 0, 3, 0, 0, 0, b'r', b'h', b's', 0, 0, 0, 0, 0]);
    assert_eq!(&bytes[16..32], [2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn zero_parts_and_no_name_is_a_valid_request() {
    let bytes = payload("", &[]);
    assert_eq!(bytes, [0; 8]);
    let view = parse(&bytes, Role::Request).unwrap();
    assert_eq!((view.function(), view.len()), ("", 0));
}

#[test]
fn every_check_of_the_table_names_what_it_found() {
    let good =
        payload("rhs", &[(PartDtype::F64, 0, f64s(&[1.0])), (PartDtype::F32, 0, vec![0; 4])]);
    let with = |at: usize, bytes: &[u8]| {
        let mut b = good.clone();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        b
    };
    // Layout: preamble 0..8, name 8..16, descriptors 16..48, part 0 48..56, part 1 56..64.
    assert_eq!(good.len(), 64);
    let cases: Vec<(Vec<u8>, TableFault)> = vec![
        (good[..5].to_vec(), TableFault::ShortPreamble { payload: 5 }),
        (with(0, &65u32.to_le_bytes()), TableFault::TooManyParts { parts: 65 }),
        (with(0, &u32::MAX.to_le_bytes()), TableFault::TooManyParts { parts: u32::MAX }),
        (with(4, &65u16.to_le_bytes()), TableFault::NameTooLong { len: 65 }),
        (with(6, &[1, 0]), TableFault::Reserved { found: 1 }),
        (with(0, &4u32.to_le_bytes()), TableFault::TableTooLong { table: 80, payload: 64 }),
        (with(9, b" "), TableFault::BadName { at: 1, byte: b' ' }),
        (with(8, &[0]), TableFault::BadName { at: 0, byte: 0 }),
        (with(10, &[0x80]), TableFault::BadName { at: 2, byte: 0x80 }),
        (with(10, b","), TableFault::BadName { at: 2, byte: b',' }),
        (with(13, &[7]), TableFault::NamePadding { at: 2, byte: 7 }),
        (with(32, &[4]), TableFault::UnknownDtype { part: 1, found: 4 }),
        (with(16, &[255]), TableFault::UnknownDtype { part: 0, found: 255 }),
        (with(17, &[1]), TableFault::DescriptorFlags { part: 0, found: 1 }),
        (with(19, &[1]), TableFault::DescriptorReserved { part: 0, found: 0x100 }),
        (with(36, &2u32.to_le_bytes()), TableFault::Ragged { part: 1, count: 1, cols: 2 }),
        (
            with(24, &u64::MAX.to_le_bytes()),
            TableFault::CountOverflow { part: 0, count: u64::MAX, dtype: PartDtype::F64 },
        ),
        (
            with(24, &2u64.to_le_bytes()),
            TableFault::PastEnd { part: 1, bytes: 4, offset: 64, payload: 64 },
        ),
        (
            with(24, &(u64::MAX / 8).to_le_bytes()),
            TableFault::PastEnd { part: 0, bytes: u64::MAX / 8 * 8, offset: 48, payload: 64 },
        ),
        ([good.clone(), vec![0; 8]].concat(), TableFault::Trailing { bytes: 8 }),
        (with(61, &[9]), TableFault::PartPadding { part: 1, at: 1, byte: 9 }),
    ];
    for (bytes, expected) in cases {
        assert_eq!(fault(&bytes, Role::Request), expected, "{bytes:?}");
        assert!(!expected.to_string().is_empty());
    }
    assert_eq!(fault(&good, Role::Reply), TableFault::NamedReply { name: "rhs".into() });
    assert_eq!(
        Error::BadPartTable(TableFault::TooManyParts { parts: 65 }).to_string(),
        "bad part table: 65 parts, at most 64"
    );
}

#[test]
fn a_part_offset_that_overflows_is_past_the_end_not_a_panic() {
    // Two parts of u64::MAX / 8 f64 elements each: every length fits, their sum does not.
    let mut table = Table::default();
    let huge = Shape::vector(PartDtype::F64, u64::MAX / 8);
    assert!(table.write("", [huge, huge].into_iter()).is_err());
    let mut bytes = vec![0u8; 8 + 32];
    bytes[0] = 2;
    for at in [8, 24] {
        bytes[at] = 2;
        bytes[at + 8..at + 16].copy_from_slice(&(u64::MAX / 8).to_le_bytes());
    }
    assert!(matches!(fault(&bytes, Role::Request), TableFault::PastEnd { part: 0, .. }));
}

#[test]
fn function_names_are_checked_before_anything_is_written() {
    assert!(check_function_name("rhs").is_ok());
    assert!(check_function_name("model.step:v2-a_b").is_ok());
    for bad in ["", "a b", "a,b", "é", &"x".repeat(65)] {
        assert!(check_function_name(bad).is_err(), "{bad:?}");
        assert!(Table::default().write(bad, std::iter::empty()).is_err() || bad.is_empty());
    }
}

#[test]
fn parts_out_hands_out_zeroed_aligned_parts_and_reuses_its_memory() {
    let mut out = PartsOut::new();
    out.f64(3).unwrap().copy_from_slice(&[1.0, 2.0, 3.0]);
    out.bytes(3).unwrap().copy_from_slice(b"xyz");
    out.f32(1).unwrap()[0] = 1.5;
    let mut table = Table::default();
    table.write("", out.shapes().iter().copied()).unwrap();
    let expected_len = table.payload_len();
    assert_eq!(out.payload_len(), expected_len);
    let [reply_table, parts] = out.wire_payload();
    assert_eq!(reply_table, table.as_bytes(), "the reply's own table is the one Table writes");
    assert_eq!(parts.len(), 24 + 8 + 8);
    out.clear();
    assert_eq!(out.f64(2).unwrap(), [0.0, 0.0], "a new part is zeroed");
    for _ in 1..MAX_PARTS {
        out.i64(0).unwrap();
    }
    assert!(out.f64(1).is_err(), "at most MAX_PARTS parts");
    assert!(out.f64_matrix(2, 0).is_err());
}

#[test]
fn a_repeated_table_is_recognised_and_anything_else_is_checked_anew() {
    let mut memo = ParseMemo::default();
    let call = |t: f64, y: &[f64]| {
        payload("rhs", &[(PartDtype::F64, 0, f64s(&[t])), (PartDtype::F64, 0, f64s(y))])
    };
    let first = call(0.5, &[1.0, 2.0]);
    let view = memo.parse(&first, Role::Request).unwrap();
    assert_eq!(view.get(1).unwrap().f64_view().unwrap(), [1.0, 2.0]);
    assert!(!view.repeated());
    // The same table with other values: the same view of the new values.
    let second = call(1.5, &[3.0, -4.0]);
    let view = memo.parse(&second, Role::Request).unwrap();
    assert!(view.repeated(), "recognised, and said to be");
    // The memo's places are those a walk over the descriptors finds, part by part.
    let walked = parse(&second, Role::Request).unwrap();
    assert!(view.iter().eq(walked.iter()));
    assert_eq!((view.iter().len(), view.get(2), walked.get(2)), (2, None, None));
    assert_eq!(view.function(), "rhs");
    assert_eq!(view.len(), 2);
    assert_eq!(view.get(0).unwrap().f64_view().unwrap(), [1.5]);
    assert_eq!(view.get(1).unwrap().f64_view().unwrap(), [3.0, -4.0]);
    // The same table bytes with more payload after them, or as a reply: checked anew.
    let mut longer = second.clone();
    longer.extend_from_slice(&[0; 8]);
    assert!(matches!(
        memo.parse(&longer, Role::Request),
        Err(Error::BadPartTable(TableFault::Trailing { bytes: 8 }))
    ));
    assert!(!memo.parse(&second, Role::Request).unwrap().repeated(), "after another table");
    assert!(matches!(
        memo.parse(&second, Role::Reply),
        Err(Error::BadPartTable(TableFault::NamedReply { .. }))
    ));
    // A part with padding is never recognised: its padding is checked every time.
    let odd = payload("obs", &[(PartDtype::F32, 0, 1.0f32.to_le_bytes().to_vec())]);
    memo.parse(&odd, Role::Request).unwrap();
    let mut dirty = odd.clone();
    *dirty.last_mut().unwrap() = 1;
    assert!(matches!(
        memo.parse(&dirty, Role::Request),
        Err(Error::BadPartTable(TableFault::PartPadding { .. }))
    ));
    // A table that differs in one byte of a descriptor: checked anew.
    memo.parse(&second, Role::Request).unwrap();
    let mut bad = second.clone();
    bad[16 + 1] = 1; // flags of part 0
    assert!(matches!(
        memo.parse(&bad, Role::Request),
        Err(Error::BadPartTable(TableFault::DescriptorFlags { part: 0, .. }))
    ));
}

/// A memo primed with a valid request gives, for every payload one byte or a few bytes of
/// length away from it, exactly what a fresh check gives.
#[test]
fn the_memo_agrees_with_a_fresh_check_on_every_nearby_payload() {
    let outcome = |result: crate::Result<Parsed<'_>>| format!("{result:?}");
    let valids = [
        payload(
            "rhs",
            &[
                (PartDtype::F64, 0, f64s(&[0.5])),
                (PartDtype::F64, 0, f64s(&[1.0; 5])),
                (PartDtype::I64, 0, f64s(&[2.0; 2])),
            ],
        ),
        payload("", &[(PartDtype::F64, 2, f64s(&[1.0; 4]))]),
        payload(
            "obs",
            &[(PartDtype::F32, 0, [1.5f32; 3].iter().flat_map(|x| x.to_le_bytes()).collect())],
        ),
    ];
    let mut checked = 0;
    for valid in &valids {
        let mut variants = Vec::new();
        for at in 0..valid.len() {
            for byte in [0, 1, 2, 3, 4, 0x2e, 0x41, 0x80, 0xff, valid[at].wrapping_add(1)] {
                let mut bytes = valid.clone();
                bytes[at] = byte;
                variants.push(bytes);
            }
        }
        for len in [0, 7, 8, valid.len() - 8, valid.len() - 1, valid.len() + 1, valid.len() + 8] {
            let mut bytes = valid.clone();
            bytes.resize(len, 0);
            variants.push(bytes);
        }
        for role in [Role::Request, Role::Reply] {
            for bytes in &variants {
                let mut memo = ParseMemo::default();
                let _ = memo.parse(valid, role);
                assert_eq!(
                    outcome(memo.parse(bytes, role)),
                    outcome(parse(bytes, role)),
                    "{bytes:?}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 2000, "{checked}");
}

#[test]
fn parts_to_overwrite_have_their_shapes_and_are_sent_as_written() {
    let mut out = PartsOut::new();
    out.f64(3).unwrap().copy_from_slice(&[1.0, 2.0, 3.0]);
    out.clear();
    out.f64_to_overwrite(2).unwrap().copy_from_slice(&[7.0, 8.0]);
    out.f64_matrix_to_overwrite(2, 2).unwrap().copy_from_slice(&[5.0; 4]);
    assert_eq!(
        out.shapes().iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["f64[2]", "f64[2x2]"]
    );
    assert!(out.f64_matrix_to_overwrite(2, 0).is_err());
    let [table, parts] = out.wire_payload();
    assert_eq!(table.len(), 8 + 2 * 16);
    assert_eq!(bytemuck::cast_slice::<u8, f64>(parts), [7.0, 8.0, 5.0, 5.0, 5.0, 5.0]);
}

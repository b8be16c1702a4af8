//! Fuzzes the PARTS part table (docs/PROTOCOL.md §15): `parts::parse` on the input as a
//! payload, in both roles, against the contract of `peerpipe_fuzz::check_parts`; and the input
//! with its first bytes rewritten into a plausible preamble (a small part count and name
//! length), so that the descriptors and parts behind it are reached more often.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    peerpipe_fuzz::check_parts(data);
    if data.len() >= 8 {
        let mut plausible = data.to_vec();
        plausible[0..4].copy_from_slice(&u32::from(data[0] % 8).to_le_bytes());
        plausible[4..6].copy_from_slice(&u16::from(data[4] % 16).to_le_bytes());
        plausible[6..8].fill(0);
        peerpipe_fuzz::check_parts(&plausible);
    }
});

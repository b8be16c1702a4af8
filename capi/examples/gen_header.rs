//! Writes `capi/include/peerpipe.h` from the crate's sources with cbindgen:
//! `cargo run -p peerpipe-capi --example gen_header`. `tests/header.rs` checks that the
//! checked-in header is what this produces.

use std::path::{Path, PathBuf};

/// The crate's directory (`capi/`).
fn crate_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Where the header lives.
pub fn header_path() -> PathBuf {
    crate_dir().join("include").join("peerpipe.h")
}

/// The header as cbindgen generates it from `src/lib.rs` and `cbindgen.toml`.
pub fn generate() -> String {
    let dir = crate_dir();
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("reading capi/cbindgen.toml: {e}"));
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src").join("lib.rs"))
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen: {e}"));
    let mut text = Vec::new();
    bindings.write(&mut text);
    String::from_utf8(text).expect("cbindgen writes UTF-8")
}

#[allow(dead_code)] // tests/header.rs includes this file for `generate` alone
fn main() {
    let path = header_path();
    std::fs::write(&path, generate()).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    println!("wrote {}", path.display());
}

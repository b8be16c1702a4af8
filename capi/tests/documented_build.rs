//! docs/USAGE.md's C build lines and `app.c`, run as they stand there: from a directory outside
//! the checkout, with `CARGO_TARGET_DIR` elsewhere than `target/`, the server found through
//! `PEERPIPE_PEER`, then through `PATH`, and named as missing when it is in neither.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The first fenced block of `lang` in the section of docs/USAGE.md that `heading` opens.
fn documented_block(heading: &str, lang: &str) -> String {
    let usage = common::crate_dir().join("../docs/USAGE.md");
    let text = std::fs::read_to_string(&usage).expect("read docs/USAGE.md");
    let section = text.split(heading).nth(1).unwrap_or_else(|| panic!("no `{heading}`"));
    let section = section.split("\n## ").next().expect("the section");
    let block = section
        .split(&format!("```{lang}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("no ```{lang} block under `{heading}`"));
    block.split("\n```").next().expect("the block's end").to_owned()
}

/// A fresh, empty directory outside the checkout (under the system's temporary directory).
fn outside_the_checkout() -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("peerpipe-documented-build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a directory outside the checkout");
    let checkout = common::crate_dir().parent().expect("the checkout").canonicalize().unwrap();
    assert!(!dir.canonicalize().unwrap().starts_with(&checkout), "{} is inside", dir.display());
    dir
}

/// `PATH` with the directory of the cargo running this test first (the documented lines call
/// `cargo`), and `extra` before it when given.
fn path_with(extra: Option<&Path>) -> std::ffi::OsString {
    let cargo = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let mut dirs: Vec<PathBuf> = extra.into_iter().map(Path::to_path_buf).collect();
    dirs.extend(cargo.parent().filter(|d| !d.as_os_str().is_empty()).map(Path::to_path_buf));
    dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(dirs).expect("a PATH")
}

#[test]
fn the_documented_c_build_and_app_work_from_outside_the_checkout_with_the_target_dir_elsewhere() {
    if !common::have("cc") || !common::have("sed") {
        return;
    }
    let build = documented_block("## C and Fortran", "sh");
    let app = documented_block("## C and Fortran", "c");
    assert!(
        build.contains("cargo metadata"),
        "the build lines ask cargo where it builds:\n{build}"
    );
    let work = outside_the_checkout();
    std::fs::write(work.join("app.c"), &app).expect("write app.c");
    // Elsewhere than the checkout's target/: a directory of this test's own (kept between
    // runs, so the release build is incremental). The profile is built unoptimised here only
    // to keep the test quick: the lines are the same.
    let target_dir = common::build_dir().join("elsewhere-target");
    let peer = common::peer_exe();
    let checkout = common::crate_dir().parent().expect("the checkout").to_path_buf();
    let mut command = Command::new("sh");
    command.arg("-euc").arg(&build).current_dir(&work);
    command.env("PEERPIPE_DIR", &checkout).env("CARGO_TARGET_DIR", &target_dir);
    command.env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0").env("PATH", path_with(None));
    command.env("PEERPIPE_PEER", &peer);
    let output = common::run(command, Duration::from_secs(900), "the documented build lines");
    output.assert_success("the documented build lines, PEERPIPE_PEER set");
    assert!(output.stdout.contains("round trip "), "{}", output.stdout);
    let library = target_dir.join("release").join("libpeerpipe.so");
    assert!(library.is_file(), "{} was not built", library.display());
    let linked = std::fs::read(work.join("app")).expect("read app");
    let rpath = target_dir.join("release").to_string_lossy().into_owned();
    assert!(
        linked.windows(rpath.len()).any(|w| w == rpath.as_bytes()),
        "app's rpath is not {rpath}: it was linked against another libpeerpipe"
    );

    // `peer` on PATH, PEERPIPE_PEER unset.
    let mut on_path = Command::new(work.join("app"));
    on_path.current_dir(&work).env_remove("PEERPIPE_PEER");
    on_path.env("PATH", path_with(peer.parent()));
    let output = common::run(on_path, Duration::from_secs(60), "app with peer on PATH");
    output.assert_success("app with peer on PATH");
    assert!(output.stdout.contains("round trip "), "{}", output.stdout);

    // In neither place: the error says where it looked.
    let nowhere = work.join("no-peer-here");
    std::fs::create_dir_all(&nowhere).expect("an empty directory");
    let mut neither = Command::new(work.join("app"));
    neither.current_dir(&work).env_remove("PEERPIPE_PEER").env("PATH", &nowhere);
    let output = common::run(neither, Duration::from_secs(60), "app without peer");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    for said in ["program not found: ", "PEERPIPE_PEER (not set)", "peer on PATH (not in "] {
        assert!(output.stderr.contains(said), "no `{said}` in {}", output.stderr);
    }
    let _ = std::fs::remove_dir_all(&work);
}

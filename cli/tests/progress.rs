//! A run of more than a second shows its progress on a terminal, and only there: `peer --quick`
//! under a pseudo-terminal (util-linux `script`) draws its progress bar on stderr; with stderr
//! piped it draws nothing, so logs and CI output stay clean.
//!
//! Without `script` the terminal test passes with a note, unless `PEERPIPE_REQUIRE_TOOLS=1`
//! (set by `.ci/run`), when it fails.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::process::{Command, Stdio};

use common::{Watchdog, peer_exe, secs};

/// The end of the progress bar's template (`{bar} {pos}/{len} {msg} ({eta} left)`).
const PROGRESS_MARK: &str = " left)";

fn script_available() -> bool {
    Command::new("script").arg("--version").output().is_ok_and(|out| out.status.success())
}

#[test]
fn a_quick_run_on_a_terminal_shows_its_progress() {
    let _watchdog = Watchdog::new(secs(120));
    if !script_available() {
        assert!(
            std::env::var_os(common::sshd::REQUIRE_TOOLS_VAR).is_none_or(|v| v != "1"),
            "`script` (util-linux) is needed to run peer under a pseudo-terminal"
        );
        eprintln!("skipped: no `script` to give peer a pseudo-terminal");
        return;
    }
    // `script -qec CMD /dev/null` runs CMD with a pseudo-terminal as its stdin, stdout and
    // stderr, copies what it prints to our stdout, and exits with its status.
    let command = format!("'{}' --quick", peer_exe());
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("run script");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "peer --quick under a terminal failed: {shown}");
    assert!(shown.contains(PROGRESS_MARK), "no progress bar drawn on the terminal:\n{shown}");
    assert!(shown.contains("answer:"), "the answer is printed too:\n{shown}");
}

#[test]
fn a_quick_run_with_stderr_piped_draws_no_progress() {
    let _watchdog = Watchdog::new(secs(120));
    let out = Command::new(peer_exe()).arg("--quick").stdin(Stdio::null()).output().expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains(PROGRESS_MARK), "progress drawn into a pipe:\n{stderr}");
}

//! Every `PP_E*` code reached on purpose from C (`tests/c/errors.c`), each with the Rust
//! library's message; the peer stays usable exactly where the header says it does.

mod common;

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

#[test]
fn every_error_code_is_reached_from_c_with_the_rust_message() {
    if !common::have("cc") {
        return;
    }
    let program = common::compile_c("tests/c/errors.c");
    let mut command = Command::new(&program);
    command.arg(common::peer_exe()).arg(&program);
    let output = common::run(command, Duration::from_secs(90), "errors.c");
    output.assert_success("errors.c");
    let lines: HashMap<&str, &str> =
        output.stdout.lines().filter_map(|line| line.split_once(' ')).collect();
    let expect = |label: &str, code: &str, message: &str| {
        let line = lines.get(label).unwrap_or_else(|| panic!("no `{label}` in\n{}", output.stdout));
        let (found, text) = line.split_once(' ').unwrap_or((line, ""));
        assert_eq!(found, code, "{label}: {text}");
        assert!(text.contains(message), "{label}: `{text}` lacks `{message}`");
    };
    expect("spawn-null-argv", "PP_EINVAL", "invalid argument argv: is NULL");
    assert_eq!(lines.get("out-cleared"), Some(&"yes"), "a failed spawn leaves *out NULL");
    expect("spawn-argc-0", "PP_EINVAL", "argc: is 0");
    expect("spawn-null-out", "PP_EINVAL", "invalid argument out: is NULL");
    expect("call-null-peer", "PP_EINVAL", "invalid argument peer: is NULL");
    expect("timeout-null-peer", "PP_EINVAL", "peer: is NULL");
    expect("serve-null-handler", "PP_EINVAL", "handler: is NULL");
    expect(
        "wait-sleepy",
        "PP_EINVAL",
        "invalid wait strategy: expected auto, auto:stay, block, spin, hybrid or hybrid:DUR, found \"sleepy\"",
    );
    expect("transport-shm", "PP_EINVAL", "expected pipe, shm-sem, shm-ring or tcp, found \"shm\"");
    expect("max-frame-0", "PP_EINVAL", "must be at least 1");
    expect("options-null", "PP_EINVAL", "options: is NULL");
    expect("wait-ok", "PP_OK", "");
    expect("spawn-echo", "PP_OK", "");
    expect("call-null-in", "PP_EINVAL", "in: is NULL but its length is 3");
    expect("call-misaligned", "PP_EINVAL", "is not aligned to 8 bytes");
    expect("call-overlap", "PP_EINVAL", "out: overlaps in");
    expect("call-ok-after-einval", "PP_OK", "");
    expect("call-empty", "PP_OK", "");
    expect(
        "call-length-mismatch",
        "PP_EINVAL",
        "length mismatch for the reply buffer (a call's reply has the request's length): \
         expected 3, found 4",
    );
    expect("call-ok-after-length-mismatch", "PP_OK", "");
    expect("close-failed", "PP_OK", "");
    expect("close-null", "PP_OK", "");
    expect(
        "spawn-missing",
        "PP_ENOTFOUND",
        "cannot start \"/nonexistent/peerpipe-server\": No such file or directory (os error 2)",
    );
    expect(
        "spawn-not-executable",
        "PP_EIO",
        "cannot start \"/etc/passwd\": Permission denied (os error 13)",
    );
    expect("spawn-exit-3", "PP_EEXITED", "peer exited with status 3");
    expect("spawn-silent", "PP_ETIMEDOUT", "timed out after 200ms waiting for the server's HELLO");
    expect("spawn-garbage", "PP_EPROTO", "bad magic: expected \"PEER\"");
    expect("spawn-small", "PP_OK", "");
    expect(
        "call-too-large",
        "PP_ETOOLARGE",
        "frame too large: payload of 4000 bytes exceeds max_frame_bytes 64, the server's limit \
         (from its HELLO); nothing was sent. Raise it on both sides: `Options::max_frame_bytes` \
         in Rust, `max_frame_bytes=` in Python, `pp_options_set_max_frame_bytes` in C",
    );
    expect("call-small-after", "PP_OK", "");
    expect("close-small", "PP_OK", "");
    expect("spawn-picky", "PP_OK", "");
    expect("call-rejected", "PP_EREMOTE", "server error for seq 1: handler picky returned 7");
    expect("call-after-rejected", "PP_OK", "");
    assert_eq!(lines.get("echoed"), Some(&"yes"), "the conversation goes on after ERROR");
    expect("set-timeout", "PP_OK", "");
    expect("call-slow", "PP_ETIMEDOUT", "timed out after 100ms waiting for the reply to seq 3");
    expect(
        "call-after-timeout",
        "PP_ECLOSED",
        "closed after: timed out after 100ms waiting for the reply to seq 3",
    );
    expect("close-picky", "PP_OK", "");
    let strerror: Vec<&str> =
        output.stdout.lines().filter(|l| l.starts_with("strerror ")).collect();
    assert_eq!(strerror.len(), 15, "{strerror:?}");
    assert_eq!(strerror[0], "strerror 0 success");
    assert_eq!(strerror[9], "strerror -9 internal error (panic) in peerpipe");
    assert_eq!(strerror[10], "strerror -10 program not found");
    assert_eq!(strerror[11], "strerror -11 interrupted");
    assert_eq!(strerror[12], "strerror -12 reply of another shape than expected");
    assert_eq!(strerror[13], "strerror -13 not supported by the server");
    assert_eq!(strerror[14], "strerror -14 unknown peerpipe error code");
}

//! One spawn rule, seen from C (`tests/c/spawn.c`): `pp_spawn_shell` with a simple command
//! spawns the server itself (no shell left waiting above it), and a program that is not there
//! is `PP_ENOTFOUND` naming it.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn a_shell_line_spawns_the_server_itself_and_a_missing_program_is_named() {
    if !common::have("cc") {
        return;
    }
    let program = common::compile_c("tests/c/spawn.c");
    let mut child = Command::new(&program)
        .arg(common::peer_exe())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start spawn.c");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("read the pid line");
    let pid: u32 = first
        .strip_prefix("pid ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {first:?}"));
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).expect("/proc/PID/exe");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    let parent: u32 = stat[stat.rfind(')').expect("comm") + 1..]
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("ppid");
    child.stdin.take().expect("piped stdin").write_all(b"go\n").expect("go-ahead");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("read the rest");
    let status = common::wait_or_kill(&mut child, Duration::from_secs(60), "spawn.c");
    assert!(status.success(), "spawn.c: {status}\n{rest}");
    assert_eq!(exe.file_name().and_then(|n| n.to_str()), Some("peer"), "{exe:?}");
    assert_eq!(parent, child.id(), "the server runs under a shell, not in its place");
    assert!(
        rest.contains(
            "missing PP_ENOTFOUND cannot start \"target/release/pear\": No such file or directory \
             (os error 2)"
        ),
        "{rest}"
    );
    assert!(rest.contains("null-out yes"), "{rest}");
}

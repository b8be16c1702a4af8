//! The `srun` route from C (`tests/c/tcp_spawn.c`), run for real on the throw-away two-node
//! Slurm cluster of the root crate's tests (`tests/common/slurm.rs`, shared, not copied):
//! `pp_spawn_shell_with` and the tcp transport start a server on the other node through `srun`,
//! with no `--listen`, and the frames go straight to it, bit for bit.
//!
//! Skipped, with `skipped: no Slurm cluster: …`, where Slurm, munge or the namespace tools are
//! missing, unless `PEERPIPE_REQUIRE_TOOLS=1` (set by `.ci/run`), which makes that a failure.

mod common;

#[allow(dead_code)]
#[path = "../../tests/common/slurm.rs"]
mod slurm;

/// What `slurm` reads of its sibling in the root crate's tests.
mod sshd {
    pub use crate::common::REQUIRE_TOOLS_VAR;
}

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::time::Duration;

#[test]
fn c_spawns_a_tcp_server_through_srun_on_the_other_node_and_echoes_bit_for_bit() {
    if !common::have("cc") {
        return;
    }
    let program = common::compile_c("tests/c/tcp_spawn.c");
    let peer = common::peer_exe();
    let peer = peer.to_str().expect("a UTF-8 path");
    let Some(cluster) = slurm::cluster_or_skip() else { return };
    let line = format!("{} -w n1 -N1 -n1 {peer} --role server --transport tcp", cluster.srun());
    let mut child = cluster
        .command_on_n0(program.to_str().expect("a UTF-8 path"))
        .arg(&line)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tcp_spawn.c");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut stderr = child.stderr.take().expect("piped stderr");
    let mut first = String::new();
    stdout.read_line(&mut first).expect("read tcp_spawn's first line");
    if first.trim() != "spawned" {
        let status = common::wait_or_kill(&mut child, Duration::from_secs(30), "tcp_spawn.c");
        let mut err = String::new();
        let _ = stderr.read_to_string(&mut err);
        panic!("tcp_spawn.c did not spawn ({status}): {first}{err}\n{}", cluster.logs());
    }
    // While the peer lives: its server runs on n1, none on n0 (where `srun` runs, whose own
    // command line names the server's).
    let peer_path = std::fs::canonicalize(peer).expect("the peer binary");
    let on = |node| -> Vec<u32> {
        let is_peer = |pid: &u32| {
            std::fs::canonicalize(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == peer_path)
        };
        cluster.processes_on(node, "--role server").into_iter().filter(is_peer).collect()
    };
    let (on_n0, on_n1) = (on(0), on(1));
    child.stdin.take().expect("piped stdin").write_all(b"go\n").expect("go-ahead");
    let status = common::wait_or_kill(&mut child, Duration::from_secs(120), "tcp_spawn.c");
    let (mut out, mut err) = (String::new(), String::new());
    stdout.read_to_string(&mut out).expect("read tcp_spawn's stdout");
    stderr.read_to_string(&mut err).expect("read tcp_spawn's stderr");
    assert!(status.success(), "tcp_spawn.c: {status}\n{out}{err}\n{}", cluster.logs());
    assert_eq!(on_n1.len(), 1, "one server on n1: {on_n1:?}");
    assert!(on_n0.is_empty(), "no server on n0: {on_n0:?}");
    assert!(out.contains("bit for bit"), "{out}{err}");
    let left = cluster.wait_nothing_left(peer, Duration::from_secs(10));
    assert_eq!(left, (Vec::new(), String::new()), "left behind\n{}", cluster.logs());
}

//! The C client and the C server run clean under valgrind: no invalid access, no use of
//! uninitialised memory, 0 bytes definitely lost.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use peerpipe::process::{Spawn, spawn_connected};
use peerpipe::{Options, Peer, TransportKind};

const VALGRIND_EXIT: i32 = 99;

fn valgrind(log: &Path) -> Command {
    let mut command = Command::new("valgrind");
    command.arg(format!("--error-exitcode={VALGRIND_EXIT}"));
    command.args(["--leak-check=full", "--show-leak-kinds=definite"]);
    command.args(["--errors-for-leak-kinds=definite", "--track-origins=yes"]);
    command.arg(format!("--log-file={}", log.display()));
    command
}

/// Reads valgrind's log and checks its verdict lines.
fn assert_clean(log: &Path, what: &str) {
    let text = std::fs::read_to_string(log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    assert!(text.contains("ERROR SUMMARY: 0 errors from 0 contexts"), "{what}:\n{text}");
    assert!(
        text.contains("All heap blocks were freed -- no leaks are possible")
            || text.contains("definitely lost: 0 bytes in 0 blocks"),
        "{what}: memory definitely lost:\n{text}"
    );
}

#[test]
fn the_c_client_runs_clean_under_valgrind() {
    if !common::have("cc") || !common::have("valgrind") {
        return;
    }
    let client = common::compile_c("examples/client.c");
    let log = common::build_dir().join("valgrind-client.log");
    let mut command = valgrind(&log);
    command.arg(client).args(["--calls", "50"]);
    command.arg(common::peer_exe()).args(["--role", "server", "--handler", "echo"]);
    let output = common::run(command, Duration::from_secs(300), "valgrind client.c");
    output.assert_success("client.c under valgrind");
    assert_clean(&log, "client.c");
}

#[test]
fn the_c_server_runs_clean_under_valgrind_over_pipes_and_shared_memory() {
    if !common::have("cc") || !common::have("valgrind") {
        return;
    }
    let server = common::compile_c("examples/server.c");
    for transport in [TransportKind::Pipe, TransportKind::ShmRing] {
        let log = common::build_dir().join(format!("valgrind-server-{transport}.log"));
        let mut command = valgrind(&log);
        command.arg(&server).args(["--transport", transport.name()]);
        // Spawned without a Peer owning the child, so that the test (not the close grace of
        // 500 ms) decides how long valgrind may take to write its report after BYE.
        let options =
            Options { transport, timeout: Some(Duration::from_secs(60)), ..Options::default() };
        let (link, mut child) = spawn_connected(command, &Spawn::from_options(&options)).unwrap();
        let mut peer = Peer::connect(link, options).unwrap();
        let state: Vec<f64> = (0..500).map(|i| f64::from(i).sqrt()).collect();
        let mut reply = vec![0.0; 500];
        for _ in 0..50 {
            peer.call_f64(&state, &mut reply).unwrap();
            assert_eq!(reply, state);
        }
        let edges: Vec<f64> =
            peerpipe::codec::F64_EDGE_BITS.iter().map(|&b| f64::from_bits(b)).collect();
        let mut echoed = vec![0.0; edges.len()];
        peer.call_f64(&edges, &mut echoed).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&echoed), bits(&edges), "{transport}");
        peer.close().unwrap();
        let status =
            common::wait_or_kill(&mut child, Duration::from_secs(120), "server.c under valgrind");
        assert!(status.success(), "server.c under valgrind over {transport} ended {status}");
        assert_clean(&log, &format!("server.c over {transport}"));
    }
}

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

#[test]
fn the_c_parts_clients_run_clean_under_valgrind() {
    if !common::have("cc") || !common::have("valgrind") {
        return;
    }
    // The example calling rhs and jac of the server it spawns, and every case of
    // tests/c/parts.c: refusals, other shapes, ERRORs, replies of any shape, a v1 server.
    let example = common::compile_c("examples/parts.c");
    let cases = common::compile_c("tests/c/parts.c");
    let runs = [
        ("parts-example", &example, vec!["--n".into(), "64".into(), "--steps".into(), "5".into()]),
        ("parts-cases", &cases, vec![cases.clone().into_os_string()]),
    ];
    for (name, program, args) in runs {
        let log = common::build_dir().join(format!("valgrind-{name}.log"));
        let mut command = valgrind(&log);
        command.arg(program).args(args);
        let output = common::run(command, Duration::from_secs(300), name);
        output.assert_success(&format!("{name} under valgrind"));
        assert_clean(&log, name);
    }
}

/// Starts `program ARGS` under valgrind as a server and connects to it; the test, not a
/// `Peer`, owns the child, so it decides how long valgrind may take after BYE.
fn valgrind_server(program: &Path, args: &[&str], log: &Path) -> (Peer, std::process::Child) {
    let mut command = valgrind(log);
    command.arg(program).args(args);
    let options = Options { timeout: Some(Duration::from_secs(60)), ..Options::default() };
    let (link, child) = spawn_connected(command, &Spawn::from_options(&options)).unwrap();
    (Peer::connect(link, options).unwrap(), child)
}

fn close_clean(peer: Peer, mut child: std::process::Child, log: &Path, what: &str) {
    peer.close().unwrap();
    let status = common::wait_or_kill(&mut child, Duration::from_secs(120), what);
    assert!(status.success(), "{what} under valgrind ended {status}");
    assert_clean(log, what);
}

#[test]
fn the_c_functions_servers_run_clean_under_valgrind() {
    if !common::have("cc") || !common::have("valgrind") {
        return;
    }
    use peerpipe::parts::{Part, PartMut};
    use peerpipe::peer::PartsReply;

    let example = common::compile_c("examples/parts.c");
    let log = common::build_dir().join("valgrind-parts-server.log");
    let (mut peer, child) = valgrind_server(&example, &["serve"], &log);
    let y: Vec<f64> = (0..100).map(|i| f64::from(i) * 0.25).collect();
    let (t, p) = ([0.5], [0.5, 8.0, 0.75, -0.125, 1.0, 0.01, -0.02, 0.03]);
    let inputs = [Part::f64(&t), Part::f64(&y), Part::f64(&p)];
    let (mut dy, mut jac) = (vec![0.0; 100], vec![0.0; 100 * 100]);
    for _ in 0..20 {
        peer.call_parts("rhs", &inputs, &mut [PartMut::f64(&mut dy)]).unwrap();
        let jac_out = PartMut::f64(&mut jac).matrix(100).unwrap();
        peer.call_parts("jac", &inputs, &mut [jac_out]).unwrap();
    }
    let err = peer.call_parts("rhs", &inputs[..2], &mut [PartMut::f64(&mut dy)]).unwrap_err();
    assert!(err.is_recoverable(), "{err}");
    close_clean(peer, child, &log, "parts.c serve");

    // Every function of the cases server, those whose reply is an ERROR included.
    let cases = common::compile_c("tests/c/parts.c");
    let log = common::build_dir().join("valgrind-parts-cases-server.log");
    let (mut peer, child) = valgrind_server(&cases, &["serve"], &log);
    let (ints, bytes, floats) = ([7i64, -7], [1u8, 2, 3], [0.5f32; 5]);
    let echo = [
        Part::f64(&y).matrix(10).unwrap(),
        Part::i64(&ints),
        Part::bytes(&bytes),
        Part::f32(&floats),
    ];
    let mut reply = PartsReply::new();
    for function in ["observe", "wrong", "refuse", "code", "many", "badpart", "zerocols", "rhs2"] {
        peer.call_parts_any(function, &echo[..1], &mut reply).ok();
    }
    peer.call_parts_any("typed", &echo[1..2], &mut reply).unwrap_err();
    peer.call_parts_any("probe", &echo[..1], &mut reply).unwrap();
    for _ in 0..10 {
        peer.call_parts_any("echo", &echo, &mut reply).unwrap();
        assert_eq!(reply.parts().len(), 4);
    }
    peer.call_f64(&y, &mut dy).unwrap_err();
    close_clean(peer, child, &log, "tests/c/parts.c serve");
}

/// Environment variable naming a Python that has the `peerpipe` package installed: without
/// it the test of a C program calling a Python model is skipped (`.ci/run` sets it to its
/// venv's Python once it has built and installed the wheel, and runs that test again).
const PYTHON_VAR: &str = "PEERPIPE_PYTHON";

#[test]
fn a_c_program_calls_a_python_model_bit_for_bit_and_clean_under_valgrind() {
    if !common::have("cc") || !common::have("valgrind") {
        return;
    }
    let Some(python) = std::env::var_os(PYTHON_VAR) else {
        println!("skipped: {PYTHON_VAR} names no Python with peerpipe installed");
        return;
    };
    let example = common::compile_c("examples/python_model.c");
    let model = common::crate_dir().join("examples/model.py");
    let log = common::build_dir().join("valgrind-python-model.log");
    let mut command = valgrind(&log);
    command.arg(&example).arg(&python).arg(&model);
    let output = common::run(command, Duration::from_secs(300), "python_model.c");
    let stdout = &output.assert_success("python_model.c").stdout;
    assert!(stdout.contains("bit for bit the local solve"), "{stdout}");
    for line in ["first call ", "second call ", "median call "] {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
    assert_clean(&log, "python_model.c");

    // A Python that is not there: the spawn's error names it, and the program says so.
    let missing = common::build_dir().join("no-such-venv/bin/python");
    let mut command = std::process::Command::new(&example);
    command.arg(&missing).arg(&model);
    let output = common::run(command, Duration::from_secs(60), "python_model.c, no Python");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stderr.contains(&*missing.to_string_lossy()), "{}", output.stderr);
}

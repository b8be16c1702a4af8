//! The C server example (`pp_serve_stdio_*`): measured by `peer --spawn`, spoken to by the C
//! client over every transport and by the Rust client, naming its handler in HELLO.

mod common;

use std::process::Command;
use std::time::Duration;

use peerpipe::{Error, Options, Peer, TransportKind};

#[test]
fn the_c_client_and_the_c_server_echo_both_dtypes_bit_exact_over_every_transport() {
    if !common::have("cc") {
        return;
    }
    let client = common::compile_c("examples/client.c");
    let server = common::compile_c("examples/server.c");
    for transport in ["pipe", "shm-sem", "shm-ring", "tcp"] {
        for dtype in ["f64", "f32"] {
            let mut command = Command::new(&client);
            command.args(["--transport", transport, "--dtype", dtype, "--calls", "100"]);
            command.arg(&server).args(["--transport", transport, "--dtype", dtype]);
            let output = common::run(command, Duration::from_secs(60), "client.c + server.c");
            let what = format!("client.c + server.c, {dtype} over {transport}");
            output.assert_success(&what);
            let line = format!("{dtype} edge values: 10 bit-exact");
            assert!(output.stdout.lines().any(|l| l == line), "{what}:\n{}", output.stdout);
        }
    }
}

#[test]
fn peer_spawn_measures_the_c_server_and_its_hello_names_the_handler() {
    if !common::have("cc") {
        return;
    }
    let server = common::compile_c("examples/server.c");
    let json = common::build_dir().join("c_server_report.json");
    let mut command = Command::new(common::peer_exe());
    command.arg("--spawn").arg(&server);
    command.args(["--sizes", "500", "--dtype", "f64", "--iters", "200", "--wait", "hybrid"]);
    command.args(["--path", "zero-copy", "--json"]).arg(&json);
    common::run(command, Duration::from_secs(120), "peer --spawn server.c").assert_success("peer");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = report["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["handler"], "c-f64");
    assert_eq!(rows[0]["elements"], 500);
}

#[test]
fn a_rust_client_gets_error_for_the_wrong_dtype_and_the_conversation_goes_on() {
    if !common::have("cc") {
        return;
    }
    let server = common::compile_c("examples/server.c");
    for transport in [TransportKind::Pipe, TransportKind::ShmRing] {
        let mut command = Command::new(&server);
        command.args(["--name", "my-echo", "--transport", transport.name()]);
        let options = Options { transport, ..Options::default() };
        let mut peer = Peer::spawn(command, options).unwrap();
        assert_eq!(peer.server_hello().handler.as_deref(), Some("my-echo"));
        let mut f32_reply = [0.0f32; 2];
        match peer
            .call(peerpipe::Values::F32(&[1.0, 2.0]), peerpipe::ValuesMut::F32(&mut f32_reply))
        {
            Err(Error::Remote { seq: 1, message }) => {
                assert_eq!(message, "wrong dtype: expected f64, found f32")
            }
            other => panic!("{transport}: expected an ERROR reply, got {other:?}"),
        }
        let state: Vec<f64> = (0..500).map(|i| f64::from(i) * -0.25).collect();
        let mut reply = vec![0.0; 500];
        peer.call_f64(&state, &mut reply).unwrap();
        assert_eq!(reply, state, "{transport}");
        let status = peer.close().unwrap().expect("a spawned server has a status");
        assert!(status.success(), "{transport}: server ended {status}");
    }
}

#[test]
fn a_c_server_told_the_wrong_transport_exits_2_naming_what_it_found() {
    if !common::have("cc") {
        return;
    }
    let server = common::compile_c("examples/server.c");
    let mut command = Command::new(&server);
    command.args(["--transport", "shm-ring"]); // but spawned over pipes
    let err = Peer::spawn(command, Options::default()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::PeerExited { .. }), "{text}");
    assert!(text.contains("exited with status 2"), "{text}");
}

#[test]
fn a_c_server_told_no_transport_serves_the_one_the_client_chose() {
    if !common::have("cc") {
        return;
    }
    let server = common::compile_c("examples/server.c");
    for transport in [TransportKind::Pipe, TransportKind::ShmSem, TransportKind::ShmRing] {
        let options = Options { transport, ..Options::default() };
        let mut peer = Peer::spawn(Command::new(&server), options).unwrap();
        let state: Vec<f64> = (0..64).map(|i| f64::from(i) * 0.5).collect();
        let mut reply = vec![0.0; 64];
        peer.call_f64(&state, &mut reply).unwrap();
        assert_eq!(reply, state, "{transport}");
        let status = peer.close().unwrap().expect("a spawned server has a status");
        assert!(status.success(), "{transport}: server ended {status}");
    }
}

//! The C client example against `peer --role server`: bit-exact echoes of every awkward
//! value in both dtypes over every transport, linked shared and static.

mod common;

use std::process::Command;
use std::time::Duration;

const TRANSPORTS: [&str; 4] = ["pipe", "shm-sem", "shm-ring", "tcp"];

fn assert_echoed_everything(output: &common::Output, what: &str) {
    output.assert_success(what);
    for line in ["f64 edge values: 10 bit-exact", "f32 edge values: 10 bit-exact", "ok"] {
        assert!(
            output.stdout.lines().any(|l| l == line),
            "{what}: no `{line}` in\n{}",
            output.stdout
        );
    }
    assert!(output.stdout.contains("calls of 500 f64: round trip p50"), "{}", output.stdout);
}

#[test]
fn the_c_client_echoes_edge_values_bit_exact_with_peer_server_over_every_transport() {
    if !common::have("cc") {
        return;
    }
    let client = common::compile_c("examples/client.c");
    let peer = common::peer_exe();
    for transport in TRANSPORTS {
        let mut command = Command::new(&client);
        command.args(["--transport", transport, "--calls", "200"]).arg(&peer);
        command.args(["--role", "server", "--handler", "echo", "--transport", transport]);
        let output = common::run(command, Duration::from_secs(60), "client.c");
        assert_echoed_everything(&output, &format!("client.c over {transport}"));
    }
}

#[test]
fn a_server_told_no_transport_serves_the_one_the_c_client_chose() {
    if !common::have("cc") {
        return;
    }
    let client = common::compile_c("examples/client.c");
    for transport in ["pipe", "shm-sem", "shm-ring"] {
        let mut command = Command::new(&client);
        command.args(["--transport", transport, "--calls", "20"]).arg(common::peer_exe());
        command.args(["--role", "server", "--handler", "echo"]);
        let output = common::run(command, Duration::from_secs(60), "client.c");
        assert_echoed_everything(&output, &format!("client.c over {transport}, server untold"));
    }
}

#[test]
fn the_c_client_linked_statically_with_the_documented_libraries_works() {
    if !common::have("cc") {
        return;
    }
    let lib = common::lib_dir();
    let client = common::compile("examples/client.c#static", "cc", |command, out| {
        command.args(["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Werror", "-O1"]);
        command.arg("-I").arg(common::include_dir());
        command.arg(common::crate_dir().join("examples/client.c"));
        command.arg(lib.join("libpeerpipe.a"));
        // What `cargo rustc -p peerpipe-capi -- --print native-static-libs` lists (docs/USAGE.md).
        command.args(["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"]);
        command.arg("-o").arg(out);
    });
    let mut command = Command::new(client);
    command.args(["--calls", "50"]).arg(common::peer_exe()).args(["--role", "server"]);
    let output = common::run(command, Duration::from_secs(60), "static client.c");
    assert_echoed_everything(&output, "client.c linked with libpeerpipe.a");
}

//! The Fortran client (`examples/client.f90`, iso_c_binding) echoes the awkward values bit for
//! bit in real64 and real32 through `peer --role server`.

mod common;

use std::process::Command;
use std::time::Duration;

#[test]
fn the_fortran_client_echoes_edge_values_bit_exact_in_both_kinds() {
    if !common::have("gfortran") {
        return;
    }
    let client = common::compile_fortran("examples/client.f90");
    let mut command = Command::new(client);
    command.arg(common::peer_exe()).args(["--role", "server", "--handler", "echo"]);
    let output = common::run(command, Duration::from_secs(60), "client.f90");
    output.assert_success("client.f90");
    assert_eq!(
        output.stdout.lines().collect::<Vec<_>>(),
        ["f64 edge values: 10 bit-exact", "f32 edge values: 10 bit-exact", "ok"]
    );
}

#[test]
fn the_fortran_client_reports_a_missing_program_with_the_rust_message() {
    if !common::have("gfortran") {
        return;
    }
    let client = common::compile_fortran("examples/client.f90");
    let mut command = Command::new(client);
    command.arg("/nonexistent/peerpipe-server");
    let output = common::run(command, Duration::from_secs(60), "client.f90");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(
        output.stderr.contains(
            "pp_spawn: -10: cannot start \"/nonexistent/peerpipe-server\": No such file or \
             directory"
        ),
        "{}",
        output.stderr
    );
}

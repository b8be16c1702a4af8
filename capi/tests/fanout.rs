//! A fan-out from C (`tests/c/fanout.c`): three servers called together, every reply bit for
//! bit; bad arguments refused with `PP_EINVAL` before anything is sent, the fan-out usable
//! after; a server that dies is its own `PP_EEXITED` in `results`, named by `pp_last_error`,
//! while the other replies stand; nothing is left behind.

mod common;

use std::process::Command;
use std::time::Duration;

#[test]
fn c_calls_three_servers_together_and_a_dead_one_is_named_while_the_others_reply() {
    if !common::have("cc") || !common::have("timeout") {
        return;
    }
    let program = common::compile_c("tests/c/fanout.c");
    let mut command = Command::new(&program);
    command.arg(common::peer_exe());
    let output = common::run(command, Duration::from_secs(60), "fanout.c");
    output.assert_success("fanout.c");
    let out = &output.stdout;
    let line = |label: &str| -> &str {
        out.lines()
            .find(|l| l.starts_with(&format!("{label} ")))
            .unwrap_or_else(|| panic!("no {label:?} line in:\n{out}"))
    };
    assert_eq!(line("no-servers"), "no-servers PP_EINVAL null-out yes");
    assert_eq!(line("spawn"), "spawn PP_OK 3");
    assert_eq!(line("gather"), "gather PP_OK results 0 0 0 bit-for-bit yes");
    let null_in = line("null-in");
    assert!(null_in.starts_with("null-in PP_EINVAL invalid argument in: is NULL"), "{null_in}");
    assert_eq!(line("overlap"), "overlap PP_EINVAL invalid argument out[0]: overlaps out[1]");
    assert_eq!(line("again"), "again PP_OK");
    assert_eq!(
        line("after-kill"),
        "after-kill PP_EEXITED results PP_OK PP_OK PP_EEXITED others-bit-for-bit yes"
    );
    let error = line("error");
    assert!(error.starts_with("error server 2 (`timeout -s KILL 2 "), "{error}");
    assert!(error.contains("killed by signal 9") || error.contains("status 137"), "{error}");
    assert_eq!(line("close"), "close PP_OK");
    assert_eq!(line("close-null"), "close-null PP_OK");
}

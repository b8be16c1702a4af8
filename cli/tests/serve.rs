//! `peer serve` and its other spelling, `peer --role server`: one server with its own flags,
//! and a report whose help holds none of them.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::process::{Command, Output};

use common::{Watchdog, peer_exe, secs};
use peerpipe::{Options, Peer};

/// Flags only a server takes.
const SERVER_ONLY: [&str; 4] = ["--listen", "--raw-echo", "--server-sleep", "--forcing"];

/// Flags only the report takes.
const REPORT_ONLY: [&str; 8] =
    ["--sizes", "--dtype", "--pin", "--rounds", "--json", "--spawn", "--budget", "--quick"];

fn peer(args: &[&str]) -> Output {
    Command::new(peer_exe()).args(args).output().expect("run peer")
}

fn said(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

/// The long flags a help text lists, each at the start of its line.
fn flags_of(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|line| line.trim_start().strip_prefix("--"))
        .map(|rest| format!("--{}", rest.split([' ', '<']).next().unwrap_or_default()))
        .collect()
}

#[test]
fn peer_help_lists_only_the_reports_flags() {
    for args in [&["--help"][..], &["--role", "client", "--help"]] {
        let out = peer(args);
        assert!(out.status.success(), "{}", said(&out));
        let flags = flags_of(&said(&out));
        for flag in SERVER_ONLY.iter().chain(&["--role"]) {
            assert!(!flags.iter().any(|f| f == flag), "{flag} in {args:?}: {flags:?}");
        }
        for flag in REPORT_ONLY {
            assert!(flags.iter().any(|f| f == flag), "{flag} missing from {args:?}: {flags:?}");
        }
        assert!(said(&out).contains("  serve "), "the subcommand is listed: {}", said(&out));
    }
}

#[test]
fn peer_serve_help_lists_only_the_servers_flags() {
    for args in [&["serve", "--help"][..], &["--role", "server", "--help"]] {
        let out = peer(args);
        assert!(out.status.success(), "{}", said(&out));
        let flags = flags_of(&said(&out));
        for flag in SERVER_ONLY.iter().chain(&["--handler", "--wait", "--transport", "--timeout"]) {
            assert!(flags.iter().any(|f| f == flag), "{flag} missing from {args:?}: {flags:?}");
        }
        for flag in REPORT_ONLY {
            assert!(!flags.iter().any(|f| f == flag), "{flag} in {args:?}: {flags:?}");
        }
    }
    // The version, as `peer --role server --version` has always printed it.
    let out = peer(&["--role", "server", "--version"]);
    assert!(out.status.success() && said(&out).contains(env!("CARGO_PKG_VERSION")), "{out:?}");
}

#[test]
fn both_spellings_serve_the_same_handler() {
    let exe = peer_exe();
    let spellings: [&[&str]; 4] = [
        &[exe, "serve", "--handler", "echo"],
        &[exe, "--role", "server", "--handler", "echo"],
        &[exe, "--handler", "echo", "--role", "server"],
        &[exe, "--role=server"],
    ];
    for argv in spellings {
        let mut peer = Peer::spawn_argv(argv, Options::default()).expect("spawn the server");
        let sent = [1.5, -0.0, f64::MAX, 3.25];
        let mut reply = [0.0; 4];
        peer.call_f64(&sent, &mut reply).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        assert_eq!(sent.map(f64::to_bits), reply.map(f64::to_bits), "{argv:?}");
        peer.close().unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    }
}

#[test]
fn a_flag_of_the_other_command_is_refused_naming_the_command_it_belongs_to() {
    let cases: [(&[&str], &str); 5] = [
        (&["--raw-echo", "8"], "invalid --raw-echo: applies to a server (`peer serve`"),
        (&["--listen=127.0.0.1"], "invalid --listen: applies to a server"),
        (&["serve", "--sizes", "8"], "invalid --sizes: applies to the report (`peer`)"),
        (&["--role", "server", "--rounds", "6"], "invalid --rounds: applies to the report"),
        (&["serve", "--wait", "spin,block"], "--wait"),
    ];
    for (args, fragment) in cases {
        let out = peer(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", said(&out));
        assert!(said(&out).contains(fragment), "{args:?}: {}", said(&out));
    }
}

#[test]
fn a_role_other_than_client_or_server_is_refused() {
    let out = peer(&["--role", "observer"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(said(&out).contains("invalid --role: expected client or server, found \"observer\""));
    let out = peer(&["--sizes", "8", "--role"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(said(&out).contains("--role needs a value: client or server"), "{}", said(&out));
}

#[test]
fn a_spawn_command_that_starts_peer_serve_carries_the_floors_too() {
    let _watchdog = Watchdog::new(secs(120));
    let dir = std::env::temp_dir().join(format!("peerpipe-serve-route-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let json = dir.join("run.json");
    let spawn = format!("{} serve", peer_exe());
    let out = peer(
        &[
            &["--spawn", &spawn, "--sizes", "8", "--dtype", "f64", "--path", "codec"][..],
            &["--wait", "block", "--duration", "4ms", "--warmup", "1ms", "--rounds", "2"],
            &["--generations", "1", "--json", json.to_str().unwrap()],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let report = peerpipe_cli::report::export::read_json(&json).expect("the JSON reads back");
    assert!(!report.rows.is_empty(), "{}", said(&out));
    for floor in &report.baseline {
        let route = format!("{spawn} --raw-echo {}", floor.bytes);
        assert_eq!(floor.route.as_deref(), Some(route.as_str()), "{}", said(&out));
    }
    std::fs::remove_dir_all(dir).ok();
}

//! `peer soak` as users run it, and the soak's accounting: every request ends verified,
//! corrupted, reordered or lost, and a reply that differs in a single bit is corrupted.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use common::{
    Watchdog, child_processes, misbehaving_command, peer_exe, secs, serialize, wait_or_kill,
};
use peerpipe::codec::Values;
use peerpipe::parts::PartsOut;
use peerpipe::server::{Handler, Request, Response, ServeOptions, serve};
use peerpipe::transport::{Transport, Wait};
use peerpipe::{Error, Options, Peer};
use peerpipe_cli::soak::{self, Client, Mismatch, verify};

/// Tests that count or start child processes take this lock (nix's `FORK_MTX`).
static FORK_LOCK: Mutex<()> = Mutex::new(());

/// The re-executed test binary plays a misbehaving server; see `common::misbehave`.
#[test]
fn misbehaving_server_entry() {
    common::misbehaving_server_entry();
}

/// Runs `peer ARGS`, returning its exit status, stdout and stderr; at most `limit`.
fn run_peer(args: &[&str], limit: Duration) -> (ExitStatus, String, String) {
    let mut child = Command::new(peer_exe())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn peer");
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let out = common::read_on_thread(stdout);
    let err = common::read_on_thread(stderr);
    let status = wait_or_kill(&mut child, limit, &format!("peer {}", args.join(" ")));
    (status, out.join().unwrap(), err.join().unwrap())
}

/// The number after `label` in `text`, e.g. `requests` in a `… 16249 requests …` line.
fn number_before(text: &str, label: &str) -> u64 {
    let at = text.find(label).unwrap_or_else(|| panic!("no {label:?} in:\n{text}"));
    let digits: String = text[..at]
        .trim_end()
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().unwrap_or_else(|_| panic!("no number before {label:?} in:\n{text}"))
}

#[test]
fn peer_soak_for_3s_with_2_pairs_verifies_everything_and_exits_0() {
    soak_for_3s_with_2_pairs("pipe");
}

#[test]
fn peer_soak_over_shm_sem_verifies_everything_and_exits_0() {
    soak_for_3s_with_2_pairs("shm-sem");
}

#[test]
fn peer_soak_over_shm_ring_verifies_everything_and_exits_0() {
    soak_for_3s_with_2_pairs("shm-ring");
}

fn soak_for_3s_with_2_pairs(transport: &str) {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(40));
    let started = Instant::now();
    let args = [
        "soak",
        "--duration",
        "3s",
        "--peers",
        "2",
        "--max-elements",
        "65536",
        "--transport",
        transport,
    ];
    let (status, stdout, stderr) = run_peer(&args, secs(30));
    let context = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(status.code(), Some(0), "{context}");
    assert!(stdout.contains("seed "), "the seed is printed: {context}");
    assert!(
        stdout.contains("integrity: lost 0, reordered 0, corrupted 0, errors 0"),
        "zero counts: {context}"
    );
    assert!(stdout.contains("verdict: PASS"), "{context}");
    assert!(!stderr.contains("peer: error"), "{context}");
    let requests = number_before(&stdout, " requests +");
    let replies = number_before(&stdout, " replies;");
    assert!(requests > 100, "a 3 s soak exchanges more than 100 requests: {context}");
    assert_eq!(requests, replies, "{context}");
    let sent = number_before(&stdout, " payload bytes sent");
    assert_eq!(number_before(&stdout, " received ("), sent, "echoes move as much back: {context}");
    // Both handlers, both kinds of batch, every dtype.
    for fragment in ["echo ", "echo-raw", " single and ", "f64-as-f32 ", "bytes "] {
        assert!(stdout.contains(fragment), "{fragment:?} missing: {context}");
    }
    assert!(number_before(&stdout, " pipelined batches (depth") > 0, "{context}");
    // One row per process, with equal descriptor counts.
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("peer soak (") || l.starts_with("server "))
        .collect();
    let usage_rows: Vec<&&str> = rows.iter().filter(|l| l.contains("MiB")).collect();
    assert_eq!(usage_rows.len(), 3, "this process and two servers: {context}");
    for row in usage_rows {
        let cells: Vec<&str> = row.split_whitespace().collect();
        let (fds_start, fds_end) = (cells[cells.len() - 2], cells[cells.len() - 1]);
        assert_eq!(fds_start, fds_end, "descriptors flat in {row:?}");
    }
    assert!(stdout.contains(&format!(" over {transport} ")), "{context}");
    if transport != "pipe" {
        assert!(stdout.contains(&format!("--transport {transport})")), "replayable: {context}");
    }
    eprintln!("peer soak --duration 3s over {transport} took {:?}", started.elapsed());
}

/// `--spawn` soaks a server of another implementation: here `peer` itself, started from a
/// shell line with its handler named, so the line is what runs, and the replay names it.
#[test]
fn peer_soak_with_spawn_runs_that_command_for_every_pair_and_names_it() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(40));
    let line = format!("{} --role server --handler echo-raw", peer_exe());
    let args =
        ["soak", "--duration", "1s", "--peers", "2", "--max-elements", "4096", "--spawn", &line];
    let (status, stdout, stderr) = run_peer(&args, secs(30));
    let context = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(status.code(), Some(0), "{context}");
    assert!(stdout.contains(&format!("servers: {line} (one per pair)")), "{context}");
    assert!(stdout.contains(&format!("--spawn {line:?}")), "replayable: {context}");
    assert!(stdout.contains("verdict: PASS"), "{context}");
    let spawned_rows =
        stdout.lines().filter(|l| l.starts_with("server ") && l.contains("(spawned)"));
    assert_eq!(spawned_rows.count(), 2, "both servers are the spawned command: {context}");
}

#[test]
fn peer_soak_refuses_an_unknown_transport_naming_the_known_ones() {
    let _lock = serialize(&FORK_LOCK);
    let (status, stdout, stderr) = run_peer(&["soak", "--transport", "shm"], secs(10));
    assert_eq!(status.code(), Some(2), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stderr.contains("expected pipe, shm-sem, shm-ring or tcp"), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
}

#[test]
fn peer_soak_refuses_more_elements_than_a_frame_may_hold() {
    let _lock = serialize(&FORK_LOCK);
    let (status, _, stderr) = run_peer(&["soak", "--max-elements", "100000000"], secs(10));
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("peer: error: invalid max elements:"), "{stderr}");
    assert!(stderr.contains("max_frame_bytes"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// The verifier
// ---------------------------------------------------------------------------------------------

/// `values` with bit `bit` of element `at` flipped.
fn flip64(values: &[f64], at: usize, bit: u32) -> Vec<f64> {
    let mut out = values.to_vec();
    out[at] = f64::from_bits(out[at].to_bits() ^ (1 << bit));
    out
}

#[test]
fn the_verifier_finds_one_flipped_bit_in_any_dtype_and_names_the_element() {
    let sent = common::f64_edges();
    assert_eq!(verify(Values::F64(&sent), Values::F64(&sent)), None);
    for at in 0..sent.len() {
        for bit in [0, 51, 63] {
            let reply = flip64(&sent, at, bit);
            match verify(Values::F64(&sent), Values::F64(&reply)) {
                Some(Mismatch::Bits { element, expected, found, differing: 1 }) => {
                    assert_eq!(element, at);
                    assert_eq!(expected, sent[at].to_bits());
                    assert_eq!(found, reply[at].to_bits());
                }
                other => panic!("element {at} bit {bit}: {other:?}"),
            }
        }
    }

    let sent32 = common::f32_edges();
    let mut reply32 = sent32.clone();
    reply32[13] = f32::from_bits(reply32[13].to_bits() | (1 << 22)); // signalling NaN quietened
    assert!(matches!(
        verify(Values::F32(&sent32), Values::F32(&reply32)),
        Some(Mismatch::Bits { element: 13, differing: 1, .. })
    ));

    let bytes: Vec<u8> = (0..=255).collect();
    let mut reply_bytes = bytes.clone();
    reply_bytes[200] ^= 0x10;
    assert!(matches!(
        verify(Values::Bytes(&bytes), Values::Bytes(&reply_bytes)),
        Some(Mismatch::Bits { element: 200, expected: 200, found: 216, differing: 1 })
    ));
}

#[test]
fn the_verifier_checks_narrowing_against_x_as_f32_as_f64_and_refuses_the_unnarrowed_values() {
    let sent = common::f64_edges();
    let narrowed: Vec<f64> = sent.iter().map(|&x| x as f32 as f64).collect();
    assert_eq!(verify(Values::F64AsF32(&sent), Values::F64(&narrowed)), None);
    // 1/3 is not exact in f32: the unnarrowed value is a corruption of a narrowed reply.
    let third = [1.0 / 3.0];
    assert!(verify(Values::F64AsF32(&third), Values::F64(&third)).is_some());
    assert!(verify(Values::F64AsF32(&sent), Values::F64(&flip64(&narrowed, 4, 40))).is_some());
}

#[test]
fn the_verifier_reports_wrong_lengths_and_wrong_types() {
    let sent = [1.0, 2.0, 3.0];
    assert_eq!(
        verify(Values::F64(&sent), Values::F64(&sent[..2])),
        Some(Mismatch::Length { expected: 3, found: 2 })
    );
    assert_eq!(
        verify(Values::F64(&sent), Values::F32(&[1.0, 2.0, 3.0])),
        Some(Mismatch::Shape { sent: "f64", reply: "f32" })
    );
    let text = verify(Values::F64(&sent), Values::F64(&[1.0, 2.5, 3.5])).unwrap().to_string();
    assert!(text.contains("element 1") && text.contains("2 elements differ"), "{text}");
}

/// Echoes every request with one bit flipped in the middle of a non-empty payload.
#[derive(Default)]
struct FlipOneBit {
    reply: Vec<u8>,
}

impl Handler for FlipOneBit {
    fn name(&self) -> &str {
        "flip-one-bit"
    }

    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        _: &mut PartsOut,
    ) -> Result<Response<'a>, String> {
        let array = request.array()?;
        self.reply.clear();
        self.reply.extend_from_slice(array.payload);
        if let Some(middle) = self.reply.len().checked_sub(1).map(|last| last / 2) {
            self.reply[middle] ^= 0x04;
        }
        Ok(Response::Wire { dtype: array.dtype, count: array.count, payload: &self.reply })
    }
}

#[test]
fn a_server_that_flips_one_bit_is_counted_as_corrupted_and_nothing_else() {
    let _watchdog = Watchdog::new(secs(30));
    let (client_end, mut server_end) = Transport::pipe_pair(Wait::Block).expect("pipes");
    let server = thread::spawn(move || {
        serve(&mut server_end, &mut FlipOneBit::default(), &ServeOptions::default())
    });
    let peer = Peer::connect(client_end, Options::default()).expect("connect");
    let mut client = Client::new(peer, 11, 4096);
    client.set_label("flipper");
    client.run_until(Instant::now() + Duration::from_millis(300)).expect("the exchange goes on");
    let stats = client.stats().clone();
    client.close().expect("close");
    server.join().unwrap().expect("serve");

    assert!(stats.requests > 10, "{stats:?}");
    assert!(stats.corrupted > 0, "{stats:?}");
    assert_eq!((stats.lost, stats.reordered), (0, 0), "{stats:?}");
    assert_eq!(stats.replies, stats.requests);
    // Only empty requests can come back intact.
    let empty_ok = stats.verified;
    assert_eq!(stats.corrupted + empty_ok, stats.requests, "{stats:?}");
    assert_eq!(stats.unaccounted(), 0);
    assert!(stats.errors.is_empty(), "{:?}", stats.errors);
    assert!(!stats.is_clean());
    let first = &stats.mismatches[0];
    assert!(first.starts_with("flipper: seq "), "{first}");
    assert!(first.contains("element ") && first.contains("(1 elements differ)"), "{first}");
}

#[test]
fn an_echo_on_a_thread_soaks_clean() {
    let _watchdog = Watchdog::new(secs(30));
    let (client_end, mut server_end) = Transport::pipe_pair(Wait::Block).expect("pipes");
    let server = thread::spawn(move || {
        let mut echo = peerpipe::handlers::Echo::default();
        serve(&mut server_end, &mut echo, &ServeOptions::default())
    });
    let peer = Peer::connect(client_end, Options::default()).expect("connect");
    let mut client = Client::new(peer, soak::seed_from_clock(), 20_000);
    client.warm_up().expect("warm up");
    client.run_until(Instant::now() + Duration::from_millis(300)).expect("exchange");
    let stats = client.stats().clone();
    client.close().expect("close");
    server.join().unwrap().expect("serve");
    assert!(stats.is_clean(), "{stats:?}");
    assert_eq!(stats.bytes_received, stats.bytes_sent, "{stats:?}");
    assert!(stats.pipelined_batches > 0 && stats.single_batches > 0, "{stats:?}");
    assert!(stats.by_kind.iter().all(|k| k.requests > 0), "{stats:?}");
    assert_eq!(stats.largest_elements, 20_000);
}

// ---------------------------------------------------------------------------------------------
// Accounting against misbehaving servers
// ---------------------------------------------------------------------------------------------

fn exchange_with_misbehaving(mode: &str) -> (Error, soak::Stats) {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(20));
    assert_eq!(child_processes(), [], "children before the test");
    let options = Options { timeout: Some(secs(5)), ..Options::default() };
    let peer = Peer::spawn(misbehaving_command(mode, None), options).expect("spawn");
    let mut client = Client::new(peer, soak::seed_from_clock(), 1000);
    let error = client.exchange().expect_err("a misbehaving server ends the exchange");
    let stats = client.into_stats();
    assert_eq!(child_processes(), [], "{mode}: no child left after {error}");
    assert_eq!(stats.unaccounted(), 0, "{stats:?}");
    assert_eq!(stats.errors.len(), 1, "{stats:?}");
    assert_eq!(stats.corrupted + stats.verified, 0, "{stats:?}");
    (error, stats)
}

#[test]
fn a_reply_with_the_wrong_seq_is_counted_as_reordered_and_the_rest_in_flight_as_lost() {
    let (error, stats) = exchange_with_misbehaving("wrong-seq");
    assert!(matches!(error, Error::SeqMismatch { .. }), "{error:?}");
    assert_eq!(stats.reordered, 1, "{stats:?}");
    assert_eq!(stats.lost, stats.requests - 1, "{stats:?}");
}

#[test]
fn requests_in_flight_when_the_server_dies_are_counted_as_lost() {
    let (error, stats) = exchange_with_misbehaving("killed");
    match &error {
        Error::PeerExited { status, .. } => assert!(status.contains("signal 9"), "{status}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(stats.reordered, 0, "{stats:?}");
    assert_eq!(stats.lost, stats.requests, "{stats:?}");
    assert!(stats.lost >= 1, "{stats:?}");
}

//! Paired benchmark of the C ABI against the Rust API, on this machine, in one run:
//!
//! 1. client: the C client (`benches/bench_client.c`, timing around `pp_call_f64`) against
//!    the Rust client (`Peer::call_f64`, timed the same way), each with its own
//!    `peer --role server --handler echo`;
//! 2. server: the Rust client against the C echo server (`examples/server.c`) and against
//!    `peer --role server --handler echo` (and `echo-raw`, which converts nothing).
//!
//! Each round runs every arm once, in a random order, for `--calls` round trips of
//! `--elements` f64 and takes each arm's median; the result is the median of the per-round
//! ratios and their min–max, so a slow spell of the machine hits both sides of a ratio.
//!
//! ```text
//! cargo build --release --workspace
//! cargo bench -p peerpipe-capi --bench c_vs_rust -- --rounds 40 --calls 300
//! ```

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Instant, SystemTime};

use peerpipe::{Options, Peer};

struct Settings {
    rounds: usize,
    calls: usize,
    elements: usize,
    warmup: usize,
}

fn parse_args() -> Settings {
    let mut settings = Settings { rounds: 40, calls: 300, elements: 500, warmup: 2000 };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> usize {
            let text = args.next().unwrap_or_else(|| panic!("{name} needs a value"));
            text.parse().unwrap_or_else(|e| panic!("{name} {text:?}: {e}"))
        };
        match arg.as_str() {
            "--rounds" => settings.rounds = value("--rounds"),
            "--calls" => settings.calls = value("--calls"),
            "--elements" => settings.elements = value("--elements"),
            "--warmup" => settings.warmup = value("--warmup"),
            "--bench" => {} // cargo bench passes it to every bench binary
            other => panic!(
                "unknown argument {other:?}; expected --rounds R --calls K --elements N --warmup W"
            ),
        }
    }
    settings
}

/// `target/release`, where cargo put this binary's `deps/`, libpeerpipe.so and `peer`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<bench>").to_path_buf()
}

fn compile(source: &str, out: &Path, lib: &Path) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new("cc")
        .args(["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-O2", "-Wall", "-Werror", "-I"])
        .arg(dir.join("include"))
        .arg(dir.join(source))
        .arg("-L")
        .arg(lib)
        .arg("-lpeerpipe")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(out)
        .status()
        .expect("run cc");
    assert!(status.success(), "cc {source} failed");
}

/// The long-lived C client, driven one batch at a time over its stdin/stdout.
struct CClient {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl CClient {
    fn spawn(exe: &Path, elements: usize, server: &[&str]) -> CClient {
        let mut child = Command::new(exe)
            .arg(elements.to_string())
            .args(server)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start bench_client");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        CClient { child, input, output }
    }

    fn p50(&mut self, calls: usize) -> f64 {
        writeln!(self.input, "{calls}").expect("write to bench_client");
        let mut line = String::new();
        self.output.read_line(&mut line).expect("read from bench_client");
        line.trim().parse().unwrap_or_else(|e| panic!("bench_client said {line:?}: {e}"))
    }

    fn finish(mut self) {
        drop(self.input);
        let status = self.child.wait().expect("wait for bench_client");
        assert!(status.success(), "bench_client ended {status}");
    }
}

/// The median round trip of `calls` calls of a Rust peer, timed around `call_f64`.
fn rust_p50(peer: &mut Peer, state: &[f64], reply: &mut [f64], calls: usize) -> f64 {
    let mut samples: Vec<u64> = (0..calls)
        .map(|_| {
            let start = Instant::now();
            peer.call_f64(state, reply).expect("call");
            start.elapsed().as_nanos() as u64
        })
        .collect();
    median(&mut samples) as f64
}

fn median<T: Copy + PartialOrd>(values: &mut [T]) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    values[values.len() / 2]
}

/// xorshift64*: a random order per round without a dependency.
struct Shuffle(u64);

impl Shuffle {
    fn order(&mut self, arms: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..arms).collect();
        for i in (1..arms).rev() {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let j = (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        order
    }
}

/// Prints the median ratio, the p10-p90 and min-max of the per-round ratios (a round in which
/// one arm's waits went to sleep in the kernel shows up as an outlier near 0.05 or 20), and
/// each arm's median p50.
fn summary(label: &str, ratios: &mut [f64], a_p50s: &mut [f64], b_p50s: &mut [f64]) {
    let mid = median(ratios); // sorts
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    println!(
        "{label}: median ratio {mid:.3} (p10 {:.3}, p90 {:.3}, min {:.3}, max {:.3}, {} rounds); \
         median p50s {:.1} us vs {:.1} us",
        at(0.1),
        at(0.9),
        at(0.0),
        at(1.0),
        ratios.len(),
        median(a_p50s) / 1e3,
        median(b_p50s) / 1e3,
    );
}

fn main() {
    let settings = parse_args();
    let dir = profile_dir();
    let peer_exe = dir.join("peer");
    assert!(
        peer_exe.is_file() && dir.join("libpeerpipe.so").is_file(),
        "{} needs peer and libpeerpipe.so: run `cargo build --release --workspace` first",
        dir.display()
    );
    let out = dir.join("capi-bench");
    std::fs::create_dir_all(&out).unwrap();
    let (bench_client, c_server) = (out.join("bench_client"), out.join("server"));
    compile("benches/bench_client.c", &bench_client, &dir);
    compile("examples/server.c", &c_server, &dir);
    let peer = peer_exe.to_str().expect("a UTF-8 path");
    let Settings { rounds, calls, elements, warmup } = settings;
    println!(
        "paired: {rounds} rounds x {calls} round trips of {elements} f64 per arm, random order \
         per round, {warmup} warm-up calls per arm; pipe, wait hybrid, pin free"
    );

    let state: Vec<f64> = (0..elements).map(|i| 0.5 * i as f64).collect();
    let mut reply = vec![0.0; elements];
    let spawn = |handler: &str| Peer::spawn_server(&peer_exe, handler, Options::default()).unwrap();
    let seed = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos();
    let mut shuffle = Shuffle(seed as u64 | 1);

    // 1. C client vs Rust client, both against `peer --role server --handler echo`.
    let mut c_client =
        CClient::spawn(&bench_client, elements, &[peer, "--role", "server", "--handler", "echo"]);
    let mut rust_client = spawn("echo");
    c_client.p50(warmup);
    rust_p50(&mut rust_client, &state, &mut reply, warmup);
    let (mut ratios, mut c_p50s, mut rust_p50s) = (vec![], vec![], vec![]);
    for _ in 0..rounds {
        let (mut c, mut r) = (0.0, 0.0);
        for arm in shuffle.order(2) {
            match arm {
                0 => c = c_client.p50(calls),
                _ => r = rust_p50(&mut rust_client, &state, &mut reply, calls),
            }
        }
        ratios.push(c / r);
        c_p50s.push(c);
        rust_p50s.push(r);
    }
    c_client.finish();
    rust_client.close().unwrap();
    summary("client  C / Rust            ", &mut ratios, &mut c_p50s, &mut rust_p50s);

    // 2. The C echo server vs the Rust echo (and echo-raw) servers, one Rust client each.
    let mut command = Command::new(&c_server);
    command.args(["--wait", "hybrid"]);
    let mut servers =
        [Peer::spawn(command, Options::default()).unwrap(), spawn("echo"), spawn("echo-raw")];
    for server in &mut servers {
        rust_p50(server, &state, &mut reply, warmup);
    }
    let mut p50s = [vec![], vec![], vec![]];
    let (mut vs_echo, mut vs_raw) = (vec![], vec![]);
    for _ in 0..rounds {
        let mut round = [0.0; 3];
        for arm in shuffle.order(3) {
            round[arm] = rust_p50(&mut servers[arm], &state, &mut reply, calls);
        }
        vs_echo.push(round[0] / round[1]);
        vs_raw.push(round[0] / round[2]);
        for (all, p50) in p50s.iter_mut().zip(round) {
            all.push(p50);
        }
    }
    for server in servers {
        server.close().unwrap();
    }
    let [c, echo, raw] = &mut p50s;
    summary("server  C echo / Rust echo    ", &mut vs_echo, c, echo);
    summary("server  C echo / Rust echo-raw", &mut vs_raw, c, raw);
}

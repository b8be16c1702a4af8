//! What a gather costs beside the machine's floor, paired: N servers that each take DUR per
//! request without holding a CPU (`peer --role server --transport tcp --server-sleep DUR`,
//! behind an optional launcher such as `srun`) answer one scatter of 500 f64 together, through
//! [`Fanout::scatter`]. In turn with blocks of those gathers, N threads of this process do the
//! same over Unix socket pairs — woken by the request, sleeping DUR (1 µs timer slack, as the
//! server's sleep), answering — which is what this machine's wake-ups and timers cost a gather
//! with no protocol, no process and no network in it.
//!
//! ```sh
//! cargo run --release --example gather -- target/release/peer [--servers 8] [--sleep 1ms] \
//!     [--rounds 10] [--gathers 50] [--wait auto] [--server-wait WAIT] \
//!     [--launcher "srun -w n{node} -N1 -n1"]
//! ```
//!
//! `--launcher` is put before each server's command line with `{server}` replaced by its
//! index and `{node}` by the index modulo 2; `--wait` is the client's wait and, unless
//! `--server-wait` says otherwise, the servers'. A round is
//! `--gathers` gathers of each kind after 10 untimed ones, the two kinds in turn (which goes
//! first alternates); its figures are their p50s. Printed: a line per round, then the median
//! and range over rounds of the gather's p50, the floor's, and their difference; one JSON
//! line ends the output. Every reply is checked bit for bit.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use peerpipe::codec::{Values, ValuesMut};
use peerpipe::fanout::Fanout;
use peerpipe::{Options, Result, TransportKind, Wait};

const VALUES: usize = 500;
const WARMUP: usize = 10;

struct Args {
    peer: String,
    servers: usize,
    sleep: Duration,
    rounds: usize,
    gathers: usize,
    wait: Wait,
    server_wait: Option<Wait>,
    launcher: String,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let peer = it.next().filter(|p| !p.starts_with("--")).ok_or("usage: gather PEER [OPTIONS]")?;
    let mut args = Args {
        peer,
        servers: 8,
        sleep: Duration::from_millis(1),
        rounds: 10,
        gathers: 50,
        wait: Wait::auto(),
        server_wait: None,
        launcher: String::new(),
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let count = |text: String| text.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--servers" => args.servers = count(value()?)?,
            "--rounds" => args.rounds = count(value()?)?,
            "--gathers" => args.gathers = count(value()?)?,
            "--sleep" => {
                args.sleep = peerpipe::units::parse_duration(&value()?)
                    .map_err(|e| format!("--sleep: {e}"))?;
            }
            "--wait" => args.wait = value()?.parse().map_err(|e| format!("--wait: {e}"))?,
            "--server-wait" => {
                args.server_wait =
                    Some(value()?.parse().map_err(|e| format!("--server-wait: {e}"))?);
            }
            "--launcher" => args.launcher = value()?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if args.servers == 0 || args.rounds == 0 || args.gathers == 0 {
        return Err("--servers, --rounds and --gathers take a number of at least 1".into());
    }
    Ok(args)
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("gather: {e}");
        std::process::exit(2);
    });
    if let Err(e) = run(&args) {
        eprintln!("gather: error: {e}");
        std::process::exit(2);
    }
}

/// N threads answering requests of `VALUES` f64 over socket pairs after a sleep of `sleep`.
struct Floor {
    ends: Vec<UnixStream>,
    threads: Vec<JoinHandle<()>>,
}

impl Floor {
    fn start(n: usize, sleep: Duration) -> Result<Floor> {
        let (mut ends, mut threads) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let (ours, mut theirs) = UnixStream::pair()?;
            threads.push(std::thread::spawn(move || {
                let _ = nix::sys::prctl::set_timerslack(1_000);
                let mut buffer = vec![0u8; VALUES * 8];
                while theirs.read_exact(&mut buffer).is_ok() {
                    std::thread::sleep(sleep);
                    if theirs.write_all(&buffer).is_err() {
                        return;
                    }
                }
            }));
            ends.push(ours);
        }
        Ok(Floor { ends, threads })
    }

    /// One gather: the request to every thread, then every reply; its length in ns.
    fn gather(&mut self, request: &[u8], replies: &mut [Vec<u8>]) -> Result<u64> {
        let started = Instant::now();
        for end in &mut self.ends {
            end.write_all(request)?;
        }
        for (end, reply) in self.ends.iter_mut().zip(replies.iter_mut()) {
            end.read_exact(reply)?;
        }
        Ok(started.elapsed().as_nanos() as u64)
    }

    fn stop(self) {
        drop(self.ends); // each thread sees its socket close
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

fn run(args: &Args) -> Result<()> {
    let lines: Vec<String> = (0..args.servers)
        .map(|i| {
            let launcher = args.launcher.replace("{server}", &i.to_string());
            let launcher = launcher.replace("{node}", &(i % 2).to_string());
            format!(
                "{launcher} {} --role server --transport tcp --server-sleep {}ns --wait {}",
                args.peer,
                args.sleep.as_nanos(),
                args.server_wait.unwrap_or(args.wait)
            )
            .trim_start()
            .to_owned()
        })
        .collect();
    let options = Options { transport: TransportKind::Tcp, wait: args.wait, ..Options::default() };
    let mut fanout = Fanout::spawn_shell(&lines, options)?;
    let mut floor = Floor::start(args.servers, args.sleep)?;
    let request: Vec<f64> = (0..VALUES).map(|i| (i as f64).sin() * 1e3).collect();
    let request_bytes: Vec<u8> = request.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut replies = vec![vec![0.0; VALUES]; args.servers];
    let mut floor_replies = vec![vec![0u8; VALUES * 8]; args.servers];
    let gather = |fanout: &mut Fanout, replies: &mut [Vec<f64>]| -> Result<u64> {
        let mut outs: Vec<ValuesMut<'_>> = replies.iter_mut().map(|r| ValuesMut::F64(r)).collect();
        let gathered = fanout.scatter(Values::F64(&request), &mut outs)?;
        let elapsed = gathered.elapsed_ns;
        gathered.into_result().map_err(|failed| failed.error)?;
        assert!(replies.iter().all(|r| *r == request), "a reply differs from the request");
        Ok(elapsed)
    };
    for _ in 0..WARMUP {
        gather(&mut fanout, &mut replies)?;
        floor.gather(&request_bytes, &mut floor_replies)?;
    }
    println!(
        "{} servers, each {:?} per request, {VALUES} f64 scattered (p50 of {} gathers, µs)",
        args.servers, args.sleep, args.gathers
    );
    println!("round  gather   floor   gather - floor");
    let (mut gathers, mut floors, mut diffs) = (Vec::new(), Vec::new(), Vec::new());
    let (mut g, mut f) = (vec![0u64; args.gathers], vec![0u64; args.gathers]);
    for round in 0..args.rounds {
        for floor_first in [round % 2 == 1, round % 2 == 0] {
            for i in 0..args.gathers {
                if floor_first {
                    f[i] = floor.gather(&request_bytes, &mut floor_replies)?;
                } else {
                    g[i] = gather(&mut fanout, &mut replies)?;
                }
            }
        }
        assert!(floor_replies.iter().all(|r| *r == request_bytes), "a floor reply differs");
        let (gp, fp) = (median(&mut g), median(&mut f));
        println!(
            "{round:5}  {:6.1}  {:6.1}  {:+7.1}",
            us(gp),
            us(fp),
            (gp as f64 - fp as f64) / 1e3
        );
        gathers.push(gp);
        floors.push(fp);
        diffs.push(gp as i64 - fp as i64);
    }
    floor.stop();
    fanout.close().map_err(|failed| failed.error)?;
    let (gm, fm) = (median(&mut gathers), median(&mut floors));
    diffs.sort_unstable();
    let dm = diffs[diffs.len() / 2];
    println!(
        "median over {} rounds [range]: gather {:.1} µs [{:.1}..{:.1}], floor {:.1} µs \
         [{:.1}..{:.1}], gather - floor {:+.1} µs [{:+.1}..{:+.1}] (wait {}, servers {})",
        args.rounds,
        us(gm),
        us(gathers[0]),
        us(gathers[gathers.len() - 1]),
        us(fm),
        us(floors[0]),
        us(floors[floors.len() - 1]),
        dm as f64 / 1e3,
        diffs[0] as f64 / 1e3,
        diffs[diffs.len() - 1] as f64 / 1e3,
        args.wait,
        args.server_wait.unwrap_or(args.wait)
    );
    println!(
        "{{\"servers\":{},\"sleep_ns\":{},\"wait\":\"{}\",\"server_wait\":\"{}\",\"rounds\":{},\"gathers\":{},\
         \"gather_p50_ns\":{gm},\"floor_p50_ns\":{fm},\"diff_ns\":{dm}}}",
        args.servers,
        args.sleep.as_nanos(),
        args.wait,
        args.server_wait.unwrap_or(args.wait),
        args.rounds,
        args.gathers
    );
    Ok(())
}

/// The median of `v` (sorts it).
fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

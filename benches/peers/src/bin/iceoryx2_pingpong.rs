//! Round-trip latency of iceoryx2 (eclipse-iceoryx/iceoryx2, 0.10) request–response, for
//! comparison with peerpipe: the client sends N `f64` as a request, the server answers with a
//! response holding the same values.
//!
//! ```sh
//! cd benches/peers
//! cargo run --release --bin iceoryx2_pingpong -- --elements 500 --wait polling
//! cargo run --release --bin iceoryx2_pingpong -- --elements 1048576 --iterations 100 --warmup 10 --wait events
//! ```
//!
//! The service is `request_response::<[f64], [f64]>()` with `initial_max_slice_len(N)` on
//! both ports (iceoryx2's slice API, as in its `request_response_dynamic_data` example). The
//! client is this process; the server is this binary re-executed with `--child SERVICE`, placed
//! on the other CPU (`--pin split`, the default, as `peer --pin split`). One round trip, timed
//! on the client: `loan_slice_uninit(N)` + `write_from_slice(values)` (the caller's array
//! copied into shared memory), `send`, wait, `pending_response.receive()`, and the response's
//! payload copied out into the caller's reply buffer. The server answers each request with
//! `active_request.loan_slice_uninit(N)` + `write_from_slice(request.payload())`: one copy, from
//! the request straight into the response (peer's `echo-raw` server copies the frame out of
//! the ring and back in: two).
//!
//! Waiting (`--wait`):
//! - `polling`: both sides spin on `receive()` (iceoryx2's own latency benchmark does this);
//!   compare with `peer --wait spin`.
//! - `events`: each side also has an event service; after sending, the sender `notify()`s,
//!   and the receiver sleeps in `listener.timed_wait` until notified, then `receive()`s (the
//!   pattern of iceoryx2's `request_response_with_events` example); compare with
//!   `peer --wait block`.
//!
//! Prints `iceoryx2 <wait>: elements=N iterations=N p50_ns=.. p99_ns=.. min_ns=..`. The server
//! exits on an empty request (sent at the end), or when its parent is gone.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use iceoryx2::prelude::*;
use peerpipe_peers::{
    Args, BoxResult, CHILD_TIMEOUT, ChildGuard, elapsed_ns, initial_values, print_result,
    same_bits, spawn_placed, update,
};

/// How long one wait for a response or a notification may last before the client checks that
/// the server is alive and its overall deadline.
const WAIT_SLICE: Duration = Duration::from_millis(100);
/// Longest a single round trip may take before the run is abandoned.
const ROUND_TRIP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Waiting {
    Polling,
    Events,
}

impl Waiting {
    fn parse(text: &str) -> BoxResult<Waiting> {
        match text {
            "polling" => Ok(Waiting::Polling),
            "events" => Ok(Waiting::Events),
            other => Err(format!("--wait {other:?}: expected polling or events").into()),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Waiting::Polling => "polling",
            Waiting::Events => "events",
        }
    }
}

/// The ports of one side.
struct Ports {
    node: Node<ipc::Service>,
    service: iceoryx2::service::port_factory::request_response::PortFactory<
        ipc::Service,
        [f64],
        (),
        [f64],
        (),
    >,
    /// Events: (notifier towards the peer, listener for the peer's notifications).
    events: Option<(
        iceoryx2::port::notifier::Notifier<ipc::Service>,
        iceoryx2::port::listener::Listener<ipc::Service>,
    )>,
}

fn open_ports(name: &str, waiting: Waiting, client: bool) -> BoxResult<Ports> {
    let node = NodeBuilder::new().create::<ipc::Service>()?;
    let rr = node.service_builder(&ServiceName::new(name)?).request_response::<[f64], [f64]>();
    let service = if client { rr.create()? } else { rr.open()? };
    let events = match waiting {
        Waiting::Polling => None,
        Waiting::Events => {
            let to_server = ServiceName::new(&format!("{name}/to-server"))?;
            let to_client = ServiceName::new(&format!("{name}/to-client"))?;
            let (mine, theirs) =
                if client { (to_client, to_server) } else { (to_server, to_client) };
            let listen = node.service_builder(&mine).event().open_or_create()?;
            let notify = node.service_builder(&theirs).event().open_or_create()?;
            Some((notify.notifier_builder().create()?, listen.listener_builder().create()?))
        }
    };
    Ok(Ports { node, service, events })
}

fn main() -> BoxResult<()> {
    set_log_level_from_env_or(LogLevel::Error);
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = Args::parse(&argv, "polling")?;
    let waiting = Waiting::parse(&args.wait)?;
    match args.rest.as_slice() {
        [flag, name] if flag == "--child" => server(name, waiting, args.elements),
        [] => client(&args, waiting),
        other => Err(format!("unknown arguments {other:?}").into()),
    }
}

fn server(name: &str, waiting: Waiting, elements: usize) -> BoxResult<()> {
    let ports = open_ports(name, waiting, false)?;
    let server = ports.service.server_builder().initial_max_slice_len(elements).create()?;
    let parent = std::os::unix::process::parent_id();
    println!("ready");
    std::io::stdout().flush()?;
    let mut idle = 0u32;
    loop {
        let Some(request) = server.receive()? else {
            idle = idle.wrapping_add(1);
            if idle.is_multiple_of(65_536) && std::os::unix::process::parent_id() != parent {
                return Err("the client is gone".into());
            }
            match &ports.events {
                Some((_, listener)) => {
                    listener.timed_wait(|_| {}, WAIT_SLICE)?;
                    if std::os::unix::process::parent_id() != parent {
                        return Err("the client is gone".into());
                    }
                }
                None => std::hint::spin_loop(),
            }
            continue;
        };
        let payload = request.payload();
        if payload.is_empty() {
            return Ok(());
        }
        let response = request.loan_slice_uninit(payload.len())?.write_from_slice(payload);
        response.send()?;
        if let Some((notifier, _)) = &ports.events {
            notifier.notify()?;
        }
    }
}

/// Reads the child's `ready` line, giving up after [`CHILD_TIMEOUT`] or when it exits.
fn await_ready(guard: &mut ChildGuard) -> BoxResult<()> {
    let stdout = guard.0.as_mut().and_then(|c| c.stdout.take()).ok_or("child has no stdout")?;
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut line = String::new();
        let _ = tx.send(BufReader::new(stdout).read_line(&mut line).map(|_| line));
    });
    let deadline = Instant::now() + CHILD_TIMEOUT;
    loop {
        match rx.recv_timeout(Duration::from_millis(10)) {
            Ok(Ok(line)) if line.trim() == "ready" => return Ok(()),
            Ok(other) => return Err(format!("child did not say ready: {other:?}").into()),
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err("reader thread died".into()),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        guard.check_alive()?;
        if Instant::now() > deadline {
            return Err("child did not start within the timeout".into());
        }
    }
}

fn client(args: &Args, waiting: Waiting) -> BoxResult<()> {
    let name = format!(
        "peerpipe-peers/iceoryx2/{}/{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos()
    );
    let ports = open_ports(&name, waiting, true)?;
    let client = ports.service.client_builder().initial_max_slice_len(args.elements).create()?;
    let mut guard = spawn_placed(args.split, || {
        let child = Command::new(std::env::current_exe()?)
            .args(["--child", &name, "--wait", waiting.name()])
            .args(["--elements", &args.elements.to_string()])
            .stdout(Stdio::piped())
            .spawn()?;
        Ok(ChildGuard(Some(child)))
    })?;
    await_ready(&mut guard)?;

    let mut values = initial_values(args.elements);
    let mut reply = vec![0.0f64; args.elements];
    let mut samples = Vec::with_capacity(args.iterations);
    for i in 0..args.warmup + args.iterations {
        update(&mut values, i);
        let start = Instant::now();
        let pending = client.loan_slice_uninit(args.elements)?.write_from_slice(&values).send()?;
        if let Some((notifier, _)) = &ports.events {
            notifier.notify()?;
        }
        let deadline = start + ROUND_TRIP_TIMEOUT;
        let mut polls = 0u32;
        let response = loop {
            if let Some(response) = pending.receive()? {
                break response;
            }
            match &ports.events {
                Some((_, listener)) => {
                    listener.timed_wait(|_| {}, WAIT_SLICE)?;
                }
                None => std::hint::spin_loop(),
            }
            polls = polls.wrapping_add(1);
            if (ports.events.is_some() || polls.is_multiple_of(65_536)) && Instant::now() > deadline
            {
                guard.check_alive()?;
                return Err(format!("round trip {i}: no response within 10 s").into());
            }
        };
        reply.copy_from_slice(response.payload());
        let ns = elapsed_ns(start);
        drop(response);
        drop(pending);
        if !same_bits(&reply, &values) {
            return Err(format!("round trip {i}: the response differs from the request").into());
        }
        if i >= args.warmup {
            samples.push(ns);
        }
    }
    // An empty request tells the server to exit.
    let stop = client.loan_slice_uninit(0)?.write_from_slice(&[]).send()?;
    if let Some((notifier, _)) = &ports.events {
        notifier.notify()?;
    }
    guard.finish()?;
    drop(stop);
    drop(ports.node);
    print_result(&format!("iceoryx2 {}", waiting.name()), args.elements, &mut samples);
    Ok(())
}

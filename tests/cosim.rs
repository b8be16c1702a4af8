//! Two models stepping together: a server [`Session`] whose loop is the user's, and the heat
//! rod example split across two processes.

mod common;

use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use peerpipe::parts::{Part, PartMut};
use peerpipe::server::{Ending, ServeOptions, Session};
use peerpipe::transport::{Transport, Wait};
use peerpipe::{Error, ErrorKind, Options, Peer};

/// A client `Peer` and a server `Session` (serving `functions`) over a pipe pair, the session
/// driven by `server` on a thread; returns the client and the thread.
fn pair<R: Send + 'static>(
    functions: &'static [&'static str],
    server: impl FnOnce(Session) -> R + Send + 'static,
) -> (Peer, thread::JoinHandle<R>) {
    let (client, served) = Transport::pipe_pair(Wait::Block).unwrap();
    let handle = thread::spawn(move || {
        let session = Session::new(served, "test", functions, ServeOptions::default()).unwrap();
        server(session)
    });
    let options = Options { timeout: Some(Duration::from_secs(10)), ..Options::default() };
    (Peer::connect(client, options).unwrap(), handle)
}

#[test]
fn a_session_answers_calls_in_its_own_loop_and_computes_after_replying() {
    let (mut peer, server) = pair(&["exchange", "state"], |mut session| {
        let mut mine = 10.0;
        let mut seen = Vec::new();
        while let Some(call) = session.recv().unwrap() {
            let theirs = call.f64(0).unwrap()[0];
            if call.function == "state" {
                session.reply(&[Part::f64(&[mine])]).unwrap();
                continue;
            }
            session.reply(&[Part::f64(&[mine])]).unwrap();
            mine += theirs; // after the reply: the client is computing meanwhile
            seen.push(theirs);
        }
        (seen, session.ending())
    });
    let mut theirs = [0.0];
    for step in 0..5 {
        peer.call_parts("exchange", &[Part::f64(&[step as f64])], &mut [PartMut::f64(&mut theirs)])
            .unwrap();
        // The server's value from before its step: 10, 10, 11, 13, 16.
        assert_eq!(theirs[0], [10.0, 10.0, 11.0, 13.0, 16.0][step]);
    }
    peer.call_parts("state", &[Part::f64(&[0.0])], &mut [PartMut::f64(&mut theirs)]).unwrap();
    assert_eq!(theirs[0], 20.0);
    peer.close().unwrap();
    let (seen, ending) = server.join().unwrap();
    assert_eq!(seen, [0.0, 1.0, 2.0, 3.0, 4.0]);
    assert_eq!(ending, Some(Ending::Bye));
}

#[test]
fn a_session_refuses_out_of_turn_answers_and_answers_what_it_does_not_serve() {
    let (mut peer, server) = pair(&["f"], |mut session| {
        assert!(matches!(session.reply(&[]), Err(Error::InvalidArgument { what: "reply", .. })));
        let call = session.recv().unwrap().expect("a call");
        assert_eq!(call.function, "f");
        // Not answered yet: a second recv is refused and reads nothing.
        let refused = session.recv().unwrap_err();
        assert!(refused.to_string().contains("not answered yet"), "{refused}");
        // Too many parts for a reply: the client is told, the conversation goes on.
        let many: Vec<Part<'_>> =
            (0..=peerpipe::parts::MAX_PARTS).map(|_| Part::f64(&[])).collect();
        let too_many = session.reply(&many).unwrap_err();
        assert!(matches!(too_many, Error::InvalidArgument { what: "reply", .. }), "{too_many}");
        session.recv().unwrap().expect("a call");
        session.reject("no such thing").unwrap();
        assert!(session.recv().unwrap().is_none());
        session.ending()
    });
    let mut out = [0.0];
    // A DATA request and an unknown function: ERROR from the session itself, peer usable.
    let data = peer.call_f64(&[1.0], &mut out).unwrap_err();
    assert!(data.to_string().contains("serves functions by name (f)"), "{data}");
    let unknown =
        peer.call_parts("g", &[Part::f64(&[1.0])], &mut [PartMut::f64(&mut out)]).unwrap_err();
    assert!(unknown.to_string().contains("unknown function \"g\": this server has f"), "{unknown}");
    // The same table again (the session keeps the last one it accepted): refused again.
    let again = peer.call_parts("g", &[Part::f64(&[1.0])], &mut [PartMut::f64(&mut out)]);
    assert!(again.unwrap_err().to_string().contains("unknown function \"g\""));
    // The default function, called as PARTS, is refused as the DATA request was.
    let default = peer.call_parts("", &[Part::f64(&[1.0])], &mut [PartMut::f64(&mut out)]);
    let default = default.unwrap_err().to_string();
    assert!(default.contains("no function named: this server serves functions by name (f)"));
    let reply = peer.call_parts("f", &[], &mut [PartMut::f64(&mut out)]).unwrap_err();
    assert!(reply.to_string().contains("at most"), "{reply}");
    let rejected = peer.call_parts("f", &[], &mut [PartMut::f64(&mut out)]).unwrap_err();
    assert!(matches!(&rejected, Error::Remote { message, .. } if message == "no such thing"));
    peer.close().unwrap();
    assert_eq!(server.join().unwrap(), Some(Ending::Bye));
}

#[test]
fn an_idle_limit_returns_idle_and_leaves_the_stream_in_step() {
    let (mut peer, server) = pair(&["f"], |mut session| {
        let deadline = Instant::now() + Duration::from_millis(50);
        assert!(matches!(session.next(Some(deadline)).unwrap(), peerpipe::server::Next::Idle));
        loop {
            match session.next(Some(Instant::now() + Duration::from_millis(5))).unwrap() {
                peerpipe::server::Next::Idle => continue,
                peerpipe::server::Next::Call(call) => {
                    let x = call.f64(0).unwrap()[0];
                    session.reply(&[Part::f64(&[x * 2.0])]).unwrap();
                }
                peerpipe::server::Next::End(ending) => return ending,
            }
        }
    });
    thread::sleep(Duration::from_millis(100));
    let mut out = [0.0];
    for x in [1.5, 2.5] {
        peer.call_parts("f", &[Part::f64(&[x])], &mut [PartMut::f64(&mut out)]).unwrap();
        assert_eq!(out[0], 2.0 * x);
        thread::sleep(Duration::from_millis(20));
    }
    peer.close().unwrap();
    assert_eq!(server.join().unwrap(), Ending::Bye);
}

#[test]
fn bad_function_names_are_refused_before_anything_is_sent() {
    for functions in [&["a b"][..], &["f", "f"][..], &[""][..]] {
        let (_client, served) = Transport::pipe_pair(Wait::Block).unwrap();
        let error = Session::new(served, "test", functions, ServeOptions::default()).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument { what: "function name", .. }), "{error}");
    }
}

#[test]
fn the_heat_rod_split_in_two_is_bit_identical_to_one_process() {
    let exe = common::example_exe("heat_rod");
    let out = Command::new(&exe)
        .args(["--cells", "40", "--steps", "3000", "--blocks", "3"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("\"identical\":true"), "{stdout}");
    assert!(stdout.contains("\"steps\":3000"), "{stdout}");
    // Every figure a p50, printed with what it is, and when splitting pays.
    for said in ["p50s over steps", "this half alone", "splitting pays above", "\"split_pays\":"] {
        assert!(stdout.contains(said), "no `{said}` in:\n{stdout}");
    }
}

#[test]
fn a_half_killed_mid_run_is_a_typed_error_for_the_other_and_nothing_is_left() {
    let exe = common::example_exe("heat_rod");
    // The server half killed: the client's next exchange fails with PeerExited, in time.
    let mut command = Command::new(&exe);
    command.args(["--serve", "10", "block"]);
    let options = Options { timeout: Some(Duration::from_secs(5)), ..Options::default() };
    let mut peer = Peer::spawn(command, options).unwrap();
    let pid = peer.server_pid().unwrap();
    let mut theirs = [0.0];
    let exchange = |peer: &mut Peer, theirs: &mut [f64; 1]| {
        peer.call_parts("exchange", &[Part::f64(&[0.5])], &mut [PartMut::f64(theirs)])
    };
    exchange(&mut peer, &mut theirs).unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::SIGKILL)
        .unwrap();
    let started = Instant::now();
    let error = loop {
        if let Err(e) = exchange(&mut peer, &mut theirs) {
            break e;
        }
    };
    assert_eq!(error.kind(), ErrorKind::PeerExited, "{error}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    drop(peer);
    assert!(!common::is_our_child(pid), "the killed server was reaped");

    // The client half killed: the server's session ends at the end of the stream and its
    // process exits.
    let mut client = Command::new(&exe)
        .args(["--cells", "10", "--steps", "100000000", "--blocks", "1"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let server = wait_for(|| server_of(client.id())).expect("the client spawned its server");
    client.kill().unwrap();
    client.wait().unwrap();
    let gone =
        wait_for(|| (!std::path::Path::new(&format!("/proc/{server}")).exists()).then_some(()));
    assert!(gone.is_some(), "the server {server} outlived its killed client");
}

/// The pid of a child of `parent`, when it has one.
fn server_of(parent: u32) -> Option<u32> {
    let children =
        std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

/// `found()` once it is `Some`, trying for up to 5 s.
fn wait_for<T>(mut found: impl FnMut() -> Option<T>) -> Option<T> {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if let Some(value) = found() {
            return Some(value);
        }
        thread::sleep(Duration::from_millis(10));
    }
    None
}

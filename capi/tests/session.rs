//! A C server with a loop of its own (`pp_session_*`, `tests/c/session.c`) answering a Rust
//! client: it replies first and computes after, refuses an out-of-turn receive, sends the
//! ERRORs it makes, and ends cleanly after BYE.

mod common;

use std::process::Command;

use peerpipe::parts::PartMut;
use peerpipe::{Error, Options, Peer};

#[test]
fn a_c_session_replies_first_computes_after_and_refuses_what_is_out_of_turn() {
    if !common::have("cc") {
        return;
    }
    let server = common::compile_c("tests/c/session.c");
    let mut peer = Peer::spawn(Command::new(&server), Options::default()).unwrap();
    assert_eq!(peer.server_hello().functions, ["exchange", "state", "twice", "bad"]);
    let mut theirs = [0.0];
    for (step, before) in [10.0, 10.0, 11.0, 13.0].into_iter().enumerate() {
        let x = [step as f64];
        let inputs = [peerpipe::parts::Part::f64(&x)];
        peer.call_parts("exchange", &inputs, &mut [PartMut::f64(&mut theirs)]).unwrap();
        assert_eq!(theirs[0], before, "the value from before the server's step {step}");
    }
    peer.call_parts("state", &[], &mut [PartMut::f64(&mut theirs)]).unwrap();
    assert_eq!(theirs[0], 16.0);
    let twice = peer.call_parts("twice", &[], &mut [PartMut::f64(&mut theirs)]).unwrap_err();
    assert!(
        matches!(&twice, Error::Remote { message, .. } if message.starts_with("EINVAL") && message.contains("not answered yet")),
        "{twice}"
    );
    let bad = peer.call_parts("bad", &[], &mut [PartMut::f64(&mut theirs)]).unwrap_err();
    assert!(matches!(&bad, Error::Remote { message, .. } if message == "bad on purpose"), "{bad}");
    let unknown = peer.call_parts("other", &[], &mut [PartMut::f64(&mut theirs)]).unwrap_err();
    assert!(
        unknown.to_string().contains("this server has exchange, state, twice, bad"),
        "{unknown}"
    );
    peer.call_parts("state", &[], &mut [PartMut::f64(&mut theirs)]).unwrap();
    assert_eq!(theirs[0], 16.0, "still in step after the refusals");
    let status = peer.close().unwrap().expect("a spawned server's status");
    assert_eq!(status.code(), Some(0), "the C server exits 0 after BYE");
}

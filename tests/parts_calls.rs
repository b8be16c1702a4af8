//! PARTS calls end to end (docs/PROTOCOL.md §15): time, state and parameters to a named
//! function, replies of their own shape, a Jacobian beside a right-hand side, a reply of the
//! wrong shape, an unknown function, and both directions of compatibility with a server that
//! speaks only v1 — over every transport, bit for bit.

mod common;

use std::thread::{self, JoinHandle};

use common::{Watchdog, bits32, bits64, pseudo_random_f64, secs};
use peerpipe::frame::{DEFAULT_MAX_FRAME_BYTES, HEADER_LEN, Header, Hello, Kind};
use peerpipe::parts::{Part, PartMut, PartsOut};
use peerpipe::peer::{PartsReply, ReplyInto, Request};
use peerpipe::rhs::RemoteRhs;
use peerpipe::server::{self, Functions, ServeOptions, ServeSummary, serve};
use peerpipe::transport::{Deadline, Transport, TransportKind};
use peerpipe::{Error, ErrorKind, Options, Peer, Result, Values, ValuesMut, Wait};

/// `step(t, y, p)`: `y[i] * p[i % 8] + t`, in this order.
fn step(t: f64, y: &[f64], p: &[f64], out: &mut [f64]) {
    for (i, (o, y)) in out.iter_mut().zip(y).enumerate() {
        *o = y * p[i % p.len()] + t;
    }
}

/// The forced Duffing oscillator `fun(t, y, d, a, b, g, w)` and its Jacobian.
fn duffing(t: f64, y: &[f64], p: &[f64], out: &mut [f64]) {
    let (d, a, b, g, w) = (p[0], p[1], p[2], p[3], p[4]);
    out[0] = y[1];
    out[1] = -d * y[1] - a * y[0] - b * y[0] * y[0] * y[0] + g * (w * t).cos();
}

fn duffing_jac(_t: f64, y: &[f64], p: &[f64], out: &mut [f64]) {
    let (d, a, b) = (p[0], p[1], p[2]);
    out.copy_from_slice(&[0.0, 1.0, -a - 3.0 * b * y[0] * y[0], -d]);
}

fn functions() -> Functions {
    Functions::new("test-model")
        .with("step", |call: server::Request<'_>, reply: &mut PartsOut| {
            call.expect_parts(3)?;
            let (t, y, p) = (call.f64(0)?[0], call.f64(1)?, call.f64(2)?);
            step(t, y, p, reply.f64(y.len())?);
            Ok(())
        })
        .unwrap()
        .with("observe", |call: server::Request<'_>, reply: &mut PartsOut| {
            let y = call.f64(0)?;
            let min = y.iter().copied().fold(f64::INFINITY, f64::min);
            let max = y.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            reply.f64(3)?.copy_from_slice(&[min, max, y.iter().sum()]);
            Ok(())
        })
        .unwrap()
        .with("rhs", |call: server::Request<'_>, reply: &mut PartsOut| {
            let (t, y, p) = peerpipe::ode::ode_parts(&call)?;
            duffing(t, y, p, reply.f64(2)?);
            Ok(())
        })
        .unwrap()
        .with("jac", |call: server::Request<'_>, reply: &mut PartsOut| {
            let (t, y, p) = peerpipe::ode::ode_parts(&call)?;
            duffing_jac(t, y, p, reply.f64_matrix(2, 2)?);
            Ok(())
        })
        .unwrap()
        .with("as-matrix", |call: server::Request<'_>, reply: &mut PartsOut| {
            // The values back as a matrix of 2 columns: as long as a vector, another shape.
            let y = call.f64(0)?;
            reply.f64_matrix(y.len() / 2, 2)?.copy_from_slice(y);
            Ok(())
        })
        .unwrap()
        .with("wrong-shape", |call: server::Request<'_>, reply: &mut PartsOut| {
            // Answers one element fewer than it was given.
            let y = call.f64(0)?;
            reply.f64(y.len().saturating_sub(1))?.copy_from_slice(&y[1..]);
            Ok(())
        })
        .unwrap()
}

fn start(kind: TransportKind) -> (Peer, JoinHandle<Result<ServeSummary>>) {
    let (client, mut server) = Transport::pair(kind, Wait::Block).expect("transport pair");
    let thread =
        thread::spawn(move || serve(&mut server, &mut functions(), &ServeOptions::default()));
    (Peer::connect(client, Options::default()).expect("connect"), thread)
}

#[test]
fn time_state_and_parameters_go_to_a_named_function_bit_for_bit() {
    let _watchdog = Watchdog::new(secs(60));
    for kind in TransportKind::EVERY {
        let (mut peer, server) = start(kind);
        assert!(peer.speaks_parts());
        assert_eq!(
            peer.server_hello().functions,
            ["step", "observe", "rhs", "jac", "as-matrix", "wrong-shape"]
        );
        let y = pseudo_random_f64(500, 7);
        let p = pseudo_random_f64(8, 8);
        let mut reply = vec![0.0; 500];
        let mut local = vec![0.0; 500];
        for t in [0.0, 1.3, -2.5e-300, f64::MAX] {
            let t_part = [t];
            let inputs = [Part::f64(&t_part), Part::f64(&y), Part::f64(&p)];
            peer.call_parts("step", &inputs, &mut [PartMut::f64(&mut reply)]).expect("step");
            step(t, &y, &p, &mut local);
            assert_eq!(bits64(&reply), bits64(&local), "{kind}, t = {t}");
        }
        // 100 values in, 3 out: a reply of its own shape.
        let mut observed = [0.0; 3];
        peer.call_parts("observe", &[Part::f64(&y[..100])], &mut [PartMut::f64(&mut observed)])
            .expect("observe");
        assert_eq!(observed[2].to_bits(), y[..100].iter().sum::<f64>().to_bits());
        // Any shape, into a reusable reply.
        let mut any = PartsReply::new();
        peer.call_parts_any("observe", &[Part::f64(&y)], &mut any).expect("observe, any shape");
        assert_eq!(any.parts().get(0).unwrap().f64_view().unwrap().len(), 3);
        peer.close().expect("close");
        let summary = server.join().unwrap().expect("serve");
        assert_eq!((summary.replies, summary.rejected), (6, 0));
    }
}

#[test]
fn one_call_path_takes_both_forms_and_refuses_a_reply_the_buffers_cannot_take() {
    let _watchdog = Watchdog::new(secs(60));
    let (mut peer, server) = start(TransportKind::Pipe);
    let y = pseudo_random_f64(10, 3);
    let (mut sum, mut array) = ([0.0; 3], [0.0; 10]);
    // A request whose reply the buffers cannot take is refused before anything is sent.
    let observe = Request::Call { function: "observe", parts: &[Part::f64(&y)] };
    let refused = peer.call_request(observe, ReplyInto::Array(ValuesMut::F64(&mut array)));
    assert!(
        matches!(&refused, Err(Error::InvalidArgument { what: "call_request", reason })
            if reason.contains("a PARTS request")),
        "{refused:?}"
    );
    // The one path, PARTS: the reply into the caller's parts.
    let mut into = [PartMut::f64(&mut sum)];
    peer.call_request(observe, ReplyInto::Parts(&mut into)).expect("observe");
    assert_eq!(sum[2].to_bits(), y.iter().sum::<f64>().to_bits());
    // Pipelined, a PARTS and a DATA request; each reply asked into the other's buffers is
    // refused, the request staying in flight, and then received where it belongs.
    let first = peer.send_request(observe).expect("send PARTS");
    let second = peer.send_request(Request::Array(Values::F64(&y))).expect("send DATA");
    let wrong = peer.recv_reply(ReplyInto::Array(ValuesMut::F64(&mut array)));
    assert!(
        matches!(&wrong, Err(Error::InvalidArgument { reason, .. })
            if reason.contains(&format!("seq {first} is a PARTS request"))),
        "{wrong:?}"
    );
    let mut any = PartsReply::new();
    assert_eq!(peer.recv_reply(ReplyInto::Any(&mut any)).expect("PARTS reply").seq, first);
    assert_eq!(any.parts().get(0).unwrap().f64_view().unwrap()[2], sum[2]);
    let wrong = peer.recv_reply(ReplyInto::Any(&mut any));
    assert!(
        matches!(&wrong, Err(Error::InvalidArgument { reason, .. })
            if reason.contains(&format!("seq {second} is a DATA request"))),
        "{wrong:?}"
    );
    // This server serves functions only: its answer to DATA is an ERROR, the peer usable.
    let remote = peer.recv_reply(ReplyInto::Array(ValuesMut::F64(&mut array)));
    assert!(matches!(&remote, Err(Error::Remote { seq, .. }) if *seq == second), "{remote:?}");
    peer.call_parts("observe", &[Part::f64(&y)], &mut [PartMut::f64(&mut sum)]).expect("after");
    peer.close().expect("close");
    let summary = server.join().unwrap().expect("serve");
    assert_eq!((summary.replies, summary.rejected), (3, 1));
}

#[test]
fn one_array_to_the_default_function_is_the_same_call_as_data_or_as_parts() {
    let _watchdog = Watchdog::new(secs(60));
    let y = pseudo_random_f64(64, 11);
    for name in peerpipe::handlers::NAMES {
        let (client, mut server) = Transport::pair(TransportKind::Pipe, Wait::Block).unwrap();
        let mut handler = peerpipe::handlers::by_name(name).unwrap();
        let thread =
            thread::spawn(move || serve(&mut server, &mut handler, &ServeOptions::default()));
        let mut peer = Peer::connect(client, Options::default()).expect("connect");
        let narrow: Vec<f32> = y.iter().map(|&v| v as f32).collect();
        let (mut as_data, mut as_parts) = (vec![0.0; 64], vec![0.0; 64]);
        let (mut as_data32, mut as_parts32) = (vec![0.0f32; 64], vec![0.0f32; 64]);
        if name == "lorenz96-f32" {
            peer.call(Values::F32(&narrow), ValuesMut::F32(&mut as_data32)).expect("DATA");
            let one = [Part::f32(&narrow)];
            peer.call_parts("", &one, &mut [PartMut::f32(&mut as_parts32)]).expect("PARTS");
            assert_eq!(bits32(&as_data32), bits32(&as_parts32), "{name}");
        } else {
            peer.call_f64(&y, &mut as_data).expect("DATA");
            peer.call_parts("", &[Part::f64(&y)], &mut [PartMut::f64(&mut as_parts)])
                .expect("PARTS");
            assert_eq!(bits64(&as_data), bits64(&as_parts), "{name}");
        }
        peer.close().expect("close");
        assert_eq!(thread.join().unwrap().expect("serve").replies, 2, "{name}");
    }
}

#[test]
fn one_server_serves_the_right_hand_side_and_its_jacobian() {
    let _watchdog = Watchdog::new(secs(30));
    let (peer, server) = start(TransportKind::Pipe);
    let mut rhs = RemoteRhs::new(peer);
    let p = [0.3, -1.0, 1.0, 0.5, 1.2];
    let y = [0.7, -0.1];
    let (mut dy, mut jac) = ([0.0; 2], [0.0; 4]);
    let (mut dy_local, mut jac_local) = ([0.0; 2], [0.0; 4]);
    for t in [0.0, 1.3, 50.0] {
        rhs.eval_at(t, &y, &p, &mut dy).expect("rhs");
        rhs.jac_at(t, &y, &p, &mut jac).expect("jac");
        duffing(t, &y, &p, &mut dy_local);
        duffing_jac(t, &y, &p, &mut jac_local);
        assert_eq!(bits64(&dy), bits64(&dy_local), "t = {t}");
        assert_eq!(bits64(&jac), bits64(&jac_local), "t = {t}");
    }
    // t changes the answer: the forcing term is cos(w t).
    let mut at_zero = [0.0; 2];
    rhs.eval_at(0.0, &[0.0, 0.0], &p, &mut at_zero).unwrap();
    rhs.eval_at(1.3, &[0.0, 0.0], &p, &mut dy).unwrap();
    assert_eq!(at_zero, [0.0, 0.5]);
    assert_eq!(dy[1].to_bits(), (0.5 * (1.2f64 * 1.3).cos()).to_bits());
    assert_ne!(at_zero, dy);
    assert_eq!(rhs.stats().calls, 8);
    // A Jacobian buffer that is not n x n is refused before anything is sent.
    let err = rhs.jac_at(0.0, &y, &p, &mut [0.0; 3]).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { expected: 4, found: 3, .. }), "{err}");
    rhs.close().expect("close");
    server.join().unwrap().expect("serve");
}

#[test]
fn a_reply_of_the_wrong_shape_names_both_and_the_next_call_succeeds() {
    let _watchdog = Watchdog::new(secs(60));
    for kind in TransportKind::EVERY {
        let (mut peer, server) = start(kind);
        let y = [1.0, 2.0, 3.0, 4.0];
        let mut out = [0.0; 4];
        let err = peer
            .call_parts("wrong-shape", &[Part::f64(&y)], &mut [PartMut::f64(&mut out)])
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Shape, "{err}");
        assert!(err.is_recoverable());
        assert!(peer.is_open(), "a reply of another shape leaves the conversation in step");
        assert_eq!(
            err.to_string(),
            "reply to seq 1 has another shape than expected: expected 1 part: f64[4], found 1 \
             part: f64[3]"
        );
        // As many bytes as expected, laid out otherwise: a matrix where a vector is expected.
        let mut flat = [0.0; 4];
        let err = peer
            .call_parts("as-matrix", &[Part::f64(&y)], &mut [PartMut::f64(&mut flat)])
            .unwrap_err();
        assert!(err.to_string().ends_with("expected 1 part: f64[4], found 1 part: f64[2x2]"));
        let mut matrix = [0.0; 4];
        let out = PartMut::f64(&mut matrix).matrix(2).unwrap();
        peer.call_parts("as-matrix", &[Part::f64(&y)], &mut [out]).expect("the matrix expected");
        assert_eq!(matrix, y);
        // The same number of bytes in another dtype, and the same parts in another number.
        let mut ints = [0i64; 4];
        let err = peer
            .call_parts("as-matrix", &[Part::f64(&y)], &mut [PartMut::i64(&mut ints)])
            .unwrap_err();
        assert!(err.to_string().ends_with("expected 1 part: i64[4], found 1 part: f64[2x2]"));
        let (mut a, mut b) = ([0.0; 2], [0.0; 2]);
        let two = &mut [PartMut::f64(&mut a), PartMut::f64(&mut b)];
        let err = peer.call_parts("as-matrix", &[Part::f64(&y)], two).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Shape, "{err}");
        // A matrix where a vector came is another shape too.
        let mut row = [0.0; 3];
        let out = PartMut::f64(&mut row).matrix(3).unwrap();
        let err = peer.call_parts("observe", &[Part::f64(&y)], &mut [out]).unwrap_err();
        assert!(err.to_string().ends_with("expected 1 part: f64[1x3], found 1 part: f64[3]"));
        let mut observed = [0.0; 3];
        peer.call_parts("observe", &[Part::f64(&y)], &mut [PartMut::f64(&mut observed)])
            .expect("the next call");
        assert_eq!(observed, [1.0, 4.0, 10.0]);
        peer.close().expect("close");
        server.join().unwrap().expect("serve");
    }
}

#[test]
fn an_unknown_function_is_an_error_naming_the_servers_and_the_conversation_goes_on() {
    let _watchdog = Watchdog::new(secs(30));
    let (mut peer, server) = start(TransportKind::Pipe);
    let mut out = [0.0; 3];
    let err = peer.call_parts("obsrve", &[Part::f64(&[1.0])], &mut [PartMut::f64(&mut out)]);
    let err = err.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Remote);
    assert!(
        err.to_string().ends_with(
            "unknown function \"obsrve\": this server has step, observe, rhs, jac, as-matrix, \
             wrong-shape"
        ),
        "{err}"
    );
    // The same table again (the server keeps the last one it accepted): refused again.
    let again = peer.call_parts("obsrve", &[Part::f64(&[1.0])], &mut [PartMut::f64(&mut out)]);
    assert_eq!(again.unwrap_err().kind(), ErrorKind::Remote);
    // A DATA request to a server of functions is refused the same way: a call to the default
    // function, which it does not serve.
    let err = peer.call_f64(&[1.0], &mut [0.0]).unwrap_err();
    assert!(err.to_string().contains("serves functions by name (step, observe, rhs"), "{err}");
    peer.call_parts("observe", &[Part::f64(&[1.0])], &mut [PartMut::f64(&mut out)]).unwrap();
    // Bad arguments are refused before anything is sent.
    for (name, why) in [("a b", "' '"), ("", "no function named")] {
        let err = peer.call_parts(name, &[], &mut [PartMut::f64(&mut out)]).unwrap_err();
        assert!(err.to_string().contains(why), "{name:?}: {err}");
    }
    let many = vec![Part::f64(&[]); 65];
    let err = peer.call_parts("observe", &many, &mut []).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    peer.call_parts("observe", &[Part::f64(&[2.0])], &mut [PartMut::f64(&mut out)]).unwrap();
    peer.close().expect("close");
    let summary = server.join().unwrap().expect("serve");
    assert_eq!((summary.replies, summary.rejected), (2, 4));
}

/// A server that speaks only v1: its HELLO announces no `parts=1`, and it echoes DATA.
fn v1_only_server(mut transport: Transport) -> Result<u64> {
    let deadline = Deadline::NEVER;
    let hello = Hello { parts: false, ..Hello::server(DEFAULT_MAX_FRAME_BYTES, "echo") };
    let payload = hello.to_payload();
    let header = Header::control(Kind::Hello, 0, payload.len() as u64).to_bytes();
    transport.send_frame(&header, &payload, deadline)?;
    let mut served = 0;
    let mut buf = vec![0u8; 1 << 16];
    while let Some(raw) = transport.recv_header(deadline)? {
        let header = Header::parse(&raw, DEFAULT_MAX_FRAME_BYTES)?;
        let len = header.payload_bytes()? as usize;
        transport.recv_payload(&mut buf[..len], deadline)?;
        match header.kind {
            Kind::Hello => {}
            Kind::Data => {
                transport.send_frame(&header.to_bytes(), &buf[..len], deadline)?;
                served += 1;
            }
            Kind::Bye => {
                transport.send_frame(&header.to_bytes(), &[], deadline)?;
                break;
            }
            found => panic!("a v1 client sent {found}"),
        }
    }
    Ok(served)
}

#[test]
fn a_new_client_and_a_v1_only_server_talk_v1_and_parts_get_a_clear_error() {
    let _watchdog = Watchdog::new(secs(30));
    let (client, server) = Transport::pipe_pair(Wait::Block).unwrap();
    let thread = thread::spawn(move || v1_only_server(server));
    let mut peer = Peer::connect(client, Options::default()).expect("connect to a v1 server");
    assert!(!peer.speaks_parts());
    let mut reply = [0.0; 2];
    peer.call_f64(&[1.0, 2.0], &mut reply).expect("a v1 call");
    let err = peer
        .call_parts(
            "rhs",
            &[Part::f64(&[0.0]), Part::f64(&[1.0, 2.0])],
            &mut [PartMut::f64(&mut reply)],
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    let text = err.to_string();
    assert!(
        text.starts_with("PARTS requests are not supported by the server (peerpipe "),
        "{text}"
    );
    assert!(text.contains("whose HELLO does not announce parts=1"), "{text}");
    assert_eq!(peer.in_flight(), 0, "nothing was sent");
    assert!(peer.is_open());
    peer.call_f64(&[3.0, 4.0], &mut reply).expect("the connection goes on");
    assert_eq!(reply, [3.0, 4.0]);
    peer.close().expect("close");
    assert_eq!(thread.join().unwrap().expect("v1 server"), 2);
    let _ = HEADER_LEN;
}

#[test]
fn the_peer_binarys_lorenz96_serves_rhs_with_time_and_forcing() {
    let _watchdog = Watchdog::new(secs(30));
    let options = Options::default();
    let mut rhs = RemoteRhs::spawn_server(common::peer_exe(), "lorenz96", options).expect("spawn");
    assert_eq!(rhs.peer().server_hello().functions, ["rhs"]);
    let x = pseudo_random_f64(40, 3);
    let (mut remote, mut local) = (vec![0.0; 40], vec![0.0; 40]);
    for (t, forcing) in [(0.0, 8.0), (2.5, 8.0), (2.5, 10.0)] {
        rhs.eval_at(t, &x, &[forcing], &mut remote).expect("rhs(t, y, F)");
        peerpipe::lorenz96::rhs(&x, forcing, &mut local).unwrap();
        assert_eq!(bits64(&remote), bits64(&local), "t = {t}, F = {forcing}");
    }
    rhs.eval_at(1.0, &x, &[], &mut remote).expect("rhs(t, y)");
    peerpipe::lorenz96::rhs(&x, 8.0, &mut local).unwrap();
    assert_eq!(bits64(&remote), bits64(&local));
    rhs.eval(&x, &mut remote).expect("the autonomous DATA call still works");
    assert_eq!(bits64(&remote), bits64(&local));
    let err = rhs.eval_at(0.0, &x, &[1.0, 2.0], &mut remote).unwrap_err();
    assert!(err.to_string().contains("expected no parameter or one (the forcing), found 2"));
    rhs.close().expect("close");
}

/// The example ODE server (`examples/ode_server.rs`), beside the `peer` binary: `cargo test`
/// builds it (a single `cargo test --test parts_calls` does not).
fn ode_server() -> std::path::PathBuf {
    let peer = std::path::Path::new(common::peer_exe());
    let path = peer.parent().unwrap().join("examples").join("ode_server");
    assert!(path.exists(), "{} is missing: cargo build --example ode_server", path.display());
    path
}

#[test]
fn the_example_ode_server_serves_duffing_and_robertson_with_their_jacobians() {
    let _watchdog = Watchdog::new(secs(30));
    let spawn = |model: &str| {
        let command =
            peerpipe::peer::argv_command(&[ode_server().to_str().unwrap(), model]).unwrap();
        RemoteRhs::new(Peer::spawn(command, Options::default()).expect("spawn ode_server"))
    };
    let mut rhs = spawn("duffing");
    let p = [0.3, -1.0, 1.0, 0.5, 1.2];
    let (mut dy, mut local, mut jac, mut jac_local) = ([0.0; 2], [0.0; 2], [0.0; 4], [0.0; 4]);
    for (t, y) in [(0.0, [1.0, 0.0]), (1.3, [0.0, 0.0]), (37.5, [-1.2, 0.4])] {
        rhs.eval_at(t, &y, &p, &mut dy).unwrap();
        rhs.jac_at(t, &y, &[], &mut jac).unwrap();
        duffing(t, &y, &p, &mut local);
        duffing_jac(t, &y, &p, &mut jac_local);
        assert_eq!((bits64(&dy), bits64(&jac)), (bits64(&local), bits64(&jac_local)), "t {t}");
    }
    // Vectorized: y of shape (2, 3), a matrix of 3 columns, comes back as (2, 3).
    let ys = [1.0, 0.0, -1.2, 0.0, 0.5, 0.4];
    let mut out = [0.0; 6];
    let t = [2.0];
    let inputs = [Part::f64(&t), Part::f64(&ys).matrix(3).unwrap()];
    let target = PartMut::f64(&mut out).matrix(3).unwrap();
    rhs.peer_mut().call_parts("rhs", &inputs, &mut [target]).expect("vectorized rhs");
    for j in 0..3 {
        duffing(2.0, &[ys[j], ys[3 + j]], &p, &mut local);
        assert_eq!([out[j], out[3 + j]].map(f64::to_bits), local.map(f64::to_bits), "column {j}");
    }
    // The same through RemoteRhs, counted in its stats; a column of one is still a matrix.
    let calls = rhs.stats().calls;
    let mut columns = [0.0; 6];
    rhs.eval_columns_at(2.0, &ys, 3, &p, &mut columns).expect("eval_columns_at");
    assert_eq!(bits64(&columns), bits64(&out));
    let mut one = [0.0; 2];
    rhs.eval_columns_at(2.0, &ys[..2], 1, &[], &mut one).expect("one column");
    duffing(2.0, &ys[..2], &p, &mut local);
    assert_eq!(bits64(&one), bits64(&local));
    assert_eq!(rhs.stats().calls, calls + 2);
    // Refused before sending: columns that do not divide the state, a short buffer.
    let err = rhs.eval_columns_at(2.0, &ys, 4, &p, &mut columns).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let err = rhs.eval_columns_at(2.0, &ys, 3, &p, &mut one).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { expected: 6, found: 2, .. }), "{err}");
    assert!(rhs.peer().is_open());
    rhs.close().unwrap();
    let mut rhs = spawn("robertson");
    let y = [1.0, 2e-5, 0.3];
    let mut dy = [0.0; 3];
    rhs.eval_at(0.0, &y, &[0.04, 3e7, 1e4], &mut dy).unwrap();
    assert_eq!(dy[2].to_bits(), (3e7 * 2e-5 * 2e-5f64).to_bits());
    let err = rhs.eval_at(0.0, &y, &[1.0], &mut dy).unwrap_err();
    assert!(err.to_string().contains("expected 3 parameters (or none), found 1"), "{err}");
    rhs.close().unwrap();
}

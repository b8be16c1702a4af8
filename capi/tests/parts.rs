//! Calls of several typed parts through the C ABI: the C example's server of `rhs` and `jac`
//! called from C over every transport and from Rust, bit for bit against references computed
//! here; and every case of `tests/c/parts.c` — the refusals before sending, replies of
//! another shape, ERRORs from C functions, a reply of any shape, a server without PARTS —
//! each with its code and the Rust library's message, the peer usable where the header says.

mod common;

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use peerpipe::parts::{Part, PartMut};
use peerpipe::{Error, Options, Peer, TransportKind};

/// dy_i/dt = p4 (y_{i+1} - y_{i-2}) y_{i-1} - (p0 + p3 t) y_i + p1 + p2 t + p_{5 + i mod 3},
/// with the operations of `examples/parts.c` in the same order.
fn rhs(t: f64, y: &[f64], p: &[f64]) -> Vec<f64> {
    let n = y.len();
    let (damping, forcing) = (p[0] + p[3] * t, p[1] + p[2] * t);
    (0..n)
        .map(|i| {
            let (next, before, prev) = ((i + 1) % n, (i + n - 2) % n, (i + n - 1) % n);
            p[4] * (y[next] - y[before]) * y[prev] - damping * y[i] + forcing + p[5 + i % 3]
        })
        .collect()
}

/// The Jacobian of [`rhs`], row-major n × n, accumulated as `examples/parts.c` does.
fn jac(t: f64, y: &[f64], p: &[f64]) -> Vec<f64> {
    let n = y.len();
    let damping = p[0] + p[3] * t;
    let mut jac = vec![0.0; n * n];
    for i in 0..n {
        let (next, before, prev) = ((i + 1) % n, (i + n - 2) % n, (i + n - 1) % n);
        let row = &mut jac[i * n..][..n];
        row[next] += p[4] * y[prev];
        row[before] -= p[4] * y[prev];
        row[prev] += p[4] * (y[next] - y[before]);
        row[i] -= damping;
    }
    jac
}

fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn the_c_example_calls_rhs_and_jac_of_its_c_server_bit_for_bit_over_every_transport() {
    if !common::have("cc") {
        return;
    }
    let example = common::compile_c("examples/parts.c");
    for transport in ["pipe", "shm-sem", "shm-ring", "tcp"] {
        let mut command = Command::new(&example);
        command.args(["--transport", transport, "--steps", "50"]);
        let output = common::run(command, Duration::from_secs(120), "parts.c");
        let what = format!("parts.c over {transport}");
        output.assert_success(&what);
        for line in
            ["rhs: 500 values bit-exact", "jac: 500x500 bit-exact", "euler: 50 steps bit-exact"]
        {
            assert!(
                output.stdout.lines().any(|l| l == line),
                "{what}: no `{line}` in\n{}",
                output.stdout
            );
        }
    }
}

#[test]
fn a_rust_client_calls_the_c_servers_rhs_and_jac_bit_for_bit_and_hears_its_refusals() {
    if !common::have("cc") {
        return;
    }
    let example = common::compile_c("examples/parts.c");
    for transport in [TransportKind::Pipe, TransportKind::ShmRing] {
        let mut command = Command::new(&example);
        command.arg("serve");
        let mut peer = Peer::spawn(command, Options { transport, ..Options::default() }).unwrap();
        assert!(peer.speaks_parts());
        assert_eq!(peer.server_hello().functions, ["rhs", "jac"]);
        assert_eq!(peer.server_hello().handler.as_deref(), Some("c-ode"));

        let n = 500;
        let y: Vec<f64> = (0..n).map(|i| (f64::from(i) * 0.37).sin() * 4.0 + 8.0).collect();
        let p = [0.5, 8.0, 0.75, -0.125, 1.0, 0.01, -0.02, 0.03];
        for t in [0.0, 0.25, -3.5e-7, 1e3] {
            let t = [t];
            let inputs = [Part::f64(&t), Part::f64(&y), Part::f64(&p)];
            let t = t[0];
            let mut dy = vec![0.0; y.len()];
            peer.call_parts("rhs", &inputs, &mut [PartMut::f64(&mut dy)]).unwrap();
            assert_eq!(bits(&dy), bits(&rhs(t, &y, &p)), "rhs at t = {t} over {transport}");
            let mut matrix = vec![0.0; y.len() * y.len()];
            let out = PartMut::f64(&mut matrix).matrix(y.len()).unwrap();
            peer.call_parts("jac", &inputs, &mut [out]).unwrap();
            assert_eq!(bits(&matrix), bits(&jac(t, &y, &p)), "jac at t = {t} over {transport}");
        }

        // The C functions' refusals are ERRORs naming what was wrong; the conversation goes on.
        let (zero, half) = ([0.0], [0.5]);
        let short = [Part::f64(&zero), Part::f64(&y), Part::f64(&p[..7])];
        let mut dy = vec![0.0; y.len()];
        match peer.call_parts("rhs", &short, &mut [PartMut::f64(&mut dy)]) {
            Err(Error::Remote { message, .. }) => assert_eq!(
                message,
                "rhs(t, y, p): expected t of 1 value, y of at least 4 and p of 8; found 1, 500 \
                 and 7"
            ),
            other => panic!("expected an ERROR, got {other:?}"),
        }
        let narrow: Vec<f32> = y.iter().map(|&v| v as f32).collect();
        let typed = [Part::f64(&zero), Part::f32(&narrow), Part::f64(&p)];
        match peer.call_parts("jac", &typed, &mut [PartMut::f64(&mut dy)]) {
            Err(Error::Remote { message, .. }) => {
                assert_eq!(message, "jac: expected part 1 of f64 values, found f32[500]")
            }
            other => panic!("expected an ERROR, got {other:?}"),
        }
        // A reply of another shape than the caller's buffer: read whole, the peer usable.
        let mut three = [0.0; 3];
        let inputs = [Part::f64(&half), Part::f64(&y), Part::f64(&p)];
        let err = peer.call_parts("rhs", &inputs, &mut [PartMut::f64(&mut three)]).unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
        peer.call_parts("rhs", &inputs, &mut [PartMut::f64(&mut dy)]).unwrap();
        assert_eq!(bits(&dy), bits(&rhs(0.5, &y, &p)));
        let status = peer.close().unwrap().expect("a spawned server has a status");
        assert!(status.success(), "{transport}: the C server ended {status}");
    }
}

#[test]
fn a_c_functions_server_announces_parts_its_functions_and_its_name_or_the_options_one() {
    if !common::have("cc") {
        return;
    }
    let program = common::compile_c("tests/c/parts.c");
    for (args, name) in [(&["serve"][..], "c-cases"), (&["serve", "renamed"][..], "renamed")] {
        let mut command = Command::new(&program);
        command.args(args);
        let peer = Peer::spawn(command, Options::default()).unwrap();
        let hello = peer.server_hello();
        assert!(hello.parts, "{args:?}");
        assert_eq!(hello.handler.as_deref(), Some(name));
        let served = "observe wrong refuse code typed echo many badpart zerocols probe";
        assert_eq!(hello.functions, served.split(' ').collect::<Vec<_>>());
        let status = peer.close().unwrap().expect("a spawned server has a status");
        assert!(status.success(), "{args:?}: {status}");
    }
}

#[test]
fn every_parts_case_from_c_gets_its_code_and_the_rust_message() {
    if !common::have("cc") {
        return;
    }
    let program = common::compile_c("tests/c/parts.c");
    let mut command = Command::new(&program);
    command.arg(&program);
    let output = common::run(command, Duration::from_secs(90), "parts.c cases");
    output.assert_success("tests/c/parts.c");
    let lines: HashMap<&str, &str> =
        output.stdout.lines().filter_map(|line| line.split_once(' ')).collect();
    let line = |label: &str| -> &str {
        lines.get(label).unwrap_or_else(|| panic!("no `{label}` in\n{}", output.stdout))
    };
    let expect = |label: &str, code: &str, message: &str| {
        let (found, text) = line(label).split_once(' ').unwrap_or((line(label), ""));
        assert_eq!(found, code, "{label}: {text}");
        assert!(text.contains(message), "{label}: `{text}` lacks `{message}`");
    };
    let yes = |label: &str| assert_eq!(line(label), "yes", "{label}");

    // Refused before anything is sent; the next call works (a request sent and left
    // unanswered would put the next reply out of step).
    expect("spawn", "PP_OK", "");
    expect("null-peer", "PP_EINVAL", "invalid argument peer: is NULL");
    expect("null-function", "PP_EINVAL", "invalid argument function: is NULL");
    expect("null-in", "PP_EINVAL", "invalid argument in: is NULL but its length is 1");
    expect("null-out", "PP_EINVAL", "invalid argument out: is NULL but its length is 1");
    expect("too-many-parts", "PP_EINVAL", "n_in: is 65: a message has at most 64 parts");
    expect("too-many-out", "PP_EINVAL", "n_out: is 65: a message has at most 64 parts");
    expect(
        "unknown-dtype",
        "PP_EINVAL",
        "invalid argument in[0].dtype: is 9: expected PP_DTYPE_BYTES (0), PP_DTYPE_F32 (1), \
         PP_DTYPE_F64 (2) or PP_DTYPE_I64 (3)",
    );
    expect("not-whole-rows", "PP_EINVAL", "in[0].count: is 7, not whole rows of 3 columns");
    expect("null-data", "PP_EINVAL", "in[0].data: is NULL but its length is 3");
    expect("misaligned", "PP_EINVAL", "is not aligned to 8 bytes");
    expect("out-overlaps-in", "PP_EINVAL", "out[0]: overlaps in[0]");
    expect("out-overlaps-out", "PP_EINVAL", "out[1]: overlaps out[0]");
    expect("misaligned-out", "PP_EINVAL", "out[0].data");
    expect("bad-name", "PP_EINVAL", "invalid function name: \"no such\" has ' ' at byte 2");
    expect("ok-after-refusals", "PP_OK", "");
    yes("observed");

    // After the call, the peer usable: other shapes, ERRORs of every origin.
    expect(
        "wrong-shape",
        "PP_ESHAPE",
        "reply to seq 2 has another shape than expected: expected 1 part: f64[500], found 1 \
         part: f64[3]",
    );
    expect("ok-after-wrong-shape", "PP_OK", "");
    let served = "observe, wrong, refuse, code, typed, echo, many, badpart, zerocols, probe";
    expect(
        "unknown-function",
        "PP_EREMOTE",
        &format!("server error for seq 4: unknown function \"rhs2\": this server has {served}"),
    );
    expect("ok-after-unknown", "PP_OK", "");
    expect("refuse", "PP_EREMOTE", "server error for seq 6: refuse: no, thank you");
    expect("code", "PP_EREMOTE", "server error for seq 7: function code returned 5");
    expect("typed", "PP_EREMOTE", "typed: expected part 0 of f64 values, found i64[2]");
    expect("many", "PP_EREMOTE", "seq 9: function many: a reply has at most 64 parts");
    expect("badpart", "PP_EREMOTE", "function badpart: invalid argument dtype: is 9");
    expect("zerocols", "PP_EREMOTE", "function zerocols: invalid argument cols: no 2 x 0 matrix");
    expect(
        "default-function",
        "PP_EREMOTE",
        &format!("no function named: this server serves functions by name ({served})"),
    );
    expect("data-request", "PP_EREMOTE", "serves functions by name");
    expect("ok-after-remote-errors", "PP_OK", "");

    // The accessors' refusals inside a C function, which then replied normally.
    expect("probe", "PP_OK", "");
    for (label, found) in [
        ("probe-0", "-1 invalid argument call: is NULL"),
        ("probe-1", "-1 probe: expected a part 7, found 1 parts"),
        ("probe-2", "-1 invalid argument part: is NULL"),
        ("probe-3", "0 invalid argument call: is NULL"),
        ("probe-4", "1 probe: expected a part 1, found 1 parts"),
        ("probe-5", "1 invalid argument reply: is NULL"),
        ("probe-6", "-1 invalid argument reply: is NULL"),
        ("probe-7", "1 invalid argument reply: is NULL"),
    ] {
        assert_eq!(line(label), found, "{label}");
    }

    // Every dtype, a matrix and an empty part, bit for bit; into fixed shapes and any shape.
    expect("echo", "PP_OK", "");
    yes("echoed");
    expect(
        "echo-other-cols",
        "PP_ESHAPE",
        "expected 5 parts: f64[3x2], f32[3], i64[2], bytes[5], f64[0], found 5 parts: \
         f64[2x3], f32[3], i64[2], bytes[5], f64[0]",
    );
    expect("echo-other-parts", "PP_ESHAPE", "expected 4 parts: f64[2x3]");
    expect("reply-new", "PP_OK", "");
    expect("echo-any", "PP_OK", "");
    yes("any-shapes");
    expect("reply-part-past-end", "PP_EINVAL", "index: is 5, and the reply has 5 parts");
    expect("reply-part-null", "PP_EINVAL", "part: is NULL");
    assert_eq!(line("reply-count-null"), "0 invalid argument reply: is NULL");
    expect("any-unknown", "PP_EREMOTE", "unknown function \"rhs2\"");
    yes("any-unknown-empty");
    expect("any-null-reply", "PP_EINVAL", "reply: is NULL");
    expect("ok-at-the-end", "PP_OK", "");
    expect("close", "PP_OK", "");

    // Registration.
    expect("functions-null-name", "PP_EINVAL", "name: is NULL");
    yes("functions-out-unchanged");
    expect("functions-null-out", "PP_EINVAL", "out: is NULL");
    expect("functions-new", "PP_OK", "");
    expect("add-null-functions", "PP_EINVAL", "functions: is NULL");
    expect("add-null-name", "PP_EINVAL", "name: is NULL");
    expect("add-null-function", "PP_EINVAL", "function: is NULL");
    expect("add-bad-name", "PP_EINVAL", "invalid function name: \"f g\"");
    expect("add-ok", "PP_OK", "");
    expect("add-taken", "PP_EINVAL", "\"f\" is served already");
    expect("serve-null", "PP_EINVAL", "functions: is NULL");
    expect("serve-empty", "PP_EINVAL", "serves no function; add one with pp_functions_add");

    // A server of v1 without PARTS: refused before sending, naming it; DATA goes on, and a
    // DATA reply of another count is PP_ESHAPE with the peer usable.
    let unsupported = "PARTS requests are not supported by the server (v1-cases 1.0, whose \
                       HELLO does not announce parts=1)";
    expect("v1-spawn", "PP_OK", "");
    expect("v1-parts", "PP_EUNSUPPORTED", unsupported);
    expect("v1-parts-any", "PP_EUNSUPPORTED", unsupported);
    expect("v1-data", "PP_OK", "");
    yes("v1-echoed");
    expect(
        "v1-shape",
        "PP_ESHAPE",
        "count mismatch in reply to seq 2: expected 5 elements, found 4",
    );
    expect("v1-after-shape", "PP_OK", "");
    expect("v1-close", "PP_OK", "");

    let strerror: Vec<&str> =
        output.stdout.lines().filter(|l| l.starts_with("strerror ")).collect();
    assert_eq!(
        strerror,
        [
            "strerror -12 reply of another shape than expected",
            "strerror -13 not supported by the server",
            "strerror -14 unknown peerpipe error code",
        ]
    );
}

//! What a co-simulation step costs through a proxy FMU, against the same step in process and
//! a bare peerpipe round trip of the same bytes, measured in interleaved rounds.
//!
//! ```text
//! cargo build --release -p peerpipe-cli --bin peer -p peerpipe-fmu-proxy --example fmu_step_bench
//! python3 fmu/tests/fmpy/fmu_check.py build-c decay.fmu
//! target/release/peer fmu wrap decay.fmu decay-proxy.fmu
//! target/release/examples/fmu_step_bench decay.fmu decay-proxy.fmu [ROUNDS] [STEPS]
//! ```
//!
//! A step is what an importer does per communication step of the test FMU
//! (fmu/tests/fmpy/decay.c): set the input, fmi2DoStep, get the two real outputs, the integer
//! and the boolean. In process it calls the original binary; through the proxy it calls the
//! proxy binary (the sets ride with the step, the gets are answered from its reply); the bare
//! round trip sends a request and receives a reply of the same parts as the proxy's step to a
//! server (this program, re-executed) that does nothing else. Each round runs STEPS of each
//! kind in a random order and keeps each kind's median; the figures are the median over
//! rounds with the lowest and highest round, and the paired excess
//! (proxy − in process) / bare per round.

use std::ffi::{CString, c_int};
use std::path::Path;
use std::time::Instant;

use peerpipe::parts::{Part, PartMut};
use peerpipe::server::{Functions, StdioOptions, serve_stdio};
use peerpipe::{Options, Peer};
use peerpipe_fmu::archive::Unpacked;
use peerpipe_fmu::fmi2::{self, CallbackFunctions, Component, Functions as Fmi2};
use peerpipe_fmu::log::{LogEnvironment, peerpipe_fmu_logger};
use peerpipe_fmu::model::ModelDescription;

const SERVER_VAR: &str = "PEERPIPE_FMU_BENCH_SERVER";
const GUID: &str = "{3f1b4b36-decay-peerpipe}";

/// One FMU binary, instantiated and initialised.
struct Loaded {
    functions: Fmi2,
    component: Component,
    _log: Box<LogEnvironment>,
    _callbacks: Box<CallbackFunctions>,
    _unpacked: Unpacked,
}

impl Loaded {
    fn new(fmu: &Path) -> Loaded {
        let unpacked = Unpacked::new(fmu).expect("unpack");
        let text = std::fs::read_to_string(unpacked.dir().join("modelDescription.xml")).unwrap();
        let model = ModelDescription::parse(&text).expect("model description");
        assert_eq!(model.token, GUID, "the bench runs the test FMU decay");
        let binary = fmi2::binary_path(unpacked.dir(), &model.co_simulation.model_identifier);
        let functions = Fmi2::load(&binary).expect("load");
        let log = LogEnvironment::new();
        let callbacks = Box::new(CallbackFunctions {
            logger: Some(peerpipe_fmu_logger),
            allocate_memory: Some(libc::calloc),
            free_memory: Some(libc::free),
            step_finished: None,
            component_environment: log.as_environment(),
        });
        let resources =
            CString::new(peerpipe_fmu::file_uri(&unpacked.dir().join("resources"))).unwrap();
        let (name, guid) = (c"bench", CString::new(GUID).unwrap());
        // SAFETY: FMI 2.0 calls with valid strings and callbacks that outlive the instance.
        let component = unsafe {
            let c = functions.instantiate.unwrap()(
                name.as_ptr(),
                fmi2::CO_SIMULATION,
                guid.as_ptr(),
                resources.as_ptr(),
                &raw const *callbacks,
                0,
                0,
            );
            assert!(!c.is_null(), "fmi2Instantiate failed");
            assert_eq!(functions.setup_experiment.unwrap()(c, 0, 0.0, 0.0, 0, 0.0), fmi2::OK);
            assert_eq!(functions.enter_initialization_mode.unwrap()(c), fmi2::OK);
            assert_eq!(functions.exit_initialization_mode.unwrap()(c), fmi2::OK);
            c
        };
        Loaded { functions, component, _log: log, _callbacks: callbacks, _unpacked: unpacked }
    }

    /// One communication step: set u, step, get x and y, n, positive.
    fn step(&self, t: f64, h: f64) -> f64 {
        let f = &self.functions;
        let c = self.component;
        let (mut reals, mut n, mut positive) = ([0.0; 2], [0 as c_int], [0 as c_int]);
        // SAFETY: FMI 2.0 calls on a live instance with arrays of the lengths passed.
        unsafe {
            assert_eq!(f.set_real.unwrap()(c, [2].as_ptr(), 1, [t.sin()].as_ptr()), fmi2::OK);
            assert_eq!(f.do_step.unwrap()(c, t, h, 1), fmi2::OK);
            assert_eq!(f.get_real.unwrap()(c, [0, 3].as_ptr(), 2, reals.as_mut_ptr()), fmi2::OK);
            assert_eq!(f.get_integer.unwrap()(c, [4].as_ptr(), 1, n.as_mut_ptr()), fmi2::OK);
            assert_eq!(f.get_boolean.unwrap()(c, [5].as_ptr(), 1, positive.as_mut_ptr()), fmi2::OK);
        }
        reals[0] + reals[1] + f64::from(n[0] + positive[0])
    }
}

impl Drop for Loaded {
    fn drop(&mut self) {
        // SAFETY: the live instance, freed once.
        unsafe {
            self.functions.terminate.unwrap()(self.component);
            self.functions.free_instance.unwrap()(self.component);
        }
    }
}

/// The bare server: replies to `step` with the parts of the proxy's step reply.
fn serve_bare() {
    let mut functions = Functions::new("bare")
        .with("step", |_, reply| {
            reply.i64(1)?;
            reply.bytes(0)?;
            reply.f64(2)?;
            reply.i64(1)?;
            reply.i64(1)?;
            reply.bytes(0)?;
            Ok(())
        })
        .unwrap();
    serve_stdio(&mut functions, &StdioOptions::default()).unwrap();
}

/// The bare client: the parts of the proxy's step request out, its reply's back.
struct Bare {
    peer: Peer,
}

impl Bare {
    fn step(&mut self, t: f64, h: f64) -> f64 {
        let none: [i64; 0] = [];
        let (vr, u, times) = ([2i64], [t.sin()], [t, h]);
        let inputs = [
            Part::i64(&vr),
            Part::f64(&u),
            Part::i64(&none),
            Part::i64(&none),
            Part::i64(&none),
            Part::i64(&none),
            Part::bytes(&[]),
            Part::f64(&times),
            Part::i64(&[1]),
        ];
        let (mut status, mut log, mut reals, mut n, mut positive, mut strings) =
            ([0i64], [0u8; 0], [0.0; 2], [0i64], [0i64], [0u8; 0]);
        let mut outputs = [
            PartMut::i64(&mut status),
            PartMut::bytes(&mut log),
            PartMut::f64(&mut reals),
            PartMut::i64(&mut n),
            PartMut::i64(&mut positive),
            PartMut::bytes(&mut strings),
        ];
        self.peer.call_parts("step", &inputs, &mut outputs).expect("bare step");
        reals[0] + reals[1] + (n[0] + positive[0]) as f64
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    if std::env::var_os(SERVER_VAR).is_some() {
        serve_bare();
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    let (Some(original), Some(proxy)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: fmu_step_bench ORIGINAL.fmu PROXY.fmu [ROUNDS] [STEPS]");
        std::process::exit(2);
    };
    let rounds: usize = args.get(3).map_or(40, |r| r.parse().expect("ROUNDS"));
    let steps: usize = args.get(4).map_or(500, |s| s.parse().expect("STEPS"));
    let inside = Loaded::new(Path::new(original));
    let through = Loaded::new(Path::new(proxy));
    let mut server = std::process::Command::new(std::env::current_exe().unwrap());
    server.env(SERVER_VAR, "1");
    let mut bare = Bare { peer: Peer::spawn(server, Options::default()).expect("bare server") };
    let names = ["in process", "proxy", "bare round trip"];
    let mut per_round: [Vec<f64>; 3] = Default::default();
    let mut excess = Vec::new();
    let (mut t, h, mut sink) = (0.0, 1e-3, 0.0);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut samples = vec![0.0; steps];
    for round in 0..rounds + 2 {
        let mut order = [0usize, 1, 2];
        for i in (1..3).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            order.swap(i, (seed % (i as u64 + 1)) as usize);
        }
        let mut p50 = [0.0; 3];
        for &kind in &order {
            for sample in samples.iter_mut() {
                let started = Instant::now();
                sink += match kind {
                    0 => inside.step(t, h),
                    1 => through.step(t, h),
                    _ => bare.step(t, h),
                };
                *sample = started.elapsed().as_nanos() as f64 / 1e3;
                t += h;
            }
            p50[kind] = median(&mut samples);
        }
        if round >= 2 {
            // The first two rounds warm up.
            for kind in 0..3 {
                per_round[kind].push(p50[kind]);
            }
            excess.push((p50[1] - p50[0]) / p50[2]);
        }
    }
    println!("{rounds} rounds of {steps} steps of each kind, interleaved (sink {sink:.3e})");
    println!("{:<18} {:>10} {:>22}", "per step", "p50 (us)", "rounds' range (us)");
    let mut medians = [0.0; 3];
    for kind in 0..3 {
        let values = &mut per_round[kind];
        medians[kind] = median(values);
        let (low, high) = (values[0], values[values.len() - 1]);
        println!("{:<18} {:>10.2} {:>10.2} – {:<10.2}", names[kind], medians[kind], low, high);
    }
    let ratio = median(&mut excess);
    println!(
        "(proxy − in process) / bare: median {ratio:.2}, rounds {:.2} – {:.2}; limit 1.30: {}",
        excess[0],
        excess[excess.len() - 1],
        if ratio <= 1.3 { "met" } else { "MISSED" }
    );
    bare.peer.close().expect("close the bare server");
}

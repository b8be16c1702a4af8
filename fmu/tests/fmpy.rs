//! FMPy simulates proxy FMUs made by `peer fmu wrap`: the C FMUs of tests/fmpy/decay.c (FMI
//! 2.0) and decay3.c (FMI 3.0), compiled here against the FMI headers FMPy ships, and the
//! pythonfmu FMU of tests/fmpy/Integrator.py, bit-identical to the originals in process; four
//! instances of each once-per-process C FMU at once; a server killed, a server stalled past the timeout, an
//! importer killed mid-run, one of its servers inside a step that never ends — nothing left
//! behind; the servers on another node of a Slurm cluster, or started by ssh. The checks themselves are
//! tests/fmpy/fmu_check.py's, run with `$PEERPIPE_PYTHON` (default `python3`), which must have
//! fmpy and pythonfmu (fmu/tests/requirements.txt): without them these tests are skipped,
//! unless `PEERPIPE_REQUIRE_TOOLS=1`, when they fail.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::leftovers::{self, launch};
use common::slurm::cluster_or_skip;
use common::sshd::REQUIRE_TOOLS_VAR;
use common::sshd::sshd_or_skip;
use nix::sys::signal::Signal;

/// The fixtures, built once per test binary.
struct Fixtures {
    python: String,
    peer: String,
    library: String,
    dir: PathBuf,
}

impl Fixtures {
    fn fmu(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// `python3 fmu_check.py ARGS` with `envs`: panics with its output unless it succeeds.
    fn check(&self, args: &[&str], envs: &[(&str, &str)]) -> String {
        let mut command = Command::new(&self.python);
        command.envs(envs.iter().copied());
        self.check_with(command, args)
    }

    /// [`Fixtures::check`] with `command` (this Python, started somehow).
    fn check_with(&self, mut command: Command, args: &[&str]) -> String {
        command.arg(script()).args(args);
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run fmu_check.py");
        let status = common::wait_or_kill(&mut child, Duration::from_secs(180), "fmu_check.py");
        let mut out = String::new();
        let mut err = String::new();
        use std::io::Read;
        child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(status.success(), "fmu_check.py {args:?}: {status}\n{out}\n{err}");
        print!("{out}");
        out
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fmpy/fmu_check.py")
}

/// The fixtures, or `None` (skipped) when Python lacks fmpy or pythonfmu and tools are not
/// required.
fn fixtures() -> Option<&'static Fixtures> {
    static FIXTURES: OnceLock<Option<Fixtures>> = OnceLock::new();
    FIXTURES.get_or_init(build_fixtures).as_ref()
}

fn build_fixtures() -> Option<Fixtures> {
    let python = std::env::var("PEERPIPE_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python).args(["-c", "import fmpy, pythonfmu, numpy"]).output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        let message = format!(
            "{python} cannot import fmpy and pythonfmu (pip install -r fmu/tests/requirements.txt)"
        );
        if std::env::var(REQUIRE_TOOLS_VAR).as_deref() == Ok("1") {
            panic!("{message}, and {REQUIRE_TOOLS_VAR}=1 requires them");
        }
        eprintln!("skipped: {message}");
        return None;
    }
    let peer = common::peer_exe().to_owned();
    let library = common::build(&["-p", "peerpipe-fmu-proxy"], "libpeerpipe_fmu_proxy.so");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fmu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fixtures = Fixtures { python, peer, library, dir };
    fixtures.check(&["build-c", &fixtures.fmu("decay.fmu")], &[]);
    fixtures.check(&["build-c3", &fixtures.fmu("decay3.fmu")], &[]);
    fixtures.check(&["build-python", &fixtures.dir.display().to_string()], &[]);
    for name in ["decay", "Integrator", "decay3"] {
        let status = Command::new(&fixtures.peer)
            .args(["fmu", "wrap", "--proxy-library", &fixtures.library])
            .arg(fixtures.fmu(&format!("{name}.fmu")))
            .arg(fixtures.fmu(&format!("{name}-proxy.fmu")))
            .status()
            .expect("run peer fmu wrap");
        assert!(status.success(), "peer fmu wrap {name}: {status}");
    }
    Some(fixtures)
}

#[test]
fn fmpy_results_through_the_proxy_are_bit_identical_to_in_process() {
    let Some(f) = fixtures() else { return };
    for name in ["decay", "Integrator", "decay3"] {
        let out = f.check(
            &["compare", &f.fmu(&format!("{name}.fmu")), &f.fmu(&format!("{name}-proxy.fmu"))],
            &[],
        );
        assert!(out.contains("bit-identical"), "{out}");
    }
}

#[test]
fn four_instances_of_a_once_per_process_fmu_run_together() {
    let Some(f) = fixtures() else { return };
    for name in ["decay", "decay3"] {
        let (original, proxy) =
            (f.fmu(&format!("{name}.fmu")), f.fmu(&format!("{name}-proxy.fmu")));
        let out = f.check(&["instances", &original, &proxy, "4"], &[]);
        assert!(out.contains("4 instances at once"), "{out}");
    }
}

#[test]
fn a_killed_or_stalled_server_fails_the_next_call_with_a_message() {
    let Some(f) = fixtures() else { return };
    f.check(&["kill", &f.fmu("decay-proxy.fmu")], &[]);
    f.check(&["kill", &f.fmu("decay3-proxy.fmu")], &[]);
    f.check(&["stall", &f.fmu("decay-proxy.fmu")], &[("PEERPIPE_FMU_TIMEOUT", "1s")]);
}

#[test]
fn an_importer_killed_mid_run_leaves_no_server() {
    let Some(f) = fixtures() else { return };
    let ready = f.dir.join(format!("ready-{}", std::process::id()));
    let _ = std::fs::remove_file(&ready);
    let mut command = Command::new(&f.python);
    command.arg(script()).args(["hold", &f.fmu("decay-proxy.fmu"), "3"]);
    command.env("FMU_CHECK_READY", &ready);
    let tag = leftovers::new_tag("fmu");
    let mut run = launch(command, &tag);
    let until = Instant::now() + Duration::from_secs(60);
    while !ready.exists() && run.running() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let processes = leftovers::tagged(&tag);
    let ending = run.end(Some(Signal::SIGKILL));
    assert!(ready.exists(), "the importer never got ready: {}", ending.stderr);
    assert!(processes.len() >= 4, "expected the importer and 3 servers, found {processes:?}");
    assert!(ending.leftovers.is_empty(), "left behind: {:?}", ending.leftovers);
    // Nor what the servers unpacked: each removes its copy of the FMU as it goes.
    let temp = std::env::temp_dir();
    let unpacked: Vec<_> = std::fs::read_dir(&temp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            processes.iter().any(|p| name.starts_with(&format!("peerpipe-fmu-{}-", p.pid)))
        })
        .collect();
    assert!(unpacked.is_empty(), "left in {}: {unpacked:?}", temp.display());
}

#[test]
fn bad_input_gets_a_clear_error() {
    let Some(f) = fixtures() else { return };
    let wrap = |model: &str| {
        let out = Command::new(&f.peer)
            .args(["fmu", "wrap", model, &f.fmu("never.fmu")])
            .output()
            .expect("run peer fmu wrap");
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let missing = wrap(&f.fmu("missing.fmu"));
    assert!(missing.contains("missing.fmu: no such FMU"), "{missing}");
    let xml =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fmpy/decay.xml"))
            .unwrap()
            .replace("<CoSimulation", "<ModelExchange");
    let me_only = f.dir.join("me-only.fmu");
    peerpipe_fmu::archive::write(&me_only, &[("modelDescription.xml", xml.as_bytes())]).unwrap();
    let refused = wrap(&me_only.display().to_string());
    assert!(refused.contains("model exchange only"), "{refused}");
    let served = Command::new(&f.peer)
        .args(["fmu", "serve"])
        .arg(&me_only)
        .output()
        .expect("run peer fmu serve");
    assert_eq!(served.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&served.stderr).contains("model exchange only"));
}

/// A proxy whose servers run on another node of a Slurm cluster (the two-node cluster of
/// tests/common/slurm.rs: `srun -w n1`, tcp), FMPy on the first: results bit-identical, the
/// FMU instantiated on `n1`, nothing left in the queue or on the nodes.
#[test]
fn a_slurm_node_is_the_servers_home() {
    let Some(f) = fixtures() else { return };
    let Some(cluster) = cluster_or_skip() else { return };
    let proxy = f.fmu("decay-slurm.fmu");
    let status = Command::new(&f.peer)
        .args(["fmu", "wrap", "--transport", "tcp", "--timeout", "20s", "--peer", &f.peer])
        .args(["--server", &format!("{} -w n1 -N1 -n1", cluster.srun())])
        .args(["--proxy-library", &f.library, &f.fmu("decay.fmu"), &proxy])
        .status()
        .expect("run peer fmu wrap");
    assert!(status.success(), "peer fmu wrap --server srun: {status}");
    let command = cluster.command_on_n0(&f.python);
    let out = f.check_with(command, &["compare", &f.fmu("decay.fmu"), &proxy]);
    assert!(out.contains("bit-identical"), "{out}");
    assert!(out.contains(" on n1'"), "the FMU was not instantiated on n1: {out}");
    let queue = cluster.wait_queue_empty(Duration::from_secs(20));
    assert_eq!(queue, "", "jobs left in the queue");
    let (left, what) = cluster.wait_nothing_left("fmu serve", Duration::from_secs(10));
    assert!(left.is_empty(), "servers left on the nodes: {what}");
}

/// A proxy whose servers ssh starts (`--server "ssh …"`, frames over the ssh channel's pipes):
/// results bit-identical; an importer holding three instances, one inside a step that never
/// ends, killed — no remote server left.
#[test]
fn ssh_starts_the_servers() {
    let Some(f) = fixtures() else { return };
    let Some(sshd) = sshd_or_skip() else { return };
    let proxy = f.fmu("decay-ssh.fmu");
    let launcher = format!("exec {} {}", sshd.ssh_prefix(), sshd.remote(""));
    let status = Command::new(&f.peer)
        .args(["fmu", "wrap", "--timeout", "20s", "--peer", &f.peer, "--server", &launcher])
        .args(["--proxy-library", &f.library, &f.fmu("decay.fmu"), &proxy])
        .status()
        .expect("run peer fmu wrap");
    assert!(status.success(), "peer fmu wrap --server ssh: {status}");
    let out = f.check(&["compare", &f.fmu("decay.fmu"), &proxy], &[]);
    assert!(out.contains("bit-identical"), "{out}\nsshd log:\n{}", sshd.log());
    // An importer holding three instances: three servers came through the daemon, and all
    // go when the importer is killed.
    let ready = f.dir.join(format!("ready-ssh-{}", std::process::id()));
    let _ = std::fs::remove_file(&ready);
    let mut command = Command::new(&f.python);
    command.arg(script()).args(["hold", &proxy, "3"]).env("FMU_CHECK_READY", &ready);
    let tag = leftovers::new_tag("fmu-ssh");
    let mut run = launch(command, &tag);
    let until = Instant::now() + Duration::from_secs(60);
    while !ready.exists() && run.running() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let remote = sshd.remote_pids();
    let ending = run.end(Some(Signal::SIGKILL));
    assert!(ready.exists(), "the importer never got ready: {}", ending.stderr);
    assert_eq!(remote.len(), 3, "expected 3 servers started by sshd, found {remote:?}");
    assert!(ending.leftovers.is_empty(), "left behind: {:?}", ending.leftovers);
    let left = sshd.wait_remote_gone(Duration::from_secs(10));
    assert!(left.is_empty(), "remote servers left: {left:?}");
}

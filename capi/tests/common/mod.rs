//! Helpers of the C ABI tests: finding tools, the built library and the `peer` binary,
//! compiling C and Fortran programs against the library, and running children with a
//! deadline (killed when it passes, so no test hangs).
//!
//! Each test binary compiles this module separately and uses only part of it.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// When set to 1 (as `.ci/run` does), a missing tool fails the test instead of skipping it.
pub const REQUIRE_TOOLS_VAR: &str = "PEERPIPE_REQUIRE_TOOLS";

/// Whether `tool` is on `PATH`. When it is not, prints `skipped: …` and returns false — or,
/// with `PEERPIPE_REQUIRE_TOOLS=1`, fails the test with the same message.
pub fn have(tool: &str) -> bool {
    if find_on_path(tool).is_some() {
        return true;
    }
    let message = format!("skipped: {tool} not installed (bash .ci/run installs it)");
    if std::env::var(REQUIRE_TOOLS_VAR).as_deref() == Ok("1") {
        panic!("{message}, and {REQUIRE_TOOLS_VAR}=1 requires it");
    }
    println!("{message}");
    false
}

fn find_on_path(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(tool)).find(|candidate| candidate.is_file())
}

/// `capi/`.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The header's directory, `capi/include`.
pub fn include_dir() -> PathBuf {
    crate_dir().join("include")
}

/// `target/<profile>`: the directory of this test binary's `deps/` (honours
/// `CARGO_TARGET_DIR`), where cargo puts `libpeerpipe.so`, `libpeerpipe.a` and `peer`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf()
}

/// The directory holding the freshly built `libpeerpipe.so` and `libpeerpipe.a`.
pub fn lib_dir() -> PathBuf {
    build_artifacts();
    profile_dir()
}

/// Where the tests put what they compile: `target/<profile>/capi-tests`.
pub fn build_dir() -> PathBuf {
    let dir = profile_dir().join("capi-tests");
    std::fs::create_dir_all(&dir).expect("create target/<profile>/capi-tests");
    dir
}

/// The `peer` binary (package `peerpipe-cli`), in the same profile.
pub fn peer_exe() -> PathBuf {
    build_artifacts();
    profile_dir().join("peer")
}

/// Builds, once per test binary, what the C programs need and cargo does not build for
/// integration tests: this package's cdylib and staticlib (nothing in Rust links them) and
/// the `peer` binary of `peerpipe-cli` — `cargo build -p peerpipe-cli -p peerpipe-capi --lib
/// --bin peer` in the same profile and target directory, so they are never stale or missing.
fn build_artifacts() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = profile_dir();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command.args(["build", "--quiet", "-p", "peerpipe-cli", "-p", "peerpipe-capi"]);
        command.args(["--lib", "--bin", "peer"]);
        command.current_dir(crate_dir().parent().expect("the repository"));
        match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some("release") => {
                command.arg("--release");
            }
            Some(other) => {
                command.args(["--profile", other]);
            }
            None => panic!("unexpected target directory {}", dir.display()),
        }
        if let Some(target_dir) = dir.parent() {
            command.env("CARGO_TARGET_DIR", target_dir);
        }
        let mut child = command.spawn().expect("run cargo build");
        let status = wait_or_kill(&mut child, Duration::from_secs(900), "cargo build");
        assert!(status.success(), "cargo build of libpeerpipe and peer failed: {status}");
        for name in ["libpeerpipe.so", "libpeerpipe.a", "peer"] {
            assert!(
                dir.join(name).is_file(),
                "{} missing after cargo build",
                dir.join(name).display()
            );
        }
    });
}

/// Flags every C program of the tests is compiled with: strict, with debug info for
/// valgrind's reports.
const C_FLAGS: [&str; 7] =
    ["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Werror", "-g", "-O1"];

/// Compiles `source` (relative to `capi/`) into an executable linked with
/// `-lpeerpipe` (shared, with an rpath to it), once per test binary; returns its path.
pub fn compile_c(source: &str) -> PathBuf {
    compile(source, "cc", |command, out| {
        command.args(C_FLAGS).arg("-I").arg(include_dir()).arg(crate_dir().join(source));
        link_shared(command);
        command.arg("-o").arg(out);
    })
}

/// Compiles a Fortran `source` (relative to `capi/`) with gfortran, linked with
/// `-lpeerpipe`; returns its path.
pub fn compile_fortran(source: &str) -> PathBuf {
    compile(source, "gfortran", |command, out| {
        command.args(["-std=f2008", "-Wall", "-Werror", "-g", "-O1", "-J"]).arg(build_dir());
        command.arg(crate_dir().join(source));
        link_shared(command);
        command.arg("-o").arg(out);
    })
}

fn link_shared(command: &mut Command) {
    let lib = lib_dir();
    command.arg("-L").arg(&lib).arg("-lpeerpipe");
    command.arg(format!("-Wl,-rpath,{}", lib.display()));
}

/// Runs `compiler` once per (test binary, `source` key), under a lock so parallel tests share
/// the result; `args` adds the arguments, given the output path.
pub fn compile(source: &str, compiler: &str, args: impl FnOnce(&mut Command, &Path)) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = built.get(source) {
        return path.clone();
    }
    let stem = source.replace(['/', '.', '#'], "_");
    let test = std::env::current_exe().ok().and_then(|e| e.file_stem().map(|s| s.to_owned()));
    let test = test.and_then(|s| s.into_string().ok()).unwrap_or_default();
    let out = build_dir().join(format!("{stem}-{test}"));
    let mut command = Command::new(compiler);
    args(&mut command, &out);
    let output = run(command, Duration::from_secs(120), compiler);
    assert!(
        output.status.success(),
        "{compiler} {source} failed ({}):\n{}{}",
        output.status,
        output.stdout,
        output.stderr
    );
    built.insert(source.to_owned(), out.clone());
    out
}

/// What a finished child printed.
#[derive(Debug)]
pub struct Output {
    /// How it ended.
    pub status: ExitStatus,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

impl Output {
    /// Panics, showing both streams, unless the child exited 0.
    pub fn assert_success(&self, what: &str) -> &Output {
        assert!(
            self.status.success(),
            "{what} failed ({}):\n--- stdout\n{}--- stderr\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Runs `command` with stdout and stderr captured and stdin empty; kills it when it has not
/// exited within `limit`. Fails when a process it started still holds its stdout or stderr
/// 10 s after it exited (a server left behind).
pub fn run(mut command: Command, limit: Duration, what: &str) -> Output {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap_or_else(|e| panic!("starting {what}: {e}"));
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let status = wait_or_kill(&mut child, limit, what);
    let collect = |stream: mpsc::Receiver<String>, name: &str| {
        stream.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| {
            panic!("{what} exited ({status}) but something it started still holds its {name}")
        })
    };
    Output { status, stdout: collect(stdout, "stdout"), stderr: collect(stderr, "stderr") }
}

fn drain(mut stream: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (done, text) = mpsc::channel();
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        let _ = done.send(String::from_utf8_lossy(&bytes).into_owned());
    });
    text
}

/// Waits for `child` at most `limit`; kills and reaps it and fails the test when it has not
/// exited by then (the project's pattern, as in the root crate's `tests/common`).
pub fn wait_or_kill(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not exit within {limit:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

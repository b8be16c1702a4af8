//! Helpers shared by the cross-process tests: a watchdog that turns a hang into an abort, raw
//! frame builders and readers, descriptor and child-process counters, and the misbehaving
//! servers that the tests start by re-executing their own test binary.
//!
//! Each test binary compiles this module separately and uses only part of it.
#![allow(dead_code)]

pub mod leftovers;
pub mod server;
pub mod slurm;
pub mod sshd;

use std::fs;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use peerpipe::frame::{self, Dtype, HEADER_LEN, Header, Hello, Kind, encode_frame};
use peerpipe::transport::{Deadline, Transport, TransportKind, Wait};

/// Environment variable that turns `misbehaving_server_entry` into a server.
pub const MISBEHAVE_VAR: &str = "PEERPIPE_MISBEHAVE";

/// Environment variable naming the transport a misbehaving server speaks (`pipe`, `shm-sem` or
/// `shm-ring`; `pipe` when unset). The client must spawn it with the same
/// `Options::transport`.
pub const TRANSPORT_VAR: &str = "PEERPIPE_MISBEHAVE_TRANSPORT";

/// Environment variable naming the pid of the test process that started a misbehaving server,
/// so a test can find its own servers (and only those) anywhere in `/proc`.
pub const OWNER_VAR: &str = "PEERPIPE_MISBEHAVE_OWNER";

/// The `peer` binary of the `peerpipe-cli` package, in this test binary's profile and target
/// directory. The core's tests cannot name it with `CARGO_BIN_EXE_peer` (it belongs to another
/// package), so the first call builds it — `cargo build -p peerpipe-cli --bin peer`, a no-op
/// when it is fresh — and the path is then reused by every test of the binary. Panics when
/// the build fails.
pub fn peer_exe() -> &'static str {
    static PEER: OnceLock<String> = OnceLock::new();
    PEER.get_or_init(build_peer)
}

/// Runs [`peer_exe`] with `args` to its end, its output captured.
pub fn run_peer(args: &[&str]) -> std::process::Output {
    Command::new(peer_exe()).args(args).output().expect("run peer")
}

/// Bytes a process wrote, as text (invalid UTF-8 replaced).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh, empty directory under the system temp dir, named after `prefix`, this process,
/// a count of calls and `name`: unique per process and call. The test removes it.
pub fn temp_dir(prefix: &str, name: &str) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let count = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("{prefix}-{}-{count}-{name}", std::process::id()));
    fs::create_dir_all(&dir).expect("create a temp dir");
    dir
}

/// The example `name` of this package (`examples/NAME.rs`), built as [`peer_exe`] builds
/// `peer`: `cargo build --example NAME` in this test binary's profile and target directory.
pub fn example_exe(name: &str) -> String {
    build(&["--example", name], &format!("examples/{name}"))
}

fn build_peer() -> String {
    build(&["-p", "peerpipe-cli", "--bin", "peer"], "peer")
}

/// `cargo build --quiet ARGS` for this test binary's profile and target directory; returns
/// the path of `OUTPUT` under the profile's directory.
pub fn build(args: &[&str], output: &str) -> String {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test binary>
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(["build", "--quiet"]).args(args);
    command.current_dir(env!("CARGO_MANIFEST_DIR"));
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => {}
        Some("release") => {
            command.arg("--release");
        }
        Some(other) => {
            command.args(["--profile", other]);
        }
        None => panic!("unexpected target directory {}", profile_dir.display()),
    }
    if let Some(target_dir) = profile_dir.parent() {
        command.env("CARGO_TARGET_DIR", target_dir);
    }
    let mut child = command.spawn().expect("run cargo build");
    let status = wait_or_kill(&mut child, Duration::from_secs(900), "cargo build");
    assert!(status.success(), "cargo build {} failed: {status}", args.join(" "));
    let built = profile_dir.join(output);
    assert!(built.is_file(), "{} missing after cargo build", built.display());
    built.into_os_string().into_string().expect("a UTF-8 target directory")
}

// ---------------------------------------------------------------------------------------------
// Watchdog
// ---------------------------------------------------------------------------------------------

/// Aborts the whole test binary when the test that created it has not dropped it within the
/// limit, naming the test, so a stuck pipe fails fast instead of stalling CI (iceoryx2's
/// `Watchdog`). Create it first thing in a test: `let _watchdog = Watchdog::new(secs(20));`.
/// The limit counts from after [`peer_exe`] has been built: a `cargo build` that feature
/// unification turns into a rebuild takes minutes on a busy machine, and is no test's time.
#[derive(Debug)]
pub struct Watchdog {
    done: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts watching the current test (named after the current thread, as libtest names
    /// its test threads).
    pub fn new(limit: Duration) -> Watchdog {
        peer_exe();
        let test = thread::current().name().unwrap_or("<unnamed test>").to_owned();
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let watched = Arc::clone(&done);
        let thread = thread::Builder::new()
            .name(format!("watchdog for {test}"))
            .spawn(move || {
                let (flag, signal) = &*watched;
                let until = Instant::now() + limit;
                let mut finished = flag.lock().unwrap_or_else(|e| e.into_inner());
                while !*finished {
                    let now = Instant::now();
                    if now >= until {
                        // Straight to fd 2: libtest captures `eprintln!` in test threads (and
                        // threads they spawn), and the capture is lost on abort.
                        let _ = writeln!(
                            io::stderr(),
                            "watchdog: test `{test}` did not finish within {limit:?}; \
                             aborting the test binary"
                        );
                        std::process::abort();
                    }
                    finished = signal
                        .wait_timeout(finished, until - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            })
            .expect("spawn the watchdog thread");
        Watchdog { done, thread: Some(thread) }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let (flag, signal) = &*self.done;
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
        signal.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Generates, for each `name` given, a module `name` of three tests, `pipe`, `shm_sem` and
/// `shm_ring`, each calling the function `name(kind: TransportKind)` of the enclosing module
/// with its transport (a module and a function may share a name), so that a failure names
/// the transport (`name::shm_ring`) and `cargo test shm_sem` runs one transport.
#[allow(unused_macros)]
macro_rules! per_transport {
    ($($name:ident),+ $(,)?) => {$(
        transport_tests!($name: pipe Pipe, shm_sem ShmSem, shm_ring ShmRing);
    )+};
}

/// Like [`per_transport!`], and a fourth test `NAME::tcp`: for the tests of a client that
/// spawns its server, which over `tcp` listens on loopback and is connected to (see
/// `PROTOCOL.md` §14).
#[allow(unused_macros)]
macro_rules! per_transport_and_tcp {
    ($($name:ident),+ $(,)?) => {$(
        transport_tests!($name: pipe Pipe, shm_sem ShmSem, shm_ring ShmRing, tcp Tcp);
    )+};
}

/// The module `name` of [`per_transport!`]: one test per `test Kind` pair.
#[allow(unused_macros)]
macro_rules! transport_tests {
    ($name:ident: $($test:ident $kind:ident),+) => {
        mod $name {
            $(
                #[test]
                fn $test() {
                    super::$name(peerpipe::transport::TransportKind::$kind)
                }
            )+
        }
    };
}

/// `Duration::from_secs`, shorter.
pub const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Takes `lock` even when an earlier test panicked while holding it.
pub fn serialize(lock: &Mutex<()>) -> MutexGuard<'_, ()> {
    lock.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------------
// Descriptors and child processes
// ---------------------------------------------------------------------------------------------

/// Number of open descriptors of this process (the entries of `/proc/self/fd`, not counting
/// the one the listing itself uses).
pub fn open_fds() -> usize {
    fs::read_dir("/proc/self/fd").expect("list /proc/self/fd").count() - 1
}

/// Descriptors of this process with what they point at, for failure messages.
pub fn describe_fds() -> Vec<String> {
    let mut out = Vec::new();
    for entry in fs::read_dir("/proc/self/fd").expect("list /proc/self/fd").flatten() {
        let target = fs::read_link(entry.path()).map(|p| p.display().to_string());
        out.push(format!(
            "{} -> {}",
            entry.file_name().to_string_lossy(),
            target.unwrap_or_default()
        ));
    }
    out.sort();
    out
}

/// A process whose parent is this process: live, or a zombie not yet reaped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildProc {
    /// Its pid.
    pub pid: i32,
    /// The state letter of `/proc/PID/stat` (`Z` for a zombie).
    pub state: char,
    /// Its command name.
    pub comm: String,
}

/// Every process whose parent is this process, found by scanning `/proc/*/stat`.
pub fn child_processes() -> Vec<ChildProc> {
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else { return out };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        // The process may vanish between the listing and the read.
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        if let Some((state, ppid, comm)) = parse_stat(&stat)
            && ppid == me
        {
            out.push(ChildProc { pid, state, comm });
        }
    }
    out
}

/// (state, ppid, comm) from a `/proc/PID/stat` line; comm may contain spaces and parentheses.
fn parse_stat(stat: &str) -> Option<(char, i32, String)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_owned();
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((state, ppid, comm))
}

/// True while `pid` is a child of this process (alive or an unreaped zombie).
pub fn is_our_child(pid: u32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    parse_stat(&stat).is_some_and(|(_, ppid, _)| ppid == std::process::id() as i32)
}

// ---------------------------------------------------------------------------------------------
// Frames
// ---------------------------------------------------------------------------------------------

/// 32 header bytes laid out field by field, so invalid headers can be built.
#[allow(clippy::too_many_arguments)]
pub fn raw_header(
    magic: &[u8; 4],
    version: u8,
    kind: u8,
    dtype: u8,
    flags: u8,
    seq: u64,
    count: u64,
    aux: u64,
) -> [u8; HEADER_LEN] {
    let mut out = [0u8; HEADER_LEN];
    out[..4].copy_from_slice(magic);
    out[4] = version;
    out[5] = kind;
    out[6] = dtype;
    out[7] = flags;
    out[8..16].copy_from_slice(&seq.to_le_bytes());
    out[16..24].copy_from_slice(&count.to_le_bytes());
    out[24..32].copy_from_slice(&aux.to_le_bytes());
    out
}

/// A complete DATA frame.
pub fn data_frame(seq: u64, dtype: Dtype, count: u64, payload: &[u8]) -> Vec<u8> {
    encode_frame(&Header::data(seq, dtype, count), payload)
}

/// A complete control frame (HELLO, ERROR, BYE) with a byte payload.
pub fn control_frame(kind: Kind, seq: u64, payload: &[u8]) -> Vec<u8> {
    encode_frame(&Header::control(kind, seq, payload.len() as u64), payload)
}

/// A client HELLO announcing `max_frame_bytes`.
pub fn client_hello(max_frame_bytes: u64) -> Vec<u8> {
    let hello = Hello {
        max_frame_bytes,
        implementation: Some("peerpipe-tests 0".into()),
        ..Hello::default()
    };
    control_frame(Kind::Hello, 0, &hello.to_payload())
}

/// A server HELLO as `peer --role server --handler HANDLER` would write it.
pub fn server_hello(handler: &str) -> Vec<u8> {
    let hello = Hello::server(frame::DEFAULT_MAX_FRAME_BYTES, handler);
    control_frame(Kind::Hello, 0, &hello.to_payload())
}

/// A BYE.
pub fn bye(seq: u64) -> Vec<u8> {
    control_frame(Kind::Bye, seq, &[])
}

/// A frame as it came off the wire.
#[derive(Clone, Debug)]
pub struct RawFrame {
    /// The 32 header bytes.
    pub raw: [u8; HEADER_LEN],
    /// The validated header.
    pub header: Header,
    /// The payload, without padding.
    pub payload: Vec<u8>,
}

impl RawFrame {
    /// The payload as text (ERROR messages, HELLO lines).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.payload).into_owned()
    }
}

/// Reads one frame, validating the header (any size) and checking the padding is zero.
/// `Ok(None)` at end of stream before the first byte; an error for anything cut short.
pub fn read_frame(reader: &mut impl Read) -> io::Result<Option<RawFrame>> {
    let mut raw = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        match reader.read(&mut raw[got..])? {
            0 if got == 0 => return Ok(None),
            0 => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("stream ended inside a header after {got} bytes"),
                ));
            }
            n => got += n,
        }
    }
    let header = Header::parse(&raw, u64::MAX)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    let len = header.payload_bytes().expect("validated") as usize;
    let mut body = vec![0u8; len + frame::padding_len(len)];
    reader.read_exact(&mut body)?;
    frame::check_padding(&body[len..])
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    body.truncate(len);
    Ok(Some(RawFrame { raw, header, payload: body }))
}

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

pub use peerpipe::codec::{F32_EDGE_BITS, F64_EDGE_BITS};

/// The f64 edge values.
pub fn f64_edges() -> Vec<f64> {
    F64_EDGE_BITS.iter().map(|&b| f64::from_bits(b)).collect()
}

/// The f32 edge values.
pub fn f32_edges() -> Vec<f32> {
    F32_EDGE_BITS.iter().map(|&b| f32::from_bits(b)).collect()
}

/// `n` deterministic pseudo-random f64 values in about [-10, 10).
pub fn pseudo_random_f64(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            // xorshift64*
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let bits = state.wrapping_mul(0x2545_f491_4f6c_dd1d);
            (bits >> 11) as f64 / (1u64 << 53) as f64 * 20.0 - 10.0
        })
        .collect()
}

/// Bit patterns of f64 values, for exact comparisons that treat NaNs as data.
pub fn bits64(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// Bit patterns of f32 values.
pub fn bits32(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

// ---------------------------------------------------------------------------------------------
// Misbehaving servers (re-executions of the test binary)
// ---------------------------------------------------------------------------------------------

/// A shell command line that re-executes the current test binary as the misbehaving server
/// `mode` over pipes; see [`misbehaving_shell_line_on`].
pub fn misbehaving_shell_line(mode: &str, stderr_to: Option<&Path>) -> String {
    misbehaving_shell_line_on(TransportKind::Pipe, mode, stderr_to)
}

/// A shell command line that re-executes the current test binary as the misbehaving server
/// `mode` speaking `kind` (the client must spawn it with the same transport): `exec` keeps
/// the pid (so terminating it leaves no grandchild), fd 3 carries the protocol out (over
/// shared memory: the liveness pipe), and the test harness's own printing on fd 1 goes to
/// `/dev/null` so it cannot reach the client. With `stderr_to`, the child's stderr goes to
/// that file.
pub fn misbehaving_shell_line_on(
    kind: TransportKind,
    mode: &str,
    stderr_to: Option<&Path>,
) -> String {
    let exe = std::env::current_exe().expect("current_exe");
    let stderr = stderr_to.map_or(String::new(), |path| format!(" 2>{}", shell_quote(path)));
    format!(
        "exec env {MISBEHAVE_VAR}={mode} {TRANSPORT_VAR}={kind} {OWNER_VAR}={owner} {exe} \
         misbehaving_server_entry --exact --nocapture -q 3>&1 1>/dev/null{stderr}",
        owner = std::process::id(),
        exe = shell_quote(&exe),
    )
}

fn shell_quote(path: &Path) -> String {
    let text = path.to_str().expect("UTF-8 path");
    assert!(!text.contains('\''), "path {text:?} cannot be single-quoted");
    format!("'{text}'")
}

/// `sh -c LINE` for [`misbehaving_shell_line`] (pipes), ready for `Peer::spawn`.
pub fn misbehaving_command(mode: &str, stderr_to: Option<&Path>) -> Command {
    misbehaving_command_on(TransportKind::Pipe, mode, stderr_to)
}

/// `sh -c LINE` for [`misbehaving_shell_line_on`], ready for `Peer::spawn` with
/// `Options { transport: kind, .. }`.
pub fn misbehaving_command_on(
    kind: TransportKind,
    mode: &str,
    stderr_to: Option<&Path>,
) -> Command {
    let mut command = Command::new("sh");
    command.arg("-c").arg(misbehaving_shell_line_on(kind, mode, stderr_to));
    command
}

/// `std::io::Read` over a transport, for [`read_frame`]: each read fills the whole buffer,
/// waiting up to the given timeout, unless the stream ends, so a short read, and then a read
/// of 0 bytes, mean end of stream. Timeouts and a closed peer map to `TimedOut` and
/// `BrokenPipe`.
pub struct TransportReader<'a>(pub &'a mut Transport, pub Duration);

impl Read for TransportReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.recv_exact(buf, Deadline::after(Some(self.1))).map_err(|e| {
            let kind = match e {
                peerpipe::Error::Timeout { .. } => io::ErrorKind::TimedOut,
                peerpipe::Error::PeerClosed { .. } => io::ErrorKind::BrokenPipe,
                _ => io::ErrorKind::Other,
            };
            io::Error::new(kind, format!("read from the peer: {e}"))
        })
    }
}

/// Body of each test binary's `misbehaving_server_entry` test: returns at once in a normal
/// test run; when started by [`misbehaving_command`], plays the server `mode` on the transport
/// named by [`TRANSPORT_VAR`], then exits the process.
pub fn misbehaving_server_entry() {
    let Ok(mode) = std::env::var(MISBEHAVE_VAR) else { return };
    let kind = match std::env::var(TRANSPORT_VAR) {
        Ok(name) => name.parse().unwrap_or_else(|e| panic!("{TRANSPORT_VAR}={name:?}: {e}")),
        Err(_) => TransportKind::Pipe,
    };
    misbehave(kind, &mode)
}

fn protocol_out() -> fs::File {
    // On Linux, opening /dev/fd/3 of a pipe opens that same pipe.
    fs::OpenOptions::new().write(true).open("/dev/fd/3").expect("open the protocol pipe /dev/fd/3")
}

/// Makes fd 3 (the client's pipe, moved out of the way of the harness's printing) this
/// process's stdout again, as it is for a real server, so `stdio_transport_of` finds it there.
fn protocol_pipe_to_stdout() {
    let out = protocol_out();
    nix::unistd::dup2_stdout(&out).expect("dup2 the protocol pipe onto fd 1");
}

/// The misbehaving server's end of the conversation, as a byte stream.
enum ServerWire {
    /// The client's frames come on stdin and go out on fd 3.
    Pipe(fs::File),
    /// A shared-memory transport from `stdio_transport_of`: the region was stdin, the
    /// liveness pipe fd 3 (moved to fd 1 first).
    Shm(Box<Transport>),
}

impl ServerWire {
    fn open(kind: TransportKind) -> ServerWire {
        if !kind.is_shared_memory() {
            return ServerWire::Pipe(protocol_out());
        }
        protocol_pipe_to_stdout();
        let transport = peerpipe::server::stdio_transport_of(kind, Wait::Block)
            .unwrap_or_else(|e| panic!("stdio_transport_of({kind}): {e}"));
        ServerWire::Shm(Box::new(transport))
    }
}

impl Read for ServerWire {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ServerWire::Pipe(_) => io::stdin().lock().read(buf),
            // Fills `buf` or stops at the end of the stream: enough for `read_frame`, and a
            // client that dies is seen through the liveness pipe.
            ServerWire::Shm(transport) => {
                transport.recv_exact(buf, Deadline::NEVER).map_err(io::Error::other)
            }
        }
    }
}

impl Write for ServerWire {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ServerWire::Pipe(out) => out.write(buf),
            ServerWire::Shm(transport) => {
                let deadline = Deadline::after(Some(Duration::from_secs(10)));
                transport.send_bytes(buf, deadline).map_err(io::Error::other)?;
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads until end of stream (the client went away), then exits: a server that says nothing
/// more but leaves when its client does, even if the test binary was aborted.
fn linger(wire: &mut ServerWire) -> ! {
    let _ = io::copy(wire, &mut io::sink());
    std::process::exit(0)
}

fn read_client_frame(wire: &mut ServerWire) -> RawFrame {
    match read_frame(wire) {
        Ok(Some(frame)) => frame,
        // The client gave up already: nothing left to do.
        _ => std::process::exit(0),
    }
}

fn misbehave(kind: TransportKind, mode: &str) -> ! {
    match mode {
        "exit-3" => std::process::exit(3),
        "noisy-echo" => noisy_echo(kind),
        _ => {}
    }
    let mut wire = ServerWire::open(kind);
    match mode {
        "silent" => linger(&mut wire),
        "garbage" => {
            let _ = wire.write_all(b"this is not a frame of wire format v1, it is just text\n");
            linger(&mut wire)
        }
        "half-header" => {
            // Wait for the client's HELLO first: exiting before the client has written it would
            // make the client's write fail (EPIPE) before it reads the truncated header.
            let _ = read_client_frame(&mut wire);
            let _ = wire.write_all(&server_hello("misbehaving")[..10]);
            std::process::exit(0)
        }
        _ => {}
    }
    wire.write_all(&server_hello("misbehaving")).expect("write HELLO");
    if mode == "hang-after-hello" {
        linger(&mut wire);
    }
    let hello = read_client_frame(&mut wire);
    assert_eq!(hello.header.kind, Kind::Hello, "the client's first frame");
    let request = read_client_frame(&mut wire);
    let Header { seq, dtype, count, .. } = request.header;
    let payload = &request.payload;
    let reply = match mode {
        "wrong-seq" => data_frame(seq + 1, dtype, count, payload),
        "wrong-count" => {
            let width = dtype.width() as usize;
            data_frame(seq, dtype, count - 1, &payload[..payload.len() - width])
        }
        "wrong-dtype" => {
            // Same bytes, announced as f32: twice the count.
            assert_eq!(dtype, Dtype::F64, "wrong-dtype expects an f64 request");
            data_frame(seq, Dtype::F32, count * 2, payload)
        }
        // A handler that fails once, with words of its own, and then never answers again (or
        // exits with status 3 at the next request).
        "out-of-cheese" | "out-of-cheese-then-exit" => {
            control_frame(Kind::Error, seq, OUT_OF_CHEESE.as_bytes())
        }
        "hello-reply" => {
            // A second HELLO, carrying the request's seq so that only its kind is wrong.
            let hello = Hello { max_frame_bytes: 1024, ..Hello::default() };
            control_frame(Kind::Hello, seq, &hello.to_payload())
        }
        "half-frame" => {
            let full = data_frame(seq, dtype, count, payload);
            let _ = wire.write_all(&full[..HEADER_LEN + 13]);
            std::process::exit(0)
        }
        "killed" => {
            let me = nix::unistd::getpid();
            let _ = nix::sys::signal::kill(me, nix::sys::signal::Signal::SIGKILL);
            unreachable!("SIGKILL returned")
        }
        other => panic!("unknown {MISBEHAVE_VAR} mode {other:?}"),
    };
    let _ = wire.write_all(&reply);
    if mode == "out-of-cheese-then-exit" {
        let _ = read_client_frame(&mut wire);
        std::process::exit(3);
    }
    linger(&mut wire)
}

/// What the `out-of-cheese` misbehaving servers answer their first request with, in an ERROR.
pub const OUT_OF_CHEESE: &str = "handler failed: out of cheese";

/// A well-behaved echo server whose handler prints to stdout: after
/// `peerpipe::server::stdio_transport` (or `stdio_transport_of` for shared memory) the prints
/// must land on stderr, not in the stream.
fn noisy_echo(kind: TransportKind) -> ! {
    use peerpipe::handlers::EchoRaw;
    use peerpipe::parts::PartsOut;
    use peerpipe::server::{
        Handler, Request, Response, ServeOptions, serve, stdio_transport, stdio_transport_of,
    };

    struct Noisy(EchoRaw);
    impl Handler for Noisy {
        fn name(&self) -> &str {
            "noisy-echo"
        }
        fn handle<'a>(
            &'a mut self,
            request: Request<'a>,
            out: &mut PartsOut,
        ) -> Result<Response<'a>, String> {
            println!("noisy-echo: a stray print from the handler, seq {}", request.seq);
            self.0.handle(request, out)
        }
    }

    protocol_pipe_to_stdout();
    let mut transport = match kind {
        TransportKind::Pipe => stdio_transport(Wait::Block).expect("stdio_transport"),
        shm => stdio_transport_of(shm, Wait::Block).expect("stdio_transport_of"),
    };
    println!("noisy-echo: a stray print after stdio_transport");
    let result = serve(&mut transport, &mut Noisy(EchoRaw), &ServeOptions::default());
    std::process::exit(if result.is_ok() { 0 } else { 7 })
}

/// Reads `pipe` to the end on a thread (so a full pipe never blocks the child) and returns the
/// text when joined.
pub fn read_on_thread(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

/// Waits up to `limit` for `child` to exit; past it, kills and reaps it and fails the test
/// naming `what`.
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

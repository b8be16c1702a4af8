//! Launchers that relay a task's stdin and stdout, which frames cannot go through.
//!
//! Slurm's `srun` starts a task on a node of the allocation and forwards the task's stdin and
//! stdout over its own I/O protocol (slurmstepd on the node, srun on the launching side),
//! buffered and with a delay per message: a pipe conversation through it stalls until its
//! deadline, or crawls with `srun -u`. Frames must go straight between the nodes instead,
//! over tcp (docs/PROTOCOL.md §14), with `srun` only starting the server.
//!
//! So the pipe and shared-memory transports are refused through `srun`, with a message that
//! says to use tcp, on both sides, whichever notices first:
//!
//! - a client refuses to spawn a command whose program is `srun` — directly, or as the
//!   program of the one-line shell command `Peer::spawn_shell` and `peer --spawn` run
//!   ([`refuse_relayed_spawn`]), before anything is started;
//! - a server whose parent is Slurm's `slurmstepd` (it was started as the task of a step)
//!   refuses to serve its stdin and stdout ([`refuse_relayed_stdio`]), before it reads or
//!   writes a byte of them; its client sees it exit with that message on its stderr. A
//!   server whose client runs inside an allocation but spawned it directly has that client,
//!   not `slurmstepd`, as its parent, and serves as usual.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use crate::error::{Error, Result};
use crate::transport::TransportKind;

/// Programs known to relay their task's stdin and stdout.
pub const RELAYING_LAUNCHERS: &[&str] = &["srun"];

/// Programs known to start the server elsewhere (another machine, a node of a cluster): the
/// spawned process is the launcher, not the server.
pub const REMOTE_LAUNCHERS: &[&str] = &["ssh", "srun"];

/// The name of the process Slurm starts a step's tasks from.
pub const SLURM_STEP_DAEMON: &str = "slurmstepd";

/// Shells whose `-c LINE` is looked into for the program it runs.
const SHELLS: &[&str] = &["sh", "bash", "dash"];

/// The program a command starts, as far as a launcher is concerned: its own program, or for
/// `sh -c LINE` the first word of LINE after `exec`, `env`, `env`'s options and variable
/// assignments. `None` for a line it cannot see into (an empty one).
///
/// ```
/// use std::process::Command;
/// use peerpipe::launcher::launched_program;
/// let mut shell = Command::new("sh");
/// shell.args(["-c", "exec env OMP_NUM_THREADS=1 srun -N1 peer --role server"]);
/// assert_eq!(launched_program(&shell).as_deref(), Some("srun"));
/// assert_eq!(launched_program(&Command::new("/usr/bin/srun")).as_deref(), Some("srun"));
/// ```
pub fn launched_program(command: &Command) -> Option<String> {
    let program = base_name(command.get_program());
    if !SHELLS.contains(&program.as_str()) {
        return Some(program);
    }
    let args: Vec<&OsStr> = command.get_args().collect();
    let [flag, line] = args[..] else { return Some(program) };
    if flag != "-c" {
        return Some(program);
    }
    let mut words = line.to_str()?.split_whitespace().peekable();
    while let Some(&word) = words.peek() {
        let skip = word == "exec" || word == "env" || word.contains('=') || word.starts_with('-');
        if !skip {
            break;
        }
        words.next();
    }
    words.next().map(|word| base_name(OsStr::new(word)))
}

fn base_name(program: &OsStr) -> String {
    let path = Path::new(program);
    path.file_name().unwrap_or(program).to_string_lossy().into_owned()
}

/// Whether `command` starts its server through a launcher ([`REMOTE_LAUNCHERS`]), so that the
/// spawned process is not the server: stopping it (`SIGSTOP`) would not stop the server, and
/// its CPU time is not the server's.
///
/// ```
/// use std::process::Command;
/// use peerpipe::launcher::starts_elsewhere;
/// let mut shell = Command::new("sh");
/// shell.args(["-c", "exec srun -w n1 peer --role server --raw-echo 8"]);
/// assert!(starts_elsewhere(&shell));
/// assert!(!starts_elsewhere(&Command::new("peer")));
/// ```
pub fn starts_elsewhere(command: &Command) -> bool {
    launched_program(command).is_some_and(|program| REMOTE_LAUNCHERS.contains(&program.as_str()))
}

/// The client's check: `command` spawned as a server on `transport` must not run through a
/// launcher that relays stdio ([`RELAYING_LAUNCHERS`]) unless the transport is tcp.
///
/// ```
/// use std::process::Command;
/// use peerpipe::{ErrorKind, TransportKind};
/// use peerpipe::launcher::refuse_relayed_spawn;
/// let mut srun = Command::new("srun");
/// srun.args(["-N1", "peer", "--role", "server"]);
/// let err = refuse_relayed_spawn(&srun, TransportKind::Pipe).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::InvalidArgument);
/// assert!(err.to_string().contains("use --transport tcp"), "{err}");
/// assert!(refuse_relayed_spawn(&srun, TransportKind::Tcp).is_ok());
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] naming the launcher and saying to use the tcp transport.
pub fn refuse_relayed_spawn(command: &Command, transport: TransportKind) -> Result<()> {
    if transport == TransportKind::Tcp {
        return Ok(());
    }
    match launched_program(command) {
        Some(program) if RELAYING_LAUNCHERS.contains(&program.as_str()) => {
            Err(Error::InvalidArgument {
                what: "transport",
                reason: format!(
                    "{transport} through `{program}`: {program} relays the server's stdin and \
                     stdout over its own I/O forwarding, which frames cannot go through (calls \
                     would stall until their deadline); use --transport tcp (Options::transport \
                     = TransportKind::Tcp, transport=\"tcp\"), so that {program} only starts \
                     the server and the frames go straight to it"
                ),
            })
        }
        _ => Ok(()),
    }
}

/// Whether a process whose parent's name is `parent_comm` (`/proc/PPID/comm`) and whose
/// `$SLURM_JOB_ID` is `slurm_job` was started by Slurm as the task of a step, its stdin and
/// stdout relayed.
///
/// ```
/// use peerpipe::launcher::started_as_slurm_task;
/// assert!(started_as_slurm_task("slurmstepd", Some("42")));
/// assert!(!started_as_slurm_task("peer", Some("42"))); // spawned by a client in a job
/// assert!(!started_as_slurm_task("slurmstepd", None));
/// ```
pub fn started_as_slurm_task(parent_comm: &str, slurm_job: Option<&str>) -> bool {
    parent_comm.trim_end() == SLURM_STEP_DAEMON && slurm_job.is_some_and(|job| !job.is_empty())
}

/// The server's check, before it takes its stdin and stdout as `transport`: refused when this
/// process is the task of a Slurm step ([`started_as_slurm_task`] over its parent's
/// `/proc/PPID/comm` and its `$SLURM_JOB_ID`) and the transport is not tcp.
///
/// # Errors
/// [`Error::InvalidArgument`] saying to start the server (and its client) with the tcp
/// transport.
pub fn refuse_relayed_stdio(transport: TransportKind) -> Result<()> {
    if transport == TransportKind::Tcp {
        return Ok(());
    }
    let parent = std::os::unix::process::parent_id();
    let comm = std::fs::read_to_string(format!("/proc/{parent}/comm")).unwrap_or_default();
    let job = std::env::var("SLURM_JOB_ID").ok();
    if !started_as_slurm_task(&comm, job.as_deref()) {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        what: "transport",
        reason: format!(
            "this server is a task of Slurm job {}, its stdin and stdout relayed by srun, \
             which {transport} frames cannot go through; start it with --transport tcp \
             (`srun … peer --role server --transport tcp`) and its client with --transport \
             tcp",
            job.unwrap_or_default()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(line: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", line]);
        command
    }

    #[test]
    fn the_program_is_seen_through_the_spawn_shell_and_env() {
        let program = |line: &str| launched_program(&shell(line));
        assert_eq!(program("exec srun -w n1 peer --role server").as_deref(), Some("srun"));
        assert_eq!(program("exec /opt/slurm/bin/srun peer").as_deref(), Some("srun"));
        assert_eq!(program("exec env -i A=1 srun peer").as_deref(), Some("srun"));
        assert_eq!(program("exec ssh n1 srun peer").as_deref(), Some("ssh"));
        assert_eq!(program("exec peer --role server").as_deref(), Some("peer"));
        assert_eq!(program("").as_deref(), None);
        let mut sh = Command::new("sh");
        sh.args(["-e", "script.sh"]);
        assert_eq!(launched_program(&sh).as_deref(), Some("sh"));
    }

    #[test]
    fn pipe_and_shared_memory_through_srun_are_refused_and_tcp_is_not() {
        let line = "exec srun -N1 -n1 peer --role server";
        for kind in [TransportKind::Pipe, TransportKind::ShmSem, TransportKind::ShmRing] {
            let err = refuse_relayed_spawn(&shell(line), kind).unwrap_err().to_string();
            assert!(err.starts_with(&format!("invalid transport: {kind} through `srun`")), "{err}");
            assert!(err.contains("use --transport tcp"), "{err}");
        }
        assert!(refuse_relayed_spawn(&shell(line), TransportKind::Tcp).is_ok());
        let local = shell("exec peer --role server");
        assert!(refuse_relayed_spawn(&local, TransportKind::Pipe).is_ok());
        // A wrapper the check cannot see into is left to the server's own check.
        let wrapped = shell("cd /tmp && srun peer --role server");
        assert!(refuse_relayed_spawn(&wrapped, TransportKind::Pipe).is_ok());
    }

    #[test]
    fn only_a_task_started_by_slurmstepd_counts_as_relayed() {
        assert!(started_as_slurm_task("slurmstepd\n", Some("7")));
        assert!(!started_as_slurm_task("slurmstepd", Some("")));
        assert!(!started_as_slurm_task("bash\n", Some("7")));
        // This test process is not a Slurm task, whatever its environment.
        assert!(refuse_relayed_stdio(TransportKind::Pipe).is_ok());
    }
}

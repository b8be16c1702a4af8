//! The one spawn rule: an argument list runs without a shell ([`argv_command`]); a shell
//! line runs as `sh -c` ([`shell_command`]), a simple command as `exec LINE` with its program
//! checked first ([`checked_shell_command`]); and where a spawned process stands in the
//! process tree.

use std::path::Path;
use std::process::Command;

use super::locate::{cannot_start, executable};
use crate::error::{Error, Result};

/// `sh -c COMMAND_LINE`, as [`Peer::spawn_shell`](super::Peer::spawn_shell) and `peer --spawn` run
/// a server command.
///
/// A simple command — words only, no shell operators, redirections, substitutions or
/// assignments, and not a shell builtin — runs as `exec COMMAND_LINE`, so the shell replaces
/// itself with the server: the spawned pid is the server's (its CPU time is what the report's
/// `srv cpu` reads, and `SIGSTOP` stops the server itself), not that of a waiting `sh`.
///
/// # Examples
/// ```
/// use peerpipe::peer::shell_command;
/// let args = |c: std::process::Command| c.get_args().map(|a| a.to_str().unwrap().to_owned()).collect::<Vec<_>>();
/// assert_eq!(args(shell_command("peer --role server")), ["-c", "exec peer --role server"]);
/// assert_eq!(args(shell_command("cd /tmp && peer --role server")), ["-c", "cd /tmp && peer --role server"]);
/// ```
pub fn shell_command(command_line: &str) -> Command {
    let mut command = Command::new("sh");
    command.arg("-c");
    if is_simple_command(command_line) {
        command.arg(format!("exec {}", command_line.trim_start()));
    } else {
        command.arg(command_line);
    }
    command
}

/// [`shell_command`], after making sure the program of a simple command can be started: a
/// program that is not there is an error naming it here, instead of a shell that exits with
/// status 127 after the spawn. A command line that is not simple (or whose program is quoted
/// or a pattern) is left to the shell.
///
/// # Errors
/// [`Error::CannotStart`] naming the program: `NotFound` when a path does not exist or a name
/// is on no directory of `PATH`, `PermissionDenied` when it is not an executable file.
///
/// # Examples
/// ```
/// use peerpipe::ErrorKind;
/// let err = peerpipe::peer::checked_shell_command("target/release/pear --role server").unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::NotFound);
/// assert!(err.to_string().starts_with("cannot start \"target/release/pear\": "), "{err}");
/// assert!(peerpipe::peer::checked_shell_command("exit 3").is_ok()); // the shell's business
/// ```
pub fn checked_shell_command(command_line: &str) -> Result<Command> {
    pub(super) const LEFT_TO_THE_SHELL: &[char] = &['\'', '"', '\\', '*', '?', '[', '~'];
    if is_simple_command(command_line)
        && let Some(program) = command_line.split_whitespace().next()
        && !program.contains(LEFT_TO_THE_SHELL)
    {
        if program.contains('/') {
            executable(Path::new(program))
                .map_err(|why| cannot_start(std::ffi::OsStr::new(program), why))?;
        } else if let Some(path_var) = std::env::var_os("PATH") {
            let found =
                std::env::split_paths(&path_var).any(|dir| executable(&dir.join(program)).is_ok());
            if !found {
                return Err(cannot_start(std::ffi::OsStr::new(program), "no such file"));
            }
        }
    }
    Ok(shell_command(command_line))
}

/// The command for `argv`: the program `argv[0]` (looked up on `PATH` when it has no `/`)
/// with the arguments `argv[1..]`, run without a shell.
///
/// # Errors
/// [`Error::InvalidArgument`] when `argv` is empty.
pub fn argv_command<S: AsRef<std::ffi::OsStr>>(argv: &[S]) -> Result<Command> {
    let Some((program, args)) = argv.split_first() else {
        return Err(Error::InvalidArgument {
            what: "command",
            reason: "the argument list is empty; its first element must name the program".into(),
        });
    };
    let mut command = Command::new(program);
    command.args(args);
    Ok(command)
}

/// Words only: no operator, redirection, substitution, glob-free quoting aside; the first word
/// is not an assignment, a keyword or a builtin that `exec` cannot run.
pub(super) fn is_simple_command(line: &str) -> bool {
    pub(super) const SPECIAL: &[char] =
        &[';', '&', '|', '<', '>', '(', ')', '$', '`', '\n', '{', '}', '#'];
    pub(super) const NOT_EXECUTABLE: &[&str] = &[
        "cd", "export", "set", "unset", "eval", "exec", "source", ".", "alias", "if", "for",
        "while", "until", "case", "!", "time", "local", "readonly", "shift", "trap", "ulimit",
        "umask", "wait", "return", "exit", "break", "continue",
    ];
    let Some(first) = line.split_whitespace().next() else { return false };
    !line.contains(SPECIAL) && !first.contains('=') && !NOT_EXECUTABLE.contains(&first)
}

/// True when process `pid`'s chain of parents (read from `/proc`) reaches `ancestor`.
pub(super) fn is_descendant(pid: u32, ancestor: u32) -> bool {
    let mut current = pid;
    for _ in 0..32 {
        let Some(parent) = parent_of(current) else { return false };
        if parent == ancestor {
            return true;
        }
        if parent <= 1 {
            return false;
        }
        current = parent;
    }
    false
}

/// The parent pid from `/proc/PID/stat` (the field after the state, after the `)` that ends
/// the command name, which may itself contain spaces and parentheses).
pub(super) fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

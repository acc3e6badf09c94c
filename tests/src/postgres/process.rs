//! The processes the PostgreSQL harness starts: who they run as (PostgreSQL
//! and PgBouncer refuse root), where their programs are, and how they are
//! stopped (by PID, never by name).

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub(super) const PGBOUNCER: &str = "/usr/sbin/pgbouncer";
const PG_LIB: &str = "/usr/lib/postgresql";
pub(super) const INSTALL_HINT: &str = "PostgreSQL is not installed: run `apt-get install -y postgresql pgbouncer` (Debian), or `.ci/run`";

/// `/usr/lib/postgresql/VERSION/bin/PROGRAM` for the newest installed
/// version (15 on bookworm).
///
/// # Panics
/// When no PostgreSQL server is installed, naming the install command.
pub(super) fn pg_bin(program: &str) -> PathBuf {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    let bin = BIN.get_or_init(|| {
        std::fs::read_dir(PG_LIB)
            .ok()?
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let version: u32 = entry.file_name().to_str()?.parse().ok()?;
                let bin = entry.path().join("bin");
                bin.join("postgres").exists().then_some((version, bin))
            })
            .max_by_key(|(version, _)| *version)
            .map(|(_, bin)| bin)
    });
    bin.as_ref().expect(INSTALL_HINT).join(program)
}

/// The uid and gid the servers run as: the `postgres` account's when this
/// process is root (`postgres` and `pgbouncer` refuse to run as root), or
/// `None`: this process's own user.
///
/// # Panics
/// As root, when there is no `postgres` account (Debian's `postgresql`
/// package makes it).
pub(super) fn server_user() -> Option<(u32, u32)> {
    static USER: OnceLock<Option<(u32, u32)>> = OnceLock::new();
    *USER.get_or_init(|| {
        // SAFETY: geteuid(2) has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        Some(account("postgres").unwrap_or_else(|| {
            panic!("running as root, and there is no `postgres` account to run PostgreSQL as: {INSTALL_HINT}")
        }))
    })
}

/// The uid and gid of the account `name` (getpwnam_r(3)).
fn account(name: &str) -> Option<(u32, u32)> {
    let name = CString::new(name).ok()?;
    let mut buffer = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: all-zero is a valid `passwd` (integers and null pointers).
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call: `name` is NUL-terminated,
    // `buffer` has the length passed, `entry` and `found` are live locals;
    // the strings `entry` points into live in `buffer`, which outlives the
    // two integers read here.
    let rc = unsafe {
        libc::getpwnam_r(
            name.as_ptr(),
            &mut entry,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut found,
        )
    };
    (rc == 0 && !found.is_null()).then_some((entry.pw_uid, entry.pw_gid))
}

/// Gives `path` to the server user (when running as root; otherwise it is
/// this process's already).
pub(super) fn give(path: &Path) {
    if let Some((uid, gid)) = server_user() {
        std::os::unix::fs::chown(path, Some(uid), Some(gid))
            .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
    }
}

/// Copies `from` to `to`, owned by the server user and readable by it alone
/// (PostgreSQL refuses a key file others can read).
pub(super) fn copy_private(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o600))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", to.display()));
    give(to);
}

/// `program` to run as the server user in `dir`, stdin closed, with no
/// `PG*` variable of this environment (they would redirect libpq).
pub(super) fn as_server_user(program: &Path, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command.current_dir(dir).stdin(Stdio::null());
    without_pg_env(&mut command);
    if let Some((uid, gid)) = server_user() {
        command.uid(uid).gid(gid).env("HOME", dir);
    }
    command
}

/// Removes the `PG*` variables (`PGHOST`, `PGSSLMODE`, …) from `command`'s
/// environment.
pub(super) fn without_pg_env(command: &mut Command) {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PG") {
            command.env_remove(key);
        }
    }
}

/// A log file in `dir` to append a process's stdout and stderr to.
pub(super) fn log_file(path: &Path) -> (Stdio, Stdio) {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    (log.try_clone().expect("log file").into(), log.into())
}

/// Waits at most `limit` for `child` to exit.
pub(super) fn wait_exit(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if started.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `signal` to `child` (one this harness spawned and has not reaped,
/// so its PID is still its own).
pub(super) fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill(2) on the PID of an unreaped child of this process.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
}

/// Kills `child` and each process it started, at once (SIGKILL), as a crash
/// of the machine would, and waits until they are gone.
///
/// Race-free by PID: the parent is stopped first (SIGSTOP), so it forks no
/// more and reaps none of its children meanwhile: a child that exits stays a
/// zombie whose PID no other process can take, until the parent dies.
pub(super) fn kill_tree(mut child: Child) {
    let pid = child.id() as libc::pid_t;
    signal(&child, libc::SIGSTOP);
    let started = Instant::now();
    while !matches!(state(pid), Some('T' | 't' | 'Z' | 'X') | None)
        && started.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let children = children_of(pid);
    for &c in &children {
        // SAFETY: kill(2) on a child of a stopped process of ours: its PID
        // cannot have been reused (see above).
        unsafe { libc::kill(c, libc::SIGKILL) };
    }
    let _ = child.kill();
    let _ = child.wait();
    // SIGKILL is delivered asynchronously: wait until each is gone (or a
    // zombie, which holds no memory: PostgreSQL checks that no process
    // still attaches its shared memory before it starts again).
    let started = Instant::now();
    while children
        .iter()
        .any(|&c| !matches!(state(c), Some('Z' | 'X') | None))
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "processes {children:?} did not die of SIGKILL within 10 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `/proc/PID/stat`'s fields after the command name (state first).
fn stat_fields(pid: libc::pid_t) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may itself contain any.
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// A process's state letter (`R`, `S`, `T`, `Z`, …), `None` once it is gone.
fn state(pid: libc::pid_t) -> Option<char> {
    stat_fields(pid)?.first()?.chars().next()
}

/// The PIDs whose parent is `parent`.
fn children_of(parent: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&pid| {
            stat_fields(pid).and_then(|fields| fields.get(1)?.parse::<libc::pid_t>().ok())
                == Some(parent)
        })
        .collect()
}

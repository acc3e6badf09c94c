//! Runs one shell block as [`super::shell`] describes: the harness's servers
//! started first, services in the background until the block ends, commands
//! in `bash`. A failure names the document's file and line.
//!
//! Every process the runner starts gets a process group of its own, which it
//! stops (by that group's id, the PID of the process it spawned) when the step
//! or the block ends, so nothing a block puts in the background outlives it.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use wardlock_tests::etcd::EtcdServer;
use wardlock_tests::ports::free_port;
use wardlock_tests::zookeeper::ZkServer;

use super::blocks::{Block, Mark};
use super::shell::{self, ETCD_PORT, PORTS, Server, Step, ZOOKEEPER_PORT};

/// How long one run of commands may take: a `cargo build` of something the
/// test build has not built yet fits; a command that never ends does not.
const COMMANDS_LIMIT: Duration = Duration::from_secs(600);
/// How long a service may take to open its port (a first `wardlock serve`
/// compiles its component).
const SERVICE_LIMIT: Duration = Duration::from_secs(120);
/// How long a stopped service gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Runs `block` (a shell block) at the repository's root, or in an empty
/// directory when it is marked so.
///
/// # Errors
/// `FILE:LINE: what failed`, with the output of what failed.
pub(super) fn run_shell(block: &Block) -> Result<(), String> {
    let steps = shell::steps(block.line_of(0), &block.body, block.lang == "console")
        .map_err(|why| format!("{}: {why}", block.file))?;
    // Declared before the services, so they outlive them.
    let servers = Servers::start(&block.body);
    let mut ports = servers.ports();
    for port in PORTS {
        ports.entry(*port).or_insert_with(free_port);
    }
    let scratch = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let cwd = match block.mark {
        Some(Mark::EmptyDirectory) => scratch.path().to_owned(),
        _ => super::root(),
    };
    let context = Context::new(&cwd, &scratch.path().join(".book-runner"))?;
    let mut services = Vec::new();
    for step in steps {
        match step {
            // The harness's server, started above, stands in for this line.
            Step::Harness { .. } => {}
            Step::Service {
                line,
                command,
                port,
            } => {
                let command = shell::replace_ports(&command, &ports);
                let at = format!("{}:{line}: `{command}`", block.file);
                let mut service = Service::start(&context, &command, services.len())
                    .map_err(|why| format!("{at}: {why}"))?;
                let awaited = ports.get(&port).copied().unwrap_or(port);
                let opened = service.await_port(awaited, SERVICE_LIMIT);
                services.push(service);
                opened.map_err(|why| format!("{at}: {why}"))?;
            }
            Step::Commands { lines } => run_commands(&context, &lines, &ports)
                .map_err(|(line, why)| format!("{}:{line}: {why}", block.file))?,
        }
    }
    drop(services);
    drop(servers);
    Ok(())
}

/// The harness's servers a block needs ([`shell::servers`]), stopped on drop.
pub(super) struct Servers {
    zookeeper: Option<ZkServer>,
    etcd: Option<EtcdServer>,
}

impl Servers {
    /// Starts the servers `body` names.
    pub(super) fn start(body: &[String]) -> Servers {
        let mut servers = Servers {
            zookeeper: None,
            etcd: None,
        };
        for server in shell::servers(body) {
            match server {
                Server::ZooKeeper => servers.zookeeper = Some(ZkServer::start()),
                Server::Etcd => servers.etcd = Some(EtcdServer::start()),
            }
        }
        servers
    }

    /// The book's ports of the started servers, each with the real one.
    pub(super) fn ports(&self) -> BTreeMap<u16, u16> {
        let mut ports = BTreeMap::new();
        if let Some(server) = &self.zookeeper {
            ports.insert(ZOOKEEPER_PORT, port_of(&server.address()));
        }
        if let Some(server) = &self.etcd {
            ports.insert(ETCD_PORT, port_of(&server.address()));
        }
        ports
    }
}

/// Where a block's processes run.
pub(super) struct Context {
    root: PathBuf,
    cwd: PathBuf,
    /// Where services write their output.
    logs: PathBuf,
}

impl Context {
    /// Processes in `cwd`, service logs under `logs` (made here).
    ///
    /// # Errors
    /// `logs` cannot be made.
    pub(super) fn new(cwd: &Path, logs: &Path) -> Result<Context, String> {
        std::fs::create_dir_all(logs).map_err(|e| format!("log dir: {e}"))?;
        Ok(Context {
            root: super::root(),
            cwd: cwd.to_owned(),
            logs: logs.to_owned(),
        })
    }

    /// `bash -c script` in the block's directory, with `WARDLOCK` set to the
    /// repository and wardlock's compilation cache kept out of the user's.
    fn bash(&self, script: &str) -> Command {
        let mut command = Command::new("bash");
        // Its cargo commands reuse the test build (see `cargo_env`).
        wardlock_tests::cargo_env::without_package_variables(&mut command)
            .args(["-c", script])
            .current_dir(&self.cwd)
            .env("WARDLOCK", &self.root)
            .env(
                "XDG_CACHE_HOME",
                format!("{}-xdg", wardlock_tests::cache_dir()),
            )
            .stdin(Stdio::null())
            .process_group(0);
        command
    }
}

/// Runs `lines` in one `bash` that stops at the first failing command.
///
/// # Errors
/// The document line of the command that failed (as far as bash tells) and why.
fn run_commands(
    context: &Context,
    lines: &[(usize, String)],
    ports: &BTreeMap<u16, u16>,
) -> Result<(), (usize, String)> {
    let first = lines.first().map_or(0, |(line, _)| *line);
    // Line 1 is this header, so bash's $LINENO - 2 indexes `lines`.
    let mut script = String::from(
        "set -eEuo pipefail; trap 'echo \"book-runner: line $LINENO: $BASH_COMMAND\" >&2' ERR\n",
    );
    for (_, line) in lines {
        script.push_str(&shell::replace_ports(line, ports));
        script.push('\n');
    }
    let child = context
        .bash(&script)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| (first, format!("cannot start bash: {e}")))?;
    let group = child.id();
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let output = match finished.recv_timeout(COMMANDS_LIMIT) {
        Ok(output) => output,
        Err(_) => {
            signal_group(group, libc::SIGKILL);
            return Err((first, format!("still running after {COMMANDS_LIMIT:?}")));
        }
    };
    // Whatever the commands left running in their group goes with them.
    signal_group(group, libc::SIGKILL);
    let output = output.map_err(|e| (first, format!("bash: {e}")))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let failed = stderr
        .lines()
        .find_map(|l| l.strip_prefix("book-runner: line "))
        .and_then(|rest| rest.split(':').next()?.parse::<usize>().ok())
        .and_then(|lineno| lines.get(lineno.checked_sub(2)?))
        .map_or(first, |(line, _)| *line);
    Err((
        failed,
        format!(
            "failed ({}):\n--- stdout\n{}--- stderr\n{stderr}",
            output.status,
            String::from_utf8_lossy(&output.stdout)
        ),
    ))
}

/// Why a service's port did not open, with its output.
#[derive(Debug)]
pub(super) enum NotOpen {
    /// The service ended first.
    Exited(String),
    /// It still runs, its port still closed.
    StillRunning(String),
}

impl std::fmt::Display for NotOpen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotOpen::Exited(why) | NotOpen::StillRunning(why) => f.write_str(why),
        }
    }
}

/// A command the runner keeps in the background, stopped on drop.
pub(super) struct Service {
    child: Child,
    log: PathBuf,
}

impl Service {
    /// Starts `command` (with `bash -c exec`), its output in the context's
    /// logs.
    ///
    /// # Errors
    /// It cannot be started.
    pub(super) fn start(context: &Context, command: &str, index: usize) -> Result<Service, String> {
        let log = context.logs.join(format!("service-{index}.log"));
        let file = std::fs::File::create(&log).map_err(|e| format!("log file: {e}"))?;
        let stderr = file.try_clone().map_err(|e| format!("log file: {e}"))?;
        let child = context
            .bash(&format!("exec {command}"))
            .stdout(file)
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start: {e}"))?;
        Ok(Service { child, log })
    }

    /// Waits until `port` on loopback accepts connections, at most `limit`.
    ///
    /// # Errors
    /// It exited first, or the port stayed closed for `limit`; with its output.
    pub(super) fn await_port(&mut self, port: u16, limit: Duration) -> Result<(), NotOpen> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let started = Instant::now();
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok() {
                return Ok(());
            }
            if let Some(status) = self.exited() {
                return Err(NotOpen::Exited(format!(
                    "exited ({status}) before port {port} opened:\n{}",
                    self.output()
                )));
            }
            if started.elapsed() > limit {
                return Err(NotOpen::StillRunning(format!(
                    "port {port} not open after {limit:?}:\n{}",
                    self.output()
                )));
            }
            // Readiness of a foreign process: nothing to await but its port.
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    fn output(&self) -> String {
        let mut text = String::new();
        let _ = std::fs::File::open(&self.log).and_then(|mut f| f.read_to_string(&mut text));
        text
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        signal_group(self.child.id(), libc::SIGTERM);
        let started = Instant::now();
        while started.elapsed() < STOP_GRACE {
            if matches!(self.child.try_wait(), Ok(Some(_)) | Err(_)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        signal_group(self.child.id(), libc::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Sends `signal` to the process group led by `leader`, a child the runner
/// spawned with a group of its own.
fn signal_group(leader: u32, signal: libc::c_int) {
    // SAFETY: kill(2) on the group of a process this runner spawned as the
    // group's leader; nothing else is in that group but what it started.
    unsafe {
        libc::kill(-(leader as libc::pid_t), signal);
    }
}

/// The port of `127.0.0.1:PORT`.
fn port_of(address: &str) -> u16 {
    address
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {address:?}"))
}

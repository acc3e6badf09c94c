//! `curator` and `curator-shared`: Apache Curator (Debian's jars,
//! `libcurator-recipes-java`) running the same client loops as the other
//! systems, in one JVM (`tests/interop/BenchDriver.java`, compiled here with
//! `javac`): every client a thread, with its own `CuratorFramework` (its own
//! ZooKeeper session: `curator`) or all on one shared `CuratorFramework` (one
//! session, as an application uses Curator: `curator-shared`), exclusive
//! ops through `InterProcessMutex`, mixed ones through
//! `InterProcessReadWriteLock`, the exclusion check of [`crate::check`] in the
//! critical section (the same file protocol, in Java).
//!
//! The JVM and its clients live for the whole run (connected before a phase's
//! counters are read; warmed up by the warm-up phase like the server), and each
//! phase is one `run` command: the driver prints one JSON line of per-client
//! latencies and wall-clock stamps, read back into [`LoopResult`]s.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use wardlock_host::Mode;

use super::{LoopResult, LoopSpec};
use crate::check;
use crate::env::WARDLOCK_ROOT;

/// Debian's jars: `curator-recipes.jar`'s manifest (`Class-Path`) names the
/// rest of Curator and ZooKeeper's client; `slf4j-nop` keeps logging quiet.
const JARS: &[&str] = &[
    "/usr/share/java/curator-recipes.jar",
    "/usr/share/java/slf4j-nop.jar",
];

/// The running JVM.
pub(crate) struct Driver {
    _child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    connected: usize,
    shared: bool,
}

impl Driver {
    /// Compiles the driver and starts the JVM against `address`.
    ///
    /// # Errors
    /// When Curator's jars or the JDK are missing, or the JVM cannot start.
    pub(crate) fn start(address: &str, session_timeout: Duration) -> anyhow::Result<Driver> {
        let classpath = compile()?;
        let mut child = Command::new("java")
            .arg("-cp")
            .arg(classpath)
            .arg("BenchDriver")
            .arg(address)
            .arg(session_timeout.as_millis().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting java (Java 17 JDK)")?;
        let stdin = child.stdin.take().context("driver stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("driver stdout")?).lines();
        Ok(Driver {
            _child: child,
            stdin,
            stdout,
            connected: 0,
            shared: false,
        })
    }

    async fn command(&mut self, line: &str) -> anyhow::Result<String> {
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.write_all(b"\n").await?;
        self.stdin.flush().await?;
        self.stdout
            .next_line()
            .await?
            .context("the Curator driver exited")
    }

    /// Has at least `clients` Curator clients connected (outside any
    /// measurement).
    ///
    /// # Errors
    /// When the driver fails.
    pub(crate) async fn prepare(&mut self, clients: usize) -> anyhow::Result<()> {
        if clients > self.connected {
            let answer = self.command(&format!("prepare {clients}")).await?;
            if answer != "ready" {
                bail!("Curator driver: {answer}");
            }
            self.connected = clients;
        }
        Ok(())
    }

    /// Has the shared client connected (outside any measurement).
    ///
    /// # Errors
    /// When the driver fails.
    pub(crate) async fn prepare_shared(&mut self) -> anyhow::Result<()> {
        if !self.shared {
            let answer = self.command("prepare-shared").await?;
            if answer != "ready" {
                bail!("Curator driver: {answer}");
            }
            self.shared = true;
        }
        Ok(())
    }

    /// Runs one phase: every spec a client thread, all at once, each on a
    /// client of its own or all on the shared one. Returns the clients'
    /// results and the JVM's CPU time over the loops.
    ///
    /// # Errors
    /// When a client fails.
    pub(crate) async fn run(
        &mut self,
        specs: &[LoopSpec],
        dir: &Path,
        shared: bool,
    ) -> anyhow::Result<(Vec<LoopResult>, Duration)> {
        let check = specs
            .iter()
            .find_map(|s| s.check.as_ref())
            .map_or_else(|| "-".to_owned(), |c| dir.join(c).display().to_string());
        let command = if shared { "run-shared" } else { "run" };
        let mut line = format!("{command} {check}");
        for spec in specs {
            line.push_str(&format!(" {WARDLOCK_ROOT}/{} ", spec.lock.as_str()));
            line.extend((0..spec.ops).map(|i| match check::mode(spec.plan, i) {
                Mode::Exclusive => 'w',
                _ => 'r',
            }));
        }
        let answer = self.command(&line).await?;
        let output: Value = serde_json::from_str(&answer)
            .with_context(|| format!("Curator driver output: {answer:.200}"))?;
        if let Some(error) = output.get("error") {
            bail!("Curator {error}");
        }
        let number = |value: &Value, key: &str| -> anyhow::Result<u64> {
            value
                .get(key)
                .and_then(Value::as_u64)
                .with_context(|| format!("Curator driver output without {key}"))
        };
        let mut results = Vec::new();
        for client in output
            .get("clients")
            .and_then(Value::as_array)
            .context("Curator driver output without clients")?
        {
            results.push(LoopResult {
                latencies_ns: client
                    .get("lat")
                    .and_then(Value::as_array)
                    .context("Curator driver output without lat")?
                    .iter()
                    .filter_map(Value::as_u64)
                    .collect(),
                writes: number(client, "writes")?,
                violations: number(client, "violations")?,
                start_unix_ns: u128::from(number(client, "start")?),
                end_unix_ns: u128::from(number(client, "end")?),
            });
        }
        let cpu = Duration::from_nanos(number(&output, "cpu_ns")?);
        Ok((results, cpu))
    }
}

/// Compiles `tests/interop/BenchDriver.java` into `target/bench-java`; returns
/// the class path.
fn compile() -> anyhow::Result<String> {
    let mut entries = Vec::new();
    for &path in JARS {
        if !Path::new(path).exists() {
            bail!(
                "Apache Curator is not installed: apt-get install -y libcurator-recipes-java (missing {path})"
            );
        }
        entries.push(path.to_owned());
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out: PathBuf = manifest.join("../target/bench-java");
    std::fs::create_dir_all(&out).context("creating target/bench-java")?;
    let status = std::process::Command::new("javac")
        .arg("-d")
        .arg(&out)
        .arg("-cp")
        .arg(entries.join(":"))
        .arg(manifest.join("interop/BenchDriver.java"))
        .status()
        .context("running javac (Java 17 JDK)")?;
    if !status.success() {
        bail!("javac failed on tests/interop/BenchDriver.java");
    }
    entries.insert(0, out.display().to_string());
    Ok(entries.join(":"))
}

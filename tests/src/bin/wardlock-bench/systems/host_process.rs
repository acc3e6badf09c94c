//! Another host, as a process: `wardlock-bench --host-child DIR` started by the
//! `hosts` workload. Each child owns a backend of its own (its own ZooKeeper
//! session or etcd lease, its own host-local hand-off) and a runner of
//! `bench-guest` on it, as `wardlock run` would; it takes commands on stdin and
//! answers on stdout, one line each (see [`crate::host_child`]):
//!
//! - it prints `ready` once connected and compiled;
//! - `run LOCK OPS CHECK_FILE` runs `--clients` guests at once, each `OPS`
//!   exclusive acquisitions of `LOCK` with the exclusion check on `CHECK_FILE`
//!   (a name in DIR), and answers one `result {json}` line per guest, then `end`
//!   (or `error MESSAGE`).

use std::path::Path;
use std::process::Stdio;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use wardlock_host::LockName;

use super::{LoopResult, System};
use crate::env::Env;

/// One host process.
pub(crate) struct HostProcess {
    _child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl HostProcess {
    /// Starts a host running `clients` guests of `system` (`wardlock-guest` or
    /// `etcd-guest`) on the run's server, with counter files in `dir`; returns
    /// once it is connected and has compiled the guest.
    ///
    /// # Errors
    /// When the process cannot start or does not become ready.
    pub(crate) async fn start(
        env: &Env,
        system: System,
        clients: u64,
        dir: &Path,
    ) -> anyhow::Result<HostProcess> {
        let exe = std::env::current_exe().context("locating wardlock-bench")?;
        let mut command = Command::new(exe);
        command
            .arg("--host-child")
            .arg(dir)
            .args(["--systems", &system.name()])
            .args(["--clients", &clients.to_string()])
            .args(["--session-timeout", &env.args.session_timeout.to_string()])
            .args(["--zk-sessions", &env.args.zk_sessions.to_string()]);
        if let Some(max) = env.args.handoff_max {
            command.args(["--handoff-max", &max.to_string()]);
        }
        if let Some(ms) = env.args.handoff_max_ms {
            command.args(["--handoff-max-ms", &ms.to_string()]);
        }
        if env.args.no_local_handoff {
            command.arg("--no-local-handoff");
        }
        if env.args.no_lock_cache {
            command.arg("--no-lock-cache");
        }
        match system {
            System::ZooKeeperGuest => command.args(["--zookeeper", &env.zk()?.address]),
            System::EtcdGuest => command.args(["--etcd", &env.etcd()?.address]),
            other => bail!("{} does not run in host processes", other.name()),
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting a host process")?;
        let stdin = child.stdin.take().context("host process stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("host process stdout")?).lines();
        let mut host = HostProcess {
            _child: child,
            stdin,
            stdout,
        };
        let first = host.line().await?;
        if first != "ready" {
            bail!("host process: {first}");
        }
        Ok(host)
    }

    async fn line(&mut self) -> anyhow::Result<String> {
        self.stdout
            .next_line()
            .await?
            .context("the host process exited")
    }

    /// Tells the host to start one phase (every guest `ops` exclusive
    /// acquisitions of `lock`, checked on `check`); [`HostProcess::results`]
    /// reads what it measured. Split in two so every host starts before any
    /// is waited for.
    ///
    /// # Errors
    /// When the process is gone.
    pub(crate) async fn start_phase(
        &mut self,
        lock: &LockName,
        ops: u64,
        check: &str,
    ) -> anyhow::Result<()> {
        let line = format!("run {} {ops} {check}\n", lock.as_str());
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.flush().await?;
        Ok(())
    }

    /// The results of the phase started last, one per guest.
    ///
    /// # Errors
    /// When a guest failed or the answer is malformed.
    pub(crate) async fn results(&mut self) -> anyhow::Result<Vec<LoopResult>> {
        let mut results = Vec::new();
        loop {
            let line = self.line().await?;
            if line == "end" {
                return Ok(results);
            }
            if let Some(error) = line.strip_prefix("error ") {
                bail!("host process: {error}");
            }
            let json = line
                .strip_prefix("result ")
                .with_context(|| format!("host process printed {line:.200}"))?;
            results.push(from_json(json)?);
        }
    }
}

/// A guest's result as one line of JSON (the child's side).
pub(crate) fn to_json(result: &LoopResult) -> String {
    json!({
        "lat": result.latencies_ns,
        "writes": result.writes,
        "violations": result.violations,
        "start": u64::try_from(result.start_unix_ns).unwrap_or(u64::MAX),
        "end": u64::try_from(result.end_unix_ns).unwrap_or(u64::MAX),
    })
    .to_string()
}

/// Reads [`to_json`]'s line back.
fn from_json(line: &str) -> anyhow::Result<LoopResult> {
    let value: Value =
        serde_json::from_str(line).with_context(|| format!("host process result: {line:.200}"))?;
    let number = |key: &str| -> anyhow::Result<u64> {
        value
            .get(key)
            .and_then(Value::as_u64)
            .with_context(|| format!("host process result without {key}"))
    };
    Ok(LoopResult {
        latencies_ns: value
            .get("lat")
            .and_then(Value::as_array)
            .context("host process result without lat")?
            .iter()
            .filter_map(Value::as_u64)
            .collect(),
        writes: number("writes")?,
        violations: number("violations")?,
        start_unix_ns: u128::from(number("start")?),
        end_unix_ns: u128::from(number("end")?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_survives_its_line() {
        let result = LoopResult {
            latencies_ns: vec![5, 7, 11],
            writes: 3,
            violations: 1,
            start_unix_ns: 1_795_596_743_559_164_923,
            end_unix_ns: 1_795_596_743_563_308_827,
        };
        let back = from_json(&to_json(&result)).unwrap();
        assert_eq!(back.latencies_ns, result.latencies_ns);
        assert_eq!((back.writes, back.violations), (3, 1));
        assert_eq!(back.start_unix_ns, result.start_unix_ns);
        assert_eq!(back.end_unix_ns, result.end_unix_ns);
        assert!(from_json(r#"{"lat":[1]}"#).is_err());
    }
}

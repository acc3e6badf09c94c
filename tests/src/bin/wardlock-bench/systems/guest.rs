//! Guest clients: each is a `bench-guest` instance (its own Store and lock
//! session) running `bench-guest loop …`, timed from inside the guest.

use std::sync::Arc;

use anyhow::{Context, bail};
use wardlock_host::runner::{InstanceReport, Runner};

use super::{LoopResult, LoopSpec, join_all};

/// Where guests see the run's data directory.
pub(crate) const GUEST_DATA_DIR: &str = "/data";

/// The guest arguments of `spec`.
pub(crate) fn loop_args(spec: &LoopSpec) -> Vec<String> {
    let mut args = vec![
        "loop".to_owned(),
        spec.lock.to_string(),
        spec.plan.arg(),
        spec.ops.to_string(),
    ];
    if let Some(file) = &spec.check {
        args.push(format!("{GUEST_DATA_DIR}/{file}"));
        if spec.reopen {
            args.push("reopen".to_owned());
        }
    }
    args
}

/// Runs one instance per spec, concurrently.
///
/// # Errors
/// When an instance does not succeed or prints something unexpected.
pub(crate) async fn run_all(
    runner: &Arc<Runner>,
    specs: Vec<LoopSpec>,
) -> anyhow::Result<Vec<LoopResult>> {
    let tasks = specs
        .into_iter()
        .enumerate()
        .map(|(instance, spec)| {
            let runner = runner.clone();
            tokio::spawn(async move {
                let report = runner.run(instance, &loop_args(&spec)).await;
                parse_loop(&report)
            })
        })
        .collect();
    join_all(tasks).await
}

/// Fails unless the instance succeeded.
///
/// # Errors
/// Naming the outcome and the guest's stderr.
pub(crate) fn succeeded(report: &InstanceReport) -> anyhow::Result<()> {
    if !report.outcome.is_success() {
        bail!(
            "bench-guest instance {} {}: {}",
            report.instance,
            report.outcome,
            report.stderr_text().trim()
        );
    }
    Ok(())
}

/// Parses the output of `bench-guest loop`.
///
/// # Errors
/// When the instance failed or its output is malformed.
pub(crate) fn parse_loop(report: &InstanceReport) -> anyhow::Result<LoopResult> {
    succeeded(report)?;
    let out = report.stdout_text();
    let mut lines = out.lines();
    let done = lines
        .next()
        .and_then(|l| l.strip_prefix("done "))
        .with_context(|| format!("bench-guest printed {out:?}"))?;
    let field = |key: &str| -> anyhow::Result<u128> {
        done.split(' ')
            .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
            .with_context(|| format!("no {key} in {done:?}"))?
            .parse()
            .with_context(|| format!("bad {key} in {done:?}"))
    };
    let latencies_ns = lines
        .next()
        .and_then(|l| l.strip_prefix("lat_ns"))
        .context("no lat_ns line")?
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<Vec<u64>, _>>()
        .context("bad lat_ns")?;
    let ops = u64::try_from(field("ops")?)?;
    if latencies_ns.len() as u64 != ops {
        bail!("{} latencies for {ops} ops", latencies_ns.len());
    }
    Ok(LoopResult {
        latencies_ns,
        writes: u64::try_from(field("writes")?)?,
        violations: u64::try_from(field("violations")?)?,
        start_unix_ns: field("start_unix_ns")?,
        end_unix_ns: field("end_unix_ns")?,
    })
}

/// Parses `trap_unix_ns=T` from `bench-guest trap-holding`.
///
/// # Errors
/// When the line is missing.
pub(crate) fn parse_trap_time(report: &InstanceReport) -> anyhow::Result<u128> {
    let out = report.stdout_text();
    out.lines()
        .find_map(|l| l.strip_prefix("trap_unix_ns="))
        .with_context(|| {
            format!(
                "no trap time in {out:?} (stderr {:?})",
                report.stderr_text()
            )
        })?
        .trim()
        .parse()
        .context("bad trap time")
}

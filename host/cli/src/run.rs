//! `wardlock run`: run N instances of a component concurrently, one lock session each.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use wardlock_host::runner::{
    DeclaredLock, HoldScope, InstanceReport, OutboundPolicy, Outcome, Runner, RunnerConfig, Stdio,
};

use super::Engines;
use super::fault_args::FaultArgs;
use super::instance_args::InstanceArgs;
use super::run_admin::{self, RunAdminArgs};
use super::signal::{StopSignal, exit_on_second_signal, stop_signal};
use super::singleton::Singleton;
use crate::seconds::positive_secs;
use wardlock_host::backend::LockBackend;
use wardlock_host::backend::memory::{self, MemoryBackend};
use wardlock_host::name::LockName;

/// Arguments of `wardlock run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The component: a WASI command (`wasi:cli/run`) importing `wardlock:lock/locks`.
    #[arg(value_name = "COMPONENT")]
    pub component: PathBuf,

    /// Arguments passed to the guest (after `--`).
    #[arg(last = true, value_name = "ARGS")]
    pub guest_args: Vec<String>,

    /// Run N instances of the component concurrently, each with its own lock session.
    #[arg(long, short = 'n', value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub instances: u32,

    /// Wall-clock limit per instance in seconds (running or waiting for a lock);
    /// an instance past it is stopped and loses its locks.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,

    /// The lock engine, what each instance may do, compilation.
    #[command(flatten)]
    pub host: InstanceArgs,

    /// Fault injection (memory backend), for testing a plugin under loss.
    #[command(flatten)]
    pub faults: FaultArgs,

    /// A lock every instance holds for its whole life, for guests that know
    /// nothing of wardlock: taken before the guest starts (all declared
    /// locks, in name order, within --timeout) and released after it ends.
    /// NAME, exclusive, or NAME:shared, with the placeholders
    /// {instance} and {plugin}; repeatable. The guest reads the locks'
    /// fencing tokens in WARDLOCK_HELD (`name=token`, space separated); a
    /// lost declared lock stops its instance at once.
    #[arg(long = "hold", value_name = "NAME[:shared]", value_parser = parse_hold)]
    pub hold: Vec<DeclaredLock>,

    /// Run the plugin only while this host leads the election NAME: hosts
    /// started with the same NAME elect one leader, which runs the plugin;
    /// the others stand by and one takes over when the leader stops, dies
    /// or is cut off (its plugin is stopped first). The plugin sees
    /// WARDLOCK_SINGLETON=NAME and WARDLOCK_SINGLETON_TERM (its fencing
    /// token) in its environment.
    #[arg(long, value_name = "NAME", value_parser = parse_singleton)]
    pub singleton: Option<LockName>,

    /// What this host proclaims as the singleton's leader (who it is; shown
    /// by `wardlock status` and Curator's `getLeader`, `etcdctl elect -l`).
    /// Default: `wardlock pid PID`.
    #[arg(long, value_name = "VALUE", requires = "singleton")]
    pub singleton_value: Option<String>,

    /// The admin listener (the locks page) while the instances run.
    #[command(flatten)]
    pub admin: RunAdminArgs,
}

fn parse_hold(spec: &str) -> Result<DeclaredLock, String> {
    DeclaredLock::parse(spec, HoldScope::Instance)
}

fn parse_singleton(name: &str) -> Result<LockName, String> {
    LockName::new(name).map_err(|e| e.to_string())
}

/// Runs `wardlock run`; returns the exit code (0 only if every instance succeeded).
pub(super) async fn run(args: &RunArgs, engines: Engines<'_>) -> anyhow::Result<i32> {
    let table = wardlock_host::locks::LockTable::for_this_host();
    let (config, faulty, engine) = config(args, engines, &table).await?;
    let _admin = run_admin::start(&args.admin, engine, table).await?;
    let runtime = args.host.compilation.runtime(None)?;
    let plugin = args
        .component
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| args.component.display().to_string());
    let component = args.host.compilation.load(&runtime, &args.component)?;
    let runner = Arc::new(Runner::new(&runtime, &component, &plugin, config)?);

    let instances = args.instances as usize;
    tracing::info!(
        instances,
        backend = runner.config().backend.kind(),
        "running"
    );
    // Installed before any guest runs (see `stop_signal`).
    let stop = stop_signal();
    let started = Instant::now();
    if let Some(memory) = &faulty {
        args.faults.apply(memory);
    }
    let (mut reports, stopped) = match &args.singleton {
        None => {
            let mut tasks = tokio::task::JoinSet::new();
            for instance in 0..instances {
                let runner = runner.clone();
                let guest_args = args.guest_args.clone();
                tasks.spawn(async move { runner.run(instance, &guest_args).await });
            }
            let mut reports = Vec::with_capacity(instances);
            let stopped = join_or_stop(&mut tasks, &mut reports, stop).await?;
            (reports, stopped)
        }
        Some(name) => {
            let singleton = Singleton {
                name: name.clone(),
                value: args
                    .singleton_value
                    .clone()
                    .unwrap_or_else(|| format!("wardlock pid {}", std::process::id())),
                runtime: runtime.clone(),
                component: component.clone(),
                plugin: plugin.clone(),
                instances,
                guest_args: args.guest_args.clone(),
                on_term: None,
            };
            singleton.run(runner.config(), stop).await?
        }
    };
    reports.sort_by_key(|r| r.instance);
    // Every instance is gone: finish their releases and close the engine's
    // session, so other hosts get the locks now, not after a session timeout.
    runner.config().backend.shutdown().await;
    if let Some(signal) = stopped {
        eprintln!(
            "wardlock: stopped by {} after {:.3}s: {} of {instances} instance(s) had finished",
            signal.name(),
            started.elapsed().as_secs_f64(),
            reports.len(),
        );
        return Ok(signal.exit_code());
    }

    let failed: Vec<_> = reports.iter().filter(|r| !r.outcome.is_success()).collect();
    for report in &failed {
        eprintln!("wardlock: instance {}: {}", report.instance, report.outcome);
    }
    let timed_out = failed
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::TimedOut(_)))
        .count();
    eprintln!(
        "wardlock: {instances} instance(s) of {plugin} in {:.3}s: {} ok, {} failed ({timed_out} timed out)",
        started.elapsed().as_secs_f64(),
        instances - failed.len(),
        failed.len(),
    );
    Ok(if failed.is_empty() { 0 } else { 1 })
}

/// Collects the instances' reports until all are done, or until a stop signal:
/// then ends the instances still running (their Stores drop, which releases
/// their locks) and answers the signal. A second signal exits at once.
///
/// # Errors
/// An instance task panicked.
///
/// # Cancellation safety
/// Not cancel safe: a dropped wait loses the reports collected so far.
async fn join_or_stop(
    tasks: &mut tokio::task::JoinSet<InstanceReport>,
    reports: &mut Vec<InstanceReport>,
    signal: impl Future<Output = StopSignal>,
) -> anyhow::Result<Option<StopSignal>> {
    tokio::pin!(signal);
    loop {
        tokio::select! {
            joined = tasks.join_next() => match joined {
                Some(joined) => reports.push(joined.context("an instance task panicked")?),
                None => return Ok(None),
            },
            signal = &mut signal => {
                eprintln!(
                    "wardlock: {}: stopping {} instance(s) and releasing their locks (a second signal exits at once)",
                    signal.name(),
                    tasks.len(),
                );
                exit_on_second_signal();
                tasks.abort_all();
                while let Some(joined) = tasks.join_next().await {
                    match joined {
                        Ok(report) => reports.push(report),
                        Err(error) if error.is_cancelled() => {}
                        Err(error) => return Err(error).context("an instance task panicked"),
                    }
                }
                return Ok(Some(signal));
            }
        }
    }
}

/// The backend the flags describe; the memory backend itself as well when
/// faults are to be injected into it.
async fn backend(
    args: &RunArgs,
    engines: Engines<'_>,
) -> anyhow::Result<(Arc<dyn LockBackend>, Option<MemoryBackend>)> {
    let chosen = engines.chosen(&args.host.backend)?;
    if !args.faults.any() {
        return Ok((
            chosen.connect(args.host.backend.require_backend).await?,
            None,
        ));
    }
    // Faults are injected through the memory engine's own handle: they
    // need that engine, whichever the flags chose.
    if chosen.engine() != memory::NAME {
        anyhow::bail!(
            "--fault and --grant-delay-ms need the memory backend, not {}",
            chosen.engine()
        );
    }
    let memory = MemoryBackend::new();
    Ok((Arc::new(memory.clone()), Some(memory)))
}

async fn config(
    args: &RunArgs,
    engines: Engines<'_>,
    table: &wardlock_host::locks::LockTable,
) -> anyhow::Result<(RunnerConfig, Option<MemoryBackend>, Arc<dyn LockBackend>)> {
    let policy = args.host.guest.policy()?;
    let timeout = match args.timeout {
        None => None,
        Some(secs) => Some(positive_secs("--timeout", secs)?),
    };
    let preopens = args.host.guest.preopens()?;
    let memory_limit = args.host.guest.memory_limit()?;
    let (backend, faulty) = backend(args, engines).await?;
    let config = RunnerConfig {
        backend: table.wrap(backend.clone()),
        policy: Arc::new(policy),
        timeout,
        memory_limit,
        preopens,
        env: args.host.guest.env.clone(),
        stdio: Stdio::Inherit,
        outbound: OutboundPolicy::allow(args.host.guest.allow_outbound.clone())
            .with_fence_header(args.host.guest.fence_header.clone()),
        max_hold: None,
        // Tracked through the wrapped backend.
        locks: None,
        file_io: args.host.guest.file_io(),
        hold: args.hold.clone(),
        kv_buckets: crate::guest_args::kv_buckets(&args.host.guest.kv_buckets, "--kv-bucket")?,
    };
    // The engine itself too: the locks page asks it about contenders
    // through sessions of its own, which the table need not track.
    Ok((config, faulty, backend))
}

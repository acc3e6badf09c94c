//! `wardlock run`: run N instances of a component concurrently, one lock session each.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

use crate::backend::LockBackend;
use crate::backend::memory::MemoryBackend;
use crate::backend::zookeeper::{Dialect, ZooKeeperBackend, ZooKeeperConfig};
use crate::policy::LockPolicy;
use crate::runner::{Outcome, Preopen, Runner, RunnerConfig, Runtime, Stdio};

/// Lock backends the CLI can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// In-process locks shared by the instances of this run (the embedded default).
    Memory,
    /// A ZooKeeper ensemble (implied by --zookeeper).
    Zookeeper,
}

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

    /// Lock backend (default: memory, or zookeeper when --zookeeper is given).
    #[arg(long, value_enum)]
    pub backend: Option<BackendKind>,

    /// ZooKeeper ensemble to lock on, HOST:PORT[,HOST:PORT...]; selects the
    /// zookeeper backend.
    #[arg(long, value_name = "HOST:PORT[,...]")]
    pub zookeeper: Option<String>,

    /// ZooKeeper session timeout in seconds (the safety net if the host dies).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub session_timeout: f64,

    /// Node naming dialect on ZooKeeper, to share locks with other clients:
    /// curator-rw (Curator InterProcessReadWriteLock), curator-mutex (Curator
    /// InterProcessMutex; exclusive only) or kazoo (Lock/WriteLock/ReadLock).
    #[arg(long, value_name = "NAME", default_value = "curator-rw", value_parser = Dialect::parse)]
    pub dialect: Dialect,

    /// Digest credentials USER:PASSWORD; wardlock's nodes then get the
    /// creator-only ACL so other ZooKeeper users cannot delete them.
    #[arg(long, value_name = "USER:PASSWORD")]
    pub zk_digest: Option<String>,

    /// Root path under which lock names live in the backend (ZooKeeper:
    /// `<root>/<name>`; the memory backend keeps one namespace per run).
    #[arg(long, value_name = "PATH", default_value = "/wardlock")]
    pub root: String,

    /// Grant the plugin lock names within PREFIX (segment-wise; repeatable).
    /// Without any --grant every name is allowed.
    #[arg(long = "grant", value_name = "PREFIX")]
    pub grants: Vec<String>,

    /// Most live lock handles per instance.
    #[arg(long, value_name = "N", default_value_t = crate::policy::DEFAULT_MAX_HANDLES)]
    pub max_handles: usize,

    /// Wall-clock limit per instance in seconds (running or waiting for a lock);
    /// an instance past it is stopped and loses its locks.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,

    /// Linear-memory limit per instance, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 512)]
    pub max_memory: usize,

    /// Make host directory HOST visible to the guest as GUEST (as `wasmtime run --dir`).
    #[arg(long = "dir", value_name = "HOST[::GUEST]")]
    pub dirs: Vec<String>,

    /// Set an environment variable for the guest (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
}

async fn backend(args: &RunArgs) -> anyhow::Result<Arc<dyn LockBackend>> {
    let kind = args.backend.unwrap_or(if args.zookeeper.is_some() {
        BackendKind::Zookeeper
    } else {
        BackendKind::Memory
    });
    match kind {
        BackendKind::Memory => {
            if args.zookeeper.is_some() {
                bail!("--zookeeper needs --backend zookeeper (or no --backend)");
            }
            Ok(Arc::new(MemoryBackend::new()))
        }
        BackendKind::Zookeeper => {
            let Some(hosts) = &args.zookeeper else {
                bail!("--backend zookeeper needs --zookeeper HOST:PORT[,HOST:PORT...]");
            };
            let session_timeout = positive_secs("--session-timeout", args.session_timeout)?;
            let mut config = ZooKeeperConfig::new(hosts.clone())
                .root(args.root.clone())
                .session_timeout(session_timeout)
                .dialect(args.dialect);
            if let Some(digest) = &args.zk_digest {
                config = config.digest_auth(digest.clone());
            }
            tracing::info!(%hosts, "connecting to ZooKeeper");
            let backend = ZooKeeperBackend::connect(config).await?;
            Ok(Arc::new(backend))
        }
    }
}

fn positive_secs(flag: &str, secs: f64) -> anyhow::Result<Duration> {
    if secs.is_finite() && secs > 0.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        bail!("{flag} must be a positive number of seconds, got {secs}")
    }
}

fn parse_env(spec: &str) -> Result<(String, String), String> {
    match spec.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got {spec:?}")),
    }
}

/// Runs `wardlock run`; returns the exit code (0 only if every instance succeeded).
pub(super) async fn run(args: RunArgs) -> anyhow::Result<i32> {
    let config = config(&args).await?;
    let runtime = Runtime::new()?;
    let plugin = args
        .component
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| args.component.display().to_string());
    tracing::info!(component = %args.component.display(), "compiling");
    let component = runtime.compile(&args.component)?;
    let runner = Arc::new(Runner::new(&runtime, &component, &plugin, config)?);

    let instances = args.instances as usize;
    tracing::info!(
        instances,
        backend = runner.config().backend.kind(),
        "running"
    );
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for instance in 0..instances {
        let runner = runner.clone();
        let guest_args = args.guest_args.clone();
        tasks.spawn(async move { runner.run(instance, &guest_args).await });
    }
    let mut reports = Vec::with_capacity(instances);
    while let Some(joined) = tasks.join_next().await {
        reports.push(joined.context("an instance task panicked")?);
    }
    reports.sort_by_key(|r| r.instance);

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

async fn config(args: &RunArgs) -> anyhow::Result<RunnerConfig> {
    let backend = backend(args).await?;
    let mut policy = LockPolicy::new().max_handles(args.max_handles);
    for prefix in &args.grants {
        policy = policy
            .grant(prefix)
            .with_context(|| format!("--grant {prefix:?} is not a valid lock name prefix"))?;
    }
    let timeout = match args.timeout {
        None => None,
        Some(secs) => Some(positive_secs("--timeout", secs)?),
    };
    let mut preopens = Vec::new();
    for spec in &args.dirs {
        let preopen = Preopen::parse(spec);
        if !preopen.host.is_dir() {
            bail!(
                "--dir {spec:?}: {} is not a directory",
                preopen.host.display()
            );
        }
        preopens.push(preopen);
    }
    let memory_limit = args
        .max_memory
        .checked_mul(1 << 20)
        .context("--max-memory is too large")?;
    Ok(RunnerConfig {
        backend,
        policy: Arc::new(policy),
        timeout,
        memory_limit,
        preopens,
        env: args.env.clone(),
        stdio: Stdio::Inherit,
    })
}

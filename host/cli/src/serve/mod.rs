//! `wardlock serve`: serve `wasi:http/proxy` components, one instance — and one
//! lock session — per request.
//!
//! - `plan`: what is served (the one model flags and config files both build);
//! - `config_file`: the TOML config file;
//! - `server`: accepting connections, routing, graceful shutdown.
//!
//! The admin listener (`/metrics`, `/healthz`, the locks page) is
//! [`crate::admin`], which `wardlock run --admin` uses too.

mod config_file;
mod plan;
mod server;

use crate::admin::{self, metrics};
use wardlock_host::locks as locks_source;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use super::singleton::Singleton;
use anyhow::{Context, bail};
use clap::Args;
use wardlock_host::runner::{
    DeclaredLock, HoldScope, OutboundPolicy, ProxyRunner, RunnerConfig, Stdio,
};

use super::Engines;
use super::instance_args::InstanceArgs;
use crate::seconds::positive_secs;
use metrics::{Metered, Metrics};
use plan::{
    DEFAULT_MAX_CONCURRENT, DEFAULT_REQUEST_TIMEOUT, DEFAULT_SHUTDOWN_GRACE, MAX_CONCURRENT_LIMIT,
    PluginPlan, ServePlan,
};

/// Where `serve` listens unless told otherwise.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// A `--hold` declaration of `serve` (request placeholders).
fn parse_hold(spec: &str) -> Result<DeclaredLock, String> {
    DeclaredLock::parse(spec, HoldScope::Request)
}

/// Arguments of `wardlock serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The component: a `wasi:http/proxy` component importing
    /// `wardlock:lock/locks`, served on every path (or give --config).
    #[arg(value_name = "COMPONENT", required_unless_present = "config")]
    pub component: Option<PathBuf>,

    /// A TOML file describing backends and several plugins (see docs/serve.md:
    /// "Config file"); flags are the one-plugin shorthand for it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["component", "backend", "grants", "dirs", "env", "allow_outbound", "request_timeout", "max_hold", "pooled_file_io", "hold"])]
    pub config: Option<PathBuf>,

    /// Address to serve requests on [default: 127.0.0.1:8080, or the config
    /// file's `listen`].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,

    /// Address to serve /metrics (Prometheus) and /healthz on: IP:PORT, or
    /// a PORT alone for 127.0.0.1:PORT (loopback: only this machine) [default:
    /// none, or the config file's `admin`].
    #[arg(long, value_name = "ADDR", value_parser = admin::parse_addr)]
    pub admin: Option<SocketAddr>,

    /// A file holding a bearer token the admin endpoints then require
    /// (`Authorization: Bearer TOKEN`); without it they answer anyone who
    /// reaches the admin address.
    #[arg(long, value_name = "FILE")]
    pub admin_token_file: Option<PathBuf>,

    /// Per-request limit in seconds: past it the instance is stopped, the client
    /// gets 504 and every lock of the request is released.
    #[arg(long, value_name = "SECS")]
    pub request_timeout: Option<f64>,

    /// Hold lease in seconds: a request holding any lock longer has it taken
    /// back (its handle reports `lost`), is stopped, and the client gets 503.
    #[arg(long, value_name = "SECS")]
    pub max_hold: Option<f64>,

    /// A lock each request holds before the plugin sees it, released after
    /// the request's instance ends: NAME (exclusive) or NAME:shared, with
    /// the placeholders {path} (without its leading /), {method}, {query.NAME},
    /// {header.NAME}, {plugin} and {request}; repeatable. Taken within the
    /// request timeout (else 503 with Retry-After); the plugin reads the
    /// tokens in the wardlock-held request header; a lost one stops the
    /// request.
    #[arg(long = "hold", value_name = "NAME[:shared]", value_parser = parse_hold)]
    pub hold: Vec<DeclaredLock>,

    /// Time in-flight requests get to finish after SIGTERM/SIGINT, in seconds.
    #[arg(long, value_name = "SECS")]
    pub shutdown_grace: Option<f64>,

    /// Requests served at once, over all plugins [default: 1000]. The
    /// instance pool is sized for them; a request beyond them waits for a slot
    /// (within its request timeout; then 503) instead of failing.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_CONCURRENT_LIMIT as u64))]
    pub max_concurrent_requests: Option<u64>,

    /// The lock engine, what each instance may do, compilation.
    #[command(flatten)]
    pub host: InstanceArgs,
}

/// Runs `wardlock serve` until SIGTERM or SIGINT; returns the exit code.
pub(super) async fn serve(args: &ServeArgs, engines: Engines<'_>) -> anyhow::Result<i32> {
    let mut plan = match &args.config {
        Some(file) => {
            if let Some(flag) = engines.registry.choosing_flag(engines.matches) {
                bail!("--config describes the backends: drop {flag} (or --config)");
            }
            config_file::load(file, engines.registry)?
        }
        None => plan_from_flags(args, engines)?,
    };
    if let Some(listen) = args.listen {
        plan.listen = listen;
    }
    if let Some(admin) = args.admin {
        plan.admin = Some(admin);
    }
    if let Some(file) = &args.admin_token_file {
        let token = wardlock_host::secret::Secret::from_file(file)
            .map_err(|e| anyhow::anyhow!("--admin-token-file: {e}"))?;
        plan.admin_token = Some(token);
    }
    if let Some(admin) = plan.admin
        && !admin.ip().is_loopback()
        && plan.admin_token.is_none()
    {
        tracing::warn!(
            "the admin endpoints on {admin} answer anyone who reaches that address; bind them to loopback or give --admin-token-file"
        );
    }
    if let Some(secs) = args.shutdown_grace {
        plan.shutdown_grace = positive_secs("--shutdown-grace", secs)?;
    }
    if let Some(n) = args.max_concurrent_requests {
        plan.max_concurrent = usize::try_from(n).context("--max-concurrent-requests")?;
    }

    let metrics = Metrics::new();
    let table = locks_source::LockTable::for_this_host();
    let mut backends = BTreeMap::new();
    for (label, spec) in &plan.backends {
        let backend = spec
            .connect(args.host.backend.require_backend)
            .await
            .with_context(|| format!("backend {label:?}"))?;
        backends.insert(label.clone(), backend);
    }
    let runtime = args.host.compilation.runtime(Some(pooling(&plan)))?;
    // One set of request slots for every plugin: they share the pool.
    let slots = Arc::new(tokio::sync::Semaphore::new(plan.max_concurrent));
    let mut routes = Vec::new();
    for plugin in &plan.plugins {
        let component = args.host.compilation.load(&runtime, &plugin.component)?;
        let Some(backend) = backends.get(&plugin.backend) else {
            bail!("plugin {:?}: no backend {:?}", plugin.name, plugin.backend);
        };
        let metered = Metered::backend(table.wrap(backend.clone()), &plugin.name, metrics.clone());
        let config = RunnerConfig {
            backend: Arc::new(metered),
            policy: Arc::new(plugin.policy.clone()),
            timeout: Some(plugin.request_timeout),
            memory_limit: plugin.memory_limit,
            preopens: plugin.preopens.clone(),
            env: plugin.env.clone(),
            stdio: Stdio::Inherit,
            outbound: plugin.outbound.clone(),
            max_hold: plugin.max_hold,
            // Tracked below the metrics: the host's table wraps each engine.
            locks: None,
            file_io: plugin.file_io,
            hold: plugin.hold.clone(),
            kv_buckets: plugin.kv_buckets.clone(),
        };
        let runner = ProxyRunner::new(&runtime, &component, &plugin.name, config)?
            .with_admission(slots.clone());
        routes.push(server::Route {
            prefix: plugin.route.clone(),
            plugin: plugin.name.clone(),
            runner: Arc::new(runner),
        });
    }
    let singletons = singletons(&plan, &runtime, &backends, &metrics, args, &table)?;
    server::run(&plan, routes, backends, metrics, singletons, table).await
}

/// Each `[[singletons]]` entry as a task to run beside the server: it
/// campaigns, runs its command while this host leads, and stands by
/// otherwise; the server aborts it when it stops (resigning).
fn singletons(
    plan: &ServePlan,
    runtime: &wardlock_host::runner::Runtime,
    backends: &BTreeMap<String, Arc<dyn wardlock_host::backend::LockBackend>>,
    metrics: &Arc<Metrics>,
    args: &ServeArgs,
    table: &locks_source::LockTable,
) -> anyhow::Result<Vec<server::Background>> {
    let mut tasks: Vec<server::Background> = Vec::new();
    for entry in &plan.singletons {
        let Some(backend) = backends.get(&entry.backend) else {
            bail!(
                "singleton {:?}: no backend {:?}",
                entry.name.as_str(),
                entry.backend
            );
        };
        let component = args.host.compilation.load(runtime, &entry.component)?;
        let plugin = entry
            .component
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| entry.component.display().to_string());
        let config = RunnerConfig {
            backend: table.wrap(backend.clone()),
            policy: Arc::new(entry.policy.clone()),
            timeout: None,
            memory_limit: wardlock_host::runner::DEFAULT_MEMORY_LIMIT,
            preopens: entry.preopens.clone(),
            env: entry.env.clone(),
            stdio: Stdio::Inherit,
            outbound: OutboundPolicy::default(),
            max_hold: None,
            locks: None,
            file_io: entry.file_io,
            hold: Vec::new(),
            kv_buckets: Default::default(),
        };
        metrics.stand_by(entry.name.as_str());
        let (name, told) = (entry.name.to_string(), metrics.clone());
        let singleton = Singleton {
            name: entry.name.clone(),
            value: entry.value.clone(),
            runtime: runtime.clone(),
            component,
            plugin,
            instances: 1,
            guest_args: entry.args.clone(),
            on_term: Some(Box::new(move |leading| told.set_leading(&name, leading))),
        };
        tasks.push(Box::pin(async move {
            match singleton.run(&config, std::future::pending()).await {
                Ok((reports, _)) => {
                    for report in reports {
                        eprintln!(
                            "wardlock: singleton {}: its command ended: {}",
                            singleton.name, report.outcome
                        );
                    }
                }
                Err(error) => {
                    eprintln!("wardlock: singleton {}: {error:#}", singleton.name);
                }
            }
        }));
    }
    Ok(tasks)
}

/// The one-plugin plan the flags describe.
fn plan_from_flags(args: &ServeArgs, engines: Engines<'_>) -> anyhow::Result<ServePlan> {
    let Some(component) = args.component.clone() else {
        bail!("give a COMPONENT to serve, or --config FILE");
    };
    let name = component
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| component.display().to_string());
    let request_timeout = match args.request_timeout {
        Some(secs) => positive_secs("--request-timeout", secs)?,
        None => DEFAULT_REQUEST_TIMEOUT,
    };
    let max_hold = match args.max_hold {
        Some(secs) => Some(positive_secs("--max-hold", secs)?),
        None => None,
    };
    let plugin = PluginPlan {
        name,
        route: "/".to_owned(),
        component,
        backend: "default".to_owned(),
        policy: args.host.guest.policy()?,
        memory_limit: args.host.guest.memory_limit()?,
        request_timeout,
        max_hold,
        preopens: args.host.guest.preopens()?,
        env: args.host.guest.env.clone(),
        file_io: args.host.guest.file_io(),
        outbound: OutboundPolicy::allow(args.host.guest.allow_outbound.clone())
            .with_fence_header(args.host.guest.fence_header.clone()),
        hold: args.hold.clone(),
        kv_buckets: crate::guest_args::kv_buckets(&args.host.guest.kv_buckets, "--kv-bucket")?,
    };
    Ok(ServePlan {
        listen: DEFAULT_LISTEN.parse().context("default listen address")?,
        admin: None,
        admin_token: None,
        shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
        max_concurrent: DEFAULT_MAX_CONCURRENT,
        backends: BTreeMap::from([("default".to_owned(), engines.chosen(&args.host.backend)?)]),
        plugins: vec![plugin],
        singletons: Vec::new(),
    })
}

/// The pooling allocator for per-request instances: slots reserved once and
/// reused, so a request does not pay for mapping fresh memory; room for
/// `max_concurrent` requests at once.
fn pooling(plan: &ServePlan) -> wasmtime::PoolingAllocationConfig {
    let largest = plan
        .plugins
        .iter()
        .map(|p| p.memory_limit)
        .max()
        .unwrap_or(wardlock_host::runner::DEFAULT_MEMORY_LIMIT);
    let slots = u32::try_from(plan.max_concurrent).unwrap_or(u32::MAX);
    wardlock_host::runner::request_pool(slots, largest)
}

//! What the two embedding examples share: the platform's per-plugin state, its
//! command line (the same engine flags as `wardlock run`), and the policy.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches, Parser};
use wardlock::registry::{CommonFlags, EngineConfig, Registry};
use wardlock_host::{LockBackend, LockPolicy, WaitInterrupt, WardlockCtx, WardlockView};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// `embed [ENGINE FLAGS] [--concurrent] PLUGIN EVENT...`
#[derive(Debug, Parser)]
pub(crate) struct Args {
    /// The lock engine, chosen by the same flags as `wardlock run`
    /// (`--zookeeper HOST:PORT`, `--etcd HOST:PORT`; memory by default): the
    /// common ones here, each engine's own added by the registry.
    #[command(flatten)]
    pub(crate) backend: CommonFlags,

    /// Handle the events at once, each in its own Store on its own task
    /// (async) or thread (sync), instead of one after another.
    #[arg(long)]
    pub(crate) concurrent: bool,

    /// End any single wait of a plugin after this many milliseconds
    /// (`WardlockCtx::set_wait_limit`).
    #[arg(long, value_name = "MS")]
    pub(crate) wait_limit_ms: Option<u64>,

    /// After this many milliseconds, end every plugin's waits from another
    /// thread (`WardlockCtx::interrupt_handle`): they return `timeout`.
    #[arg(long, value_name = "MS")]
    pub(crate) interrupt_after_ms: Option<u64>,

    /// A component targeting `acme:platform/plugin` (`examples/wit/platform.wit`),
    /// such as the `acme-plugin` that `plugins/build.sh` builds.
    pub(crate) plugin: PathBuf,

    /// The events to hand to the plugin, one Store each.
    pub(crate) events: Vec<String>,
}

/// The platform's per-plugin-instance state: WASI, the resource table both
/// WASI and wardlock keep their handles in, and the instance's lock context.
pub(crate) struct PluginState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) locks: WardlockCtx,
}

impl PluginState {
    /// A new instance's state: its own lock session on `backend`, granted
    /// the names under `acme/`, owned by `owner` (shown by status tools).
    pub(crate) fn new(backend: &dyn LockBackend, args: &Args, owner: &str) -> Self {
        let mut locks = WardlockCtx::new(backend, policy(), owner);
        locks.set_wait_limit(args.wait_limit_ms.map(Duration::from_millis));
        PluginState {
            wasi: WasiCtx::builder().inherit_stdio().build(),
            table: ResourceTable::new(),
            locks,
        }
    }

    /// What `add_to_linker` and `add_to_linker_sync` borrow from the state.
    pub(crate) fn locks(&mut self) -> WardlockView<'_> {
        WardlockView::new(&mut self.locks, &mut self.table)
    }
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// The platform grants its plugins the names under `acme/`, and at most 64
/// handles per instance.
/// The command line, with the flags of every engine `registry` knows, and the
/// engine configuration they choose.
pub(crate) fn parse_args(registry: &Registry) -> anyhow::Result<(Args, Arc<dyn EngineConfig>)> {
    let matches = registry.flags(Args::command()).get_matches();
    let args = Args::from_arg_matches(&matches)?;
    let engine = registry.config_from_flags(&args.backend, &matches)?;
    Ok((args, engine))
}

#[allow(clippy::expect_used, reason = "`acme` is a constant, valid lock name")]
fn policy() -> Arc<LockPolicy> {
    let policy = LockPolicy::new()
        .grant("acme")
        .expect("`acme` is a valid lock name")
        .with_max_handles(64);
    Arc::new(policy)
}

/// With `--interrupt-after-ms`, a thread that ends the waits of the
/// plugins behind `interrupts` once that time has passed.
pub(crate) fn interrupt_later(args: &Args, interrupts: Vec<WaitInterrupt>) {
    if let Some(ms) = args.interrupt_after_ms {
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            interrupts.iter().for_each(WaitInterrupt::interrupt);
        });
    }
}

/// How a plugin's answer to `event` is printed.
pub(crate) fn report(event: &str, outcome: wasmtime::Result<Result<String, String>>) {
    match outcome {
        Ok(Ok(reply)) => println!("{event}: {reply}"),
        Ok(Err(error)) => println!("{event}: plugin error: {error}"),
        Err(trap) => println!("{event}: plugin trapped: {}", trap.root_cause()),
    }
}

//! A plugin platform embedding wardlock in its own world
//! (`acme:platform/plugin`, run with the `acme-plugin` guest), written the
//! way a platform would write it against the public API: [`SyncPlatform`] on
//! wasmtime's synchronous API with no tokio runtime, [`AsyncPlatform`] on the
//! async one. Plus what the tests read from the plugin's replies.

use std::sync::Arc;

use wardlock_host::{LockBackend, LockPolicy, WardlockCtx, WardlockView};
use wasmtime::component::{Component, InstancePre, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::p2::bindings::sync::Command;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::Guest;

/// One plugin instance's Store data.
pub struct Plugin {
    wasi: WasiCtx,
    table: ResourceTable,
    /// The instance's lock context (its session, wait limit and interrupt).
    pub locks: WardlockCtx,
}

impl WasiView for Plugin {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl Plugin {
    fn new(backend: &dyn LockBackend, policy: &Arc<LockPolicy>, owner: &str) -> Plugin {
        Plugin {
            wasi: WasiCtx::builder().inherit_stderr().build(),
            table: ResourceTable::new(),
            locks: WardlockCtx::new(backend, policy.clone(), owner),
        }
    }

    fn locks(&mut self) -> WardlockView<'_> {
        WardlockView::new(&mut self.locks, &mut self.table)
    }
}

/// A new engine, and `guest` linked by `link`.
///
/// # Panics
/// When the guest cannot be loaded or linked.
fn prepare(
    guest: Guest,
    link: fn(&mut Linker<Plugin>) -> wasmtime::Result<()>,
) -> (Engine, InstancePre<Plugin>) {
    let engine = Engine::new(&Config::new()).expect("engine");
    let mut linker = Linker::<Plugin>::new(&engine);
    link(&mut linker).expect("link WASI and wardlock");
    let component = Component::from_file(&engine, guest.path()).expect("load");
    let pre = linker.instantiate_pre(&component).expect("instantiate_pre");
    (engine, pre)
}

/// The `handle` export's result: the plugin's reply or its error text.
pub type Reply = Result<String, String>;

/// A synchronous host: `Engine::new(&Config::new())`,
/// `wasmtime_wasi::p2::add_to_linker_sync`, `wardlock_host::add_to_linker_sync`,
/// `InstancePre::instantiate`, `Func::call`; one Store per call.
pub struct SyncPlatform {
    engine: Engine,
    pre: InstancePre<Plugin>,
    backend: Arc<dyn LockBackend>,
}

impl SyncPlatform {
    /// The platform with the `acme-plugin` guest, locking on `backend`.
    ///
    /// # Panics
    /// When the guest cannot be loaded or linked.
    pub fn new(backend: Arc<dyn LockBackend>) -> SyncPlatform {
        let (engine, pre) = prepare(Guest::AcmePlugin, link_sync);
        SyncPlatform {
            engine,
            pre,
            backend,
        }
    }

    /// A Store for one plugin instance under `policy`.
    pub fn store(&self, policy: &Arc<LockPolicy>, owner: &str) -> Store<Plugin> {
        Store::new(
            &self.engine,
            Plugin::new(self.backend.as_ref(), policy, owner),
        )
    }

    /// Instantiates the plugin in `store` and hands it `event`: the reply, or
    /// the trap.
    ///
    /// # Errors
    /// The plugin trapped (or could not be instantiated).
    pub fn call(&self, store: &mut Store<Plugin>, event: &str) -> wasmtime::Result<Reply> {
        let instance = self.pre.instantiate(&mut *store)?;
        let handle = instance.get_typed_func::<(&str,), (Reply,)>(&mut *store, "handle")?;
        let (reply,) = handle.call(&mut *store, (event,))?;
        Ok(reply)
    }

    /// One event in a Store of its own, granted every name, dropped at the end.
    ///
    /// # Errors
    /// The plugin trapped.
    pub fn handle(&self, event: &str) -> wasmtime::Result<Reply> {
        let mut store = self.store(&Arc::new(LockPolicy::new()), event);
        self.call(&mut store, event)
    }
}

/// WASI and wardlock, for wasmtime's synchronous API.
fn link_sync(linker: &mut Linker<Plugin>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_sync(linker)?;
    wardlock_host::add_to_linker_sync(linker, Plugin::locks)
}

/// Runs the WASI command `guest` with `args` in a synchronous host (as
/// [`SyncPlatform`], every name granted) and returns what it printed.
///
/// # Panics
/// When the guest cannot be loaded, or traps.
pub fn run_sync_command(guest: Guest, backend: &dyn LockBackend, args: &[&str]) -> String {
    let (engine, pre) = prepare(guest, link_sync);
    let stdout = MemoryOutputPipe::new(1 << 20);
    let plugin = Plugin {
        wasi: WasiCtx::builder()
            .arg(guest.name())
            .args(args)
            .stdout(stdout.clone())
            .inherit_stderr()
            .build(),
        table: ResourceTable::new(),
        locks: WardlockCtx::new(backend, Arc::new(LockPolicy::new()), guest.name()),
    };
    let mut store = Store::new(&engine, plugin);
    let instance = pre.instantiate(&mut store).expect("instantiate");
    let command = Command::new(&mut store, &instance).expect("a WASI command");
    let exit = command
        .wasi_cli_run()
        .call_run(&mut store)
        .expect("no trap");
    assert!(exit.is_ok(), "{} failed", guest.name());
    String::from_utf8_lossy(&stdout.contents()).into_owned()
}

/// The same platform on wasmtime's async API
/// (`wasmtime_wasi::p2::add_to_linker_async`, `wardlock_host::add_to_linker`).
pub struct AsyncPlatform {
    engine: Engine,
    pre: InstancePre<Plugin>,
    backend: Arc<dyn LockBackend>,
}

impl AsyncPlatform {
    /// The platform with the `acme-plugin` guest, locking on `backend`.
    ///
    /// # Panics
    /// When the guest cannot be loaded or linked.
    pub fn new(backend: Arc<dyn LockBackend>) -> AsyncPlatform {
        let (engine, pre) = prepare(Guest::AcmePlugin, |linker| {
            wasmtime_wasi::p2::add_to_linker_async(linker)?;
            wardlock_host::add_to_linker(linker, Plugin::locks)
        });
        AsyncPlatform {
            engine,
            pre,
            backend,
        }
    }

    /// One event in a Store of its own, granted every name, dropped at the
    /// end (or when the returned future is dropped: mid-wait, say).
    ///
    /// # Errors
    /// The plugin trapped.
    ///
    /// # Cancellation safety
    /// Dropping the future drops the Store, and with it the plugin's lock
    /// session: what it held or waited for is freed.
    pub async fn handle(&self, event: &str) -> wasmtime::Result<Reply> {
        let plugin = Plugin::new(self.backend.as_ref(), &Arc::new(LockPolicy::new()), event);
        let mut store = Store::new(&self.engine, plugin);
        let instance = self.pre.instantiate_async(&mut store).await?;
        let handle = instance.get_typed_func::<(&str,), (Reply,)>(&mut store, "handle")?;
        let (reply,) = handle.call_async(&mut store, (event,)).await?;
        Ok(reply)
    }
}

/// A `hold` reply's grant: its token and when (wall-clock nanoseconds) the
/// plugin held the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The grant's fencing token.
    pub token: u64,
    /// Just after the grant.
    pub start: u128,
    /// Just before the release.
    pub end: u128,
}

impl Held {
    /// Reads `token=T start=S end=E`.
    ///
    /// # Panics
    /// When `reply` is not such a line.
    pub fn parse(reply: &str) -> Held {
        let field = |key: &str| -> &str {
            reply
                .split_whitespace()
                .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
                .unwrap_or_else(|| panic!("no {key}= in hold reply {reply:?}"))
        };
        Held {
            token: field("token").parse().expect("token"),
            start: field("start").parse().expect("start"),
            end: field("end").parse().expect("end"),
        }
    }
}

/// Asserts that no two of `held` overlap in time and that tokens rise in the
/// order the lock was held.
///
/// # Panics
/// When two grants overlap or a later grant has a lower token.
pub fn assert_one_at_a_time(mut held: Vec<Held>) {
    held.sort_by_key(|h| h.start);
    for pair in held.windows(2) {
        assert!(
            pair[0].end <= pair[1].start,
            "two plugins held the lock at once: {pair:?}"
        );
        assert!(
            pair[0].token < pair[1].token,
            "tokens fell between grants: {pair:?}"
        );
    }
}

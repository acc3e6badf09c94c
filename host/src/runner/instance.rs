//! What every guest instance gets, whatever its world: the linker with WASI,
//! outbound HTTP and the lock capability, and a Store whose data owns the
//! instance's lock session (optionally under a hold lease).

use wasmtime::component::{Component, InstancePre, Linker, ResourceTable};
use wasmtime::{Store, StoreLimitsBuilder};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi_http::WasiHttpCtx;

use super::config::RunnerConfig;
use super::declared::DeclaredHold;
use super::error::{RunnerError, first_line};
use super::lease::Lease;
use super::runtime::Runtime;
use super::state::InstanceState;
use crate::capability::WardlockCtx;
use crate::keyvalue::KeyValueCtx;

/// Links `component` against WASI, `wasi:http` (outgoing, governed by each
/// instance's [`super::OutboundPolicy`]) and `wardlock:lock`.
///
/// `typed` then checks the exports the world needs (`CommandPre::new`,
/// `ProxyPre::new`).
///
/// # Errors
/// [`RunnerError::World`] naming `plugin` and `world` when the component needs
/// imports the host does not provide or lacks the world's exports.
pub(crate) fn pre_instantiate<P>(
    runtime: &Runtime,
    component: &Component,
    plugin: &str,
    world: &'static str,
    typed: impl FnOnce(InstancePre<InstanceState>) -> wasmtime::Result<P>,
) -> Result<P, RunnerError> {
    let world_error = |error: wasmtime::Error| RunnerError::World {
        name: plugin.to_owned(),
        world,
        detail: first_line(&error.to_string()),
    };
    let mut linker = Linker::<InstanceState>::new(runtime.wasm_engine());
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(world_error)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).map_err(world_error)?;
    crate::capability::add_to_linker(&mut linker, InstanceState::locks).map_err(world_error)?;
    crate::keyvalue::add_to_linker(&mut linker, InstanceState::keyvalue).map_err(world_error)?;
    let pre = linker.instantiate_pre(component).map_err(world_error)?;
    typed(pre).map_err(world_error)
}

/// A Store for one instance: `wasi` plus the configuration's preopens and
/// environment, a lock session owned by `owner`, `wasi:keyvalue` (its writes
/// fenced by `declared`'s exclusive locks, when given), the memory limit and
/// epoch yields. Returns the hold lease when the configuration sets one.
///
/// # Errors
/// A preopened directory that cannot be opened.
pub(crate) fn new_store(
    runtime: &Runtime,
    config: &RunnerConfig,
    owner: &str,
    mut wasi: WasiCtxBuilder,
    declared: Option<&DeclaredHold>,
) -> Result<(Store<InstanceState>, Option<Lease>), String> {
    wasi.envs(&config.env);
    for dir in &config.preopens {
        wasi.preopened_dir(&dir.host, &dir.guest, wasmtime_wasi::FsPerms::ReadWrite)
            .map_err(|e| format!("cannot preopen {}: {e}", dir.host.display()))?;
    }
    let session = config.backend.open_session(owner);
    let session = match &config.locks {
        Some(table) => table.track(&config.backend, owner, session),
        None => session,
    };
    let (session, lease) = match config.max_hold {
        Some(max_hold) => {
            let (session, lease) = Lease::wrap(session, max_hold);
            (session, Some(lease))
        }
        None => (session, None),
    };
    let locks = WardlockCtx::with_session(session, config.policy.clone());
    let buckets = config.kv_buckets.clone();
    let keyvalue = match declared {
        Some(held) => held.key_value(buckets),
        None => KeyValueCtx::new(config.backend.clone(), owner, buckets),
    };
    let state = InstanceState {
        wasi: wasi.build(),
        http: WasiHttpCtx::new(),
        outbound: config.outbound.for_instance(locks.fence_tokens()),
        table: ResourceTable::new(),
        locks,
        keyvalue,
        limits: StoreLimitsBuilder::new()
            .memory_size(config.memory_limit)
            .trap_on_grow_failure(true)
            .build(),
    };
    let mut store = Store::new(runtime.wasm_engine(), state);
    store.limiter(|state| &mut state.limits);
    store.set_epoch_deadline(1);
    store.epoch_deadline_async_yield_and_update(1);
    Ok((store, lease))
}

/// Waits for `lease` to expire, or forever without one.
///
/// # Cancellation safety
/// Cancel safe.
pub(crate) async fn lease_expired(lease: Option<&Lease>) {
    match lease {
        Some(lease) => lease.expired().await,
        None => std::future::pending().await,
    }
}

//! Embedding wardlock in a plugin platform with its own world.
//!
//! The platform links WASI and the lock capability into its own linker, keeps a
//! `WardlockCtx` in each Store's data, and runs one Store per event. Dropping the
//! Store at the end of the event ends the plugin's lock session: any lock the plugin
//! forgot, or held when it trapped, is released at once.
//!
//! Run: `cargo run -p wardlock-host --example embed -- PLUGIN.wasm [EVENT...]` with a
//! component targeting `acme:platform/plugin` (see `examples/wit/platform.wit`).

use std::sync::Arc;

use wardlock_host::{LockPolicy, MemoryBackend, WardlockCtx, WardlockView};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

mod bindings {
    wasmtime::component::bindgen!({
        path: ["../wit", "examples/wit"],
        world: "acme:platform/plugin",
        imports: { default: async | trappable },
        exports: { default: async },
        // Reuse wardlock's generated types and host implementation.
        with: { "wardlock:lock": wardlock_host::capability::bindings::wardlock::lock },
    });
}

/// The platform's per-plugin-instance state.
struct PluginState {
    wasi: WasiCtx,
    table: ResourceTable,
    locks: WardlockCtx,
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

#[tokio::main]
async fn main() -> wasmtime::Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: embed PLUGIN.wasm [EVENT...]");
        std::process::exit(2);
    };
    let events: Vec<String> = args.collect();

    let engine = Engine::new(&Config::new())?;
    let mut linker = Linker::<PluginState>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wardlock_host::add_to_linker(&mut linker, |s: &mut PluginState| {
        WardlockView::new(&mut s.locks, &mut s.table)
    })?;

    let component = Component::from_file(&engine, &path)?;
    let pre = bindings::PluginPre::new(linker.instantiate_pre(&component)?)?;
    let backend = MemoryBackend::new();
    let policy = Arc::new(LockPolicy::new().grant("acme")?);

    for (n, event) in events.iter().enumerate() {
        let state = PluginState {
            wasi: WasiCtx::builder().inherit_stdio().build(),
            table: ResourceTable::new(),
            locks: WardlockCtx::new(&backend, policy.clone(), &format!("acme-plugin#{n}")),
        };
        let mut store = Store::new(&engine, state);
        let plugin = pre.instantiate_async(&mut store).await?;
        match plugin.call_handle(&mut store, event).await {
            Ok(Ok(reply)) => println!("{event}: {reply}"),
            Ok(Err(error)) => println!("{event}: plugin error: {error}"),
            Err(trap) => println!("{event}: plugin trapped: {trap}"),
        }
        // The Store goes here, and with it every lock the plugin still held.
        drop(store);
        assert_eq!(backend.active_names(), 0);
    }
    Ok(())
}

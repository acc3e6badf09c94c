//! Embedding wardlock in a plugin platform with its own world, on wasmtime's
//! async API (the synchronous twin is `embed_sync.rs`).
//!
//! The platform links WASI and the lock capability into its own linker, keeps a
//! `WardlockCtx` in each Store's data, and runs one Store per event. Dropping the
//! Store at the end of the event ends the plugin's lock session: any lock the plugin
//! forgot, or held when it trapped, is released at once.
//!
//! Run: `cargo run -p wardlock --example embed -- [--zookeeper HOST:PORT]
//! PLUGIN.wasm [EVENT...]` with a component targeting `acme:platform/plugin`
//! (see `examples/wit/platform.wit`), e.g. `plugins/build.sh acme-plugin`'s
//! `acme-plugin.wasm` and the events `"hold acme/a 50" "wait acme/a 300"`.

mod common;

use wardlock::registry::Registry;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, Store};

use common::{PluginState, interrupt_later, parse_args, report};

mod bindings {
    wasmtime::component::bindgen!({
        // The platform's world and, in `deps/`, a copy of wardlock's
        // `wit/lock.wit`: the example builds from this package alone.
        path: "examples/wit",
        world: "acme:platform/plugin",
        imports: { default: async | trappable },
        exports: { default: async },
        // Reuse wardlock's generated types and host implementation.
        with: { "wardlock:lock": wardlock_host::capability::bindings::wardlock::lock },
    });
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (args, engine) = parse_args(&Registry::builtin())?;
    // The engine the flags name, connected the way `wardlock run` connects it.
    let backend = engine.connect(true).await?;
    println!("engine: {}", backend.kind());

    let engine = Engine::new(&Config::new())?;
    let mut linker = Linker::<PluginState>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wardlock_host::add_to_linker(&mut linker, PluginState::locks)?;
    let component = Component::from_file(&engine, &args.plugin)?;
    let pre = bindings::PluginPre::new(linker.instantiate_pre(&component)?)?;

    let handle_event = |n: usize, event: String| {
        let state = PluginState::new(backend.as_ref(), &args, &format!("acme-plugin#{n}"));
        interrupt_later(&args, vec![state.locks.interrupt_handle()]);
        let mut store = Store::new(&engine, state);
        let pre = pre.clone();
        async move {
            let outcome = match pre.instantiate_async(&mut store).await {
                Ok(plugin) => plugin.call_handle(&mut store, &event).await,
                Err(error) => Err(error),
            };
            // The Store goes here, and with it every lock the plugin still held.
            drop(store);
            (event, outcome)
        }
    };
    if args.concurrent {
        let mut tasks = tokio::task::JoinSet::new();
        for (n, event) in args.events.iter().enumerate() {
            tasks.spawn(handle_event(n, event.clone()));
        }
        while let Some(done) = tasks.join_next().await {
            let (event, outcome) = done?;
            report(&event, outcome);
        }
    } else {
        for (n, event) in args.events.iter().enumerate() {
            let (event, outcome) = handle_event(n, event.clone()).await;
            report(&event, outcome);
        }
    }
    // Ends the engine's sessions now (on ZooKeeper: its ephemeral nodes go
    // at once, not after the session timeout).
    backend.shutdown().await;
    Ok(())
}

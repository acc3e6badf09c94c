//! The synchronous twin of `embed.rs`: a plugin platform on wasmtime's
//! synchronous API (`InstancePre::instantiate`, `Func::call`,
//! `wasmtime_wasi::p2::add_to_linker_sync`, `wardlock_host::add_to_linker_sync`),
//! with one Store per event and thread, and no tokio runtime of its own.
//!
//! A blocked wait blocks only its thread. `--wait-limit-ms` bounds every wait;
//! `--interrupt-after-ms` shows the other way out: a watchdog thread ends every
//! plugin's waits through their `WaitInterrupt` handles (the plugins get
//! `timeout`, and nothing stays queued).
//!
//! Run: `cargo run -p wardlock --example embed_sync -- [--zookeeper
//! HOST:PORT] [--concurrent] PLUGIN.wasm [EVENT...]`.

mod common;

use wardlock::registry::Registry;
use wardlock_host::capability::sync::block_on;
use wasmtime::component::{Component, InstancePre, Linker};
use wasmtime::{Config, Engine, Store};

use common::{PluginState, interrupt_later, parse_args, report};

fn main() -> anyhow::Result<()> {
    let (args, engine) = parse_args(&Registry::builtin())?;
    // Connecting is async; `block_on` runs it on the runtime the sync
    // bindings use, where the backend's background tasks then live.
    let backend = block_on(engine.connect(true))?;
    println!("engine: {}", backend.kind());

    let engine = Engine::new(&Config::new())?;
    let mut linker = Linker::<PluginState>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    wardlock_host::add_to_linker_sync(&mut linker, PluginState::locks)?;
    let component = Component::from_file(&engine, &args.plugin)?;
    let pre = linker.instantiate_pre(&component)?;

    let new_store = |n: usize| {
        let owner = format!("acme-plugin#{n}");
        Store::new(&engine, PluginState::new(backend.as_ref(), &args, &owner))
    };
    if args.concurrent {
        let stores: Vec<_> = (0..args.events.len()).map(new_store).collect();
        let interrupts = stores.iter().map(|s| s.data().locks.interrupt_handle());
        interrupt_later(&args, interrupts.collect());
        let pre = &pre;
        std::thread::scope(|scope| {
            let running: Vec<_> = (stores.into_iter().zip(&args.events))
                .map(|(store, event)| scope.spawn(move || (event, handle(pre, store, event))))
                .collect();
            for thread in running {
                match thread.join() {
                    Ok((event, outcome)) => report(event, outcome),
                    Err(_) => eprintln!("a plugin thread panicked"),
                }
            }
        });
    } else {
        for (n, event) in args.events.iter().enumerate() {
            let store = new_store(n);
            interrupt_later(&args, vec![store.data().locks.interrupt_handle()]);
            report(event, handle(&pre, store, event));
        }
    }
    // Ends the engine's sessions now (on ZooKeeper: its ephemeral nodes go
    // at once, not after the session timeout).
    block_on(backend.shutdown());
    Ok(())
}

/// Instantiates the plugin in `store`, hands it `event` and drops the Store
/// (and with it the plugin's lock session: whatever it still held is freed).
fn handle(
    pre: &InstancePre<PluginState>,
    mut store: Store<PluginState>,
    event: &str,
) -> wasmtime::Result<Result<String, String>> {
    let instance = pre.instantiate(&mut store)?;
    let handle =
        instance.get_typed_func::<(&str,), (Result<String, String>,)>(&mut store, "handle")?;
    let (reply,) = handle.call(&mut store, (event,))?;
    Ok(reply)
}

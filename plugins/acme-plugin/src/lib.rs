//! `acme-plugin`: a plugin for a made-up plugin platform's own world,
//! `acme:platform/plugin` (`host/examples/wit/platform.wit`), which imports
//! wardlock's `locks` beside the platform's export. The embedding examples
//! (`host/examples/embed.rs`, `embed_sync.rs`) and their tests run it.
//!
//! It takes locks with the Rust guest SDK (`wardlock-guest`), whose generated
//! `wardlock:lock` bindings the platform's bindings reuse. Each call of
//! `handle` gets one event, words separated by spaces:
//!
//! - `hold NAME MS`: takes NAME exclusively, holds it MS milliseconds, releases
//!   it; replies `token=T start=S end=E` (wall-clock nanoseconds just after
//!   the grant and just before the release, so a test can check that two
//!   holders' intervals never overlap).
//! - `wait NAME [TIMEOUT_MS]`: takes NAME (waiting at most TIMEOUT_MS, or
//!   until granted) and releases it; replies `token=T`.
//! - `hoard PREFIX N`: takes `PREFIX/n0` .. `PREFIX/nN-1` and keeps them until
//!   the call returns; replies `held N`.
//! - `trap NAME [MS]`: takes NAME, holds it MS milliseconds (default 0) and
//!   panics while holding it (a trap: the host must free the lock at once).
//!
//! A lock error is the reply's error, as the SDK's `Error` debug form
//! (`Timeout`, `Denied("…")`, `LimitExceeded("…")`).

// Built for the host target too (`cargo clippy --workspace`), where nothing
// is exported and so nothing is used.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
#![allow(
    missing_docs,
    reason = "a guest: its interface is its WIT world; the bindings wit-bindgen generates for it have no docs"
)]

mod event;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wardlock_guest::{Error, Lock};

use event::Event;

wit_bindgen::generate!({
    path: ["../../wit", "../../host/cli/examples/wit"],
    world: "acme:platform/plugin",
    // The SDK's bindings of wardlock:lock, so its `Lock` and `Guard` serve
    // this world's imports.
    with: {
        "wardlock:lock/types@0.1.0": wardlock_guest::bindings::wardlock::lock::types,
        "wardlock:lock/locks@0.1.0": wardlock_guest::bindings::wardlock::lock::locks,
    },
});

struct Plugin;

impl Guest for Plugin {
    fn handle(event: String) -> Result<String, String> {
        let event = Event::parse(&event)?;
        run(event).map_err(|error| format!("{error:?}"))
    }
}

fn run(event: Event) -> Result<String, Error> {
    match event {
        Event::Hold { name, hold } => {
            let guard = Lock::exclusive(name).acquire()?;
            let start = now_ns();
            std::thread::sleep(hold);
            let end = now_ns();
            let token = guard.fencing_token();
            guard.release()?;
            Ok(format!("token={token} start={start} end={end}"))
        }
        Event::Wait { name, timeout } => {
            let mut lock = Lock::exclusive(name);
            if let Some(timeout) = timeout {
                lock = lock.timeout(timeout);
            }
            let guard = lock.acquire()?;
            let token = guard.fencing_token();
            guard.release()?;
            Ok(format!("token={token}"))
        }
        Event::Hoard { prefix, count } => {
            let mut guards = Vec::with_capacity(count);
            for n in 0..count {
                guards.push(Lock::exclusive(format!("{prefix}/n{n}")).acquire()?);
            }
            Ok(format!("held {}", guards.len()))
        }
        Event::Trap { name, hold } => {
            let _guard = Lock::exclusive(name.clone()).acquire()?;
            std::thread::sleep(hold);
            panic!("acme-plugin: trapping while holding {name}");
        }
    }
}

/// Wall-clock nanoseconds since the Unix epoch (0 if the clock is before it).
fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_nanos()
}

// Exported only when built for wasm: on the host target the export names are
// not valid native symbols.
#[cfg(target_arch = "wasm32")]
export!(Plugin);

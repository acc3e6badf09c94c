//! `async-tasks FIRST SECOND`: two tasks on wstd's event loop, one awaiting
//! an exclusive lock on FIRST, the other on SECOND. Each prints
//! `<task> holds <lock> token=<T>` once granted and releases at once; the
//! guest exits 1 if either fails. With blocking waits the second request
//! would not even be made until the first was granted; awaited, both queue at
//! once and either may be served first.

#![allow(
    missing_docs,
    reason = "a guest: its interface is its command line; `#[wstd::main]` expands to an undocumented `pub fn main`"
)]

use wardlock_guest::v2::Lock;

/// Awaits `lock` exclusively, says so as `task`, releases.
async fn hold_once(task: &'static str, lock: String) -> Result<(), String> {
    let pending = Lock::exclusive(lock.as_str())
        .acquire_async()
        .map_err(|e| format!("{task}: {e}"))?;
    let guard = pending.await.map_err(|e| format!("{task}: {e}"))?;
    println!("{task} holds {lock} token={}", guard.fencing_token());
    guard.release().map_err(|e| format!("{task}: {e}"))
}

#[wstd::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(first), Some(second)) = (args.next(), args.next()) else {
        eprintln!("usage: async-tasks FIRST SECOND");
        std::process::exit(2);
    };
    let other = wstd::runtime::spawn(hold_once("b", second));
    let a = hold_once("a", first).await;
    let b = other.await;
    for result in [a, b] {
        if let Err(error) = result {
            eprintln!("{error}");
            std::process::exit(1);
        }
    }
}

//! `lockctl3 COMMAND ARGS...`: a WASI 0.3 command written against
//! `wardlock:lock@0.3.0` alone (no SDK), for the tests of 0.3 guests. Every
//! lock call is awaited; several are awaited at once where the command says.
//!
//! - `counter NAME ITERATIONS FILE`: ITERATIONS times, await NAME
//!   exclusively, add one to the integer in FILE, release.
//! - `many COUNT PREFIX`: await COUNT exclusive locks `PREFIX/l0`..`PREFIX/lCOUNT-1`
//!   at once (one task, `join_all`), then release them; prints
//!   `many: COUNT granted` or the errors' count and the first error.
//! - `cancel NAME OTHER`: await NAME and OTHER at once; when OTHER is granted
//!   first, drop (cancel) the wait for NAME, then print what
//!   `contenders(NAME)` says: `cancel: OTHER first; NAME has H holders and W waiters`
//!   (`...; NAME's contenders: ERROR` on an engine that cannot list them).
//! - `pending-end HELD COUNT NAME...`: hold HELD exclusive locks
//!   `NAME-held/l0`.., start COUNT waits on each NAME, print `waiting`, then
//!   end as the host's deadline decides (it never returns by itself).
//! - `trap-pending NAME`: start a wait on NAME, hold `NAME-held`, then trap.
//! - `loop NAME OPS`: OPS times, await NAME exclusively and release it,
//!   timing each pair; prints what `bench-guest loop` prints (`done ops=N
//!   writes=0 violations=0 start_unix_ns=S end_unix_ns=E`, then `lat_ns
//!   L1 L2 ...`), for `wardlock-bench`'s `wit-v3` workload.
//! - `many-timed COUNT PREFIX join|seq`: as `many`, all at once (`join`) or
//!   one after another (`seq`), printing `elapsed_ns=T` (first call to
//!   last grant).
//! - `permits NAME PERMITS COUNT`: await COUNT permits of semaphore NAME
//!   (of PERMITS) at once; prints `permits: COUNT granted, tokens rising`
//!   (or what went wrong), then releases the first with its `not-held`
//!   future taken before and prints `first after release: STATUS`.
//! - `many-loop ROUNDS FILE NAME...`: ROUNDS times, `acquire-many` every
//!   NAME exclusively (as listed), add one to the integer in FILE, release;
//!   prints `many-loop: ROUNDS`.
//! - `many-cancel OTHER GATE NAME...`: await `acquire-many` of the NAMEs and
//!   OTHER at once; once OTHER is granted, drop (cancel) the set, print
//!   `many-cancel: OTHER first`, then await GATE and print `gate`.
//! - `revoke-wait NAME`: hold NAME, take its `revoked` future, hold `parked`
//!   (the test's sign that the future exists), await it, then print
//!   `revoked; requested: BOOL` (`revocation-requested`) and release.
//! - `ask NAME`: `request-revocation` of NAME; prints `asked N`.
//! - `watch NAME`: hold NAME, take its `not-held` future, hold `parked`
//!   (the test's sign that the future exists), await the future and print
//!   `not-held: STATUS`, then `release: RESULT`; then hold `NAME-again`,
//!   take its future, release, and print `after release: STATUS`.
//!
//! - `futures NAME COUNT keep|drop`: hold NAME and take COUNT of its
//!   `not-held` futures, keeping every one (`keep`) or dropping each at once
//!   (`drop`); prints `futures: COUNT kept` or `futures: COUNT dropped`.
//! - `store`, `put-count`, `elect`, `campaign-cancel`: the guarded store and
//!   election (`data.rs`).
//!
//! Exit: `run` returns `err` (exit 1) on any failure, after printing it.

#![allow(
    missing_docs,
    reason = "a guest: its interface is its command line; the generated bindings are undocumented"
)]

mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/v0.3",
        world: "wardlock:lock/command",
        generate_all,
    });
}

use bindings::exports::wasi::cli::run::Guest;
use bindings::wardlock::lock::locks::{self, Lock, Options};
use bindings::wardlock::lock::types::{Error, Mode};
use futures::future::{Either, join_all, select};

mod data;

struct Command;

bindings::export!(Command with_types_in bindings);

impl Guest for Command {
    async fn run() -> Result<(), ()> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let result = match args.as_slice() {
            ["counter", name, iterations, file] => counter(name, iterations, file).await,
            ["many", count, prefix] => many(count, prefix).await,
            ["cancel", name, other] => cancel(name, other).await,
            ["pending-end", held, count, names @ ..] => pending_end(held, count, names).await,
            ["trap-pending", name] => trap_pending(name).await,
            ["watch", name] => watch(name).await,
            ["revoke-wait", name] => revoke_wait(name).await,
            ["ask", name] => ask(name).await,
            ["many-loop", rounds, file, names @ ..] => many_loop(rounds, file, names).await,
            ["many-cancel", other, gate, names @ ..] => many_cancel(other, gate, names).await,
            ["permits", name, permits, count] => take_permits(name, permits, count).await,
            ["loop", name, ops] => timed_loop(name, ops).await,
            ["many-timed", count, prefix, how] => many_timed(count, prefix, how).await,
            ["futures", name, count, how] => futures(name, count, how).await,
            ["store", name] => data::store(name).await,
            ["put-count", name, key, iterations] => data::put_count(name, key, iterations).await,
            ["elect", name] => data::elect(name).await,
            ["campaign-cancel", name, gate] => data::campaign_cancel(name, gate).await,
            _ => Err(
                "usage: lockctl3 counter|many|many-timed|many-loop|many-cancel|revoke-wait|ask|cancel|pending-end|trap-pending|watch|loop|permits|futures|store|put-count|elect|campaign-cancel ARGS...".into(),
            ),
        };
        result.map_err(|message| eprintln!("lockctl3: {message}"))
    }
}

fn exclusive(timeout_ms: Option<u64>) -> Options {
    Options {
        mode: Mode::Exclusive,
        timeout_ms,
    }
}

fn say(error: &Error) -> String {
    format!("{error:?}")
}

fn number(text: &str) -> Result<u64, String> {
    text.parse().map_err(|_| format!("not a number: {text}"))
}

async fn counter(name: &str, iterations: &str, file: &str) -> Result<(), String> {
    let mut token = 0;
    for _ in 0..number(iterations)? {
        let lock = locks::acquire(name.to_string(), exclusive(None))
            .await
            .map_err(|e| say(&e))?;
        if lock.fencing_token() <= token {
            return Err(format!(
                "fencing token went back: {} after {token}",
                lock.fencing_token()
            ));
        }
        token = lock.fencing_token();
        let value = read_value(file)?;
        std::fs::write(file, (value + 1).to_string()).map_err(|e| format!("{file}: {e}"))?;
        lock.release().map_err(|e| say(&e))?;
    }
    println!("counter: {name} +{iterations} (last token {token})");
    Ok(())
}

async fn many(count: &str, prefix: &str) -> Result<(), String> {
    let count = number(count)?;
    let waits = (0..count).map(|i| locks::acquire(format!("{prefix}/l{i}"), exclusive(None)));
    let results = join_all(waits).await;
    let errors: Vec<&Error> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    let granted = results.len() - errors.len();
    for lock in results.iter().flatten() {
        lock.release().map_err(|e| say(&e))?;
    }
    match errors.first() {
        None => {
            println!("many: {granted} granted");
            Ok(())
        }
        Some(first) => Err(format!(
            "many: {granted} granted, {} refused, first: {}",
            errors.len(),
            say(first)
        )),
    }
}

async fn cancel(name: &str, other: &str) -> Result<(), String> {
    let wanted = Box::pin(locks::acquire(name.to_string(), exclusive(None)));
    let first = Box::pin(locks::acquire(other.to_string(), exclusive(None)));
    let held: Lock = match select(wanted, first).await {
        Either::Left((got, _)) => {
            return Err(format!(
                "{name} was granted first: {:?}",
                got.map(|l| l.fencing_token())
            ));
        }
        // Dropping `wanted` here cancels its wait.
        Either::Right((got, wanted)) => {
            drop(wanted);
            got.map_err(|e| say(&e))?
        }
    };
    // An engine without contention listing says so: the cancel still counts.
    match locks::contenders(name.to_string(), 16).await {
        Ok(queue) => {
            let holders = queue.contenders.iter().filter(|c| c.holds).count();
            println!(
                "cancel: {other} first; {name} has {holders} holders and {} waiters",
                queue.total as usize - holders
            );
        }
        Err(error) => println!(
            "cancel: {other} first; {name}'s contenders: {}",
            say(&error)
        ),
    }
    held.release().map_err(|e| say(&e))
}

async fn pending_end(held: &str, count: &str, names: &[&str]) -> Result<(), String> {
    let mut locks_held = Vec::new();
    for i in 0..number(held)? {
        let name = format!("{}-held/l{i}", names.first().unwrap_or(&"pending"));
        locks_held.push(
            locks::acquire(name, exclusive(None))
                .await
                .map_err(|e| say(&e))?,
        );
    }
    let count = number(count)?;
    let waits = names.iter().flat_map(|name| {
        (0..count).map(move |_| locks::acquire(name.to_string(), exclusive(None)))
    });
    let waits: Vec<_> = waits.collect();
    let pending = waits.len();
    // One poll starts every call (the host queues each), then all wait.
    let mut all = Box::pin(join_all(waits));
    if let std::task::Poll::Ready(ended) = futures::poll!(all.as_mut()) {
        return Err(format!("the waits ended at once: {} results", ended.len()));
    }
    println!("waiting: {} held, {pending} pending", locks_held.len());
    let ended = all.await;
    Err(format!("the waits ended: {} results", ended.len()))
}

async fn trap_pending(name: &str) -> Result<(), String> {
    let mut wait = Box::pin(locks::acquire(name.to_string(), exclusive(None)));
    // One poll starts the call; it waits while the guest goes on.
    if futures::poll!(wait.as_mut()).is_ready() {
        return Err(format!("{name} was granted"));
    }
    let held = locks::acquire(format!("{name}-held"), exclusive(None))
        .await
        .map_err(|e| say(&e))?;
    println!(
        "trapping: holding token {}, waiting for {name}",
        held.fencing_token()
    );
    std::process::abort()
}

async fn watch(name: &str) -> Result<(), String> {
    let lock = locks::acquire(name.to_string(), exclusive(None))
        .await
        .map_err(|e| say(&e))?;
    let not_held = lock.not_held();
    let parked = locks::acquire("parked".to_string(), exclusive(None))
        .await
        .map_err(|e| say(&e))?;
    let status = not_held.await;
    println!("not-held: {status:?}");
    println!("release: {:?}", lock.release());
    // Lost with NAME when the whole session expired: dropped either way.
    drop(parked);
    let again = locks::acquire(format!("{name}-again"), exclusive(None))
        .await
        .map_err(|e| say(&e))?;
    let not_held = again.not_held();
    again.release().map_err(|e| say(&e))?;
    println!("after release: {:?}", not_held.await);
    Ok(())
}

fn unix_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

async fn timed_loop(name: &str, ops: &str) -> Result<(), String> {
    let ops = number(ops)?;
    let mut latencies = String::new();
    let start = unix_ns();
    for _ in 0..ops {
        let began = std::time::Instant::now();
        let lock = locks::acquire(name.to_string(), exclusive(None))
            .await
            .map_err(|e| say(&e))?;
        drop(lock);
        latencies.push(' ');
        latencies.push_str(&began.elapsed().as_nanos().to_string());
    }
    let end = unix_ns();
    println!(
        "done ops={ops} writes=0 violations=0 start_unix_ns={start} end_unix_ns={end}\nlat_ns{latencies}"
    );
    Ok(())
}

async fn many_timed(count: &str, prefix: &str, how: &str) -> Result<(), String> {
    let count = number(count)?;
    let name = |i: u64| format!("{prefix}/l{i}");
    let began = std::time::Instant::now();
    let held: Vec<Lock> = match how {
        "join" => join_all((0..count).map(|i| locks::acquire(name(i), exclusive(None))))
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .map_err(|e| say(&e))?,
        "seq" => {
            let mut held = Vec::new();
            for i in 0..count {
                held.push(
                    locks::acquire(name(i), exclusive(None))
                        .await
                        .map_err(|e| say(&e))?,
                );
            }
            held
        }
        other => return Err(format!("many-timed: join or seq, not {other}")),
    };
    let elapsed = began.elapsed().as_nanos();
    drop(held);
    println!("elapsed_ns={elapsed}");
    Ok(())
}

async fn take_permits(name: &str, permits: &str, count: &str) -> Result<(), String> {
    let permits = u32::try_from(number(permits)?).map_err(|_| "too many permits".to_string())?;
    let waits = (0..number(count)?).map(|_| locks::acquire_permit(name.to_string(), permits, None));
    let held: Vec<locks::Permit> = join_all(waits)
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(|e| say(&e))?;
    let mut tokens: Vec<u64> = held.iter().map(|p| p.fencing_token()).collect();
    tokens.sort_unstable();
    tokens.dedup();
    if tokens.len() != held.len() {
        return Err(format!("permits: tokens repeat: {tokens:?}"));
    }
    println!("permits: {} granted, tokens rising", held.len());
    let mut held = held.into_iter();
    if let Some(first) = held.next() {
        let not_held = first.not_held();
        first.release().map_err(|e| say(&e))?;
        println!("first after release: {:?}", not_held.await);
    }
    Ok(())
}

fn requests(names: &[&str]) -> Vec<locks::Request> {
    names
        .iter()
        .map(|name| locks::Request {
            name: name.to_string(),
            mode: Mode::Exclusive,
        })
        .collect()
}

async fn many_loop(rounds: &str, file: &str, names: &[&str]) -> Result<(), String> {
    let rounds = number(rounds)?;
    for _ in 0..rounds {
        let held = locks::acquire_many(requests(names), None)
            .await
            .map_err(|e| say(&e))?;
        let value = read_value(file)?;
        std::fs::write(file, (value + 1).to_string()).map_err(|e| format!("{file}: {e}"))?;
        drop(held);
    }
    println!("many-loop: {rounds}");
    Ok(())
}

async fn many_cancel(other: &str, gate: &str, names: &[&str]) -> Result<(), String> {
    let set = Box::pin(locks::acquire_many(requests(names), None));
    let first = Box::pin(locks::acquire(other.to_string(), exclusive(None)));
    let held = match select(set, first).await {
        Either::Left((got, _)) => {
            return Err(format!("the set was granted first: {}", got.is_ok()));
        }
        // Dropping `set` here cancels it: what it took is released.
        Either::Right((got, set)) => {
            drop(set);
            got.map_err(|e| say(&e))?
        }
    };
    println!("many-cancel: {other} first");
    let gate = locks::acquire(gate.to_string(), exclusive(None))
        .await
        .map_err(|e| say(&e))?;
    println!("gate");
    drop(gate);
    drop(held);
    Ok(())
}

/// The integer in `file`: 0 when it is missing or empty.
fn read_value(file: &str) -> Result<u64, String> {
    match std::fs::read_to_string(file) {
        Ok(text) if !text.trim().is_empty() => number(text.trim()),
        Ok(_) => Ok(0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(format!("{file}: {e}")),
    }
}

async fn revoke_wait(name: &str) -> Result<(), String> {
    let lock = locks::acquire(name.to_string(), exclusive(None))
        .await
        .map_err(|e| say(&e))?;
    let revoked = lock.revoked();
    let parked = locks::acquire("parked".to_string(), exclusive(None))
        .await
        .map_err(|e| say(&e))?;
    revoked.await;
    println!("revoked; requested: {}", lock.revocation_requested().await);
    drop(parked);
    lock.release().map_err(|e| say(&e))
}

async fn ask(name: &str) -> Result<(), String> {
    let asked = locks::request_revocation(name.to_string())
        .await
        .map_err(|e| say(&e))?;
    println!("asked {asked}");
    Ok(())
}

async fn futures(name: &str, count: &str, how: &str) -> Result<(), String> {
    let lock = locks::acquire(name.to_string(), exclusive(None))
        .await
        .map_err(|e| say(&e))?;
    let mut kept = Vec::new();
    for _ in 0..number(count)? {
        let future = lock.not_held();
        match how {
            "keep" => kept.push(future),
            "drop" => drop(future),
            _ => return Err(format!("keep or drop, not {how}")),
        }
    }
    println!(
        "futures: {count} {}",
        if how == "keep" { "kept" } else { "dropped" }
    );
    drop(kept);
    lock.release().map_err(|e| say(&e))
}

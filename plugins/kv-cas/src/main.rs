//! A guest of the standard `wasi:keyvalue@0.2.0-draft2`, the version Spin's
//! SDK imports, that has never heard of wardlock: it counts with the
//! version's compare-and-swap (`atomics.cas`, `swap`), its signed
//! `increment`, and lists with its string cursors.
//!
//! ```text
//! kv-cas cas-add KEY TIMES        add TIMES to KEY, each by cas + swap, retried with the fresh handle cas-failed gives
//! kv-cas count KEY TIMES          add TIMES to KEY, one get and set each (nothing atomic)
//! kv-cas increment KEY DELTA [TIMES]  atomics.increment by DELTA (an s64), TIMES times (default 1); prints "KEY=<the last value>"
//! kv-cas stale-swap KEY           cas on KEY, another write of KEY ("other"), swap "stale": prints what swap answered and KEY after
//! kv-cas flood N                  write keys f00000.. (N of them), then list every page: "listed K in P pages"
//! kv-cas read KEY                 prints "KEY=<value>" ("KEY=" when absent)
//! ```
//!
//! Bucket `default`. Errors print `error: …` and exit 1.

mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/keyvalue-0.2.0-draft2",
        world: "wasi:keyvalue/imports",
    });
}

use std::process::ExitCode;
use std::time::Duration;

use bindings::wasi::keyvalue::atomics::{self, Cas, CasError};
use bindings::wasi::keyvalue::store;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let done = store::open("default")
        .map_err(|e| format!("open \"default\": {}", describe(e)))
        .and_then(|bucket| match args.as_slice() {
            ["cas-add", key, times] => cas_add(&bucket, key, number(times)?),
            ["count", key, times] => count(&bucket, key, number(times)?),
            ["increment", key, delta, times @ ..] => {
                let delta = delta.parse().map_err(|_| format!("{delta:?} is not an s64"))?;
                let times = times.first().map_or(Ok(1), |t| number(t))?;
                let mut value = None;
                for _ in 0..times {
                    value = Some(
                        atomics::increment(&bucket, key, delta)
                            .map_err(|e| format!("increment {key:?}: {}", describe(e)))?,
                    );
                }
                println!("{key}={}", value.map_or_else(String::new, |v| v.to_string()));
                Ok(())
            }
            ["stale-swap", key] => stale_swap(&bucket, key),
            ["flood", n] => flood(&bucket, number(n)?),
            ["read", key] => {
                println!("{key}={}", text_of(get(&bucket, key)?));
                Ok(())
            }
            _ => Err("usage: kv-cas cas-add|count KEY TIMES | increment KEY DELTA [TIMES] | stale-swap KEY | flood N | read KEY".into()),
        });
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            println!("error: {why}");
            ExitCode::FAILURE
        }
    }
}

fn number(text: &str) -> Result<u32, String> {
    text.parse().map_err(|_| format!("{text:?} is not a count"))
}

fn describe(error: store::Error) -> String {
    match error {
        store::Error::NoSuchStore => "no-such-store".into(),
        store::Error::AccessDenied => "access-denied".into(),
        store::Error::Other(why) => format!("other: {why}"),
    }
}

fn get(bucket: &store::Bucket, key: &str) -> Result<Option<Vec<u8>>, String> {
    bucket
        .get(key)
        .map_err(|e| format!("get {key:?}: {}", describe(e)))
}

fn text_of(value: Option<Vec<u8>>) -> String {
    String::from_utf8_lossy(&value.unwrap_or_default()).into_owned()
}

/// The number a value holds (absent: 0).
fn count_of(key: &str, value: Option<Vec<u8>>) -> Result<i64, String> {
    match value {
        None => Ok(0),
        Some(bytes) => String::from_utf8_lossy(&bytes)
            .parse()
            .map_err(|_| format!("{key:?} holds {bytes:?}, not a number")),
    }
}

/// Adds one to `key` `times` times, each a compare-and-swap: read through a
/// `cas` handle, swap in the value plus one; when another writer got in, the
/// `cas-failed` answer carries a fresh handle to try again with.
fn cas_add(bucket: &store::Bucket, key: &str, times: u32) -> Result<(), String> {
    for _ in 0..times {
        let mut cas = Cas::new(bucket, key).map_err(|e| format!("cas {key:?}: {}", describe(e)))?;
        let mut tries = 0;
        loop {
            let current = cas.current().map_err(describe)?;
            let next = count_of(key, current)? + 1;
            match atomics::swap(cas, next.to_string().as_bytes()) {
                Ok(()) => break,
                Err(CasError::CasFailed(fresh)) if tries < 10_000 => {
                    tries += 1;
                    cas = fresh;
                }
                Err(CasError::CasFailed(_)) => {
                    return Err(format!("{key:?}: swap failed {tries} times"));
                }
                Err(CasError::StoreError(e)) => {
                    return Err(format!("swap {key:?}: {}", describe(e)));
                }
            }
        }
    }
    Ok(())
}

/// Adds `times` to `key`, one get and one set each, with nothing to keep
/// another writer out in between (a declared lock does).
fn count(bucket: &store::Bucket, key: &str, times: u32) -> Result<(), String> {
    for _ in 0..times {
        let value = count_of(key, get(bucket, key)?)?;
        std::thread::sleep(Duration::from_micros(200));
        bucket
            .set(key, (value + 1).to_string().as_bytes())
            .map_err(|e| format!("set {key:?}: {}", describe(e)))?;
    }
    Ok(())
}

/// A swap whose handle another write has made stale: it must fail, write
/// nothing, and hand back a handle on the value now there.
fn stale_swap(bucket: &store::Bucket, key: &str) -> Result<(), String> {
    let cas = Cas::new(bucket, key).map_err(|e| format!("cas {key:?}: {}", describe(e)))?;
    println!("before: {}", text_of(cas.current().map_err(describe)?));
    bucket
        .set(key, b"other")
        .map_err(|e| format!("set {key:?}: {}", describe(e)))?;
    match atomics::swap(cas, b"stale") {
        Ok(()) => println!("swap: ok"),
        Err(CasError::CasFailed(fresh)) => {
            println!(
                "swap: cas-failed, fresh handle reads {}",
                text_of(fresh.current().map_err(describe)?)
            );
        }
        Err(CasError::StoreError(e)) => println!("swap: {}", describe(e)),
    }
    println!("after: {}", text_of(get(bucket, key)?));
    Ok(())
}

/// Writes `n` keys, then lists the bucket page by page, following the
/// (string) cursor.
fn flood(bucket: &store::Bucket, n: u32) -> Result<(), String> {
    for i in 0..n {
        let key = format!("f{i:05}");
        bucket
            .set(&key, b"x")
            .map_err(|e| format!("set {key:?}: {}", describe(e)))?;
    }
    let (mut listed, mut pages, mut cursor) = (0usize, 0u32, None::<String>);
    loop {
        let page = bucket.list_keys(cursor.as_deref()).map_err(describe)?;
        listed += page.keys.len();
        pages += 1;
        match page.cursor {
            Some(next) if pages < 1000 => cursor = Some(next),
            _ => break,
        }
    }
    println!("listed {listed} in {pages} pages");
    if let Err(e) = bucket.list_keys(Some("not-a-cursor")) {
        println!("bad cursor: {}", describe(e));
    }
    Ok(())
}

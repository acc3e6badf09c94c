//! A guest that has never heard of wardlock: it imports the standard
//! `wasi:keyvalue` (0.2.0-draft) and keeps a count in it by reading the value
//! and writing it back, as a Spin or wasmCloud component does. Run side by
//! side it loses updates; run with a declared lock (`wardlock run --hold
//! NAME`) it does not, and a write after that lock was lost is refused.
//!
//! ```text
//! kv-counter count KEY TIMES [BUCKET]      add TIMES to KEY, one get and set each
//! kv-counter increment KEY TIMES [BUCKET]  add TIMES to KEY with atomics.increment
//! kv-counter read KEY [BUCKET]             print KEY's value
//! kv-counter set KEY VALUE [BUCKET]        write VALUE under KEY
//! kv-counter hold-then-add KEY N [BUCKET]  read KEY, set KEY.reading, wait for KEY.go to exist, write V+N
//! kv-counter probe                         bad input: print what each refusal says
//! kv-counter flood N [BUCKET]              write keys f00000.. (N of them), then list every page: "listed K in P pages"
//! ```
//!
//! The bucket is `default` unless named. Errors print `error: …` and exit 1.

mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/keyvalue-0.2.0-draft",
        world: "wasi:keyvalue/imports",
    });
}

use std::process::ExitCode;
use std::time::Duration;

use bindings::wasi::keyvalue::{atomics, batch, store};

fn main() -> ExitCode {
    if let Ok(held) = std::env::var("WARDLOCK_HELD") {
        println!("held: {held}");
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let bucket_of = |rest: &[&str]| rest.first().copied().unwrap_or("default").to_owned();
    let done = match args.as_slice() {
        ["count", key, times, rest @ ..] => times_of(times)
            .and_then(|times| count(&open(&bucket_of(rest))?, key, times)),
        ["increment", key, times, rest @ ..] => times_of(times)
            .and_then(|times| increment(&open(&bucket_of(rest))?, key, times)),
        ["read", key, rest @ ..] => open(&bucket_of(rest)).and_then(|bucket| {
            println!("{key}={}", value_of(&bucket, key)?);
            Ok(())
        }),
        ["set", key, value, rest @ ..] => open(&bucket_of(rest)).and_then(|bucket| {
            bucket
                .set(key, value.as_bytes())
                .map_err(|e| format!("set {key:?}: {}", describe(e)))
        }),
        ["hold-then-add", key, add, rest @ ..] => times_of(add)
            .and_then(|add| hold_then_add(&open(&bucket_of(rest))?, key, u64::from(add))),
        ["probe"] => probe(),
        ["flood", n, rest @ ..] => times_of(n).and_then(|n| flood(&open(&bucket_of(rest))?, n)),
        _ => Err("usage: kv-counter count|increment KEY TIMES [BUCKET] | read KEY [BUCKET] | set KEY VALUE [BUCKET] | hold-then-add KEY N [BUCKET] | probe | flood N [BUCKET]".into()),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            println!("error: {why}");
            ExitCode::FAILURE
        }
    }
}

fn times_of(text: &str) -> Result<u32, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a number of updates"))
}

fn describe(error: store::Error) -> String {
    match error {
        store::Error::NoSuchStore => "no-such-store".into(),
        store::Error::AccessDenied => "access-denied".into(),
        store::Error::Other(why) => format!("other: {why}"),
    }
}

fn open(name: &str) -> Result<store::Bucket, String> {
    store::open(name).map_err(|e| format!("open {name:?}: {}", describe(e)))
}

/// The number under `key` (absent: 0).
fn value_of(bucket: &store::Bucket, key: &str) -> Result<u64, String> {
    match bucket
        .get(key)
        .map_err(|e| format!("get {key:?}: {}", describe(e)))?
    {
        None => Ok(0),
        Some(bytes) => String::from_utf8_lossy(&bytes)
            .parse()
            .map_err(|_| format!("{key:?} holds {bytes:?}, not a number")),
    }
}

/// Adds `times` to `key`, one get and one set each, with nothing to keep
/// another writer out in between.
fn count(bucket: &store::Bucket, key: &str, times: u32) -> Result<(), String> {
    for _ in 0..times {
        let value = value_of(bucket, key)?;
        // Another instance may read the same value meanwhile: the lost update
        // a declared lock prevents. A pause widens the window, as real work would.
        std::thread::sleep(Duration::from_micros(200));
        bucket
            .set(key, (value + 1).to_string().as_bytes())
            .map_err(|e| format!("set {key:?}: {}", describe(e)))?;
    }
    Ok(())
}

fn increment(bucket: &store::Bucket, key: &str, times: u32) -> Result<(), String> {
    for _ in 0..times {
        atomics::increment(bucket, key, 1)
            .map_err(|e| format!("increment {key:?}: {}", describe(e)))?;
    }
    Ok(())
}

/// Reads `key`, marks `KEY.reading`, waits (at most a minute) until
/// `KEY.go` exists (the test pauses or ends the lock meanwhile), then writes
/// the value read plus `add`: a read-modify-write with a gap the test opens.
fn hold_then_add(bucket: &store::Bucket, key: &str, add: u64) -> Result<(), String> {
    let value = value_of(bucket, key)?;
    println!("read {value}");
    let (reading, go) = (format!("{key}.reading"), format!("{key}.go"));
    bucket
        .set(&reading, b"1")
        .map_err(|e| format!("set {reading:?}: {}", describe(e)))?;
    let mut waited = Duration::ZERO;
    while !bucket.exists(&go).map_err(describe)? {
        if waited > Duration::from_secs(60) {
            return Err(format!("{go:?} never appeared"));
        }
        std::thread::sleep(Duration::from_millis(2));
        waited += Duration::from_millis(2);
    }
    bucket
        .set(key, (value + add).to_string().as_bytes())
        .map_err(|e| format!("set {key:?}: {}", describe(e)))?;
    println!("wrote {}", value + add);
    Ok(())
}

/// Writes `n` keys, then lists the bucket page by page, following the
/// cursor: what a guest that fills a store sees.
fn flood(bucket: &store::Bucket, n: u32) -> Result<(), String> {
    for i in 0..n {
        let key = format!("f{i:05}");
        bucket
            .set(&key, b"x")
            .map_err(|e| format!("set {key:?}: {}", describe(e)))?;
    }
    let (mut listed, mut pages, mut cursor) = (0usize, 0u32, None);
    loop {
        let page = bucket.list_keys(cursor).map_err(describe)?;
        listed += page.keys.len();
        pages += 1;
        match page.cursor {
            Some(next) if pages < 1000 => cursor = Some(next),
            _ => break,
        }
    }
    println!("listed {listed} in {pages} pages");
    Ok(())
}

/// Each kind of bad input once, with what the host answered.
fn probe() -> Result<(), String> {
    let say = |what: &str, answer: Result<(), store::Error>| match answer {
        Ok(()) => println!("{what}: ok"),
        Err(e) => println!("{what}: {}", describe(e)),
    };
    say("open unknown", store::open("no-such-bucket").map(drop));
    let bucket = open("default")?;
    say("empty key", bucket.set("", b"v"));
    say("long key", bucket.set(&"k".repeat(513), b"v"));
    say("big value", bucket.set("big", &vec![0u8; 64 * 1024 + 1]));
    let many: Vec<(String, Vec<u8>)> = (0..65).map(|i| (format!("m{i}"), vec![1])).collect();
    say("set-many 65", batch::set_many(&bucket, &many));
    let listed = bucket.list_keys(None).map_err(describe)?;
    println!("keys after refusals: {}", listed.keys.len());
    say("not a number", bucket.set("text", b"abc"));
    say(
        "increment text",
        atomics::increment(&bucket, "text", 1).map(drop),
    );
    Ok(())
}

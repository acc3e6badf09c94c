//! `serve-bench`: the per-request cost of wardlock in `wardlock serve`.
//!
//! Measures, in one run, `plugins/http-counter` (read a counter file, write it
//! + 1) served three ways, [`CONCURRENCY`] clients each on its own counter:
//! - `lock-per-request`: `wardlock serve` (the real binary, in-memory backend),
//!   `POST /benchN`: a fresh instance and lock session per request, the
//!   exclusive lock taken and released around the file update;
//! - `no-lock`: the same server and plugin, `POST /benchN?lock=none`: the same
//!   work without the lock (the instance still gets its lock session);
//! - `wasmtime-bare`: `wasmtime serve`'s way with no wardlock at all
//!   ([`bare`]): per-request instances of the same component on the same
//!   engine, WASI and `wasi:http` only, `?lock=none`.
//!
//! Prints one JSON line per system and the ratios between them; the systems
//! run in interleaved rounds, so drift in machine load hits them alike.
//!
//!     cargo run --release -p wardlock-tests --bin serve-bench [-- REQUESTS]

mod bare;

use std::path::Path;
use std::time::{Duration, Instant};

use wardlock_tests::Guest;
use wardlock_tests::serve::{Server, post};

const CONCURRENCY: usize = 8;

struct Measured {
    p50: Duration,
    p99: Duration,
    per_second: f64,
}

/// `requests` POSTs from `CONCURRENCY` clients, each on its own counter name.
async fn measure(addr: &str, requests: usize, query: &'static str) -> Measured {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..CONCURRENCY {
        let addr = addr.to_owned();
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            for _ in 0..requests / CONCURRENCY {
                let sent = Instant::now();
                let response = post(&addr, &format!("/bench{client}{query}"))
                    .await
                    .expect("request");
                assert_eq!(response.status, 200, "{response:?}");
                latencies.push(sent.elapsed());
            }
            latencies
        });
    }
    let mut latencies = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        latencies.extend(joined.expect("client"));
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Measured {
        p50: at(0.5),
        p99: at(0.99),
        per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
    }
}

fn line(system: &str, m: &Measured) {
    println!(
        "{{\"workload\":\"serve\",\"system\":\"{system}\",\"concurrency\":{CONCURRENCY},\"requests_per_s\":{:.1},\"p50_us\":{},\"p99_us\":{}}}",
        m.per_second,
        m.p50.as_micros(),
        m.p99.as_micros()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let requests: usize = match std::env::args().nth(1) {
        Some(n) => n
            .parse()
            .map_err(|_| anyhow::anyhow!("REQUESTS must be a number, not {n:?}"))?,
        None => 3000,
    };
    let data = tempfile::tempdir()?;
    let dir = format!("{}::/data", data.path().display());
    let server = Server::start(&["--dir", &dir, Guest::HttpCounter.path()]).await;
    let bare_data = tempfile::tempdir()?;
    let bare = bare::start(Path::new(Guest::HttpCounter.path()), bare_data.path()).await?;
    let systems: [(&str, &str, &'static str); 3] = [
        ("wasmtime-bare", &bare, "?lock=none"),
        ("no-lock", &server.addr, "?lock=none"),
        ("lock-per-request", &server.addr, ""),
    ];
    // Warm up every path (instance pools, page cache).
    for (_, addr, query) in systems {
        measure(addr, CONCURRENCY * 10, query).await;
    }
    // Interleave rounds so drift in machine load hits every system alike.
    const ROUNDS: usize = 5;
    let mut measured: Vec<Vec<Measured>> = systems.iter().map(|_| Vec::new()).collect();
    for _ in 0..ROUNDS {
        for (i, (_, addr, query)) in systems.iter().enumerate() {
            measured[i].push(measure(addr, requests / ROUNDS, query).await);
        }
    }
    let median = |all: &[Measured]| {
        let mut sorted: Vec<&Measured> = all.iter().collect();
        sorted.sort_by_key(|m| m.p50);
        Measured {
            p50: sorted[sorted.len() / 2].p50,
            p99: sorted[sorted.len() / 2].p99,
            per_second: all.iter().map(|m| m.per_second).sum::<f64>() / all.len() as f64,
        }
    };
    let results: Vec<Measured> = measured.iter().map(|m| median(m)).collect();
    for ((name, _, _), m) in systems.iter().zip(&results) {
        line(name, m);
    }
    let ratio = |label: &str, a: &Measured, b: &Measured| {
        println!(
            "{{\"workload\":\"serve\",\"ratio\":\"{label}\",\"p50\":{:.3},\"throughput\":{:.3}}}",
            a.p50.as_secs_f64() / b.p50.as_secs_f64(),
            a.per_second / b.per_second
        );
    };
    let (bare, unlocked, locked) = (&results[0], &results[1], &results[2]);
    ratio("lock-per-request/no-lock", locked, unlocked);
    ratio("no-lock/wasmtime-bare", unlocked, bare);
    ratio("lock-per-request/wasmtime-bare", locked, bare);
    Ok(())
}

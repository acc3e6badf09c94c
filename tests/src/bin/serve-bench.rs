//! `serve-bench`: the per-request cost of wardlock in `wardlock serve`.
//!
//! Starts `wardlock serve` with `plugins/http-counter` on the in-memory backend
//! and measures, in one run, the same plugin with a lock per request against
//! the same work without the lock (`?lock=none`: a fresh instance per request,
//! as `wasmtime serve` does, but no lock session used). Prints one JSON line per
//! measurement and the ratios; the floor is measured in the same run, so the
//! ratios hold on a noisy machine.
//!
//!     cargo run --release -p wardlock-tests --bin serve-bench [-- REQUESTS]

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
async fn measure(server: &Server, requests: usize, query: &'static str) -> Measured {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..CONCURRENCY {
        let addr = server.addr.clone();
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
async fn main() {
    let requests: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("REQUESTS must be a number"))
        .unwrap_or(2000);
    let data = tempfile::tempdir().expect("temp dir");
    let dir = format!("{}::/data", data.path().display());
    let server = Server::start(&["--dir", &dir, Guest::HttpCounter.path()]).await;
    // Warm up both paths (instance pool, page cache).
    measure(&server, CONCURRENCY * 10, "?lock=none").await;
    measure(&server, CONCURRENCY * 10, "").await;
    // Interleave rounds so drift in machine load hits both alike.
    let mut floor = Vec::new();
    let mut locked = Vec::new();
    for _ in 0..3 {
        floor.push(measure(&server, requests / 3, "?lock=none").await);
        locked.push(measure(&server, requests / 3, "").await);
    }
    let best = |all: &[Measured]| {
        let mut sorted: Vec<&Measured> = all.iter().collect();
        sorted.sort_by_key(|m| m.p50);
        Measured {
            p50: sorted[sorted.len() / 2].p50,
            p99: sorted[sorted.len() / 2].p99,
            per_second: all.iter().map(|m| m.per_second).sum::<f64>() / all.len() as f64,
        }
    };
    let (floor, locked) = (best(&floor), best(&locked));
    line("no-lock", &floor);
    line("lock-per-request", &locked);
    println!(
        "{{\"workload\":\"serve\",\"ratio\":\"lock-per-request/no-lock\",\"p50\":{:.3},\"throughput\":{:.3}}}",
        locked.p50.as_secs_f64() / floor.p50.as_secs_f64(),
        locked.per_second / floor.per_second
    );
}

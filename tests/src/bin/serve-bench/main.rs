//! `serve-bench`: the per-request cost of wardlock in `wardlock serve`.
//!
//! Measures, in one run, `plugins/http-counter` (read a counter file, write it
//! + 1) served three ways, 8 clients by default, each on its own counter:
//! - `lock-per-request`: `wardlock serve` (the real binary, in-memory backend),
//!   `POST /benchN`: a fresh instance and lock session per request, the
//!   exclusive lock taken and released around the file update;
//! - `no-lock`: the same server and plugin, `POST /benchN?lock=none`: the same
//!   work without the lock (the instance still gets its lock session);
//! - `wasmtime-bare`: `wasmtime serve`'s way with no wardlock at all
//!   ([`bare`]): per-request instances of the same component on the same
//!   engine, WASI and `wasi:http` only, `?lock=none`; in a process of its own
//!   (this binary with `--bare-server`), as `wardlock serve` is, with as many
//!   request slots as `wardlock serve`'s default.
//!
//! Prints one JSON line per system and the ratios between them; the systems
//! run in interleaved rounds, so drift in machine load hits them alike.
//!
//!     cargo run --release -p wardlock-tests --bin serve-bench [-- [--concurrency C] REQUESTS]
//!
//! With `--declared-keys`, it measures instead what a lock per key costs a
//! guest that knows nothing of wardlock: `plugins/http-kv-counter` (counters
//! in `wasi:keyvalue`, read, 2 ms of work, write) behind `wardlock serve
//! --hold 'counters/{path}'` (in-memory backend), C clients all on one key
//! and then spread over 4 keys (`declared-keys-1`, `declared-keys-4`):
//! requests for different keys hold different locks, so 4 keys should make
//! about 4 × the requests of 1 (issue 49's target: ≥ 3 ×).
//!
//! Each client keeps one HTTP/1.1 connection open for all its requests.
//! With `--concurrency C` (default 8) C clients post at once, client i on
//! counter `bench{i mod 100}`: above 100 clients requests hold and wait for
//! the same locks. A request that fails is counted as `lost` rather than
//! ending the run; `lock-per-request` also checks that every counter ends at
//! its number of answered requests (`double_granted`: the updates lost to two
//! holders at once), and each line reports the serving process's peak RSS.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark tool of the test crate: a step that fails ends the run, with its message"
)]

mod bare;

use std::path::Path;
use std::time::{Duration, Instant};

use wardlock_tests::Guest;
use wardlock_tests::serve::{KeepAlive, Server};

/// Lock names (counters) the clients share.
const NAMES: usize = 100;

struct Measured {
    p50: Duration,
    p99: Duration,
    per_second: f64,
    lost: usize,
    /// Answered requests per counter name.
    answered: Vec<u64>,
}

/// `requests` POSTs from `clients` clients, client i on counter `<prefix>{i
/// mod names}` of `path` (`PREFIX[?QUERY]`; `names` at most [`NAMES`]);
/// failed requests are counted, not fatal.
async fn measure(
    addr: &str,
    clients: usize,
    requests: usize,
    path: &'static str,
    names: usize,
) -> Measured {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..clients {
        let addr = addr.to_owned();
        tasks.spawn(async move {
            // One connection per client, kept alive (as load generators do):
            // a connection per request runs out of ephemeral ports at 1,000.
            let mut connection = KeepAlive::new(&addr);
            let (mut latencies, mut lost) = (Vec::new(), 0);
            for _ in 0..(requests / clients).max(1) {
                let sent = Instant::now();
                let target = match path.split_once('?') {
                    Some((prefix, query)) => format!("/{prefix}{}?{query}", client % names),
                    None => format!("/{path}{}", client % names),
                };
                match connection.post(&target).await {
                    Ok(response) if response.status == 200 => latencies.push(sent.elapsed()),
                    _ => lost += 1,
                }
            }
            (client % names, latencies, lost)
        });
    }
    let (mut latencies, mut lost, mut answered) = (Vec::new(), 0, vec![0u64; NAMES]);
    while let Some(joined) = tasks.join_next().await {
        let (name, done, failed) = joined.expect("client");
        answered[name] += done.len() as u64;
        latencies.extend(done);
        lost += failed;
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let at = |q: f64| {
        let i = ((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1));
        latencies.get(i).copied().unwrap_or_default()
    };
    Measured {
        p50: at(0.5),
        p99: at(0.99),
        per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
        lost,
        answered,
    }
}

fn line(system: &str, clients: usize, m: &Measured, double_granted: Option<u64>, rss: Option<f64>) {
    let or_null = |v: Option<String>| v.unwrap_or_else(|| "null".to_owned());
    println!(
        "{{\"workload\":\"serve\",\"system\":\"{system}\",\"concurrency\":{clients},\"requests_per_s\":{:.1},\"p50_us\":{},\"p99_us\":{},\"lost\":{},\"double_granted\":{},\"peak_rss_mib\":{}}}",
        m.per_second,
        m.p50.as_micros(),
        m.p99.as_micros(),
        m.lost,
        or_null(double_granted.map(|d| d.to_string())),
        or_null(rss.map(|r| format!("{r:.1}"))),
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, data, capacity] = args.as_slice()
        && flag == BARE_SERVER
    {
        return bare::serve_forever(Path::new(data), capacity.parse()?).await;
    }
    let mut clients = 8;
    if let Some(at) = args.iter().position(|a| a == "--concurrency") {
        let value = args.get(at + 1).cloned().unwrap_or_default();
        clients = value
            .parse()
            .ok()
            .filter(|c| (1..=10_000).contains(c))
            .ok_or_else(|| anyhow::anyhow!("--concurrency must be 1 to 10000, not {value:?}"))?;
        args.drain(at..at + 2);
    }
    let declared = args.iter().position(|a| a == "--declared-keys");
    if let Some(at) = declared {
        args.remove(at);
    }
    let requests: usize = match args.first() {
        Some(n) => n
            .parse()
            .map_err(|_| anyhow::anyhow!("REQUESTS must be a number, not {n:?}"))?,
        None => 3000,
    };
    if declared.is_some() {
        return declared_keys(clients, requests).await;
    }
    let data = tempfile::tempdir()?;
    let dir = format!("{}::/data", data.path().display());
    let server = Server::start(&["--dir", &dir, Guest::HttpCounter.path()]).await;
    let bare_data = tempfile::tempdir()?;
    let bare_server = BareServer::start(bare_data.path()).await?;
    let bare = bare_server.addr.clone();
    // The unlocked systems count on counters of their own: their lost
    // updates are expected, and must not be mistaken for double grants.
    let systems: [(&str, &str, &'static str); 3] = [
        ("wasmtime-bare", &bare, "bench?lock=none"),
        ("no-lock", &server.addr, "free?lock=none"),
        ("lock-per-request", &server.addr, "bench"),
    ];
    // Warm up every path (instance pools, page cache).
    for (_, addr, query) in systems {
        measure(addr, clients, clients * 2, query, NAMES).await;
    }
    // Counters start from what the warm-up left.
    let before = counters(data.path());
    // Interleave rounds so drift in machine load hits every system alike.
    const ROUNDS: usize = 5;
    let mut measured: Vec<Vec<Measured>> = systems.iter().map(|_| Vec::new()).collect();
    for _ in 0..ROUNDS {
        for (i, (_, addr, query)) in systems.iter().enumerate() {
            measured[i].push(measure(addr, clients, requests / ROUNDS, query, NAMES).await);
        }
    }
    let results: Vec<Measured> = measured.iter().map(|m| median(m)).collect();
    // Locked requests each add one to their counter: a counter short of the
    // requests answered on it saw two holders at once.
    let after = counters(data.path());
    let locked = &results[2];
    let double_granted: u64 = (0..NAMES)
        .map(|n| (before[n] + locked.answered[n]).saturating_sub(after[n]))
        .sum();
    let bare_rss = bare_server.peak_rss_mib();
    for (i, ((name, _, _), m)) in systems.iter().zip(&results).enumerate() {
        match i {
            0 => line(name, clients, m, None, bare_rss),
            1 => line(name, clients, m, None, server.peak_rss_mib()),
            _ => line(
                name,
                clients,
                m,
                Some(double_granted),
                server.peak_rss_mib(),
            ),
        }
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

/// `--declared-keys`: `http-kv-counter` behind `wardlock serve --hold
/// 'counters/{path}'`, `clients` clients on 1 key, then on 4, in
/// interleaved rounds; one line each and their ratio.
async fn declared_keys(clients: usize, requests: usize) -> anyhow::Result<()> {
    let args = ["--hold", "counters/{path}", Guest::HttpKvCounter.path()];
    let server = Server::start(&args).await;
    let keys = [1, 4];
    for names in keys {
        measure(&server.addr, clients, clients * 2, "k?hold-ms=2", names).await;
    }
    const ROUNDS: usize = 5;
    let mut measured: [Vec<Measured>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..ROUNDS {
        for (i, names) in keys.iter().enumerate() {
            let m = measure(
                &server.addr,
                clients,
                requests / ROUNDS,
                "k?hold-ms=2",
                *names,
            )
            .await;
            measured[i].push(m);
        }
    }
    let results = measured.map(|m| median(&m));
    for (names, m) in keys.iter().zip(&results) {
        let system = format!("declared-keys-{names}");
        line(&system, clients, m, None, server.peak_rss_mib());
    }
    println!(
        "{{\"workload\":\"serve\",\"ratio\":\"declared-keys-4/declared-keys-1\",\"throughput\":{:.3}}}",
        results[1].per_second / results[0].per_second
    );
    Ok(())
}

/// The round with the median p50 (its p50 and p99), the mean throughput,
/// and every round's losses and answers.
fn median(all: &[Measured]) -> Measured {
    let mut sorted: Vec<&Measured> = all.iter().collect();
    sorted.sort_by_key(|m| m.p50);
    Measured {
        p50: sorted[sorted.len() / 2].p50,
        p99: sorted[sorted.len() / 2].p99,
        per_second: all.iter().map(|m| m.per_second).sum::<f64>() / all.len() as f64,
        lost: all.iter().map(|m| m.lost).sum(),
        answered: (0..NAMES)
            .map(|n| all.iter().map(|m| m.answered[n]).sum())
            .collect(),
    }
}

/// The argument that makes this binary the floor's server.
const BARE_SERVER: &str = "--bare-server";

/// Requests the floor serves at once: as many as `wardlock serve` does by
/// default (`--max-concurrent-requests`).
const BARE_CAPACITY: u32 = 1000;

/// The floor's server in a process of its own, as `wardlock serve` is, so
/// neither shares a scheduler with the clients; killed when dropped.
struct BareServer {
    child: tokio::process::Child,
    addr: String,
}

impl BareServer {
    async fn start(data: &Path) -> anyhow::Result<BareServer> {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(std::env::current_exe()?)
            .arg(BARE_SERVER)
            .arg(data)
            .arg(BARE_CAPACITY.to_string())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let addr = tokio::io::BufReader::new(stdout)
            .lines()
            .next_line()
            .await?
            .ok_or_else(|| anyhow::anyhow!("the floor's server exited"))?;
        Ok(BareServer { child, addr })
    }

    fn peak_rss_mib(&self) -> Option<f64> {
        let pid = self.child.id()?;
        wardlock_tests::serve::peak_rss_mib(&format!("/proc/{pid}/status"))
    }
}

/// The counters the plugin keeps in `dir` (`bench0` ..), 0 where none.
fn counters(dir: &Path) -> Vec<u64> {
    (0..NAMES)
        .map(|n| {
            std::fs::read_to_string(dir.join(format!("bench{n}")))
                .ok()
                .and_then(|t| t.trim().parse().ok())
                .unwrap_or(0)
        })
        .collect()
}

//! `wardlock-bench` (issue 4): every lock path of wardlock measured against the
//! least work ZooKeeper itself needs, side by side in one run; see
//! tests/BENCHMARKS.md for what each workload measures and the latest results,
//! or run with `--help`:
//!
//! `cargo run --release -p wardlock-tests --bin wardlock-bench -- [--zookeeper HOST:PORT]
//! [--etcd [HOST:PORT]] [--postgres [URL]] [--workloads LIST] [--clients K] [--ops M] [--no-lock-cache] [--json]`
//!
//! What it shares with the tests (the ZooKeeper harness, the guests' paths, the
//! probes) comes from the `wardlock_tests` library.
//!
//! - [`cli`]: arguments; [`env`]: backends, guest runners, data directory;
//! - [`systems`]: the systems (ZooKeeper, memory, Curator, etcd, PostgreSQL) and how a phase of client loops runs on them;
//! - [`workloads`]: one module per workload;
//! - [`host_child`]: one host process of the `hosts` workload;
//! - [`check`]: the exclusion check; [`stats`]: percentiles; [`zk_stats`]: the
//!   server's counters; [`cpu`]: this process's CPU time; [`report`]: result rows and ratios; [`output`]: JSON
//!   lines or a table.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark tool of the test crate: a step that fails ends the run, with its message"
)]

mod check;
mod cli;
mod cpu;
mod env;
mod host_child;
mod output;
mod report;
mod stats;
mod systems;
mod workloads;
mod zk_stats;

use std::process::ExitCode;

use clap::Parser;

use self::cli::Args;
use self::env::Env;
use self::report::{Row, add_ratios};
use self::systems::System;
use self::systems::zk_floor::FloorClient;
use self::workloads::{Workload, progress};
use wardlock_tests::etcd::EtcdServer;
use wardlock_tests::postgres::PgServer;
use wardlock_tests::zookeeper::ZkServer;

/// Runs the benchmark: exit 0 when every selected workload ran with no
/// violation, 1 otherwise, 2 for bad arguments.
fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(dir) = args.host_child.clone() {
        return host_child::main(args, &dir);
    }
    let workloads = args.selected_workloads();
    let systems = args.selected_systems();
    let needs_zookeeper = workloads.iter().any(|w| {
        w.systems()
            .iter()
            .any(|s| s.uses_zookeeper() && systems.contains(s))
    });
    // Stopped when dropped: at the end, on error, or while unwinding a panic.
    let server = (needs_zookeeper && args.zookeeper.is_none()).then(|| {
        progress("starting a private ZooKeeper server");
        ZkServer::start()
    });
    let address = needs_zookeeper
        .then(|| {
            args.zookeeper
                .clone()
                .or_else(|| server.as_ref().map(ZkServer::address))
        })
        .flatten();
    if let Some(address) = &address {
        progress(&format!("ZooKeeper at {address}"));
    }
    let needs_etcd = workloads.iter().any(|w| {
        w.systems()
            .iter()
            .any(|s| s.uses_etcd() && systems.contains(s))
    });
    // Stopped when dropped, as the ZooKeeper server.
    let etcd_server = (needs_etcd && args.etcd.as_deref() == Some(cli::PRIVATE)).then(|| {
        progress("starting a private etcd server");
        EtcdServer::start()
    });
    let etcd_address = needs_etcd
        .then(|| match &etcd_server {
            Some(server) => Some(server.address()),
            None => args.etcd.clone(),
        })
        .flatten();
    if let Some(address) = &etcd_address {
        progress(&format!("etcd at {address}"));
    }
    let needs_postgres = workloads.iter().any(|w| {
        w.systems()
            .iter()
            .any(|s| s.uses_postgres() && systems.contains(s))
    });
    // Stopped when dropped, as the ZooKeeper server.
    let pg_server = (needs_postgres && args.postgres.as_deref() == Some(cli::PRIVATE)).then(|| {
        progress("starting a private PostgreSQL server");
        PgServer::start()
    });
    let pg_url = needs_postgres
        .then(|| match &pg_server {
            Some(server) => Some(server.url()),
            None => args.postgres.clone(),
        })
        .flatten();
    if let Some(url) = &pg_url {
        progress(&format!("PostgreSQL at {url}"));
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("wardlock-bench: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run(
        args,
        &workloads,
        &systems,
        address.as_deref(),
        etcd_address.as_deref(),
        pg_url.as_deref(),
    ));
    drop(runtime);
    if server.is_some() {
        progress("stopping the private ZooKeeper server");
    }
    drop(server);
    drop(etcd_server);
    drop(pg_server);
    code
}

async fn run(
    args: Args,
    workloads: &[Workload],
    systems: &[System],
    address: Option<&str>,
    etcd_address: Option<&str>,
    pg_url: Option<&str>,
) -> ExitCode {
    let json = args.json;
    let env = match Env::new(args, address, etcd_address, pg_url).await {
        Ok(env) => env,
        Err(error) => {
            eprintln!("wardlock-bench: {error:#}");
            return ExitCode::FAILURE;
        }
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut failed = false;
    for &workload in workloads {
        let selected: Vec<System> = workload
            .systems()
            .iter()
            .filter(|s| systems.contains(s))
            .copied()
            .collect();
        if selected.is_empty() {
            progress(&format!("{}: no selected system applies", workload.name()));
            continue;
        }
        match workload.run(&env, &selected).await {
            Ok(mut measured) => {
                add_ratios(&mut measured);
                if let Ok(zk) = env.zk() {
                    for row in measured.iter_mut().filter(|r| {
                        matches!(r.system, System::ZooKeeperNative | System::ZooKeeperGuest)
                    }) {
                        row.extra
                            .push(("local_handoff", zk.options.local_handoff.into()));
                        if zk.options.local_handoff {
                            let limits = zk.options.limits;
                            row.extra.push(("handoff_max", limits.max_handoffs.into()));
                            let ms = u64::try_from(limits.max_time.as_millis()).unwrap_or(u64::MAX);
                            row.extra.push(("handoff_max_ms", ms.into()));
                        }
                        row.extra
                            .push(("zk_sessions", zk.options.sessions.to_string().into()));
                        row.extra
                            .push(("lock_cache", zk.options.lock_cache().into()));
                    }
                }
                if let Ok(etcd) = env.etcd() {
                    for row in measured
                        .iter_mut()
                        .filter(|r| matches!(r.system, System::EtcdNative | System::EtcdGuest))
                    {
                        row.extra.push(("local_handoff", etcd.local_handoff.into()));
                        row.extra.push(("lock_cache", etcd.lock_cache().into()));
                    }
                }
                if let Ok(pg) = env.pg() {
                    pg_extras(pg, &mut measured);
                }
                if json && output::json_lines(&measured, &mut std::io::stdout().lock()).is_err() {
                    return ExitCode::FAILURE;
                }
                rows.extend(measured);
            }
            Err(error) => {
                eprintln!("wardlock-bench: {} failed: {error:#}", workload.name());
                failed = true;
            }
        }
    }
    if let Ok(zk) = env.zk()
        && let Ok(client) = FloorClient::connect(&zk.address, zk.session_timeout).await
        && let Err(error) = client.remove_all().await
    {
        eprintln!("wardlock-bench: cleaning up zk-floor nodes: {error:#}");
    }
    if let Ok(pg) = env.pg() {
        pg.shutdown().await;
    }
    if !json && output::table(&rows, &mut std::io::stdout().lock()).is_err() {
        return ExitCode::FAILURE;
    }
    let violations: u64 = rows.iter().map(|r| r.violations).sum();
    if violations > 0 {
        eprintln!("wardlock-bench: {violations} exclusion violations");
        failed = true;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// PostgreSQL rows: how wardlock's backends ran, the connections each
/// system had open during the workload's phases, and the server's settings.
fn pg_extras(pg: &env::PgEnv, rows: &mut [Row]) {
    let mut taken = std::collections::HashMap::new();
    for row in rows.iter_mut().filter(|r| r.system.uses_postgres()) {
        row.extra
            .push((output::SERVER_SETTINGS, pg.settings.clone().into()));
        if row.system != System::PostgresFloor {
            row.extra.push(("local_handoff", pg.local_handoff.into()));
        }
        let connections = *taken
            .entry(row.system)
            .or_insert_with(|| pg.take_connections(row.system));
        if let Some(connections) = connections {
            row.extra
                .push(("pg_connections", connections.open_max.into()));
            row.extra
                .push(("pg_server_connections", connections.server_max.into()));
        }
    }
}

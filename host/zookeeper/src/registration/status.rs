//! `wardlock status` on ZooKeeper: a lock's nodes in queue order, wardlock's
//! and other clients' (Curator, kazoo), and children that are no lock nodes.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::super::{QueueNode, ZooKeeperBackend, ZooKeeperConfig};
use wardlock_backend::name::LockName;

#[derive(Serialize)]
struct Report<'a> {
    lock: &'a str,
    path: String,
    dialect: &'a str,
    holders: usize,
    waiters: usize,
    /// Children that are not lock nodes of the dialect (nested locks' directories,
    /// foreign nodes): listed apart, never holders or waiters.
    foreign: usize,
    nodes: Vec<NodeReport>,
}

#[derive(Serialize)]
struct NodeReport {
    position: Option<usize>,
    state: &'static str,
    mode: Option<&'static str>,
    node: String,
    session: String,
    created_ms: i64,
    data: String,
}

/// Prints the queue of `lock`, as a table or JSON.
///
/// # Errors
/// ZooKeeper could not be reached or read.
pub(super) async fn print(
    config: &ZooKeeperConfig,
    lock: &LockName,
    json: bool,
) -> anyhow::Result<()> {
    let path = config.lock_path(lock);
    let backend = ZooKeeperBackend::connect(config.clone()).await?;
    let nodes = backend.queue(lock).await?;
    let report = report(lock.as_str(), config.dialect.as_str(), path, &nodes);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(())
}

fn report<'a>(lock: &'a str, dialect: &'a str, path: String, nodes: &[QueueNode]) -> Report<'a> {
    let mut position = 0;
    let nodes: Vec<NodeReport> = nodes
        .iter()
        .map(|n| {
            let (state, pos) = match (n.mode, n.holds) {
                (None, _) => ("foreign", None),
                (Some(_), true) => ("holds", Some(position)),
                (Some(_), false) => ("waits", Some(position)),
            };
            if n.mode.is_some() {
                position += 1;
            }
            NodeReport {
                position: pos.map(|p| p + 1),
                state,
                mode: n.mode.map(|m| m.as_str()),
                node: n.node.clone(),
                session: format!("0x{:x}", n.session),
                created_ms: n.created_ms,
                data: n.data.clone(),
            }
        })
        .collect();
    Report {
        lock,
        path,
        dialect,
        holders: nodes.iter().filter(|n| n.state == "holds").count(),
        waiters: nodes.iter().filter(|n| n.state == "waits").count(),
        foreign: nodes.iter().filter(|n| n.state == "foreign").count(),
        nodes,
    }
}

fn print_table(report: &Report<'_>) {
    println!(
        "lock {} at {} ({}): {} holding, {} waiting, {} foreign children",
        report.lock, report.path, report.dialect, report.holders, report.waiters, report.foreign
    );
    if report.nodes.is_empty() {
        println!("(free: nobody holds or waits)");
        return;
    }
    println!(
        "{:>3}  {:<7}  {:<9}  {:<18}  {:>9}  {:<50}  owner",
        "#", "state", "mode", "session", "age", "node"
    );
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as i64;
    let mut foreign_heading = false;
    for n in &report.nodes {
        if n.state == "foreign" && !foreign_heading {
            foreign_heading = true;
            println!("not lock nodes (ignored by the queue):");
        }
        let age = format!("{:.1}s", (now_ms - n.created_ms).max(0) as f64 / 1000.0);
        println!(
            "{:>3}  {:<7}  {:<9}  {:<18}  {:>9}  {:<50}  {}",
            n.position
                .map(|p| p.to_string())
                .unwrap_or_else(|| "-".into()),
            n.state,
            n.mode.unwrap_or("-"),
            n.session,
            age,
            n.node,
            n.data
        );
    }
}

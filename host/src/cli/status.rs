//! `wardlock status`: who holds a lock and who waits, on ZooKeeper or etcd.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use clap::Args;
use serde::Serialize;

use super::ZooKeeperArgs;
use crate::backend::etcd::{EtcdBackend, EtcdConfig, etcdctl_name};
use crate::backend::zookeeper::{QueueNode, ZooKeeperBackend};
use crate::name::LockName;

/// The ensemble `status` asks when `--zookeeper` is not given.
const DEFAULT_HOSTS: &str = "127.0.0.1:2181";

/// Arguments of `wardlock status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The lock name (as guests pass it to `acquire`).
    #[arg(value_name = "NAME")]
    pub name: String,

    /// Where the lock lives on ZooKeeper.
    #[command(flatten)]
    pub zookeeper: ZooKeeperArgs,

    /// Look on this etcd cluster instead, HOST:PORT[,HOST:PORT...] (the lock
    /// is under --root, as `run --etcd` puts it).
    #[arg(long, value_name = "HOST:PORT[,...]", conflicts_with = "zookeeper")]
    pub etcd: Option<String>,

    /// TLS and a user for etcd.
    #[command(flatten)]
    pub etcd_security: super::EtcdSecurityArgs,

    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

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

/// Prints the queue of one lock; exit code 0.
pub(super) async fn status(args: StatusArgs) -> anyhow::Result<i32> {
    let name =
        LockName::new(&args.name).with_context(|| format!("bad lock name {:?}", args.name))?;
    if let Some(endpoints) = &args.etcd {
        return etcd_status(&args, endpoints, &name).await;
    }
    let hosts = args.zookeeper.hosts.as_deref().unwrap_or(DEFAULT_HOSTS);
    let config = args.zookeeper.config(hosts)?;
    let path = config.lock_path(&name);
    let backend = ZooKeeperBackend::connect(config).await?;
    let nodes = backend.queue(&name).await?;
    let report = report(&args, path, &nodes);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(0)
}

fn report<'a>(args: &'a StatusArgs, path: String, nodes: &[QueueNode]) -> Report<'a> {
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
        lock: &args.name,
        path,
        dialect: args.zookeeper.dialect.as_str(),
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

#[derive(Serialize)]
struct EtcdReport<'a> {
    lock: &'a str,
    /// The name `etcdctl lock` takes for this lock.
    etcdctl_name: String,
    holders: usize,
    waiters: usize,
    keys: Vec<EtcdKeyReport>,
}

#[derive(Serialize)]
struct EtcdKeyReport {
    position: usize,
    state: &'static str,
    mode: &'static str,
    key: String,
    lease: String,
    revision: i64,
}

/// `status --etcd`: the lock's keys in queue order.
async fn etcd_status(args: &StatusArgs, endpoints: &str, name: &LockName) -> anyhow::Result<i32> {
    let config = EtcdConfig::new(endpoints)
        .root(args.zookeeper.root.clone())
        .tls(args.etcd_security.tls()?)
        .credentials(args.etcd_security.credentials()?);
    config.validate()?;
    let etcdctl_name = etcdctl_name(&config.root, name);
    let backend = EtcdBackend::new(config)?;
    let contenders = backend.queue(name).await?;
    let keys: Vec<EtcdKeyReport> = contenders
        .iter()
        .enumerate()
        .map(|(i, c)| EtcdKeyReport {
            position: i + 1,
            state: if c.holds { "holds" } else { "waits" },
            mode: c.mode.as_str(),
            key: c.key.clone(),
            lease: format!("{:x}", c.lease),
            revision: c.revision,
        })
        .collect();
    let report = EtcdReport {
        lock: &args.name,
        etcdctl_name,
        holders: contenders.iter().filter(|c| c.holds).count(),
        waiters: contenders.iter().filter(|c| !c.holds).count(),
        keys,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(0);
    }
    println!(
        "lock {} (etcdctl lock {}): {} holding, {} waiting",
        report.lock, report.etcdctl_name, report.holders, report.waiters
    );
    if report.keys.is_empty() {
        println!("(free: nobody holds or waits)");
        return Ok(0);
    }
    println!(
        "{:>3}  {:<7}  {:<9}  {:<18}  {:>10}  key",
        "#", "state", "mode", "lease", "revision"
    );
    for k in &report.keys {
        println!(
            "{:>3}  {:<7}  {:<9}  {:<18}  {:>10}  {}",
            k.position, k.state, k.mode, k.lease, k.revision, k.key
        );
    }
    Ok(0)
}

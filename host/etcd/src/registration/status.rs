//! `wardlock status` on etcd: a lock's keys in queue order.

use serde::Serialize;

use super::super::{EtcdBackend, EtcdConfig, etcdctl_name};
use wardlock_backend::name::LockName;

#[derive(Serialize)]
struct Report<'a> {
    lock: &'a str,
    /// The name `etcdctl lock` takes for this lock.
    etcdctl_name: String,
    holders: usize,
    waiters: usize,
    keys: Vec<KeyReport>,
}

#[derive(Serialize)]
struct KeyReport {
    position: usize,
    state: &'static str,
    mode: &'static str,
    key: String,
    lease: String,
    revision: i64,
}

/// Prints the keys of `lock` in queue order, as a table or JSON.
///
/// # Errors
/// etcd could not be reached or read.
pub(super) async fn print(config: &EtcdConfig, lock: &LockName, json: bool) -> anyhow::Result<()> {
    let etcdctl_name = etcdctl_name(&config.root, lock);
    let backend = EtcdBackend::new(config.clone())?;
    let contenders = backend.queue(lock).await?;
    let keys: Vec<KeyReport> = contenders
        .iter()
        .enumerate()
        .map(|(i, c)| KeyReport {
            position: i + 1,
            state: if c.holds { "holds" } else { "waits" },
            mode: c.mode.as_str(),
            key: c.key.clone(),
            lease: format!("{:x}", c.lease),
            revision: c.revision,
        })
        .collect();
    let report = Report {
        lock: lock.as_str(),
        etcdctl_name,
        holders: contenders.iter().filter(|c| c.holds).count(),
        waiters: contenders.iter().filter(|c| !c.holds).count(),
        keys,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "lock {} (etcdctl lock {}): {} holding, {} waiting",
        report.lock, report.etcdctl_name, report.holders, report.waiters
    );
    if report.keys.is_empty() {
        println!("(free: nobody holds or waits)");
        return Ok(());
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
    Ok(())
}

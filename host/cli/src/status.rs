//! `wardlock status`: who holds a lock and who waits, asked of the lock
//! service of the engine the flags choose. Engine-neutral: every engine
//! answers `contenders` (and says where the lock lives); none prints.

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use wardlock_host::backend::{Contenders, LockBackend, MAX_LISTED_CONTENDERS};

use super::Engines;
use crate::registry::CommonFlags;
use wardlock_host::name::LockName;

/// Arguments of `wardlock status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The lock name (as guests pass it to `acquire`).
    #[arg(value_name = "NAME")]
    pub name: String,

    /// Which engine's lock service to ask (`--zookeeper HOST:PORT`, `--etcd
    /// HOST:PORT`, `--postgres URL`), and its root.
    #[command(flatten)]
    pub backend: CommonFlags,

    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,

    /// NAME is an election (`campaign`, `wardlock run --singleton`,
    /// Curator's `LeaderLatch`, `etcdctl elect`): print who leads it, with
    /// the value it proclaimed and its term.
    #[arg(long)]
    pub election: bool,
}

/// Prints the queue of one lock; exit code 0.
pub(super) async fn status(args: &StatusArgs, engines: Engines<'_>) -> anyhow::Result<i32> {
    let name =
        LockName::new(&args.name).with_context(|| format!("bad lock name {:?}", args.name))?;
    let config = engines.chosen(&args.backend)?;
    let remote = engines
        .registry
        .engine(config.engine())
        .is_some_and(|e| e.remote());
    if !remote {
        bail!(
            "{} locks live inside the host process that runs the guests; `status` asks a lock service: choose its engine (--backend NAME and its flags)",
            config.engine()
        );
    }
    let backend = config.connect(true).await?;
    let code = if args.election {
        election(&name, &*backend, args.json).await
    } else {
        queue(&name, &*backend, args.json).await
    };
    backend.shutdown().await;
    code
}

/// Prints who holds lock `name` and who waits, in queue order
/// (engine-neutral: the engine's `contenders`, and where the lock lives);
/// exit code 0.
async fn queue(name: &LockName, backend: &dyn LockBackend, json: bool) -> anyhow::Result<i32> {
    let session = backend.open_session("wardlock status");
    let contenders = async {
        session
            .contention()?
            .contenders(name, MAX_LISTED_CONTENDERS)
            .await
    }
    .await
    .with_context(|| format!("asking who holds {name:?}"))?;
    drop(session);
    let report = Report::new(name, backend, &contenders);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        report.print();
    }
    Ok(0)
}

/// What `wardlock status NAME` prints.
#[derive(Serialize)]
struct Report<'a> {
    lock: &'a str,
    engine: &'static str,
    /// Where the lock lives in the lock service (a ZooKeeper path, the name
    /// `etcdctl lock` takes, a PostgreSQL advisory key).
    location: Option<String>,
    holders: usize,
    waiters: usize,
    /// Contenders in all; more than listed when the queue is longer than
    /// the most one answer lists.
    total: u32,
    contenders: Vec<Row<'a>>,
}

/// One holder or waiter.
#[derive(Serialize)]
struct Row<'a> {
    position: usize,
    state: &'static str,
    mode: &'static str,
    /// The fencing token of a holder, where the engine can tell it.
    token: Option<u64>,
    node: Option<&'a str>,
    owner: &'a str,
}

impl<'a> Report<'a> {
    fn new(name: &'a LockName, backend: &dyn LockBackend, answer: &'a Contenders) -> Self {
        let contenders: Vec<Row<'a>> = answer
            .listed
            .iter()
            .enumerate()
            .map(|(i, c)| Row {
                position: i + 1,
                state: if c.holds { "holds" } else { "waits" },
                mode: c.mode.as_str(),
                token: c.token,
                node: c.node.as_deref(),
                owner: &c.owner,
            })
            .collect();
        Report {
            lock: name.as_str(),
            engine: backend.kind(),
            location: backend.location(name),
            holders: contenders.iter().filter(|c| c.state == "holds").count(),
            waiters: contenders.iter().filter(|c| c.state == "waits").count(),
            total: answer.total,
            contenders,
        }
    }

    fn print(&self) {
        let at = self.location.as_deref().unwrap_or("-");
        println!(
            "lock {} at {at} ({}): {} holding, {} waiting",
            self.lock, self.engine, self.holders, self.waiters
        );
        if self.contenders.is_empty() {
            println!("(free: nobody holds or waits)");
            return;
        }
        println!(
            "{:>3}  {:<5}  {:<9}  {:>12}  {:<50}  owner",
            "#", "state", "mode", "token", "node"
        );
        for row in &self.contenders {
            println!(
                "{:>3}  {:<5}  {:<9}  {:>12}  {:<50}  {}",
                row.position,
                row.state,
                row.mode,
                row.token.map_or_else(|| "-".to_owned(), |t| t.to_string()),
                row.node.unwrap_or("-"),
                row.owner
            );
        }
        let unlisted = usize::try_from(self.total)
            .unwrap_or(usize::MAX)
            .saturating_sub(self.contenders.len());
        if unlisted > 0 {
            println!("... and {unlisted} more");
        }
    }
}

/// Prints who leads election `name` (engine-neutral: the engine's
/// `leader`); exit code 0, or 1 when nobody leads.
async fn election(name: &LockName, backend: &dyn LockBackend, json: bool) -> anyhow::Result<i32> {
    let session = backend.open_session("wardlock status");
    let leader = async { session.election()?.leader(name).await }
        .await
        .with_context(|| format!("asking who leads {name:?}"))?;
    drop(session);
    if json {
        let report = serde_json::json!({
            "election": name.as_str(),
            "leader": leader.as_ref().map(|l| serde_json::json!({
                "owner": l.owner, "value": l.value, "term": l.term,
            })),
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        match &leader {
            Some(l) => println!(
                "election {name}: led by {:?} (term {}, {})",
                l.value, l.term, l.owner
            ),
            None => println!("election {name}: nobody leads (no candidate)"),
        }
    }
    Ok(if leader.is_some() { 0 } else { 1 })
}

//! `wardlock status`: who holds a lock and who waits, asked of the lock
//! service of the engine the flags choose (each engine prints its own report:
//! `backend/<engine>/registration/status.rs`).

use anyhow::Context;
use clap::Args;

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
    /// HOST:PORT`), and its root.
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
    if args.election {
        return election(&name, &*config.connect(true).await?, args.json).await;
    }
    config.status(&name, args.json).await?;
    Ok(0)
}

/// Prints who leads election `name` (engine-neutral: the engine's
/// `leader`); exit code 0, or 1 when nobody leads.
async fn election(
    name: &LockName,
    backend: &dyn wardlock_host::backend::LockBackend,
    json: bool,
) -> anyhow::Result<i32> {
    let session = backend.open_session("wardlock status");
    let leader = session
        .leader(name)
        .await
        .with_context(|| format!("asking who leads {name:?}"))?;
    drop(session);
    backend.shutdown().await;
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

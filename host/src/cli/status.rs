//! `wardlock status`: who holds a lock and who waits, asked of the lock
//! service of the engine the flags choose (each engine prints its own report:
//! `backend/<engine>/registration/status.rs`).

use anyhow::Context;
use clap::Args;

use super::Engines;
use crate::name::LockName;
use crate::registry::CommonFlags;

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
}

/// Prints the queue of one lock; exit code 0.
pub(super) async fn status(args: &StatusArgs, engines: Engines<'_>) -> anyhow::Result<i32> {
    let name =
        LockName::new(&args.name).with_context(|| format!("bad lock name {:?}", args.name))?;
    let config = engines.chosen(&args.backend)?;
    config.status(&name, args.json).await?;
    Ok(0)
}

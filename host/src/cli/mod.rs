//! The `wardlock` command line.

mod run;
mod status;

use clap::{Parser, Subcommand};

pub use run::RunArgs;
pub use status::StatusArgs;

/// wardlock: distributed locks for sandboxed WebAssembly components.
#[derive(Debug, Parser)]
#[command(name = "wardlock", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a WASI command component (one or more instances) with lock access.
    Run(RunArgs),
    /// Show who holds a ZooKeeper lock and who waits (wardlock's and foreign nodes).
    Status(StatusArgs),
}

/// Runs the parsed command line; returns the process exit code.
///
/// # Errors
/// A one-line description of what was wrong (bad flags, unreadable component…).
pub async fn execute(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Run(args) => run::run(args).await,
        Command::Status(args) => status::status(args).await,
    }
}

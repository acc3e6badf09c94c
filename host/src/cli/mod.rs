//! The `wardlock` command line.

mod backend_args;
mod compile;
mod engine_args;
mod fault_args;
mod guest_args;
mod run;
mod security_args;
mod serve;
mod signal;
mod status;

use clap::{Parser, Subcommand};

pub use backend_args::{BackendArgs, BackendKind, BackendSpec, HandoffArgs, ZooKeeperArgs};
pub use compile::CompileArgs;
pub use engine_args::EngineArgs;
pub use fault_args::{FaultArgs, ScheduledFault};
pub use guest_args::GuestArgs;
pub use run::RunArgs;
pub use security_args::{EtcdSecurityArgs, ZkSecurityArgs};
pub use serve::ServeArgs;
pub use status::StatusArgs;

/// wardlock: distributed locks for sandboxed WebAssembly components.
#[derive(Debug, Parser)]
#[command(name = "wardlock", version, about, long_about = None)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a WASI command component (one or more instances) with lock access.
    Run(RunArgs),
    /// Serve a wasi:http/proxy component over HTTP, one instance and lock session per request.
    Serve(ServeArgs),
    /// Compile a component ahead of time into a .cwasm (run it with --allow-precompiled).
    Compile(CompileArgs),
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
        Command::Serve(args) => serve::serve(args).await,
        Command::Compile(args) => compile::compile(args),
        Command::Status(args) => status::status(args).await,
    }
}

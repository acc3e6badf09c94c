//! The `wardlock` command line: `run`, `serve`, `compile` and `status` on any
//! engine the registry holds — the built-in ones (memory, ZooKeeper from
//! `wardlock-zookeeper`, etcd from `wardlock-etcd`, PostgreSQL from
//! `wardlock-postgres`, Valkey/Redis from `wardlock-valkey`), which this
//! crate is the
//! one place to name, and engines added outside wardlock in a binary of their
//! own ([`main`] with a registry of its own).
//!
//! A `wardlock` of your own, with every built-in engine and one more:
//!
//! ```no_run
//! use wardlock::registry::Registry;
//!
//! fn main() {
//!     // `.with(MyEngine)` adds an engine of yours (docs/engines.md).
//!     wardlock::main(Registry::builtin());
//! }
//! ```

mod admin;
mod compilation_args;
mod compile;
mod fault_args;
mod guest_args;
mod instance_args;
mod run;
mod run_admin;
mod seconds;
mod serve;
mod signal;
mod singleton;
mod status;

use std::ffi::OsString;

use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

pub use crate::registry::Registry;

pub mod registry;
pub use compilation_args::CompilationArgs;
pub use compile::CompileArgs;
pub use fault_args::{FaultArgs, ScheduledFault};
pub use guest_args::GuestArgs;
pub use instance_args::InstanceArgs;
pub use run::RunArgs;
pub use run_admin::RunAdminArgs;
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
    /// Show who holds a lock and who waits, on the lock service (ZooKeeper
    /// nodes, etcd keys, PostgreSQL's pg_locks: wardlock's and other clients').
    Status(StatusArgs),
}

/// The subcommands that choose a lock engine, and so take the registry's flags.
const ENGINE_COMMANDS: [&str; 3] = ["run", "serve", "status"];

/// The command line of a `wardlock` that knows `registry`'s engines: the
/// derived [`Cli`] with every engine's flags added to `run`, `serve` and
/// `status`.
pub fn command(registry: &Registry) -> clap::Command {
    ENGINE_COMMANDS
        .into_iter()
        .fold(Cli::command(), |command, name| {
            command.mut_subcommand(name, |sub| registry.flags(sub))
        })
}

/// A parsed command line, with the registry that parsed it.
#[derive(Debug)]
pub struct Invocation {
    cli: Cli,
    matches: ArgMatches,
    registry: Registry,
}

impl Invocation {
    /// Parses `argv` (the program name first) against `registry`'s engines.
    ///
    /// # Errors
    /// clap's error for unknown or invalid flags (print it with `exit`).
    pub fn try_parse_from<I, T>(registry: Registry, argv: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let matches = command(&registry).try_get_matches_from(argv)?;
        let cli = Cli::from_arg_matches(&matches)?;
        Ok(Invocation {
            cli,
            matches,
            registry,
        })
    }

    /// The matches of the subcommand (where the engines' flags are).
    fn engine_matches(&self) -> &ArgMatches {
        self.matches
            .subcommand()
            .map_or(&self.matches, |(_, sub)| sub)
    }
}

/// Runs a parsed command line; returns the process exit code.
///
/// # Errors
/// A one-line description of what was wrong (bad flags, unreadable component…).
///
/// # Cancellation safety
/// Not cancel safe: it is the whole command, which ends in order (instances
/// stopped, their locks released, the engine shut down) only when it runs to
/// its end; a stop signal (SIGINT, SIGTERM) ends it early that way. Dropping
/// it aborts the instances, whose lock sessions release what they hold, but
/// skips the engine's [`shutdown`](wardlock_backend::LockBackend::shutdown).
pub async fn execute(invocation: Invocation) -> anyhow::Result<i32> {
    let engines = Engines {
        registry: &invocation.registry,
        matches: invocation.engine_matches(),
    };
    match invocation.cli.command {
        Command::Run(ref args) => run::run(args, engines).await,
        Command::Serve(ref args) => serve::serve(args, engines).await,
        Command::Compile(ref args) => compile::compile(args),
        Command::Status(ref args) => status::status(args, engines).await,
    }
}

/// What a subcommand needs to pick its engine: the registry and its flags.
#[derive(Clone, Copy)]
pub(crate) struct Engines<'a> {
    registry: &'a Registry,
    matches: &'a ArgMatches,
}

impl Engines<'_> {
    /// The engine configuration the flags describe.
    ///
    /// # Errors
    /// As [`Registry::config_from_flags`].
    fn chosen(
        &self,
        common: &crate::registry::CommonFlags,
    ) -> anyhow::Result<std::sync::Arc<dyn crate::registry::EngineConfig>> {
        self.registry.config_from_flags(common, self.matches)
    }
}

/// A `wardlock` binary's `main` over `registry`: logging (`WARDLOCK_LOG`, to
/// stderr), the command line, an async runtime, the exit code. An embedder's
/// own `wardlock` with an engine of its own is
/// `cli::main(Registry::builtin().with(MyEngine))`.
pub fn main(registry: Registry) -> ! {
    use tracing_subscriber::EnvFilter;
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("WARDLOCK_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let invocation = match Invocation::try_parse_from(registry, std::env::args_os()) {
        Ok(invocation) => invocation,
        Err(error) => error.exit(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("wardlock: cannot start the async runtime: {error}");
            std::process::exit(1);
        }
    };
    let code = match runtime.block_on(execute(invocation)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("wardlock: {error:#}");
            2
        }
    };
    std::process::exit(code);
}

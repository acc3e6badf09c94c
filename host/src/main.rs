//! The `wardlock` binary: the command line over the `wardlock_host` library.

use clap::Parser;
use tracing_subscriber::EnvFilter;
use wardlock_host::cli::{Cli, execute};

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("WARDLOCK_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
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
    let code = match runtime.block_on(execute(cli)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("wardlock: {error:#}");
            2
        }
    };
    std::process::exit(code);
}

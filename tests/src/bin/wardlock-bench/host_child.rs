//! `wardlock-bench --host-child DIR`: one host of the `hosts` workload, started
//! by [`crate::systems::host_process::HostProcess`] (which documents the
//! protocol). It connects a backend of its own, as a second `wardlock run` on
//! another machine would, and runs `--clients` `bench-guest` instances per
//! command.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use tokio::io::{AsyncBufReadExt, BufReader};
use wardlock_host::{LockBackend, LockName};

use crate::cli::Args;
use crate::env::{BackendOptions, EtcdEnv, ZkEnv, guest_runner};
use crate::systems::host_process::to_json;
use crate::systems::{LoopSpec, System, guest};

/// Runs the child until its stdin closes: exit 0, or 1 after printing
/// `error MESSAGE` (also on stderr).
pub(crate) fn main(args: Args, dir: &Path) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            println!("error cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(args, dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let message = format!("{error:#}").replace('\n', " ");
            println!("error {message}");
            eprintln!("wardlock-bench host process: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args, dir: &Path) -> anyhow::Result<()> {
    let system = match args.selected_systems().as_slice() {
        [one] => *one,
        _ => bail!("a host process runs exactly one system"),
    };
    let backend: Arc<dyn LockBackend> = match system {
        System::ZooKeeperGuest => {
            let address = args.zookeeper.as_deref().context("no --zookeeper")?;
            let options = BackendOptions::from_args(&args);
            Arc::new(ZkEnv::backend(address, args.session_timeout(), options).await?)
        }
        System::EtcdGuest => {
            let address = args.etcd.as_deref().context("no --etcd")?;
            EtcdEnv::connect(address, &args).await?.backend
        }
        other => bail!("{} does not run in host processes", other.name()),
    };
    let runner = guest_runner(backend, dir);
    println!("ready");
    let mut commands = BufReader::new(tokio::io::stdin()).lines();
    while let Some(command) = commands.next_line().await? {
        let words: Vec<&str> = command.split_whitespace().collect();
        let ["run", lock, ops, check] = words.as_slice() else {
            bail!("unknown command {command:?}");
        };
        let spec = LoopSpec::checked(LockName::new(lock)?, ops.parse().context("bad OPS")?, check);
        let specs = vec![spec; usize::try_from(args.clients)?];
        for result in guest::run_all(&runner, specs).await? {
            println!("result {}", to_json(&result));
        }
        println!("end");
    }
    Ok(())
}

//! Runs instances of one WASI command component, one Store (and lock session) each.

use std::time::Instant;

use wasmtime::component::Component;
use wasmtime_wasi::WasiCtx;
use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;

use super::command_v3::{CommandV3Pre, is_v3_command};
use super::config::{RunnerConfig, Stdio};
use super::declared::{DeclaredHold, HELD_ENV, first_lost, resolve};
use super::error::RunnerError;
use super::instance::{lease_expired, new_store, pre_instantiate};
use super::outcome::{InstanceReport, Outcome};
use super::runtime::Runtime;
use super::state::InstanceState;

/// How a command is entered: WASI 0.2's `wasi:cli/run@0.2.x` or WASI 0.3's
/// `wasi:cli/run@0.3.0` (an `async func`, run in the store's event loop).
enum Entry {
    V2(CommandPre<InstanceState>),
    V3(CommandV3Pre),
}

/// Most bytes of stdout or stderr kept per instance when capturing.
const CAPTURE_LIMIT: usize = 16 << 20;

/// Runs instances of one component.
pub struct Runner {
    runtime: Runtime,
    pre: Entry,
    config: RunnerConfig,
    plugin: String,
}

impl Runner {
    /// Links `component` against WASI, outbound HTTP and the lock capability.
    /// `plugin` names it in lock owner descriptions and in the first guest
    /// argument.
    ///
    /// # Errors
    /// [`RunnerError::World`] when the component needs imports the host does not
    /// provide or does not export `wasi:cli/run` (0.2.x, or 0.3.0 for a WASI
    /// 0.3 command).
    pub fn new(
        runtime: &Runtime,
        component: &Component,
        plugin: &str,
        config: RunnerConfig,
    ) -> Result<Self, RunnerError> {
        let pre = if is_v3_command(component) {
            let world =
                "wardlock:lock/command@0.3.0 (a WASI 0.3 command exporting wasi:cli/run@0.3.0)";
            Entry::V3(pre_instantiate(
                runtime,
                component,
                plugin,
                world,
                CommandV3Pre::new,
            )?)
        } else {
            let world = "wardlock guest world (a WASI command importing wardlock:lock/locks)";
            Entry::V2(pre_instantiate(
                runtime,
                component,
                plugin,
                world,
                CommandPre::new,
            )?)
        };
        Ok(Runner {
            runtime: runtime.clone(),
            pre,
            config,
            plugin: plugin.to_owned(),
        })
    }

    /// The configuration instances get.
    pub fn config(&self) -> &RunnerConfig {
        &self.config
    }

    /// Runs instance number `instance` with guest arguments `args` (the plugin name
    /// is prepended as `argv[0]`) until it ends, its deadline passes or it holds a
    /// lock past the hold lease.
    ///
    /// # Cancellation safety
    /// Cancel safe: dropping the future stops the guest and releases every lock it
    /// held or waited for, as any other end of the instance does.
    pub async fn run(&self, instance: usize, args: &[String]) -> InstanceReport {
        let started = Instant::now();
        let stdout = MemoryOutputPipe::new(CAPTURE_LIMIT);
        let stderr = MemoryOutputPipe::new(CAPTURE_LIMIT);
        let execution = self.execute(instance, args, &stdout, &stderr);
        let outcome = match self.config.timeout {
            Some(limit) => match tokio::time::timeout(limit, execution).await {
                Ok(outcome) => outcome,
                Err(_) => Outcome::TimedOut(limit),
            },
            None => execution.await,
        };
        InstanceReport {
            instance,
            outcome,
            stdout: stdout.contents().to_vec(),
            stderr: stderr.contents().to_vec(),
            elapsed: started.elapsed(),
        }
    }

    async fn execute(
        &self,
        instance: usize,
        args: &[String],
        stdout: &MemoryOutputPipe,
        stderr: &MemoryOutputPipe,
    ) -> Outcome {
        let mut wasi = WasiCtx::builder();
        wasi.allow_blocking_current_thread(self.config.file_io.blocks_the_thread());
        wasi.arg(&self.plugin).args(args);
        match self.config.stdio {
            Stdio::Inherit => {
                wasi.inherit_stdout().inherit_stderr();
            }
            Stdio::Capture => {
                wasi.stdout(stdout.clone()).stderr(stderr.clone());
            }
        }
        let owner = format!("{}#{instance}", self.plugin);
        // Taken before the guest's first instruction; released after the
        // store is gone (the binding outlives it).
        let declared = if self.config.hold.is_empty() {
            None
        } else {
            let values = |key: &str| match key {
                "instance" => Ok(instance.to_string()),
                "plugin" => Ok(self.plugin.clone()),
                other => Err(format!("no value for {{{other}}} in `wardlock run`")),
            };
            let wanted = match resolve(&self.config.hold, values) {
                Ok(wanted) => wanted,
                Err(why) => return Outcome::HostError(why),
            };
            let backend = &*self.config.backend;
            match DeclaredHold::take(backend, &owner, wanted, None).await {
                Ok(held) => {
                    wasi.env(HELD_ENV, held.env_value());
                    Some(held)
                }
                Err(why) => return Outcome::HostError(why.to_string()),
            }
        };
        let (mut store, lease) =
            match new_store(&self.runtime, &self.config, &owner, wasi, declared.as_ref()) {
                Ok(created) => created,
                Err(why) => return Outcome::HostError(why),
            };
        let guest = async {
            let returned = match &self.pre {
                Entry::V2(pre) => match pre.instantiate_async(&mut store).await {
                    Ok(command) => command
                        .wasi_cli_run()
                        .call_run(&mut store)
                        .await
                        .map(|run| run.is_ok()),
                    Err(error) => Err(error),
                },
                Entry::V3(pre) => pre.run(&mut store).await,
            };
            match returned {
                Ok(true) => Outcome::Success,
                Ok(false) => Outcome::Exit(1),
                Err(error) => classify(&error),
            }
        };
        let outcome = tokio::select! {
            outcome = guest => outcome,
            () = lease_expired(lease.as_ref()) => Outcome::LeaseExpired(
                lease.as_ref().map(|l| l.max_hold()).unwrap_or_default()
            ),
            name = first_lost(declared.as_ref()) => {
                tracing::warn!(lock = %name, instance = %owner, "declared lock lost: instance stopped");
                Outcome::LockLost(name.to_string())
            }
        };
        // Dropping the store here (or wherever this future is dropped) ends the
        // instance's lock session.
        drop(store);
        drop(declared);
        outcome
    }
}

/// Turns a wasmtime error from instantiation or a guest call into an outcome.
pub(crate) fn classify(error: &wasmtime::Error) -> Outcome {
    if let Some(exit) = error.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return match exit.0 {
            0 => Outcome::Success,
            code => Outcome::Exit(code),
        };
    }
    if let Some(trap) = error.downcast_ref::<wasmtime::Trap>() {
        return Outcome::Trap(trap.to_string());
    }
    Outcome::Trap(error.root_cause().to_string())
}

//! Runs WASI command components whose lock sessions live and die with each instance.
//!
//! A [`Runtime`] holds the engine (epoch interruption on, ticked by a background
//! thread). A [`Runner`] pre-instantiates one component against WASI and the lock
//! capability and runs instances of it; each instance gets its own Store, whose
//! data owns the instance's lock session. Whatever way the instance ends — return,
//! exit, trap, deadline, or the caller dropping the [`Runner::run`] future — the
//! Store is dropped and every lock it held or waited for is released at once.

mod config;
mod epoch;
mod outcome;
mod state;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store, StoreLimitsBuilder};
use wasmtime_wasi::WasiCtx;
use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;

pub use config::{DEFAULT_MEMORY_LIMIT, Preopen, RunnerConfig, Stdio};
pub use epoch::{EpochTicker, TICK};
pub use outcome::{InstanceReport, Outcome};
pub use state::InstanceState;

use crate::capability::WardlockCtx;

/// Most bytes of stdout or stderr kept per instance when capturing.
const CAPTURE_LIMIT: usize = 16 << 20;

/// Why a runner could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The engine could not be created.
    #[error("cannot create the wasm engine: {0}")]
    Engine(String),
    /// The component file could not be read or compiled.
    #[error("cannot load component {path}: {why}")]
    Load {
        /// The file.
        path: String,
        /// What went wrong.
        why: String,
    },
    /// The component does not fit the world (missing imports or `wasi:cli/run`).
    #[error(
        "component {name} does not fit the wardlock guest world (a WASI command importing wardlock:lock/locks): {why}"
    )]
    World {
        /// The component's name.
        name: String,
        /// What did not fit.
        why: String,
    },
}

/// The engine guests run on, plus its epoch ticker. Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    engine: Engine,
    _ticker: Arc<EpochTicker>,
}

impl Runtime {
    /// An engine configured for wardlock guests (async host calls, epoch yields).
    ///
    /// # Errors
    /// [`RunnerError::Engine`] when wasmtime rejects the configuration.
    pub fn new() -> Result<Self, RunnerError> {
        Self::with_config(Self::base_config())
    }

    /// As [`Runtime::new`], but instances come from wasmtime's pooling allocator
    /// configured by `pool` (slots reserved up front, reused across instances).
    /// Opt-in: `pool` caps instances, memories, tables and fiber stacks alive at
    /// once and each linear memory's size (keep `max_memory_size` at least
    /// [`RunnerConfig::memory_limit`]).
    ///
    /// # Errors
    /// [`RunnerError::Engine`] when wasmtime rejects the configuration (for example
    /// when the pool's address space cannot be reserved).
    pub fn with_pooling(pool: wasmtime::PoolingAllocationConfig) -> Result<Self, RunnerError> {
        let mut config = Self::base_config();
        config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
        Self::with_config(config)
    }

    fn base_config() -> wasmtime::Config {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config
    }

    fn with_config(config: wasmtime::Config) -> Result<Self, RunnerError> {
        let engine = Engine::new(&config).map_err(|e| RunnerError::Engine(e.to_string()))?;
        let ticker = EpochTicker::start(&engine).map_err(|e| RunnerError::Engine(e.to_string()))?;
        Ok(Runtime {
            engine,
            _ticker: Arc::new(ticker),
        })
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Reads and compiles a component file.
    ///
    /// # Errors
    /// [`RunnerError::Load`] naming the file when it is missing or not a component.
    pub fn compile(&self, path: &Path) -> Result<Component, RunnerError> {
        let load_error = |why: String| RunnerError::Load {
            path: path.display().to_string(),
            why,
        };
        let bytes = std::fs::read(path).map_err(|e| load_error(e.to_string()))?;
        Component::new(&self.engine, &bytes).map_err(|e| load_error(first_line(&e.to_string())))
    }
}

/// Runs instances of one component.
pub struct Runner {
    runtime: Runtime,
    pre: CommandPre<InstanceState>,
    config: RunnerConfig,
    plugin: String,
}

impl Runner {
    /// Links `component` against WASI and the lock capability. `plugin` names it
    /// in lock owner descriptions and in the first guest argument.
    ///
    /// # Errors
    /// [`RunnerError::World`] when the component needs imports the host does not
    /// provide or does not export `wasi:cli/run`.
    pub fn new(
        runtime: &Runtime,
        component: &Component,
        plugin: &str,
        config: RunnerConfig,
    ) -> Result<Self, RunnerError> {
        let world_error = |why: String| RunnerError::World {
            name: plugin.to_owned(),
            why,
        };
        let mut linker = Linker::<InstanceState>::new(runtime.engine());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| world_error(e.to_string()))?;
        crate::capability::add_to_linker(&mut linker, InstanceState::locks)
            .map_err(|e| world_error(e.to_string()))?;
        let pre = linker
            .instantiate_pre(component)
            .map_err(|e| world_error(first_line(&e.to_string())))?;
        let pre = CommandPre::new(pre).map_err(|e| world_error(first_line(&e.to_string())))?;
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
    /// is prepended as `argv[0]`) until it ends or its deadline passes.
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
        let mut store = match self.store(instance, args, stdout, stderr) {
            Ok(store) => store,
            Err(why) => return Outcome::HostError(why),
        };
        let command = match self.pre.instantiate_async(&mut store).await {
            Ok(command) => command,
            Err(error) => return classify(&error),
        };
        let outcome = match command.wasi_cli_run().call_run(&mut store).await {
            Ok(Ok(())) => Outcome::Success,
            Ok(Err(())) => Outcome::Exit(1),
            Err(error) => classify(&error),
        };
        // Dropping the store here (or wherever this future is dropped) ends the
        // instance's lock session.
        drop(store);
        outcome
    }

    fn store(
        &self,
        instance: usize,
        args: &[String],
        stdout: &MemoryOutputPipe,
        stderr: &MemoryOutputPipe,
    ) -> Result<Store<InstanceState>, String> {
        let mut wasi = WasiCtx::builder();
        wasi.arg(&self.plugin).args(args).envs(&self.config.env);
        match self.config.stdio {
            Stdio::Inherit => {
                wasi.inherit_stdout().inherit_stderr();
            }
            Stdio::Capture => {
                wasi.stdout(stdout.clone()).stderr(stderr.clone());
            }
        }
        for dir in &self.config.preopens {
            wasi.preopened_dir(&dir.host, &dir.guest, wasmtime_wasi::FsPerms::ReadWrite)
                .map_err(|e| format!("cannot preopen {}: {e}", dir.host.display()))?;
        }
        let owner = format!("{}#{instance}", self.plugin);
        let state = InstanceState {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            locks: WardlockCtx::new(&*self.config.backend, self.config.policy.clone(), &owner),
            limits: StoreLimitsBuilder::new()
                .memory_size(self.config.memory_limit)
                .trap_on_grow_failure(true)
                .build(),
        };
        let mut store = Store::new(self.runtime.engine(), state);
        store.limiter(|state| &mut state.limits);
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        Ok(store)
    }
}

/// Turns a wasmtime error from instantiation or `run` into an outcome.
fn classify(error: &wasmtime::Error) -> Outcome {
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

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or(text).trim().to_owned()
}

//! How a lock engine introduces itself to a command line or a config file,
//! without depending on either.
//!
//! An engine is one [`Engine`] value beside its code: its [`Engine::name`]
//! (what `--backend NAME` and a config entry's `kind = "NAME"` select), the
//! [`Setting`]s it takes, and [`Engine::configure`], which turns the values
//! given for them ([`Settings`], however they were given) into an
//! [`EngineConfig`] that connects a [`LockBackend`]. The description is plain
//! data: the `wardlock` command line renders each setting as a flag
//! (`--zk-sessions N`) and reads it from a config file as a key
//! (`sessions = N`), and an engine author writes neither clap nor toml code.
//!
//! The settings every remote engine shares (where names live, the session
//! timeout, host-local hand-off) are [`REMOTE_SETTINGS`]; an engine that takes
//! them says so with [`Engine::remote`] and reads them with
//! [`Settings::root`], [`Settings::session_timeout`] and [`Settings::handoff`].
//!
//! ```
//! use std::sync::Arc;
//! use wardlock_backend::registry::{
//!     ConnectFuture, Engine, EngineConfig, Mistake, Setting, SettingKind, Settings,
//! };
//! use wardlock_backend::{LockBackend, MemoryBackend};
//!
//! /// An engine that takes one setting, `--toy-shards N` (`shards = N`).
//! struct Toy;
//!
//! const SETTINGS: &[Setting] = &[Setting::new("shards", "toy-shards", SettingKind::Integer)
//!     .value_name("N")
//!     .default("1")
//!     .help("How many shards the toy spreads its locks over.")];
//!
//! #[derive(Debug)]
//! struct ToyConfig {
//!     shards: u32,
//! }
//!
//! impl Engine for Toy {
//!     fn name(&self) -> &'static str {
//!         "toy"
//!     }
//!     fn about(&self) -> &'static str {
//!         "an example"
//!     }
//!     fn settings(&self) -> &'static [Setting] {
//!         SETTINGS
//!     }
//!     fn configure(&self, settings: &Settings) -> Result<Arc<dyn EngineConfig>, Mistake> {
//!         let shards = settings.integer("shards")?.unwrap_or(1);
//!         Ok(Arc::new(ToyConfig { shards }))
//!     }
//! }
//!
//! impl EngineConfig for ToyConfig {
//!     fn engine(&self) -> &'static str {
//!         "toy"
//!     }
//!     fn connect(&self, _require: bool) -> ConnectFuture<'_> {
//!         Box::pin(async { Ok(Arc::new(MemoryBackend::new()) as Arc<dyn LockBackend>) })
//!     }
//! }
//!
//! // What `--toy-shards 4` (or `shards = 4` in a config file) gives the engine.
//! let settings = Settings::from_flags(SETTINGS, [("shards", "4".into())]);
//! let config = Toy.configure(&settings)?;
//! assert_eq!(config.engine(), "toy");
//! # Ok::<(), Mistake>(())
//! ```

mod setting;
mod settings;

use std::any::Any;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use crate::{BackendError, LockBackend};

pub use setting::{REMOTE_SETTINGS, Setting, SettingKind};
pub use settings::{Mistake, Settings, Value};

/// What [`EngineConfig::connect`] returns.
pub type ConnectFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Arc<dyn LockBackend>, BackendError>> + Send + 'a>>;

/// One lock engine as a command line and a config file know it.
pub trait Engine: Send + Sync + 'static {
    /// The name `--backend NAME` and a config entry's `kind = "NAME"` select;
    /// also the [`LockBackend::kind`] of the backends it builds, which labels
    /// them in logs, `/readyz` and metrics. Lower case, unique in a registry.
    fn name(&self) -> &'static str;

    /// One line for `--backend`'s help.
    fn about(&self) -> &'static str;

    /// The engine's own settings. Their flags must be the engine's own
    /// (`zk-…`, `etcd-…`): a command line holds the flags of every engine it
    /// knows. At most one of them [`Setting::chooses`] the engine.
    fn settings(&self) -> &'static [Setting] {
        &[]
    }

    /// True for an engine that keeps its locks in a lock service other hosts
    /// share: it takes the [`REMOTE_SETTINGS`] too, and `wardlock status` can
    /// ask its service who holds a lock. False for an engine whose locks live
    /// in the host process (memory).
    fn remote(&self) -> bool {
        false
    }

    /// The engine's configuration from the values given for its settings
    /// (and the [`REMOTE_SETTINGS`] when [`Engine::remote`]).
    ///
    /// # Errors
    /// The setting at fault and what is wrong with it ([`Settings::mistake`]
    /// names it the way the user gave it: a flag or a config key).
    fn configure(&self, settings: &Settings) -> Result<Arc<dyn EngineConfig>, Mistake>;
}

/// One engine's configuration: enough to connect a backend, however it was
/// given. A caller that needs one engine's own type (a test that checks what
/// a config file gave) upcasts it to [`Any`] and downcasts that.
pub trait EngineConfig: fmt::Debug + Send + Sync + Any {
    /// The [`Engine::name`] of the engine that made it.
    fn engine(&self) -> &'static str;

    /// Connects (or creates) the backend. With `require`, a lock service that
    /// cannot be reached now is an error; without it the backend keeps
    /// connecting in the background.
    ///
    /// # Errors
    /// The configuration cannot work; with `require`, the service could not
    /// be reached.
    ///
    /// # Cancellation safety
    /// Cancel safe: a dropped connect leaves no session behind.
    fn connect(&self, require: bool) -> ConnectFuture<'_>;
}

/// A remote engine's [`Engine`] written as data: its name, its help line,
/// its own settings, and the function that reads them into its
/// configuration ([`REMOTE_SETTINGS`] come with it). The ZooKeeper, etcd and
/// PostgreSQL engines register one each; an engine with more to say
/// implements [`Engine`] itself.
#[derive(Debug)]
pub struct RemoteEngine<C> {
    /// As [`Engine::name`].
    pub name: &'static str,
    /// As [`Engine::about`].
    pub about: &'static str,
    /// As [`Engine::settings`].
    pub settings: &'static [Setting],
    /// The engine's configuration from the values given for its settings.
    pub configure: fn(&Settings) -> Result<C, Mistake>,
}

impl<C: EngineConfig> Engine for RemoteEngine<C> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }

    fn settings(&self) -> &'static [Setting] {
        self.settings
    }

    fn remote(&self) -> bool {
        true
    }

    fn configure(&self, settings: &Settings) -> Result<Arc<dyn EngineConfig>, Mistake> {
        Ok(Arc::new((self.configure)(settings)?))
    }
}

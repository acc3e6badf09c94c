//! The ticket engine in wardlock's registry: `--backend ticket` (with
//! `--ticket-max-waiters N`) on the command line, `kind = "ticket"` (with
//! `max_waiters = N`) in a `wardlock serve` config file. This file and
//! `main.rs` are all it takes to offer an engine through the `wardlock`
//! command line; nothing in wardlock is edited, and no clap or toml code is
//! written: the engine describes its one setting and reads it back.

use std::sync::Arc;

use wardlock_backend::LockBackend;
use wardlock_backend::registry::{
    ConnectFuture, Engine, EngineConfig, Mistake, Setting, SettingKind, Settings,
};

use crate::{TicketBackend, TicketConfig};

/// The ticket engine's name: `--backend ticket`, `kind = "ticket"`.
pub const NAME: &str = "ticket";

/// The ticket engine's registry entry: `Registry::builtin().with(TicketEngine)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TicketEngine;

/// The ticket engine's one setting.
const SETTINGS: &[Setting] = &[Setting::new(
    "max_waiters",
    "ticket-max-waiters",
    SettingKind::Integer,
)
.value_name("N")
.default("10000")
.help("Most waiters one lock queues on the ticket engine; more are refused (`unavailable`).")];

impl Engine for TicketEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "in-process FIFO ticket queues (the example engine of host/examples/ticket-engine)"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn configure(&self, settings: &Settings) -> Result<Arc<dyn EngineConfig>, Mistake> {
        let max_waiters = settings
            .integer("max_waiters")?
            .unwrap_or(TicketConfig::default().max_waiters);
        if max_waiters == 0 {
            return Err(settings.mistake("max_waiters", "must be at least 1"));
        }
        Ok(Arc::new(TicketConfig { max_waiters }))
    }
}

impl EngineConfig for TicketConfig {
    fn engine(&self) -> &'static str {
        NAME
    }

    fn connect(&self, _require: bool) -> ConnectFuture<'_> {
        let backend = TicketBackend::new(self.clone());
        Box::pin(async move { Ok(Arc::new(backend) as Arc<dyn LockBackend>) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_backend_s() {
        assert_eq!(
            SETTINGS[0].default,
            Some(TicketConfig::default().max_waiters.to_string().as_str())
        );
    }
}

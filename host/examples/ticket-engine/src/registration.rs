//! The ticket engine in wardlock's registry: `--backend ticket` (with
//! `--ticket-max-waiters N`) on the command line, `kind = "ticket"` in a
//! `wardlock serve` config file. This file and `main.rs` are all it takes to
//! offer an engine through the `wardlock` command line; nothing in wardlock is
//! edited.

use std::any::Any;
use std::sync::Arc;

use clap::{Args, FromArgMatches};
use serde::Deserialize;
use wardlock_backend::registry::{
    CommonFlags, ConnectFuture, Engine, EngineConfig, Entry, Mistake,
};
use wardlock_host::LockBackend;

use crate::{TicketBackend, TicketConfig};

/// The ticket engine's registry entry: `Registry::builtin().with(TicketEngine)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TicketEngine;

/// The ticket engine's own flags.
#[derive(Debug, Args)]
struct TicketFlags {
    /// Most waiters one lock queues on the ticket engine; more are refused
    /// (`unavailable`).
    #[arg(long, value_name = "N", default_value_t = TicketConfig::default().max_waiters)]
    ticket_max_waiters: usize,
}

/// A config file's `[backends.LABEL]` entry with `kind = "ticket"`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TicketEntry {
    max_waiters: Option<usize>,
}

impl Engine for TicketEngine {
    fn name(&self) -> &'static str {
        "ticket"
    }

    fn about(&self) -> &'static str {
        "in-process FIFO ticket queues (the example engine of host/examples/ticket-engine)"
    }

    fn flags(&self, command: clap::Command) -> clap::Command {
        TicketFlags::augment_args(command)
    }

    fn config_from_flags(
        &self,
        _common: &CommonFlags,
        matches: &clap::ArgMatches,
    ) -> anyhow::Result<Arc<dyn EngineConfig>> {
        let flags = TicketFlags::from_arg_matches(matches)?;
        checked(flags.ticket_max_waiters)
            .map_err(|why| anyhow::anyhow!("--ticket-max-waiters {why}"))
    }

    fn config_from_entry(&self, entry: Entry<'_>) -> Result<Arc<dyn EngineConfig>, Mistake> {
        let fields: TicketEntry = entry.parse()?;
        let max = fields
            .max_waiters
            .unwrap_or(TicketConfig::default().max_waiters);
        checked(max).map_err(|why| (entry.field("max_waiters"), why))
    }
}

/// A configuration with `max_waiters`, unless it is 0.
fn checked(max_waiters: usize) -> Result<Arc<dyn EngineConfig>, String> {
    if max_waiters == 0 {
        return Err("must be at least 1".to_owned());
    }
    Ok(Arc::new(TicketConfig { max_waiters }))
}

impl EngineConfig for TicketConfig {
    fn engine(&self) -> &'static str {
        "ticket"
    }

    fn connect(&self, _require: bool) -> ConnectFuture<'_> {
        let backend = TicketBackend::new(self.clone());
        Box::pin(async move { Ok(Arc::new(backend) as Arc<dyn LockBackend>) })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

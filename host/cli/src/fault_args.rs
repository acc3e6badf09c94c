//! `wardlock run --fault …`: fault injection into the memory backend, for
//! testing how a plugin reacts to `suspended` and `lost`.

use std::time::Duration;

use clap::Args;

use wardlock_host::backend::memory::{Fault, MemoryBackend};

/// Faults to inject while guests run (memory backend only).
#[derive(Debug, Args)]
pub struct FaultArgs {
    /// Inject a fault MS milliseconds after the guests start, into the sessions
    /// whose owner starts with OWNER (default: all; a guest's session is
    /// `<component file>#<instance>`). KIND: suspend (grants report
    /// `suspended`), resume (`held` again) or expire (grants `lost`, the lock
    /// goes to the next waiter). Repeatable. Memory backend only.
    #[arg(long = "fault", value_name = "KIND@MS[:OWNER]", value_parser = parse_fault)]
    pub faults: Vec<ScheduledFault>,

    /// Every acquire reaches the memory backend this many milliseconds late.
    #[arg(long, value_name = "MS")]
    pub grant_delay_ms: Option<u64>,
}

/// One `--fault`.
#[derive(Debug, Clone)]
pub struct ScheduledFault {
    /// What happens.
    pub fault: Fault,
    /// When, after the guests start.
    pub at: Duration,
    /// Whose sessions: an owner prefix (empty: all).
    pub owner: String,
}

fn parse_fault(text: &str) -> Result<ScheduledFault, String> {
    let (kind, rest) = text
        .split_once('@')
        .ok_or_else(|| format!("{text:?}: expected KIND@MS[:OWNER], e.g. expire@500"))?;
    let fault = Fault::parse(kind)
        .ok_or_else(|| format!("unknown fault {kind:?}; expected suspend, resume or expire"))?;
    let (ms, owner) = rest.split_once(':').unwrap_or((rest, ""));
    let ms: u64 = ms
        .parse()
        .map_err(|_| format!("{ms:?} is not a number of milliseconds"))?;
    Ok(ScheduledFault {
        fault,
        at: Duration::from_millis(ms),
        owner: owner.to_owned(),
    })
}

impl FaultArgs {
    /// True when any fault or delay is asked for.
    pub fn any(&self) -> bool {
        !self.faults.is_empty() || self.grant_delay_ms.is_some()
    }

    /// Sets the grant delay on `backend` and schedules the faults from now, in
    /// the background (they end with the runtime).
    pub fn apply(&self, backend: &MemoryBackend) {
        if let Some(ms) = self.grant_delay_ms {
            backend.delay_grants(Duration::from_millis(ms));
        }
        for scheduled in self.faults.iter().cloned() {
            let backend = backend.clone();
            tokio::spawn(async move {
                tokio::time::sleep(scheduled.at).await;
                let sessions = backend.inject(&scheduled.owner, scheduled.fault);
                tracing::info!(fault = ?scheduled.fault, sessions, "fault injected");
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_or_say_what_is_wrong() {
        let parsed = parse_fault("expire@500:counter.wasm#1").expect("parse");
        assert_eq!(parsed.fault, Fault::Expire);
        assert_eq!(parsed.at, Duration::from_millis(500));
        assert_eq!(parsed.owner, "counter.wasm#1");
        assert_eq!(parse_fault("suspend@0").expect("parse").owner, "");
        assert!(
            parse_fault("explode@1")
                .unwrap_err()
                .contains("unknown fault")
        );
        assert!(parse_fault("expire").unwrap_err().contains("KIND@MS"));
        assert!(
            parse_fault("expire@soon")
                .unwrap_err()
                .contains("milliseconds")
        );
    }
}

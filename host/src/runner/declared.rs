//! Declared locks: locks the operator says an instance holds for its whole
//! life (`wardlock run --hold NAME[:shared]`), for guests that know nothing of
//! `wardlock:lock`. The host takes them before the guest's first instruction,
//! all or nothing, on a lock session of the instance's own, gives the guest
//! their fencing tokens in its environment (`WARDLOCK_HELD`), stops the
//! instance the moment one of them is lost, and releases them after the
//! instance is gone (so no guest instruction runs after the release).

use std::time::Duration;

use tokio::time::Instant;

use crate::backend::{Grant, GrantStatus, LockBackend, LockSession, Mode};
use crate::name::LockName;

/// The environment variable that gives a guest its declared locks: `name=token`
/// pairs separated by spaces, in the order the locks were taken (by name).
pub const HELD_ENV: &str = "WARDLOCK_HELD";

/// The placeholders a declared lock's name may hold.
const PLACEHOLDERS: &str =
    "{instance} (the instance's number) and {plugin} (the component's file name)";

/// One `--hold` declaration: a lock name (with placeholders) and a mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredLock {
    template: String,
    mode: Mode,
}

impl DeclaredLock {
    /// Parses `NAME`, `NAME:exclusive` or `NAME:shared`; `NAME` may hold the
    /// placeholders `{instance}` and `{plugin}`.
    ///
    /// # Errors
    /// The declaration, and what is wrong with it: an unknown mode, an
    /// unknown placeholder, or a name that is not a valid lock name.
    pub fn parse(spec: &str) -> Result<DeclaredLock, String> {
        let (template, mode) = match spec.rsplit_once(':') {
            Some((template, "shared")) => (template, Mode::Shared),
            Some((template, "exclusive")) => (template, Mode::Exclusive),
            Some((_, other)) => {
                return Err(format!(
                    "declared lock {spec:?}: unknown mode {other:?} (exclusive or shared)"
                ));
            }
            None => (spec, Mode::Exclusive),
        };
        let declared = DeclaredLock {
            template: template.to_owned(),
            mode,
        };
        declared
            .name(0, "plugin.wasm")
            .map_err(|why| format!("declared lock {spec:?}: {why}"))?;
        Ok(declared)
    }

    /// The mode the lock is held in.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The lock's name for instance `instance` of `plugin`.
    ///
    /// # Errors
    /// An unknown placeholder, or a name that is not a valid lock name.
    pub fn name(&self, instance: usize, plugin: &str) -> Result<LockName, String> {
        let filled = self
            .template
            .replace("{instance}", &instance.to_string())
            .replace("{plugin}", plugin);
        if let Some(start) = filled.find('{') {
            let rest = &filled[start..];
            let placeholder = rest.find('}').map_or(rest, |end| &rest[..=end]);
            return Err(format!(
                "unknown placeholder {placeholder} (known: {PLACEHOLDERS})"
            ));
        }
        LockName::new(&filled).map_err(|e| e.to_string())
    }
}

/// The declared locks of one instance, held on a session of their own.
pub(crate) struct DeclaredHold {
    session: Box<dyn LockSession>,
    held: Vec<(LockName, Grant)>,
}

impl DeclaredHold {
    /// Takes `declared` for instance `instance` of `plugin`, one after another
    /// in name order (so two instances that declare the same locks cannot
    /// deadlock), each waiting at most what is left of `timeout`.
    ///
    /// # Errors
    /// A sentence naming the lock that could not be taken and why; the locks
    /// taken before it are released (all or nothing: the session is dropped).
    ///
    /// # Cancellation safety
    /// Cancel safe: dropping the future drops the session, which releases
    /// what it took and withdraws what it waits for.
    pub(crate) async fn take(
        backend: &dyn LockBackend,
        owner: &str,
        declared: &[DeclaredLock],
        instance: usize,
        plugin: &str,
        timeout: Option<Duration>,
    ) -> Result<DeclaredHold, String> {
        let mut wanted = Vec::with_capacity(declared.len());
        for lock in declared {
            wanted.push((lock.name(instance, plugin)?, lock.mode));
        }
        wanted.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        // The same name twice: held once, exclusively if either says so.
        wanted.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same && later.1 == Mode::Exclusive {
                kept.1 = Mode::Exclusive;
            }
            same
        });
        let deadline = timeout.map(|t| Instant::now() + t);
        let session = backend.open_session(owner);
        let mut held = Vec::with_capacity(wanted.len());
        for (name, mode) in wanted {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let grant = session
                .acquire(&name, mode, left)
                .await
                .map_err(|e| format!("cannot take the declared lock {name}: {e}"))?;
            tracing::debug!(%name, token = grant.token, owner, "declared lock taken");
            held.push((name, grant));
        }
        Ok(DeclaredHold { session, held })
    }

    /// `name=token` of every declared lock, for [`HELD_ENV`].
    pub(crate) fn env_value(&self) -> String {
        let pairs: Vec<String> = self
            .held
            .iter()
            .map(|(name, grant)| format!("{name}={}", grant.token))
            .collect();
        pairs.join(" ")
    }

    /// Resolves with the name of the first declared lock that reads `lost`
    /// (never, when none does). `suspended` is not the end: the instance goes
    /// on while the session may still come back.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only observes.
    pub(crate) async fn lost(&self) -> LockName {
        let watches = self.held.iter().map(|(name, grant)| {
            Box::pin(async move {
                let mut seen = self.session.status(grant.id);
                while seen != GrantStatus::Lost {
                    seen = self.session.status_changed(grant.id, seen).await;
                }
                name.clone()
            })
        });
        let watches: Vec<_> = watches.collect();
        if watches.is_empty() {
            return std::future::pending().await;
        }
        futures_select_all(watches).await
    }
}

/// The first of `futures` to finish.
async fn futures_select_all<F: Future + Unpin>(mut futures: Vec<F>) -> F::Output {
    std::future::poll_fn(|cx| {
        for future in &mut futures {
            if let std::task::Poll::Ready(output) = std::pin::Pin::new(future).poll(cx) {
                return std::task::Poll::Ready(output);
            }
        }
        std::task::Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_names_its_mode_and_fills_its_placeholders() {
        let plain = DeclaredLock::parse("counter").expect("plain");
        assert_eq!(plain.mode(), Mode::Exclusive);
        let shared = DeclaredLock::parse("jobs/{plugin}-{instance}:shared").expect("shared");
        assert_eq!(shared.mode(), Mode::Shared);
        let name = shared.name(3, "job.wasm").expect("name");
        assert_eq!(name.as_str(), "jobs/job.wasm-3");
        let exclusive = DeclaredLock::parse("a:exclusive").expect("exclusive");
        assert_eq!(exclusive.mode(), Mode::Exclusive);
    }

    #[test]
    fn a_bad_declaration_says_what_is_wrong() {
        let err = |spec: &str| DeclaredLock::parse(spec).expect_err(spec);
        let mode = err("counter:forever");
        assert!(mode.contains("unknown mode \"forever\""), "{mode}");
        let placeholder = err("orders/{path}");
        assert!(
            placeholder.contains("unknown placeholder {path}"),
            "{placeholder}"
        );
        assert!(placeholder.contains("{instance}"), "{placeholder}");
        let name = err("bad name");
        assert!(name.contains("declared lock \"bad name\""), "{name}");
        let empty = err("");
        assert!(empty.contains("declared lock \"\""), "{empty}");
    }
}

//! Declared locks: locks the operator says an instance holds for its whole
//! life (`wardlock run --hold NAME[:shared]`) or a request holds while it is
//! served (`wardlock serve`, a plugin's `hold`: `request_hold.rs`), for guests
//! that know nothing of `wardlock:lock`. The host takes them before the
//! guest's first instruction, all or nothing, on a lock session of their own,
//! gives the guest their fencing tokens (`WARDLOCK_HELD` in its environment,
//! or the `wardlock-held` request header), stops the instance the moment one
//! of them is lost, and releases them after the instance is gone (so no guest
//! instruction runs after the release).

use std::time::Duration;

use tokio::time::Instant;

use crate::backend::handoff::deadline_after;
use std::sync::Arc;

use crate::backend::{BackendError, Grant, GrantStatus, LockBackend, LockSession, Mode};
use crate::keyvalue::{KeyValueCtx, KvBuckets};
use crate::name::LockName;

/// The environment variable that gives a guest its declared locks: `name=token`
/// pairs separated by spaces, in the order the locks were taken (by name).
pub const HELD_ENV: &str = "WARDLOCK_HELD";

/// How long a declared lock is waited for before the wait is logged.
const WAIT_REPORTED_AFTER: Duration = Duration::from_secs(1);

/// The request header that gives a request's guest its declared locks, in
/// the form of [`HELD_ENV`] (`wardlock serve`, a plugin's `hold`).
pub const HELD_HEADER: &str = "wardlock-held";

/// Where a declared lock is held, which decides its placeholders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldScope {
    /// For an instance's life (`wardlock run --hold`): `{instance}` (its
    /// number), `{plugin}` (the component's file name).
    Instance,
    /// For one request (`wardlock serve`, a plugin's `hold`): `{path}` (the
    /// request's path without its leading `/`), `{method}`, `{query.NAME}`,
    /// `{header.NAME}`, `{plugin}` and `{request}` (its number).
    Request,
}

impl HoldScope {
    fn knows(self, key: &str) -> bool {
        match self {
            HoldScope::Instance => matches!(key, "instance" | "plugin"),
            HoldScope::Request => {
                matches!(key, "path" | "method" | "plugin" | "request")
                    || key.strip_prefix("query.").is_some_and(|k| !k.is_empty())
                    || key.strip_prefix("header.").is_some_and(|k| !k.is_empty())
            }
        }
    }

    fn known(self) -> &'static str {
        match self {
            HoldScope::Instance => "{instance} and {plugin}",
            HoldScope::Request => {
                "{path}, {method}, {query.NAME}, {header.NAME}, {plugin} and {request}"
            }
        }
    }
}

/// One declared lock: a lock name (with placeholders) and a mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredLock {
    template: String,
    mode: Mode,
}

impl DeclaredLock {
    /// Parses `NAME`, `NAME:exclusive` or `NAME:shared`, where `NAME` may
    /// hold the placeholders `scope` knows.
    ///
    /// # Errors
    /// The declaration, and what is wrong with it: an unknown mode, an
    /// unknown or unclosed placeholder, or a name that is not a valid lock
    /// name (checked with every placeholder filled with a letter).
    pub fn parse(spec: &str, scope: HoldScope) -> Result<DeclaredLock, String> {
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
        let sample = declared.fill(|key| {
            if scope.knows(key) {
                Ok("x".to_owned())
            } else {
                Err(format!(
                    "unknown placeholder {{{key}}} (known: {})",
                    scope.known()
                ))
            }
        });
        sample.map_err(|why| format!("declared lock {spec:?}: {why}"))?;
        Ok(declared)
    }

    /// The mode the lock is held in.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The lock's name with each placeholder `{key}` replaced by
    /// `value(key)`.
    ///
    /// # Errors
    /// What `value` says of a placeholder it cannot fill, an unclosed `{`, or
    /// why the name is not a valid lock name.
    pub fn fill(
        &self,
        mut value: impl FnMut(&str) -> Result<String, String>,
    ) -> Result<LockName, String> {
        let mut filled = String::with_capacity(self.template.len());
        let mut rest = self.template.as_str();
        while let Some(open) = rest.find('{') {
            filled.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let close = after
                .find('}')
                .ok_or_else(|| format!("unclosed placeholder {{{after}"))?;
            filled.push_str(&value(&after[..close])?);
            rest = &after[close + 1..];
        }
        filled.push_str(rest);
        LockName::new(&filled).map_err(|e| e.to_string())
    }
}

/// The locks `declared` names, filled by `value`, in the order they are
/// taken: by name, each once (exclusive if any declaration of it is).
///
/// # Errors
/// The first declaration that cannot be filled, and why.
pub fn resolve(
    declared: &[DeclaredLock],
    mut value: impl FnMut(&str) -> Result<String, String>,
) -> Result<Vec<(LockName, Mode)>, String> {
    let mut wanted = Vec::with_capacity(declared.len());
    for lock in declared {
        wanted.push((lock.fill(&mut value)?, lock.mode));
    }
    wanted.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
    wanted.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same && later.1 == Mode::Exclusive {
            kept.1 = Mode::Exclusive;
        }
        same
    });
    Ok(wanted)
}

/// Why a declared lock could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot take the declared lock {lock}: {error}")]
pub struct TakeError {
    /// The lock.
    pub lock: LockName,
    /// What the engine answered ([`BackendError::Timeout`] when the wait ran
    /// out).
    pub error: BackendError,
}

/// The declared locks of one instance, held on a session of their own.
pub(crate) struct DeclaredHold {
    /// Shared with the instance's key-value context, whose writes it fences.
    session: Arc<dyn LockSession>,
    held: Vec<(LockName, Grant)>,
    /// The exclusive ones: what fences the instance's key-value writes.
    exclusive: Vec<(LockName, crate::backend::GrantId)>,
}

impl DeclaredHold {
    /// Takes `wanted` (from [`resolve`]) one after another, in that order
    /// (so two holders of the same locks cannot deadlock), each waiting at
    /// most what is left of `timeout`.
    ///
    /// # Errors
    /// The lock that could not be taken and why; the locks taken before it
    /// are released (all or nothing: the session is dropped).
    ///
    /// # Cancellation safety
    /// Cancel safe: dropping the future drops the session, which releases
    /// what it took and withdraws what it waits for.
    pub(crate) async fn take(
        backend: &dyn LockBackend,
        owner: &str,
        wanted: Vec<(LockName, Mode)>,
        timeout: Option<Duration>,
    ) -> Result<DeclaredHold, TakeError> {
        let deadline = deadline_after(timeout);
        let session: Arc<dyn LockSession> = Arc::from(backend.open_session(owner));
        let mut held = Vec::with_capacity(wanted.len());
        let mut exclusive = Vec::new();
        for (name, mode) in wanted {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let answer = {
                let acquire = session.acquire(&name, mode, left);
                tokio::pin!(acquire);
                // Someone waiting at a prompt learns why nothing happens yet.
                tokio::select! {
                    answer = &mut acquire => answer,
                    () = tokio::time::sleep(WAIT_REPORTED_AFTER) => {
                        tracing::info!(%name, owner, "waiting for a declared lock another holder has");
                        acquire.await
                    }
                }
            };
            let grant = match answer {
                Ok(grant) => grant,
                Err(error) => return Err(TakeError { lock: name, error }),
            };
            tracing::debug!(%name, token = grant.token, owner, "declared lock taken");
            if mode == Mode::Exclusive {
                exclusive.push((name.clone(), grant.id));
            }
            held.push((name, grant));
        }
        Ok(DeclaredHold {
            session,
            held,
            exclusive,
        })
    }

    /// The instance's `wasi:keyvalue` context: its writes fenced by every
    /// declared exclusive lock (plain when every declared lock is shared:
    /// readers fence nothing).
    pub(crate) fn key_value(&self, buckets: KvBuckets) -> KeyValueCtx {
        let (names, fence): (Vec<String>, Vec<_>) = self
            .exclusive
            .iter()
            .map(|(name, grant)| (name.to_string(), *grant))
            .unzip();
        KeyValueCtx::fenced(self.session.clone(), fence, &names, buckets)
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

/// The first declared lock lost, when `declared` holds any (otherwise never).
///
/// # Cancellation safety
/// Cancel safe: it only observes.
pub(crate) async fn first_lost(declared: Option<&DeclaredHold>) -> LockName {
    match declared {
        Some(held) => held.lost().await,
        None => std::future::pending().await,
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

    fn instance_values(key: &str) -> Result<String, String> {
        match key {
            "instance" => Ok("3".into()),
            "plugin" => Ok("job.wasm".into()),
            other => Err(format!("no {other}")),
        }
    }

    #[test]
    fn a_declaration_names_its_mode_and_fills_its_placeholders() {
        let plain = DeclaredLock::parse("counter", HoldScope::Instance).expect("plain");
        assert_eq!(plain.mode(), Mode::Exclusive);
        let shared = DeclaredLock::parse("jobs/{plugin}-{instance}:shared", HoldScope::Instance)
            .expect("shared");
        assert_eq!(shared.mode(), Mode::Shared);
        let name = shared.fill(instance_values).expect("name");
        assert_eq!(name.as_str(), "jobs/job.wasm-3");
        let exclusive = DeclaredLock::parse("a:exclusive", HoldScope::Instance).expect("x");
        assert_eq!(exclusive.mode(), Mode::Exclusive);
        let request = "orders/{path}/{header.x-tenant}/{query.id}";
        assert!(DeclaredLock::parse(request, HoldScope::Request).is_ok());
    }

    #[test]
    fn a_bad_declaration_says_what_is_wrong() {
        let err = |spec: &str, scope| DeclaredLock::parse(spec, scope).expect_err(spec);
        let mode = err("counter:forever", HoldScope::Instance);
        assert!(mode.contains("unknown mode \"forever\""), "{mode}");
        let placeholder = err("orders/{path}", HoldScope::Instance);
        assert!(
            placeholder.contains("unknown placeholder {path}"),
            "{placeholder}"
        );
        assert!(placeholder.contains("{instance}"), "{placeholder}");
        let in_serve = err("orders/{instance}", HoldScope::Request);
        assert!(in_serve.contains("{query.NAME}"), "{in_serve}");
        let unclosed = err("orders/{path", HoldScope::Request);
        assert!(
            unclosed.contains("unclosed placeholder {path"),
            "{unclosed}"
        );
        let name = err("bad name", HoldScope::Instance);
        assert!(name.contains("declared lock \"bad name\""), "{name}");
        let empty = err("", HoldScope::Instance);
        assert!(empty.contains("declared lock \"\""), "{empty}");
    }

    #[test]
    fn locks_are_taken_by_name_each_once_exclusive_if_any_says_so() {
        let declared: Vec<DeclaredLock> = ["b", "a:shared", "b:shared", "a"]
            .iter()
            .map(|spec| DeclaredLock::parse(spec, HoldScope::Instance).expect(spec))
            .collect();
        let wanted = resolve(&declared, instance_values).expect("resolved");
        let wanted: Vec<(&str, Mode)> = wanted.iter().map(|(n, m)| (n.as_str(), *m)).collect();
        assert_eq!(wanted, [("a", Mode::Exclusive), ("b", Mode::Exclusive)]);
    }
}

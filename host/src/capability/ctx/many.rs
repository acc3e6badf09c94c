//! Several locks as one request (WIT 0.2.0 `acquire-many`): all or nothing,
//! one deadline, taken in a canonical order.

use std::time::Duration;

use super::{LockError, LockHandle, Mode, WardlockCtx};
use crate::backend::handoff::deadline_after;
use crate::name::LockName;

/// One lock of a request, at its place in the guest's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Planned {
    /// Where the guest listed it (the result keeps that order).
    pub index: usize,
    pub name: LockName,
    pub mode: Mode,
}

/// Releases the handles taken so far unless the request completed: on an
/// error, and when the acquiring future is dropped half-way.
struct Rollback<'a> {
    ctx: &'a mut WardlockCtx,
    taken: Vec<(usize, LockHandle)>,
}

impl Drop for Rollback<'_> {
    fn drop(&mut self) {
        for (_, handle) in self.taken.drain(..) {
            self.ctx.drop_handle(handle);
        }
    }
}

impl WardlockCtx {
    /// Acquires every `(name, mode)` of `requests`, all or nothing, within one
    /// `timeout` for the whole set; returns the handles in the order of
    /// `requests`.
    ///
    /// The locks are taken one by one sorted by name, so instances listing the
    /// same names in different orders never deadlock each other. Each lock
    /// follows [`WardlockCtx::acquire`]'s rules (re-entrancy, downgrade,
    /// `WouldDeadlock`).
    ///
    /// # Errors
    /// `InvalidRequest` for an empty list or a name listed twice;
    /// `InvalidName`, `Denied` for a bad or ungranted name; `LimitExceeded`
    /// when the handles would pass the cap; otherwise the error of the first
    /// lock that failed (`Timeout` once the deadline passed). On every error
    /// the locks taken so far are released and nothing stays queued.
    ///
    /// # Cancellation safety
    /// Cancel safe: dropping the future releases the locks taken so far, and
    /// the wait in progress is withdrawn by the backend.
    pub async fn acquire_many(
        &mut self,
        requests: &[(String, Mode)],
        timeout: Option<Duration>,
    ) -> Result<Vec<LockHandle>, LockError> {
        let plan = self.plan_many(requests)?;
        let deadline = self.many_deadline(timeout);
        let mut rollback = Rollback {
            ctx: self,
            taken: Vec::with_capacity(plan.len()),
        };
        for planned in plan {
            let left = deadline.map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
            let handle = rollback
                .ctx
                .acquire(planned.name.as_str(), planned.mode, left)
                .await?;
            rollback.taken.push((planned.index, handle));
        }
        let mut taken = std::mem::take(&mut rollback.taken);
        drop(rollback);
        taken.sort_by_key(|(index, _)| *index);
        Ok(taken.into_iter().map(|(_, handle)| handle).collect())
    }

    /// The deadline of an `acquire-many` of `timeout` starting now: the
    /// embedder's wait limit bounds the whole set, not each lock.
    pub(crate) fn many_deadline(&self, timeout: Option<Duration>) -> Option<tokio::time::Instant> {
        deadline_after(self.waits.cap(timeout))
    }

    /// Validates `requests` as a whole and returns them in acquisition order
    /// (sorted by name).
    ///
    /// # Errors
    /// As [`WardlockCtx::acquire_many`]'s input errors.
    pub(crate) fn plan_many(&self, requests: &[(String, Mode)]) -> Result<Vec<Planned>, LockError> {
        if requests.is_empty() {
            return Err(LockError::InvalidRequest(
                "acquire-many needs at least one lock".into(),
            ));
        }
        let mut plan = Vec::with_capacity(requests.len());
        for (index, (name, mode)) in requests.iter().enumerate() {
            let name = self.granted_name(name)?;
            plan.push(Planned {
                index,
                name,
                mode: *mode,
            });
        }
        plan.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(twice) = plan.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(LockError::InvalidRequest(format!(
                "lock {:?} is listed twice (at {} and {}); list each name once",
                twice[0].name.as_str(),
                twice[0].index.min(twice[1].index),
                twice[0].index.max(twice[1].index),
            )));
        }
        let cap = self.policy.max_handles();
        if self.handles_in_use() + plan.len() > cap {
            return Err(LockError::LimitExceeded(format!(
                "{} more lock handles would pass this instance's cap of {cap} ({} live)",
                plan.len(),
                self.handles_in_use()
            )));
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests;

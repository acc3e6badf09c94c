//! Leader election on Valkey/Redis ([`wardlock_backend::election`]).
//!
//! Election NAME shares lock NAME's queue (`ROOT/%queue/NAME`), as an
//! election and a lock of one name share one queue on etcd: a candidate is
//! a member of mode `e` (`TOKEN:e:HOST:GEN`), queued and granted by the lock
//! recipe ([`recipe::queue_for`]) like an exclusive member, so the leader is
//! the head of the live queue, a lock holder of NAME "leads" with an empty
//! value, and a leader writes NAME's guarded store as an exclusive holder
//! does. A candidate is never a share of its host's node (one guest's
//! leadership, with a term of its own): a candidate counts as another
//! host's contender even beside its own host's lock node, so that node goes
//! within its fairness bound.
//!
//! - The value: field MEMBER of `ROOT/%value/NAME`, set in the script that
//!   queues the candidate, replaced by [`proclaim`] only while it leads,
//!   removed with the member (released, or dead with its session).
//! - The term: the member's token as a grant's (`local_token(token, 0)`),
//!   so terms rise with every new leader, across hosts.
//! - Observers: a host watching NAME registers its session in
//!   `ROOT/%observers/NAME` in the same script that reads the leader; a
//!   script that changes the head of the queue or the leader's value then
//!   publishes `leader NAME` on that host's channel (see `wake`). A leader
//!   whose host died leaves no event: an observer looks again when the
//!   leader's session key would expire, as a waiting member does, and at
//!   least every session timeout (which renews its registration).

use std::sync::Arc;
use std::time::Duration;

use redis::Value;
use wardlock_backend::election::{check_value, differs};
use wardlock_backend::handoff::{NodeRequest, OwnedNode, local_token};
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Candidate, Leader, LeaderChange, Mode};

use crate::Shared;
use crate::link::{integer, millis, text};
use crate::recipe::{self, Member};
use crate::scripts;

/// Margin after a leader's session key would expire before looking again.
const EXPIRY_MARGIN: Duration = Duration::from_millis(10);

/// Consecutive failed looks after which [`leader_changed`] gives up
/// (`Unavailable`); the pause before the `n`th retry is `FIRST_PAUSE << n`.
const ATTEMPTS: u32 = 5;
const FIRST_PAUSE: Duration = Duration::from_millis(50);

/// Campaigns as `candidate` until it leads (or `deadline`): the candidate's
/// own member of the lock's queue.
///
/// # Errors
/// `Timeout` past `deadline`; `LimitExceeded` for a value too long;
/// `Unavailable`, `Refused` as the lock recipe.
///
/// # Cancellation safety
/// Cancel safe: a dropped campaign removes its member (the recipe's).
pub(crate) async fn campaign(
    shared: &Arc<Shared>,
    candidate: Candidate<'_>,
    deadline: Option<tokio::time::Instant>,
) -> Result<OwnedNode, BackendError> {
    check_value(candidate.value)?;
    let request = NodeRequest {
        name: candidate.name.clone(),
        mode: Mode::Exclusive,
        deadline,
        wait: true,
    };
    let candidacy = Member::Candidate(candidate.value.to_owned());
    recipe::queue_for(shared.clone(), request, candidacy)
        .await?
        .ok_or_else(|| BackendError::Unavailable("a campaign ended without leading".into()))
}

/// Replaces the value of the leader whose member is `member` of `name`.
///
/// # Errors
/// `Lost` when the member no longer leads; `Unavailable` when the server
/// failed (the value may have been set).
pub(crate) async fn proclaim(
    shared: &Shared,
    name: &LockName,
    member: &str,
    value: &str,
) -> Result<(), BackendError> {
    check_value(value)?;
    let link = shared.server.link().await?;
    let done: i64 = shared
        .server
        .invoke(
            &link,
            scripts::PROCLAIM
                .key(shared.layout.queue_key(name))
                .key(shared.layout.values_key(name))
                .key(shared.layout.observers_key(name))
                .arg(shared.layout.root())
                .arg(member)
                .arg(value)
                .arg(name.as_str()),
            "proclaim a leader's value",
        )
        .await?;
    if done == 1 {
        Ok(())
    } else {
        Err(BackendError::Lost)
    }
}

/// Who leads `name` now.
///
/// # Errors
/// `Unavailable` when the server failed.
pub(crate) async fn leader(
    shared: &Shared,
    name: &LockName,
) -> Result<Option<Leader>, BackendError> {
    Ok(look(shared, name, "").await?.map(|(leader, _)| leader))
}

/// The leader of `name` and how long its session key lives, registering
/// `observer` (a session id, or empty) for news of the next change.
async fn look(
    shared: &Shared,
    name: &LockName,
    observer: &str,
) -> Result<Option<(Leader, Duration)>, BackendError> {
    let link = shared.server.link().await?;
    let answer: Vec<Value> = shared
        .server
        .invoke(
            &link,
            scripts::LEADER
                .key(shared.layout.queue_key(name))
                .key(shared.layout.values_key(name))
                .key(shared.layout.observers_key(name))
                .arg(shared.layout.root())
                .arg(observer)
                .arg(millis(shared.config.session_timeout * 2)),
            "read an election's leader",
        )
        .await?;
    let [member, value, ms] = answer.as_slice() else {
        return Ok(None);
    };
    let member = text(member);
    let token = member
        .split(':')
        .next()
        .and_then(|t| t.parse::<u64>().ok())
        .ok_or_else(|| {
            BackendError::Unavailable(format!(
                "Valkey/Redis: a queue member \"{member}\" wardlock does not know"
            ))
        })?;
    let lives = Duration::from_millis(integer(ms).unwrap_or(0));
    let leader = Leader {
        owner: member,
        value: text(value),
        term: local_token(token, 0),
    };
    Ok(Some((leader, lives)))
}

/// Resolves once `name`'s leader differs from `seen` (see
/// [`wardlock_backend::Election::leader_changed`]): told by the scripts
/// that change it, or found when the leader's session key would have
/// expired.
pub(crate) fn leader_changed(
    shared: Arc<Shared>,
    name: LockName,
    seen: Option<Leader>,
) -> LeaderChange {
    Box::pin(async move {
        let mut news = shared.wake.leader_news(name.as_str());
        let mut epoch = shared.wake.epoch();
        let renew = shared.config.session_timeout;
        let mut failures = 0;
        loop {
            news.borrow_and_update();
            epoch.borrow_and_update();
            let looked = async {
                let session = shared.session().await?;
                look(&shared, &name, &session.id).await
            };
            let pause = match looked.await {
                Ok(now) => {
                    failures = 0;
                    let (now, lives) = match now {
                        Some((leader, lives)) => (Some(leader), lives + EXPIRY_MARGIN),
                        None => (None, renew),
                    };
                    if differs(seen.as_ref(), now.as_ref()) {
                        return Ok(now);
                    }
                    lives.min(renew)
                }
                Err(error) => {
                    failures += 1;
                    if failures >= ATTEMPTS {
                        return Err(error);
                    }
                    FIRST_PAUSE * (1 << failures)
                }
            };
            tokio::select! {
                _ = news.changed() => {}
                _ = epoch.changed() => {}
                () = tokio::time::sleep(pause) => {}
            }
        }
    })
}

//! The lock recipe: a fair FIFO queue per lock (a sorted set scored by
//! fencing token), read/write as ZooKeeper's: a member holds when no member
//! ahead conflicts with it (any member, for a writer; a writer, for a
//! reader) and no foreign client (redis-py) holds the lock key. A waiter
//! waits to be told (`grant`, by the release that lets it in) or until its
//! nearest conflicting member's session key would expire, whichever comes
//! first, and then looks again: one wake-up per grant, no herd, and a
//! crashed host's members pass within its session timeout without any
//! polling in between.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;
use tokio::time::Instant;
use wardlock_backend::handoff::{NodeRequest, OwnedNode, until};
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Mode};

use crate::Shared;
use crate::link::{integer, millis, text};
use crate::scripts;
use crate::session::HostSession;

/// A waiter's longest pause between looks at a foreign holder (redis-py
/// tells nobody when it lets go; it polls every 0.1 s itself).
const FOREIGN_POLL: Duration = Duration::from_millis(100);

/// Margin after a blocker's session key would expire before looking again.
const EXPIRY_MARGIN: Duration = Duration::from_millis(10);

/// What a queued member is, beyond its lock mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Member {
    /// A lock's member: a host's node, shared through its lock task.
    Lock,
    /// A candidate of the election of the lock's name (mode `e`), with the
    /// value it proclaims.
    Candidate(String),
    /// A permit of the semaphore of the name (mode `p`), which has this
    /// many permits.
    Permit(u32),
}

fn mode_letter(mode: Mode) -> &'static str {
    match mode {
        Mode::Exclusive => "w",
        Mode::Shared => "r",
    }
}

/// Removes a queued member unless disarmed: a wait that timed out, a try
/// that failed, or a dropped future (cancel safety) leaves nothing queued.
struct Queued {
    shared: Arc<Shared>,
    name: LockName,
    member: String,
    armed: bool,
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.armed {
            let (shared, name) = (self.shared.clone(), self.name.clone());
            let member = std::mem::take(&mut self.member);
            self.shared
                .runtime
                .spawn(async move { remove(&shared, &name, &member).await });
        }
    }
}

/// What one look at the queue found.
enum Look {
    Granted,
    /// Look again after at most this long (or when told).
    Wait(Duration),
    Foreign(Duration),
    /// The member is not queued any more, or the session is over.
    Requeue,
}

/// The host's node for a lock, as `request` says.
///
/// # Errors
/// `Timeout` past the request's deadline; `Unavailable` when the server
/// could not be reached for a whole session timeout (with Sentinel, plus
/// [`SENTINEL_FAILOVER_ALLOWANCE`](crate::SENTINEL_FAILOVER_ALLOWANCE)); `Refused` as the
/// connection.
///
/// # Cancellation safety
/// Cancel safe: a dropped future removes its member.
pub(crate) async fn acquire(
    shared: Arc<Shared>,
    request: NodeRequest,
) -> Result<Option<OwnedNode>, BackendError> {
    queue_for(shared, request, Member::Lock).await
}

/// [`acquire`] for a member of kind `kind`: a lock's, a candidate's of the
/// election of the lock's name (exclusive, and never behind its own host's
/// lock node for longer than that node's fairness bound; see `scripts`), or
/// a permit's of the semaphore of the name.
///
/// # Errors
/// As [`acquire`]; `InvalidRequest` for a permit whose count differs from
/// the count the semaphore's queued permits use.
///
/// # Cancellation safety
/// As [`acquire`].
pub(crate) async fn queue_for(
    shared: Arc<Shared>,
    request: NodeRequest,
    kind: Member,
) -> Result<Option<OwnedNode>, BackendError> {
    let (name, mode, deadline) = (&request.name, request.mode, request.deadline);
    let mut outage = Outage::new(shared.config.outage_allowance());
    loop {
        let session = match until(deadline, shared.session()).await? {
            Ok(session) => session,
            Err(error) => {
                let pause = outage.retry(error)?;
                until(deadline, tokio::time::sleep(pause)).await?;
                continue;
            }
        };
        let queued = enqueue_detached(&shared, &session, name, mode, kind.clone());
        let (token, mut queued) = match until(deadline, queued).await? {
            Ok(Some(queued)) => queued,
            Ok(None) => {
                session.end();
                continue;
            }
            Err(error) => {
                let pause = outage.retry(error)?;
                until(deadline, tokio::time::sleep(pause)).await?;
                continue;
            }
        };
        outage.clear();
        let member = queued.member.clone();
        let mut foreign_pause = Duration::from_millis(5);
        let mut epoch = shared.wake.epoch();
        epoch.borrow_and_update();
        loop {
            let told = shared.wake.register("grant", &member);
            let look = match until(deadline, look(&shared, &session, name, &member)).await {
                Ok(look) => look,
                Err(timeout) => return Err(withdrawn(&queued, timeout).await),
            };
            let look = match look {
                Ok(look) => look,
                Err(error) => {
                    let pause = outage.retry(error)?;
                    Look::Wait(pause)
                }
            };
            let pause = match look {
                Look::Granted => {
                    queued.armed = false;
                    return Ok(Some(OwnedNode {
                        path: shared.layout.member_path(name, &member),
                        prefix: member,
                        generation: session.generation,
                        token,
                    }));
                }
                Look::Requeue => break,
                Look::Wait(pause) => pause,
                Look::Foreign(left) => {
                    foreign_pause = (foreign_pause * 2).min(FOREIGN_POLL);
                    left.min(foreign_pause)
                }
            };
            if !request.wait {
                // Armed until removed: dropped mid-removal, it removes again.
                remove(&shared, name, &member).await;
                queued.armed = false;
                return Ok(None);
            }
            let waited = async {
                tokio::select! {
                    () = told.notify.notified() => {}
                    _ = epoch.changed() => {}
                    () = tokio::time::sleep(pause) => {}
                    () = session.liveness.until_ended() => {}
                }
            };
            if let Err(timeout) = until(deadline, waited).await {
                return Err(withdrawn(&queued, timeout).await);
            }
            if session.liveness.is_ended() {
                break;
            }
        }
    }
}

/// The error of a wait that timed out (`timeout`), once its member is out
/// of the queue: awaited here rather than left to the guard's removal in
/// the background, so a request that said `timeout` is never granted
/// afterwards (a campaign that timed out would lead for a moment, and its
/// election's observers would see a leader nobody is). One round trip
/// normally; bounded by [`WITHDRAW_BOUND`] when the server does not answer,
/// so an outage does not hold the answer back. The guard stays armed:
/// should this removal not finish, its own goes on trying.
async fn withdrawn(queued: &Queued, timeout: BackendError) -> BackendError {
    let removal = remove(&queued.shared, &queued.name, &queued.member);
    let _ = tokio::time::timeout(WITHDRAW_BOUND, removal).await;
    timeout
}

/// How long a timed-out wait waits for its own removal before it answers.
const WITHDRAW_BOUND: Duration = Duration::from_secs(1);

/// How long the server has failed a wait's requests: each is retried until
/// it has been unreachable for a session timeout (then the error is the
/// caller's).
struct Outage {
    limit: Duration,
    since: Option<Instant>,
}

impl Outage {
    fn new(limit: Duration) -> Self {
        Outage { limit, since: None }
    }

    /// The pause before the next try, or the error when it is final.
    fn retry(&mut self, error: BackendError) -> Result<Duration, BackendError> {
        if matches!(
            error,
            BackendError::Refused(_)
                | BackendError::InvalidConfig(_)
                | BackendError::InvalidRequest(_)
        ) {
            return Err(error);
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() >= self.limit {
            return Err(error);
        }
        Ok(Duration::from_millis(50))
    }

    fn clear(&mut self) {
        self.since = None;
    }
}

/// [`enqueue`] in a task of its own, so that a wait dropped (or timed
/// out) while the script is in flight cannot leave its member queued. A
/// member left behind heads its queue once granted and blocks the lock for
/// as long as the host lives (the fault matrix's deadline race on Valkey
/// found it twice: a 200 ms wait through a slow proxy dropped mid-ENQUEUE,
/// and, after that was fixed, a wait dropped after the task had delivered
/// the member but before the wait took it from the channel).
///
/// The member travels as a [`Queued`] guard, so whatever drops it removes
/// it: the task when nobody is there to receive it, the channel when the
/// wait is dropped with the member delivered and not yet taken.
///
/// # Cancellation safety
/// Cancel safe: dropping the future leaves nothing queued.
async fn enqueue_detached(
    shared: &Arc<Shared>,
    session: &Arc<HostSession>,
    name: &LockName,
    mode: Mode,
    kind: Member,
) -> Result<Option<(u64, Queued)>, BackendError> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let (shared, session, name) = (shared.clone(), session.clone(), name.clone());
    let runtime = shared.runtime.clone();
    runtime.spawn(async move {
        let queued = enqueue(&shared, &session, &name, mode, &kind).await;
        let guarded = queued.map(|queued| {
            queued.map(|(token, member)| {
                let guard = Queued {
                    shared: shared.clone(),
                    name: name.clone(),
                    member,
                    armed: true,
                };
                (token, guard)
            })
        });
        // Undelivered, the guard drops here and removes the member.
        let _ = sender.send(guarded);
    });
    receiver.await.unwrap_or_else(|_| {
        Err(BackendError::Unavailable(
            "Valkey/Redis: the host stopped while queueing".into(),
        ))
    })
}

/// Queues a member of kind `kind`: `(token, member)`, or `None` when the
/// session key is gone.
async fn enqueue(
    shared: &Shared,
    session: &HostSession,
    name: &LockName,
    mode: Mode,
    kind: &Member,
) -> Result<Option<(u64, String)>, BackendError> {
    let (letter, beside) = match kind {
        Member::Lock => (mode_letter(mode), String::new()),
        Member::Candidate(value) => ("e", value.clone()),
        Member::Permit(permits) => ("p", permits.to_string()),
    };
    let link = shared.server.link().await?;
    let answer: Vec<Value> = shared
        .server
        .invoke(
            &link,
            scripts::ENQUEUE
                .key(session.session_key())
                .key(shared.layout.token_key())
                .key(shared.layout.queue_key(name))
                .key(shared.layout.values_key(name))
                .key(shared.layout.observers_key(name))
                .arg(shared.layout.root())
                .arg(letter)
                .arg(&shared.host)
                .arg(session.generation)
                .arg(&beside)
                .arg(name.as_str()),
            "queue for a lock",
        )
        .await?;
    match answer.as_slice() {
        [what, token, member] if text(what) == "queued" => {
            let token = integer(token).ok_or_else(|| odd("ENQUEUE's token"))?;
            shared.server.saw_token(token);
            let member = text(member);
            session.track(&member, name);
            Ok(Some((token, member)))
        }
        [what] if text(what) == "ended" => Ok(None),
        [what, theirs] if text(what) == "mismatch" => Err(BackendError::InvalidRequest(format!(
            "semaphore \"{name}\" is in use with {} permits; this request asked for {beside}",
            text(theirs)
        ))),
        _ => Err(odd("ENQUEUE's answer")),
    }
}

/// One look at `member`'s place in `name`'s queue (`scripts::CHECK`).
async fn look(
    shared: &Shared,
    session: &HostSession,
    name: &LockName,
    member: &str,
) -> Result<Look, BackendError> {
    let link = shared.server.link().await?;
    if !session.lives_on(&link) {
        return Ok(Look::Requeue);
    }
    let answer: Vec<Value> = shared
        .server
        .invoke(
            &link,
            scripts::CHECK
                .key(shared.layout.queue_key(name))
                .key(shared.layout.lock_key(name))
                .key(session.session_key())
                .key(session.held_key())
                .key(shared.layout.settle_key())
                .arg(shared.layout.root())
                .arg(member)
                .arg(millis(shared.config.session_timeout)),
            "look at a lock's queue",
        )
        .await?;
    let [what, _blocker, ms] = answer.as_slice() else {
        return Err(odd("CHECK's answer"));
    };
    let left = Duration::from_millis(integer(ms).unwrap_or(0));
    Ok(match text(what).as_str() {
        "granted" => Look::Granted,
        "behind" | "settling" => Look::Wait(left + EXPIRY_MARGIN),
        "foreign" => Look::Foreign(left + EXPIRY_MARGIN),
        "ended" => {
            session.end();
            Look::Requeue
        }
        _ => Look::Requeue,
    })
}

/// Takes `member` out of `name`'s queue, retried while its session lives
/// (once it is over, the member is dead anyway).
pub(crate) async fn remove(shared: &Shared, name: &LockName, member: &str) {
    let session = member_session(member);
    let mut pause = Duration::from_millis(20);
    loop {
        let removed = async {
            let link = shared.server.link().await?;
            let removed: i64 = shared
                .server
                .invoke(
                    &link,
                    &scripts::release(
                        &shared.layout,
                        name,
                        &shared.layout.held_key(&session),
                        member,
                    ),
                    "release a lock",
                )
                .await?;
            Ok::<_, BackendError>(removed)
        };
        match removed.await {
            Ok(_) => {
                if let Some(live) = shared.live_session().filter(|s| s.id == session) {
                    live.untrack(member);
                }
                return;
            }
            Err(error) => {
                tracing::debug!(%name, %error, "releasing a Valkey/Redis lock failed; retrying");
                if !member_may_live(shared, member) {
                    return;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
    }
}

/// `HOST:GEN` of a member `TOKEN:MODE:HOST:GEN`.
fn member_session(member: &str) -> String {
    member.splitn(3, ':').nth(2).unwrap_or_default().to_owned()
}

/// Whether the session `member` lives in may still be alive on the server
/// (the host's current one, not ended).
fn member_may_live(shared: &Shared, member: &str) -> bool {
    shared
        .live_session()
        .is_some_and(|s| s.id == member_session(member))
}

/// Resolves when a member of another host that conflicts with `member`
/// queued behind it (told `behind`, or seen at a look after a
/// resubscription); never when its session ends first.
pub(crate) async fn contender_behind(
    shared: Arc<Shared>,
    name: LockName,
    member: String,
    generation: u64,
) {
    let Some(session) = shared.session_of(generation) else {
        return std::future::pending().await;
    };
    let mut epoch = shared.wake.epoch();
    loop {
        epoch.borrow_and_update();
        let told = shared.wake.register("behind", &member);
        if contended(&shared, &name, &member).await == Some(true) {
            return;
        }
        tokio::select! {
            () = told.notify.notified() => {}
            _ = epoch.changed() => {}
            // A failed look is tried again a heartbeat later.
            () = tokio::time::sleep(session.liveness.heartbeat_interval() * 10) => {}
            () = session.liveness.until_ended() => return std::future::pending().await,
        }
    }
}

async fn contended(shared: &Shared, name: &LockName, member: &str) -> Option<bool> {
    let link = shared.server.link().await.ok()?;
    let found: i64 = shared
        .server
        .invoke(
            &link,
            scripts::CONTENDED
                .key(shared.layout.queue_key(name))
                .arg(shared.layout.root())
                .arg(member),
            "look behind a holder",
        )
        .await
        .ok()?;
    Some(found == 1)
}

/// The live members of `name`'s queue, in order.
///
/// # Errors
/// `Unavailable` when the server cannot be reached.
pub(crate) async fn members(shared: &Shared, name: &LockName) -> Result<Vec<String>, BackendError> {
    let link = shared.server.link().await?;
    shared
        .server
        .invoke(
            &link,
            scripts::MEMBERS
                .key(shared.layout.queue_key(name))
                .arg(shared.layout.root()),
            "read a lock's queue",
        )
        .await
}

fn odd(what: &str) -> BackendError {
    BackendError::Unavailable(format!(
        "Valkey/Redis answered {what} in a form wardlock does not know"
    ))
}

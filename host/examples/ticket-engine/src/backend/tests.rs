//! The engine's semantics, through the public traits only (as the host sees
//! it), plus the queue's granting rule on its own.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;
use wardlock_host::{BackendError, GrantStatus, LockBackend, LockName, Mode};

use super::queue::{Queue, Ticket};
use super::{TicketBackend, TicketConfig};

/// Long enough to fail a hang, never a synchronisation.
const LIMIT: Duration = Duration::from_secs(10);
/// Short: only proves that something is still waiting.
const BRIEF: Duration = Duration::from_millis(50);

fn name(s: &str) -> LockName {
    LockName::new(s).expect("valid name")
}

fn backend() -> TicketBackend {
    TicketBackend::new(TicketConfig::default())
}

/// Waits (bounded by [`LIMIT`]) until `name`'s queue holds `len` tickets.
async fn wait_for_len(backend: &TicketBackend, name: &LockName, len: usize) {
    let deadline = Instant::now() + LIMIT;
    while backend.queue_len(name) != len {
        assert!(
            Instant::now() < deadline,
            "queue of {name} stuck at {} tickets, expected {len}",
            backend.queue_len(name)
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Polls `future` once, without waiting.
fn poll_once<F: Future + Unpin>(future: &mut F) -> Option<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    match Pin::new(future).poll(&mut cx) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

#[test]
fn queue_grants_readers_together_and_writers_alone() {
    let mut q = Queue::default();
    let mut token = 0;
    for (id, mode) in [(1, Mode::Shared), (2, Mode::Shared), (3, Mode::Exclusive)] {
        q.push(Ticket {
            id,
            mode,
            token: None,
        });
    }
    q.push(Ticket {
        id: 4,
        mode: Mode::Shared,
        token: None,
    });
    assert_eq!(q.grant_ready(&mut token), vec![(1, 1), (2, 2)]);
    assert!(!q.grantable_now(Mode::Shared), "a writer waits");
    q.remove(1);
    q.remove(2);
    assert_eq!(q.grant_ready(&mut token), vec![(3, 3)]);
    q.remove(3);
    assert_eq!(q.grant_ready(&mut token), vec![(4, 4)]);
    assert!(q.grantable_now(Mode::Shared));
    assert!(!q.grantable_now(Mode::Exclusive));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusive_excludes() {
    let backend = backend();
    let lock = name("ex");
    let (a, b) = (backend.open_session("a"), backend.open_session("b"));
    assert_eq!(backend.kind(), "ticket");
    let held = a.acquire(&lock, Mode::Exclusive, None).await.expect("a");
    assert_eq!(b.try_acquire(&lock, Mode::Exclusive).await, Ok(None));
    assert_eq!(b.try_acquire(&lock, Mode::Shared).await, Ok(None));
    let waited = b.acquire(&lock, Mode::Exclusive, Some(BRIEF)).await;
    assert_eq!(waited, Err(BackendError::Timeout));
    let zero = b.acquire(&lock, Mode::Shared, Some(Duration::ZERO)).await;
    assert_eq!(zero, Err(BackendError::Timeout));
    assert_eq!(backend.queue_len(&lock), 1, "failed tries queue nothing");
    a.release(held.id).expect("release");
    let next = b.try_acquire(&lock, Mode::Exclusive).await.expect("try");
    assert!(next.is_some(), "free after release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_holders_overlap() {
    let backend = backend();
    let lock = name("sh");
    let (a, b, c) = (
        backend.open_session("a"),
        backend.open_session("b"),
        backend.open_session("c"),
    );
    let ga = a.acquire(&lock, Mode::Shared, Some(Duration::ZERO)).await;
    let gb = b.acquire(&lock, Mode::Shared, Some(Duration::ZERO)).await;
    assert!(ga.is_ok() && gb.is_ok(), "{ga:?} {gb:?}");
    assert_eq!(c.try_acquire(&lock, Mode::Exclusive).await, Ok(None));
    assert_eq!(backend.queue_len(&lock), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_waiters_are_served_in_fifo_order() {
    let backend = backend();
    let lock = name("fifo");
    let holder = backend.open_session("holder");
    let first = holder
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("h");
    let (order, mut served) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = Vec::new();
    for w in 0..3 {
        let session = backend.open_session(&format!("w{w}"));
        let (lock2, order) = (lock.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let grant = session.acquire(&lock2, Mode::Exclusive, Some(LIMIT)).await;
            let grant = grant.expect("granted");
            order.send((w, grant.token)).expect("send");
            session.release(grant.id).expect("release");
        }));
        wait_for_len(&backend, &lock, 2 + w).await;
    }
    holder.release(first.id).expect("release");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let next = tokio::time::timeout(LIMIT, served.recv()).await;
        seen.push(next.expect("in time").expect("a grant"));
    }
    let who: Vec<usize> = seen.iter().map(|(w, _)| *w).collect();
    assert_eq!(who, vec![0, 1, 2]);
    assert!(seen.windows(2).all(|p| p[0].1 < p[1].1), "{seen:?}");
    assert!(seen[0].1 > first.token);
    for task in tasks {
        task.await.expect("task");
    }
    assert_eq!(backend.queue_len(&lock), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_writer_holds_back_later_readers() {
    let backend = backend();
    let lock = name("rw");
    let reader = backend.open_session("r1");
    let r1 = reader.acquire(&lock, Mode::Shared, None).await.expect("r1");
    let writer = backend.open_session("w");
    let lock2 = lock.clone();
    let writing = tokio::spawn(async move {
        let grant = writer.acquire(&lock2, Mode::Exclusive, Some(LIMIT)).await;
        (writer, grant)
    });
    wait_for_len(&backend, &lock, 2).await;
    let late = backend.open_session("r2");
    assert_eq!(late.try_acquire(&lock, Mode::Shared).await, Ok(None));
    let waited = late.acquire(&lock, Mode::Shared, Some(BRIEF)).await;
    assert_eq!(waited, Err(BackendError::Timeout), "behind the writer");
    reader.release(r1.id).expect("release");
    let (writer, w) = tokio::time::timeout(LIMIT, writing)
        .await
        .expect("in time")
        .expect("task");
    let w = w.expect("the writer is next");
    // Two readers queued behind the writer are granted together after it.
    let mut readers = Vec::new();
    for r in 0..2 {
        let session = backend.open_session(&format!("r{r}"));
        let lock2 = lock.clone();
        readers.push(tokio::spawn(async move {
            let grant = session.acquire(&lock2, Mode::Shared, Some(LIMIT)).await;
            (session, grant)
        }));
        wait_for_len(&backend, &lock, 2 + r).await;
    }
    writer.release(w.id).expect("release");
    let mut held = Vec::new();
    for task in readers {
        let (session, grant) = tokio::time::timeout(LIMIT, task)
            .await
            .expect("both readers in")
            .expect("task");
        assert!(grant.expect("shared").token > w.token);
        held.push(session);
    }
    assert_eq!(backend.queue_len(&lock), 2, "both readers hold at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_wait_leaves_nothing_queued() {
    let backend = backend();
    let lock = name("cancel");
    let holder = backend.open_session("holder");
    let grant = holder
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("h");
    let waiter = backend.open_session("waiter");
    let lock2 = lock.clone();
    let task = tokio::spawn(async move { waiter.acquire(&lock2, Mode::Shared, None).await });
    wait_for_len(&backend, &lock, 2).await;
    task.abort();
    wait_for_len(&backend, &lock, 1).await;
    // The grant races the drop: granted, then dropped before it is seen.
    let racer = backend.open_session("racer");
    let mut wait = racer.acquire(&lock, Mode::Exclusive, None);
    assert!(poll_once(&mut wait).is_none(), "queued behind the holder");
    assert_eq!(backend.queue_len(&lock), 2);
    holder.release(grant.id).expect("release");
    drop(wait);
    assert_eq!(backend.queue_len(&lock), 0, "the raced grant was withdrawn");
    let other = backend.open_session("other");
    let free = other
        .try_acquire(&lock, Mode::Exclusive)
        .await
        .expect("try");
    assert!(free.is_some(), "nobody holds it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_session_releases_everything() {
    let backend = backend();
    let (a, b) = (name("drop-a"), name("drop-b"));
    let session = backend.open_session("doomed");
    let ga = session.acquire(&a, Mode::Exclusive, None).await.expect("a");
    session.acquire(&b, Mode::Shared, None).await.expect("b");
    let watch = session.status_changed(ga.id, GrantStatus::Held);
    let waiter = backend.open_session("waiter");
    let a2 = a.clone();
    let waiting = tokio::spawn(async move {
        let grant = waiter.acquire(&a2, Mode::Exclusive, Some(LIMIT)).await;
        (waiter, grant)
    });
    wait_for_len(&backend, &a, 2).await;
    drop(session);
    assert_eq!(backend.queue_len(&b), 0, "released synchronously");
    let (_waiter, grant) = tokio::time::timeout(LIMIT, waiting)
        .await
        .expect("the waiter was woken")
        .expect("task");
    assert!(grant.expect("granted").token > ga.token);
    let now = tokio::time::timeout(LIMIT, watch).await.expect("woken");
    assert_eq!(now, GrantStatus::Released);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_increase_across_names_and_sessions() {
    let backend = backend();
    let sessions: Vec<_> = (0..3)
        .map(|s| backend.open_session(&format!("s{s}")))
        .collect();
    let mut last = 0;
    for round in 0..4 {
        for (s, session) in sessions.iter().enumerate() {
            let lock = name(&format!("t{}", (round + s) % 2));
            let mode = if s == 1 {
                Mode::Exclusive
            } else {
                Mode::Shared
            };
            let grant = session.acquire(&lock, mode, Some(LIMIT)).await;
            let grant = grant.expect("free");
            assert!(grant.token > last, "{} after {last}", grant.token);
            last = grant.token;
            session.release(grant.id).expect("release");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_changed_wakes_on_release() {
    let backend = backend();
    let lock = name("status");
    let session = backend.open_session("s");
    let grant = session
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("g");
    assert_eq!(session.status(grant.id), GrantStatus::Held);
    let mut change = session.status_changed(grant.id, GrantStatus::Held);
    assert_eq!(poll_once(&mut change), None, "nothing changed yet");
    let at_once = session.status_changed(grant.id, GrantStatus::Suspended);
    assert_eq!(at_once.await, GrantStatus::Held, "differs already");
    let releasing = tokio::spawn(async move {
        tokio::task::yield_now().await;
        session.release(grant.id).expect("release");
        session
    });
    let now = tokio::time::timeout(LIMIT, change).await.expect("woken");
    assert_eq!(now, GrantStatus::Released);
    let session = releasing.await.expect("task");
    assert_eq!(session.status(grant.id), GrantStatus::Released);
    let after = session.status_changed(grant.id, GrantStatus::Held);
    assert_eq!(after.await, GrantStatus::Released);
    let mut same = session.status_changed(grant.id, GrantStatus::Released);
    assert_eq!(
        poll_once(&mut same),
        None,
        "a released grant stays released"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_refuses_more_waiters() {
    let backend = TicketBackend::new(TicketConfig { max_waiters: 1 });
    let lock = name("full");
    let holder = backend.open_session("holder");
    holder
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("h");
    let waiter = backend.open_session("waiter");
    let lock2 = lock.clone();
    let _waiting = tokio::spawn(async move { waiter.acquire(&lock2, Mode::Shared, None).await });
    wait_for_len(&backend, &lock, 2).await;
    let late = backend.open_session("late");
    let refused = tokio::time::timeout(LIMIT, late.acquire(&lock, Mode::Shared, None))
        .await
        .expect("refused at once");
    let expected = "ticket queue of \"full\" is full (1 waiters)".to_owned();
    assert_eq!(refused, Err(BackendError::Unavailable(expected)));
    assert_eq!(late.try_acquire(&lock, Mode::Shared).await, Ok(None));
    assert_eq!(backend.queue_len(&lock), 2, "the refusal queued nothing");
    assert_eq!(TicketConfig::default().max_waiters, 10_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_are_unsupported() {
    let backend = backend();
    let session = backend.open_session("s");
    let sem = name("sem");
    let unsupported = BackendError::Unsupported("this lock backend has no semaphores".into());
    assert_eq!(session.semaphores().err(), Some(unsupported));
    let request = wardlock_backend::Request::permit(&sem, 2);
    let refused = BackendError::Unsupported("the ticket engine has no semaphores".into());
    let acquired = session.acquire_request(request, None).await;
    assert_eq!(acquired.map(|_| ()), Err(refused.clone()));
    let tried = session.try_acquire_request(request).await;
    assert_eq!(tried.map(|_| ()), Err(refused));
    assert_eq!(backend.queue_len(&sem), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releasing_twice_is_an_unknown_grant() {
    let backend = backend();
    let lock = name("twice");
    let (a, b) = (backend.open_session("a"), backend.open_session("b"));
    let grant = a.acquire(&lock, Mode::Exclusive, None).await.expect("g");
    assert_eq!(
        b.release(grant.id),
        Err(BackendError::UnknownGrant(grant.id.0)),
        "another session's grant is unknown here"
    );
    assert_eq!(a.release(grant.id), Ok(()));
    assert_eq!(
        a.release(grant.id),
        Err(BackendError::UnknownGrant(grant.id.0))
    );
    assert_eq!(backend.queue_len(&lock), 0);
}

//! Model-based tests of the in-memory backend's queues: random sequences of
//! acquisitions (each in a session of its own, exclusive or shared, with or
//! without a timeout), cancellations, releases, injected session expiries
//! and the passing of time, on a paused clock, checked against a small
//! reference model:
//! - never an exclusive grant beside another grant that reports `held`;
//! - every acquisition that was not cancelled is answered exactly once:
//!   `timeout` only at or after its own deadline, no other error;
//! - FIFO: grants come in request order (tokens rise with it), and no request
//!   is passed over by a later one and then left to time out.

use std::time::Duration;

use proptest::prelude::*;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{Fault, MemoryBackend};
use crate::name::LockName;
use crate::{BackendError, Grant, GrantStatus, LockBackend, LockSession, Mode};

#[derive(Debug, Clone)]
enum Op {
    Request { mode: Mode, timeout: Option<u64> },
    Cancel(usize),
    Release(usize),
    Expire(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let mode = prop_oneof![Just(Mode::Exclusive), Just(Mode::Shared)];
    let timeout = prop_oneof![Just(None), Just(Some(10)), Just(Some(20))];
    prop_oneof![
        5 => (mode, timeout).prop_map(|(mode, timeout)| Op::Request { mode, timeout }),
        1 => any::<usize>().prop_map(Op::Cancel),
        4 => any::<usize>().prop_map(Op::Release),
        1 => any::<usize>().prop_map(Op::Expire),
        3 => prop_oneof![Just(0u64), Just(5), Just(10)].prop_map(Op::Advance),
    ]
}

type Answer = Result<Grant, BackendError>;

struct Requested {
    session: std::sync::Arc<dyn LockSession>,
    owner: String,
    mode: Mode,
    deadline: Option<Instant>,
    task: Option<JoinHandle<Answer>>,
    cancelled: bool,
    answer: Option<(Answer, Instant)>,
    released: bool,
}

struct Scenario {
    backend: MemoryBackend,
    name: LockName,
    requests: Vec<Requested>,
}

impl Scenario {
    async fn settle() {
        for _ in 0..32 {
            tokio::task::yield_now().await;
        }
    }

    async fn collect(&mut self) {
        for request in &mut self.requests {
            if request.task.as_ref().is_some_and(JoinHandle::is_finished)
                && let Some(task) = request.task.take()
            {
                let answer = task.await.expect("request task");
                request.answer = Some((answer, Instant::now()));
            }
        }
    }

    fn held_indices(&self) -> Vec<usize> {
        (0..self.requests.len())
            .filter(|&i| {
                let r = &self.requests[i];
                !r.released && matches!(r.answer, Some((Ok(_), _)))
            })
            .collect()
    }

    async fn apply(&mut self, op: &Op) {
        match *op {
            Op::Request { mode, timeout } => {
                // A terminated owner name: "model-1." is no prefix of "model-10.".
                let owner = format!("model-{}.", self.requests.len());
                let session: std::sync::Arc<dyn LockSession> =
                    std::sync::Arc::from(self.backend.open_session(&owner));
                let deadline = timeout.map(|ms| Instant::now() + Duration::from_millis(ms));
                let task = {
                    let session = session.clone();
                    let name = self.name.clone();
                    let timeout = timeout.map(Duration::from_millis);
                    tokio::spawn(async move { session.acquire(&name, mode, timeout).await })
                };
                self.requests.push(Requested {
                    session,
                    owner,
                    mode,
                    deadline,
                    task: Some(task),
                    cancelled: false,
                    answer: None,
                    released: false,
                });
            }
            Op::Cancel(n) => {
                let waiting: Vec<usize> = (0..self.requests.len())
                    .filter(|&i| self.requests[i].task.is_some())
                    .collect();
                if !waiting.is_empty() {
                    let request = &mut self.requests[waiting[n % waiting.len()]];
                    if let Some(task) = request.task.take() {
                        task.abort();
                        request.cancelled = true;
                    }
                }
            }
            Op::Release(n) => {
                let held = self.held_indices();
                if !held.is_empty() {
                    let request = &mut self.requests[held[n % held.len()]];
                    if let Some((Ok(grant), _)) = &request.answer {
                        let _ = request.session.release(grant.id);
                    }
                    request.released = true;
                }
            }
            Op::Expire(n) => {
                let held = self.held_indices();
                if !held.is_empty() {
                    let owner = self.requests[held[n % held.len()]].owner.clone();
                    self.backend.inject(&owner, Fault::Expire);
                }
            }
            Op::Advance(ms) => tokio::time::advance(Duration::from_millis(ms)).await,
        }
        Self::settle().await;
        self.collect().await;
    }

    fn check_now(&self) -> Result<(), String> {
        let live: Vec<&Requested> = self
            .requests
            .iter()
            .filter(|r| !r.released)
            .filter(|r| match &r.answer {
                Some((Ok(grant), _)) => r.session.status(grant.id) == GrantStatus::Held,
                _ => false,
            })
            .collect();
        let exclusive = live.iter().filter(|r| r.mode == Mode::Exclusive).count();
        if exclusive > 1 || (exclusive == 1 && live.len() > 1) {
            return Err(format!(
                "{exclusive} exclusive grant(s) among {} held",
                live.len()
            ));
        }
        for (i, request) in self.requests.iter().enumerate() {
            match &request.answer {
                Some((Err(BackendError::Timeout), at)) => match request.deadline {
                    Some(deadline) if *at >= deadline => {}
                    _ => return Err(format!("request {i}: timeout before its deadline")),
                },
                Some((Err(error), _)) => return Err(format!("request {i}: {error:?}")),
                _ => {}
            }
        }
        let waits: Vec<(usize, &Requested)> = self
            .requests
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.cancelled)
            .collect();
        for (a, (i, earlier)) in waits.iter().enumerate() {
            for (j, later) in &waits[a + 1..] {
                let (Some((first, _)), Some((Ok(second), second_at))) =
                    (&earlier.answer, &later.answer)
                else {
                    continue;
                };
                match first {
                    Ok(first) if first.token > second.token => {
                        return Err(format!("request {j} was granted before request {i}"));
                    }
                    Err(BackendError::Timeout)
                        if earlier.deadline.is_some_and(|d| *second_at < d) =>
                    {
                        return Err(format!(
                            "request {j} was granted while earlier request {i} waited, which then timed out"
                        ));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    async fn drain(&mut self) -> Result<(), String> {
        for _ in 0..64 {
            for i in self.held_indices() {
                let request = &mut self.requests[i];
                if let Some((Ok(grant), _)) = &request.answer {
                    let _ = request.session.release(grant.id);
                }
                request.released = true;
            }
            tokio::time::advance(Duration::from_millis(10)).await;
            Self::settle().await;
            self.collect().await;
            self.check_now()?;
            if self.requests.iter().all(|r| r.task.is_none()) {
                return Ok(());
            }
        }
        let unanswered = self.requests.iter().filter(|r| r.task.is_some()).count();
        Err(format!("{unanswered} request(s) never answered"))
    }
}

fn run_scenario(ops: &[Op]) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut scenario = Scenario {
            backend: MemoryBackend::new(),
            name: LockName::new("model").expect("name"),
            requests: Vec::new(),
        };
        for (step, op) in ops.iter().enumerate() {
            scenario.apply(op).await;
            scenario
                .check_now()
                .map_err(|broken| format!("after step {step} ({op:?}): {broken}"))?;
        }
        scenario.drain().await
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_memory_queue_keeps_the_model_rules(ops in prop::collection::vec(op(), 1..40)) {
        if let Err(broken) = run_scenario(&ops) {
            prop_assert!(false, "{}", broken);
        }
    }
}

//! `wardlock:lock@0.2.2` conformance through guests in four languages: one
//! table of scenarios written in `lockctl2`'s command language, run by the
//! Rust probe `lockctl2` and by `conform2` in C, Python and JavaScript (each
//! through its language's 0.2.0 SDK: `guest-sdk/c/wardlock_v2.h`,
//! `guest-sdk/python/wardlock2.py`, `guest-sdk/js/wardlock2.js`), on the
//! in-memory backend (one test per scenario and language:
//! `conform2::<scenario>::<language>`) and on one real ZooKeeper server shared
//! by every language (`conform2::all_on_zookeeper`).
//!
//! Scenarios: several locks as one request in opposite orders (no deadlock, no
//! lost update), an `acquire-many` timeout leaving nothing held or queued, bad
//! lists as typed errors, a pending lock raced against a timer and withdrawn
//! when dropped, and `lock.subscribe` waking on a loss (an injected expiry on
//! memory, a forced session expiry on ZooKeeper); semaphore permits (never
//! more holders than permits, counted by the [`HoldLog`] replay, on memory;
//! bad permit requests as typed errors) and revocation handing a lock from
//! a holder waiting on its revocation pollable to the asker; `contenders`
//! listing who holds and who waits; the guarded store (0.2.2) written through
//! an exclusive guard and refused through a released, a shared or (memory:
//! an injected expiry) a lost one; leader election (0.2.2) handed between a
//! native candidate and the guest, followed by the guest's observer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wardlock_host::backend::memory::Fault;
use wardlock_host::runner::{InstanceReport, Runner, RunnerConfig};
use wardlock_host::{Grant, LockBackend, LockSession, MemoryBackend, Mode};
use wardlock_tests::conformance::Subject;
use wardlock_tests::holds::{self, HoldLog, Replay};
use wardlock_tests::proxy::Proxy;
use wardlock_tests::tap::{self, Tap};
use wardlock_tests::zookeeper::{ZkServer, expire_session};
use wardlock_tests::{
    Guest, TEST_WAIT_LIMIT, assert_success, hold, lines, name, runner_in, runner_with, spawn_run,
    value_in, wait_queue,
};
use zookeeper_client::SessionState;

/// The language a scenario's guest is written in.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Speaker {
    Rust,
    C,
    Python,
    Js,
}

impl Speaker {
    const ALL: [Speaker; 4] = [Speaker::Rust, Speaker::C, Speaker::Python, Speaker::Js];

    /// The guest speaking `lockctl2`'s commands in this language.
    fn guest(self) -> Guest {
        match self {
            Speaker::Rust => Guest::Lockctl2,
            Speaker::C => Guest::Conform2C,
            Speaker::Python => Guest::Conform2Python,
            Speaker::Js => Guest::Conform2Js,
        }
    }

    /// A lock name of this language's own, so scenarios never share a lock.
    fn lock(self, what: &str) -> String {
        format!("conform2/{self:?}/{what}").to_lowercase()
    }
}

/// A runner for the speaker's guest on `backend`, with `dir` as `/data`.
fn runner(backend: Arc<dyn LockBackend>, speaker: Speaker, dir: &std::path::Path) -> Arc<Runner> {
    runner_in(speaker.guest(), backend, dir, Some(TEST_WAIT_LIMIT))
}

/// A runner for the speaker's guest on `backend`, with no files.
fn plain_runner(backend: Arc<dyn LockBackend>, speaker: Speaker) -> Arc<Runner> {
    runner_with(
        speaker.guest(),
        RunnerConfig {
            backend,
            timeout: Some(TEST_WAIT_LIMIT),
            ..RunnerConfig::default()
        },
    )
}

/// Runs one instance with `commands` in the background.
fn spawn(
    s: &Subject,
    speaker: Speaker,
    commands: &[String],
) -> tokio::task::JoinHandle<InstanceReport> {
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    spawn_run(&plain_runner(s.backend.clone(), speaker), 0, &commands)
}

/// Waits for a guest and returns its lines, asserting it succeeded.
async fn finished(guest: tokio::task::JoinHandle<InstanceReport>) -> Vec<String> {
    let report = guest.await.expect("guest task");
    assert_success(&report);
    lines(&report)
}

/// Two instances take the same three locks as one request, listed in
/// opposite orders, 50 rounds each, adding one to a shared file under them:
/// both finish (no deadlock), no update is lost, nothing stays behind.
pub(crate) async fn many_in_opposite_orders(s: &Subject, speaker: Speaker) {
    let dir = tempfile::tempdir().expect("temp dir");
    let [a, b, c] = ["a", "b", "c"].map(|l| speaker.lock(l));
    let runner = runner(s.backend.clone(), speaker, dir.path());
    let forward = format!("loop-many 50 - /data/n x:{a} x:{b} x:{c}");
    let backward = format!("loop-many 50 - /data/n x:{c} x:{b} x:{a}");
    let tasks = [
        spawn_run(&runner, 0, &[&forward]),
        spawn_run(&runner, 1, &[&backward]),
    ];
    for task in tasks {
        assert_eq!(finished(task).await, ["looped 50"]);
    }
    assert_eq!(value_in(dir.path(), "n"), 100, "no lost update");
    for lock in [a, b, c] {
        s.probe.wait_len(&lock, 0).await;
    }
}

/// An `acquire-many` that times out on its second lock (in canonical order)
/// leaves nothing held or queued, seen while the guest still lives (parked
/// behind a gate).
pub(crate) async fn many_timeout_leaves_nothing(s: &Subject, speaker: Speaker) {
    let [a, b, c, gate] = ["a", "b", "c", "gate"].map(|l| speaker.lock(&format!("t/{l}")));
    let parked = Parked::start(
        s,
        speaker,
        &b,
        &gate,
        vec![format!("many 100 x:{c} s:{b} x:{a}")],
    )
    .await;
    s.probe.wait_len(&a, 0).await;
    s.probe.wait_len(&c, 0).await;
    s.probe.wait_len(&b, 1).await;
    let (native, blocker, out) = parked.open().await;
    assert_eq!(out[0], "err timeout", "{out:?}");
    native.release(blocker.id).expect("release b");
    s.probe.wait_len(&b, 0).await;
}

/// A guest parked behind a gate: a native session holds a lock and the gate
/// while the guest runs its commands and then waits for the gate, so the
/// test sees what the guest holds and queues at that point.
struct Parked {
    native: Box<dyn LockSession>,
    held: Grant,
    gate: Grant,
    guest: tokio::task::JoinHandle<InstanceReport>,
}

impl Parked {
    /// Holds `held` and `gate` natively, runs `commands` then `acquire x -
    /// GATE` in the speaker's guest, and returns once the guest waits for it.
    async fn start(
        s: &Subject,
        speaker: Speaker,
        held: &str,
        gate: &str,
        mut commands: Vec<String>,
    ) -> Parked {
        let (native, held) = hold(&*s.backend, held, Mode::Exclusive).await;
        let gate_grant = native
            .acquire(&name(gate), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
            .await
            .expect("gate");
        commands.push(format!("acquire x - {gate}"));
        let guest = spawn(s, speaker, &commands);
        s.probe.wait_len(gate, 2).await;
        Parked {
            native,
            held,
            gate: gate_grant,
            guest,
        }
    }

    /// Opens the gate and returns the native session, its held grant and
    /// the guest's lines (asserting it succeeded, and was still waiting).
    async fn open(self) -> (Box<dyn LockSession>, Grant, Vec<String>) {
        assert!(!self.guest.is_finished(), "the guest waits at the gate");
        self.native.release(self.gate.id).expect("open the gate");
        (self.native, self.held, finished(self.guest).await)
    }
}

/// Bad lists are typed errors naming the problem, printed by the guest (not
/// traps); a good list after them is granted.
pub(crate) async fn bad_many_requests_are_typed_errors(s: &Subject, speaker: Speaker) {
    let [a, b] = ["bad/a", "bad/b"].map(|l| speaker.lock(l));
    let out = finished(spawn(
        s,
        speaker,
        &[
            "many -".to_string(),
            format!("many - x:{a} s:{b} s:{a}"),
            format!("many - x:{a} x:../up"),
            format!("many 10000 x:{a} s:{b}"),
        ],
    ))
    .await;
    assert_eq!(
        out[0], "err invalid-request: acquire-many needs at least one lock",
        "{out:?}"
    );
    assert!(
        out[1].starts_with(&format!(
            "err invalid-request: lock \"{a}\" is listed twice (at 0 and 2)"
        )),
        "{out:?}"
    );
    assert!(out[2].starts_with("err invalid-name: "), "{out:?}");
    assert_eq!(out[3], "h1 h2", "{out:?}");
    s.probe.wait_len(&a, 0).await;
    s.probe.wait_len(&b, 0).await;
}

/// A pending lock raced against a timer with `wasi:io/poll`: the timer wins
/// while the lock is taken, the pending lock once it is granted; its result
/// comes once. A dropped pending lock leaves nothing queued, while the guest
/// lives on.
pub(crate) async fn pending_races_a_timer_and_withdraws(s: &Subject, speaker: Speaker) {
    let [p, mark, q, gate] = ["p", "mark", "q", "pgate"].map(|l| speaker.lock(l));
    let (native, held) = hold(&*s.backend, &p, Mode::Exclusive).await;
    let guest = spawn(
        s,
        speaker,
        &[
            format!("async x - {p}"),
            "race p1 20".to_string(),
            format!("acquire x - {mark}"),
            "race p1 30000".to_string(),
            "get p1".to_string(),
            "get p1".to_string(),
            "status h2".to_string(),
        ],
    );
    s.probe.wait_len(&mark, 1).await;
    s.probe.wait_len(&p, 2).await;
    native.release(held.id).expect("release p");
    let out = finished(guest).await;
    assert_eq!(out[..2], ["p1", "timer"], "{out:?}");
    assert!(out[2].starts_with("h1 token="), "{out:?}");
    assert_eq!(out[3], "pending", "{out:?}");
    assert!(out[4].starts_with("h2 token="), "{out:?}");
    assert!(out[5].starts_with("err invalid-request: "), "{out:?}");
    assert_eq!(out[6], "held", "{out:?}");
    s.probe.wait_len(&p, 0).await;

    let parked = Parked::start(
        s,
        speaker,
        &q,
        &gate,
        vec![
            format!("async s - {q}"),
            "get p1".to_string(),
            "drop-pending p1".to_string(),
        ],
    )
    .await;
    // The guest lives on (parked at the gate) while its dropped pending
    // lock's wait is withdrawn.
    s.probe.wait_len(&q, 1).await;
    let (_native, _held, out) = parked.open().await;
    assert_eq!(out[..3], ["p1", "none", "dropped"], "{out:?}");
}

/// The commands of the loss scenario: hold F, park on `notify` (waiting on
/// F's `subscribe` pollable), then take ACK (the host sees when the guest
/// woke) and wait at GATE.
fn loss_commands(speaker: Speaker, round: usize) -> (Vec<String>, [String; 3]) {
    let [f, parked, ack] =
        ["f", "parked", "ack"].map(|l| speaker.lock(&format!("loss{round}/{l}")));
    let commands = vec![
        format!("acquire x - {f}"),
        format!("acquire x - {parked}"),
        format!("notify 1 {ack}"),
    ];
    (commands, [f, parked, ack])
}

/// Prints the loss-to-reaction figures as a JSON line.
fn report_latencies(speaker: Speaker, backend: &str, latencies: &mut [Duration]) -> Duration {
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    let worst = latencies[latencies.len() - 1];
    println!(
        "{{\"metric\":\"conform2_loss_to_guest_us\",\"guest\":\"{speaker:?}\",\"backend\":\"{backend}\",\
         \"rounds\":{},\"median\":{},\"max\":{}}}",
        latencies.len(),
        median.as_micros(),
        worst.as_micros()
    );
    median
}

/// One round of a loss scenario on `memory`: runs `commands`, waits until
/// the guest holds `parked`, expires the grant of `f` (fault injection) and
/// waits for the guest's request for `ack`. Returns the time from the
/// injection to that request, and the guest's lines.
async fn loss_round(
    memory: &MemoryBackend,
    requests: &mut tokio::sync::mpsc::UnboundedReceiver<tap::Tapped>,
    runner: &Arc<Runner>,
    round: usize,
    commands: &[String],
    [f, parked, ack]: &[String; 3],
) -> (Duration, Vec<String>) {
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    let guest = spawn_run(runner, round, &commands);
    tap::wait_for(requests, &format!("granted {parked}")).await;
    let owner = memory.snapshot(&name(f))[0].owner.clone();
    let injected = Instant::now();
    assert_eq!(memory.inject(&owner, Fault::Expire), 1, "one session hit");
    let acked = tap::wait_for(requests, ack).await;
    (
        acked.saturating_duration_since(injected),
        finished(guest).await,
    )
}

/// A guest waiting on `lock.subscribe()` learns of an injected expiry: woken,
/// it sees `lost`; the time from the injection to its reaction (it asks for
/// ACK), three rounds, has a median within 50 ms.
pub(crate) async fn subscribe_learns_of_an_injected_loss(speaker: Speaker) {
    let memory = MemoryBackend::new();
    let (tapped, mut requests) = Tap::new(Arc::new(memory.clone()));
    let runner = plain_runner(tapped, speaker);
    let mut latencies = Vec::new();
    for round in 0..3 {
        let (commands, locks) = loss_commands(speaker, round);
        let (latency, out) =
            loss_round(&memory, &mut requests, &runner, round, &commands, &locks).await;
        latencies.push(latency);
        assert_eq!(out[2], "woke lost", "{out:?}");
    }
    let median = report_latencies(speaker, "memory", &mut latencies);
    assert!(
        median <= Duration::from_millis(50),
        "{speaker:?}: median loss-to-reaction {median:?} over 50 ms: {latencies:?}"
    );
}

/// Work under a lock checks it between its steps — Rust `guard.check()?`
/// (the `loss-check` guest), Python `lock.check()`, C `wardlock2_check`, JS
/// `guard.signal.aborted` (`conform2`'s `check-until`) — and stops at its
/// next step once the lock is expired by fault injection: it sees `lost`
/// within 100 ms of the injection, in each of three rounds.
pub(crate) async fn check_sees_an_injected_loss(speaker: Speaker) {
    let memory = MemoryBackend::new();
    let (tapped, mut requests) = Tap::new(Arc::new(memory.clone()));
    let runner = match speaker {
        Speaker::Rust => runner_with(
            Guest::LossCheck,
            RunnerConfig {
                backend: tapped,
                timeout: Some(TEST_WAIT_LIMIT),
                ..RunnerConfig::default()
            },
        ),
        _ => plain_runner(tapped, speaker),
    };
    let mut latencies = Vec::new();
    for round in 0..3 {
        let locks = ["f", "parked", "ack"].map(|l| speaker.lock(&format!("check{round}/{l}")));
        let [f, parked, ack] = locks.clone();
        let commands = match speaker {
            Speaker::Rust => vec![f, parked, ack, "20000".into()],
            _ => vec![
                format!("acquire x - {f}"),
                format!("acquire x - {parked}"),
                format!("check-until 1 {ack} 20000"),
            ],
        };
        let (latency, out) =
            loss_round(&memory, &mut requests, &runner, round, &commands, &locks).await;
        latencies.push(latency);
        assert_eq!(
            out.last().map(String::as_str),
            Some("checked lost"),
            "{out:?}"
        );
    }
    report_latencies(speaker, "memory-check", &mut latencies);
    let worst = latencies[latencies.len() - 1];
    assert!(
        worst <= Duration::from_millis(100),
        "{speaker:?}: a check saw the loss {worst:?} after it: {latencies:?}"
    );
}

/// A guest waiting on `lock.subscribe()` on ZooKeeper learns of a forced
/// session expiry (through a proxy of `server`, so the host cannot take the
/// session back): woken by the first change the host sees, then `suspended`
/// or `lost`. The time from that change, as the client reported it, to the
/// guest's reaction is printed and bounded by 50 ms.
pub(crate) async fn subscribe_learns_of_a_forced_zookeeper_expiry(
    server: &ZkServer,
    speaker: Speaker,
) {
    let proxy = Proxy::start(server.address()).await;
    let zk = crate::zookeeper::backend(&proxy.address(), Duration::from_secs(10)).await;
    let (tapped, mut requests) = Tap::new(Arc::new(zk.clone()));
    let runner = plain_runner(tapped, speaker);
    let (commands, [_, parked, ack]) = loss_commands(speaker, 0);
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    let guest = spawn_run(&runner, 0, &commands);
    tap::wait_for(&mut requests, &format!("granted {parked}")).await;
    let mut state = zk.state_watcher().expect("connected");
    let first_change = tokio::spawn(async move {
        loop {
            let now = state.changed().await;
            if now != SessionState::SyncConnected {
                return Instant::now();
            }
        }
    });
    expire_session(&zk, &proxy, server).await;
    let acked = tap::wait_for(&mut requests, &ack).await;
    let changed = first_change.await.expect("state watcher");
    let out = finished(guest).await;
    assert!(
        out[2] == "woke lost" || out[2] == "woke suspended",
        "{out:?}"
    );
    let mut late = [acked.saturating_duration_since(changed)];
    let late = report_latencies(speaker, "zookeeper", &mut late);
    assert!(
        late <= Duration::from_millis(50),
        "{speaker:?} learnt {late:?} after the client saw the change"
    );
}

/// Three instances take a permit of a 2-permit semaphore 10 times each,
/// holding it 20 ms (`loop-permit`, which also checks each token is greater
/// than the last and the permit `held`): the [`HoldLog`] replay sees never
/// more than 2 holders, at some point 2 together, all 30 holds, nothing left.
pub(crate) async fn permits_never_exceed_the_semaphore(speaker: Speaker) {
    let memory = MemoryBackend::new();
    let (sink, log) = holds::memory_sink();
    let runner = runner_with(
        speaker.guest(),
        RunnerConfig {
            backend: HoldLog::wrap(Arc::new(memory.clone()), "guest/", sink),
            timeout: Some(TEST_WAIT_LIMIT),
            ..RunnerConfig::default()
        },
    );
    let sem = speaker.lock("pool");
    let command = format!("loop-permit 10 2 - 20 {sem}");
    let tasks: Vec<_> = (0..3)
        .map(|i| spawn_run(&runner, i, &[command.as_str()]))
        .collect();
    for task in tasks {
        assert_eq!(finished(task).await, ["looped 10"]);
    }
    wait_queue(&memory, &sem, |q| q.is_empty()).await;
    let events = log.lock().expect("hold log").clone();
    let Replay {
        most, intervals, ..
    } = holds::replay(&events, "guest", "none");
    println!(
        "{{\"metric\":\"conform2_permit_most_holders\",\"guest\":\"{speaker:?}\",\"value\":{most},\"holds\":{intervals}}}"
    );
    assert_eq!(intervals, 30, "every acquisition held once");
    assert!(
        most <= 2,
        "{speaker:?}: {most} holders of 2 permits at once"
    );
    assert_eq!(most, 2, "{speaker:?}: the permits were held together");
}

/// Bad permit requests are typed errors printed by the guest (not traps):
/// 0 permits is `invalid-request` (waiting or not), a second release of a
/// permit is `released`; a good request between them is granted.
pub(crate) async fn bad_permit_requests_are_typed_errors(s: &Subject, speaker: Speaker) {
    let sem = speaker.lock("bad/pool");
    let out = finished(spawn(
        s,
        speaker,
        &[
            format!("try-permit 0 {sem}"),
            format!("permit 0 100 {sem}"),
            format!("permit 2 - {sem}"),
            "permit-status q1".to_string(),
            "release-permit q1".to_string(),
            "release-permit q1".to_string(),
        ],
    ))
    .await;
    assert!(out[0].starts_with("err invalid-request"), "{out:?}");
    assert!(out[1].starts_with("err invalid-request"), "{out:?}");
    assert!(out[2].starts_with("q1 token="), "{out:?}");
    assert_eq!(out[3..5], ["held", "ok"], "{out:?}");
    assert!(out[5].starts_with("err released"), "{out:?}");
    s.probe.wait_len(&sem, 0).await;
}

/// Revocation between two instances: the holder takes R, is not asked yet,
/// takes ARMED (the test's cue) and waits on its revocation pollable; the
/// asker's `revoke R` reaches one holder, who wakes (`revoked`), releases,
/// and the asker's waiting `acquire` is granted.
pub(crate) async fn revocation_hands_the_lock_over(s: &Subject, speaker: Speaker) {
    let [r, armed, ack] = ["rv/r", "rv/armed", "rv/ack"].map(|l| speaker.lock(l));
    let holder = spawn(
        s,
        speaker,
        &[
            format!("acquire x - {r}"),
            "revoked 1".to_string(),
            format!("acquire x - {armed}"),
            format!("await-revocation 1 {ack} 20000"),
            "release 1".to_string(),
        ],
    );
    s.probe.wait_len(&armed, 1).await;
    let asked = Instant::now();
    let asker = spawn(
        s,
        speaker,
        &[format!("revoke {r}"), format!("acquire x 20000 {r}")],
    );
    let out = finished(holder).await;
    let handed = asked.elapsed();
    assert_eq!(
        out[1..],
        ["false", out[2].as_str(), "revoked", "ok"],
        "{out:?}"
    );
    let out = finished(asker).await;
    assert_eq!(out[0], "asked 1", "{out:?}");
    assert!(out[1].starts_with("h1 token="), "{out:?}");
    println!(
        "{{\"metric\":\"conform2_revocation_handover_ms\",\"guest\":\"{speaker:?}\",\"value\":{}}}",
        handed.as_millis()
    );
    s.probe.wait_len(&r, 0).await;
}

/// `contenders` (0.2.1) lists a lock's holder and waiter, native sessions
/// with their owners, in queue order (the holder's token where the engine
/// records one); `limit` cuts the list but not the total; an unused lock has
/// none; a bad name is a typed error.
pub(crate) async fn contenders_list_the_queue(s: &Subject, speaker: Speaker) {
    let lock = speaker.lock("queue");
    let holder = s.backend.open_session("native holder");
    let held = holder
        .acquire(&name(&lock), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("holder");
    let waiter = {
        let (session, lock) = (s.backend.open_session("native waiter"), name(&lock));
        tokio::spawn(async move {
            let grant = session
                .acquire(&lock, Mode::Shared, Some(TEST_WAIT_LIMIT))
                .await;
            (session, grant)
        })
    };
    s.probe.wait_len(&lock, 2).await;
    let out = finished(spawn(
        s,
        speaker,
        &[
            format!("contenders {lock} 10"),
            format!("contenders {lock} 1"),
            format!("contenders {} 10", speaker.lock("unused")),
            "contenders ../up 1".to_string(),
        ],
    ))
    .await;
    let entries: Vec<&str> = out[0].split(" | ").collect();
    assert_eq!(entries.len(), 3, "{out:?}");
    assert_eq!(entries[0], "2", "{out:?}");
    let token = held.token.to_string();
    let holder_line = entries[1].strip_prefix("held x ").expect("a holder first");
    let (listed_token, owner) = holder_line.split_once(' ').expect("token and owner");
    assert!(listed_token == "-" || listed_token == token, "{out:?}");
    assert!(owner.ends_with("native holder"), "{out:?}");
    assert!(
        entries[2].starts_with("waits s - ") && entries[2].ends_with("native waiter"),
        "{out:?}"
    );
    let cut: Vec<&str> = out[1].split(" | ").collect();
    assert_eq!(cut, entries[..2], "limit 1 lists the holder alone");
    assert_eq!(out[2], "0", "{out:?}");
    assert!(out[3].starts_with("err invalid-name: "), "{out:?}");
    holder.release(held.id).expect("release holder");
    let (waiter, granted) = waiter.await.expect("waiter task");
    waiter
        .release(granted.expect("waiter granted").id)
        .expect("release waiter");
    s.probe.wait_len(&lock, 0).await;
}

/// The `rev=<R>` of a `put` line, as a number.
fn revision_of(line: &str) -> u64 {
    line.strip_prefix("rev=")
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("a revision: {line:?}"))
}

/// The token of an `h<N> token=<T>` line.
fn token_of(line: &str) -> u64 {
    line.split_once(" token=")
        .and_then(|(_, t)| t.parse().ok())
        .unwrap_or_else(|| panic!("a token: {line:?}"))
}

/// The guarded store (0.2.2) through each SDK's calls (`guard.put`,
/// `guard.delete`, `get`, `keys`): a put through an exclusive guard is read
/// back with the guard's token and a rising revision; keys come sorted and
/// cut by prefix and limit; a delete is true, then false; a put through a
/// released guard is `released`, through a shared one `invalid-request`,
/// and a key over 512 bytes `limit-exceeded`, none of them writing anything;
/// the next holder reads what the first wrote.
pub(crate) async fn guarded_store_writes_under_the_lock(s: &Subject, speaker: Speaker) {
    let [lock, shared] = ["store", "store-shared"].map(|l| speaker.lock(l));
    let long_key = "k".repeat(513);
    let commands = [
        format!("acquire x - {lock}"),
        "put h1 b/two 2".to_string(),
        "put h1 a/one 1".to_string(),
        "put h1 b/three three".to_string(),
        format!("read {lock} a/one"),
        format!("keys {lock} - 10"),
        format!("keys {lock} b/ 10"),
        format!("keys {lock} - 1"),
        format!("read {lock} missing"),
        "del h1 b/two".to_string(),
        "del h1 b/two".to_string(),
        format!("read {lock} b/two"),
        "put h1 a/one 11".to_string(),
        format!("read {lock} a/one"),
        format!("put h1 {long_key} v"),
        "release h1".to_string(),
        "put h1 a/one late".to_string(),
        "del h1 a/one".to_string(),
        format!("acquire s - {shared}"),
        "put h2 k v".to_string(),
        format!("acquire x - {lock}"),
        format!("read {lock} a/one"),
        format!("keys {lock} - 10"),
        format!("keys {shared} - 10"),
    ];
    let out = finished(spawn(s, speaker, &commands)).await;
    assert_eq!(out.len(), commands.len(), "{out:?}");
    let token = token_of(&out[0]);
    let revisions = [1, 2, 3].map(|i| revision_of(&out[i]));
    assert!(
        revisions[0] < revisions[1] && revisions[1] < revisions[2],
        "revisions rise: {out:?}"
    );
    let first = format!("1 token={token} rev={}", revisions[1]);
    assert_eq!(out[4], first, "{out:?}");
    assert_eq!(
        out[5..8],
        ["a/one b/three b/two .", "b/three b/two .", "a/one ."]
    );
    assert_eq!(out[8..12], ["none", "true", "false", "none"], "{out:?}");
    let rewritten = revision_of(&out[12]);
    assert!(rewritten > revisions[2], "{out:?}");
    let last = format!("11 token={token} rev={rewritten}");
    assert_eq!(out[13], last, "{out:?}");
    assert!(out[14].starts_with("err limit-exceeded: "), "{out:?}");
    assert_eq!(
        out[15..18],
        ["ok", "err released", "err released"],
        "{out:?}"
    );
    assert!(out[18].starts_with("h2 token="), "{out:?}");
    assert!(
        out[19].starts_with("err invalid-request: ") && out[19].contains(&shared),
        "{out:?}"
    );
    assert!(token_of(&out[20]) > token, "{out:?}");
    assert_eq!(out[21], last, "nothing written after the release: {out:?}");
    assert_eq!(out[22..], ["a/one b/three .", "."], "{out:?}");
    s.probe.wait_len(&lock, 0).await;
    s.probe.wait_len(&shared, 0).await;
}

/// The number after `key=` in `line` (a term, token or revision).
fn number_after(line: &str, key: &str) -> u64 {
    line.split(key)
        .nth(1)
        .and_then(|n| n.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a number after {key:?}: {line:?}"))
}

/// Leader election (0.2.2) through each SDK's calls (`campaign`, `leader`,
/// `observe`, the leadership's `term`, `status`, `proclaim`, `put`,
/// `resign`, the observer's `leader` and `subscribe`), beside a native
/// candidate of the same engine: while it leads, the guest sees it (value
/// and term) and a campaign with a timeout times out; its proclaimed value
/// wakes the guest's observer (gated, so the change comes after the
/// observer's read), and so does its resignation (nobody leads); the guest
/// then leads with a higher term, proclaims, writes the election's store
/// (read back with its term as the token), resigns (twice: `released`, as
/// are calls after it), and nobody leads. The whole output is compared,
/// so every language prints the same lines.
pub(crate) async fn election_between_a_native_candidate_and_the_guest(
    s: &Subject,
    speaker: Speaker,
) {
    let [election, gate1, gate2] = ["election", "egate1", "egate2"].map(|l| speaker.lock(l));
    let native = s.backend.open_session("native");
    let lead = native
        .election()
        .expect("election")
        .campaign(&name(&election), "native", Some(TEST_WAIT_LIMIT))
        .await
        .expect("the native candidate leads");
    let (gates, first_gate) = hold(&*s.backend, &gate1, Mode::Exclusive).await;
    let second_gate = gates
        .acquire(&name(&gate2), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("second gate");
    let commands = [
        format!("leader {election}"),
        format!("observe {election}"),
        "oleader o1".to_string(),
        format!("campaign {election} early 50"),
        format!("acquire x - {gate1}"),
        "owait o1 10000".to_string(),
        "oleader o1".to_string(),
        "owait o1 50".to_string(),
        format!("acquire x - {gate2}"),
        "owait o1 10000".to_string(),
        "oleader o1".to_string(),
        format!("campaign {election} beta -"),
        format!("leader {election}"),
        "proclaim l1 beta-2".to_string(),
        "oleader o1".to_string(),
        "lput l1 epoch one".to_string(),
        format!("read {election} epoch"),
        "lstatus l1".to_string(),
        "resign l1".to_string(),
        "resign l1".to_string(),
        "proclaim l1 ghost".to_string(),
        "lput l1 k v".to_string(),
        "lstatus l1".to_string(),
        format!("leader {election}"),
        "lstatus l2".to_string(),
        "oleader o2".to_string(),
        "campaign ../bad x -".to_string(),
    ];
    let guest = spawn(s, speaker, &commands);
    // Parked at the first gate, after its observer read the leader: the
    // native leader proclaims; at the second, it resigns.
    s.probe.wait_len(&gate1, 2).await;
    native
        .election()
        .expect("election")
        .proclaim(lead.id, "native-2")
        .await
        .expect("native proclaim");
    gates.release(first_gate.id).expect("open the first gate");
    s.probe.wait_len(&gate2, 2).await;
    native.release(lead.id).expect("native resign");
    gates.release(second_gate.id).expect("open the second gate");
    let out = finished(guest).await;
    assert_eq!(out.len(), commands.len(), "{out:?}");

    let native_term = lead.token;
    let term = number_after(&out[11], "term=");
    assert!(term > native_term, "terms rise: {native_term} then {out:?}");
    let revision = number_after(&out[15], "rev=");
    let expected = [
        format!("native term={native_term}"),
        "o1".to_string(),
        format!("native term={native_term}"),
        "err timeout".to_string(),
        format!("h1 token={}", number_after(&out[4], "token=")),
        "changed".to_string(),
        format!("native-2 term={native_term}"),
        "timer".to_string(),
        format!("h2 token={}", number_after(&out[8], "token=")),
        "changed".to_string(),
        "none".to_string(),
        format!("l1 term={term}"),
        format!("beta term={term}"),
        "ok".to_string(),
        format!("beta-2 term={term}"),
        format!("rev={revision}"),
        format!("one token={term} rev={revision}"),
        "held".to_string(),
        "ok".to_string(),
        "err released".to_string(),
        "err released".to_string(),
        "err released".to_string(),
        "released".to_string(),
        "none".to_string(),
        "err no-such-leadership".to_string(),
        "err no-such-observer".to_string(),
    ];
    assert_eq!(out[..expected.len()], expected, "{out:?}");
    assert!(out[26].starts_with("err invalid-name: "), "{out:?}");
    assert_eq!(
        native
            .election()
            .expect("election")
            .leader(&name(&election))
            .await,
        Ok(None),
        "nobody leads"
    );
    s.probe.wait_len(&gate1, 0).await;
    s.probe.wait_len(&gate2, 0).await;
}

/// A put through a guard whose lock was lost (an injected expiry, seen by
/// the guest through `subscribe`) fails with the language's `lost` error and
/// writes nothing: `err lost`, then the key reads `none`, as does a delete.
pub(crate) async fn guarded_put_after_a_loss_is_lost(speaker: Speaker) {
    let memory = MemoryBackend::new();
    let (tapped, mut requests) = Tap::new(Arc::new(memory.clone()));
    let runner = plain_runner(tapped, speaker);
    let (mut commands, locks) = loss_commands(speaker, 9);
    commands.extend([
        "put h1 k late".to_string(),
        "del h1 k".to_string(),
        format!("read {} k", locks[0]),
    ]);
    let (_, out) = loss_round(&memory, &mut requests, &runner, 0, &commands, &locks).await;
    assert_eq!(
        out[2..],
        ["woke lost", "err lost", "err lost", "none"],
        "{out:?}"
    );
}

/// Calls `$then!` with every scenario that runs on any [`Subject`].
macro_rules! scenarios {
    ($then:ident) => {
        $then!(
            many_in_opposite_orders,
            many_timeout_leaves_nothing,
            bad_many_requests_are_typed_errors,
            pending_races_a_timer_and_withdraws,
            bad_permit_requests_are_typed_errors,
            revocation_hands_the_lock_over,
            contenders_list_the_queue,
            guarded_store_writes_under_the_lock,
            election_between_a_native_candidate_and_the_guest,
        );
    };
}

/// One test per scenario and language: `mod <scenario> { fn rust, c, python,
/// js }`, each calling `<scenario>(ARGS..., Speaker::<language>)`.
macro_rules! per_speaker {
    ($($scenario:ident($($arg:expr),*)),* $(,)?) => {$(
        mod $scenario {
            use super::Speaker;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn rust() {
                super::$scenario($($arg,)* Speaker::Rust).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn c() {
                super::$scenario($($arg,)* Speaker::C).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn python() {
                super::$scenario($($arg,)* Speaker::Python).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn js() {
                super::$scenario($($arg,)* Speaker::Js).await;
            }
        }
    )*};
}

/// Every [`Subject`] scenario on a fresh in-memory backend.
macro_rules! on_memory {
    ($($scenario:ident),* $(,)?) => {
        per_speaker!($($scenario(&super::Subject::memory())),*);
    };
}

scenarios!(on_memory);
per_speaker!(subscribe_learns_of_an_injected_loss());
per_speaker!(check_sees_an_injected_loss());
per_speaker!(permits_never_exceed_the_semaphore());
per_speaker!(guarded_put_after_a_loss_is_lost());

/// Every scenario in every language on one real ZooKeeper server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_on_zookeeper() {
    let server = ZkServer::start();
    let subject = crate::zookeeper::subject(&server, "/wardlock-conform2").await;
    for speaker in Speaker::ALL {
        macro_rules! run {
            ($($scenario:ident),* $(,)?) => {$(
                eprintln!("conform2: {} {speaker:?}", stringify!($scenario));
                $scenario(&subject, speaker).await;
            )*};
        }
        scenarios!(run);
        eprintln!("conform2: subscribe_learns_of_a_forced_zookeeper_expiry {speaker:?}");
        subscribe_learns_of_a_forced_zookeeper_expiry(&server, speaker).await;
    }
}

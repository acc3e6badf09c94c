//! `GET /api/locks[?prefix=P]`: the host's lock table (who holds, who waits,
//! for how long, with which token, which wait-for cycles were found) and,
//! for the first locks listed, what the engine itself shows of each
//! (`Contention::contenders`: other hosts' and other clients' holders and
//! waiters too). The page (`locks_page`) and the event stream
//! (`locks_events`) are built on the same view, so the three never disagree.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;
use wardlock_host::backend::{BackendError, LockBackend};
use wardlock_host::name::LockName;

use wardlock_host::locks::{Cycle, LockEntry, LockTable};

/// How many of the listed locks the engines are asked about per answer: a
/// page of 10,000 locks must not become 10,000 round trips to the lock
/// service (the table itself lists them all).
pub(crate) const ENGINE_LOCKS: usize = 64;

/// How many contenders of one lock an engine is asked to list.
const ENGINE_CONTENDERS: u32 = 16;

/// The time all engine questions of one answer may take together: an
/// unreachable lock service delays the answer by this much at most; locks
/// not reached in time say so instead.
const ENGINE_BUDGET: Duration = Duration::from_millis(300);

/// The owner label of the sessions that ask the engines: who a lock
/// service's log would show asking.
const ADMIN_OWNER: &str = "wardlock admin (locks page)";

/// What `/api/locks` reads: the host's table and the engines behind it.
#[derive(Clone)]
pub(crate) struct LocksSource {
    table: LockTable,
    backends: Arc<BTreeMap<String, Arc<dyn LockBackend>>>,
}

/// The JSON answer: the table's snapshot, each lock with the engines' view.
#[derive(Serialize)]
pub(crate) struct LocksView {
    /// The host whose table this is.
    pub host: String,
    /// The table's version (bumped on every change).
    pub version: u64,
    /// Locks this host's guests hold or wait for, by name.
    pub locks: Vec<LockView>,
    /// Wait-for cycles found lately, newest first.
    pub cycles: Vec<Cycle>,
    /// How many cycles the table found since it was made.
    pub cycles_found: u64,
    /// How many of `locks` (from the first) the engines were asked about.
    pub engine_asked: usize,
}

/// One lock: the table's entry, plus what each engine shows of it.
#[derive(Serialize)]
pub(crate) struct LockView {
    /// The table's entry (name, holders, waiters), inline.
    #[serde(flatten)]
    pub entry: LockEntry,
    /// The engines' view, for the first [`ENGINE_LOCKS`] locks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub engines: Vec<EngineView>,
}

/// What one engine shows of one lock.
#[derive(Serialize)]
pub(crate) struct EngineView {
    /// The backend's label (serve's config names; `default` otherwise).
    pub backend: String,
    /// Its kind (`memory`, `zookeeper`, `etcd`).
    pub kind: &'static str,
    /// How many contenders the engine has in all (`None` when it could not say).
    pub total: Option<u32>,
    /// The first contenders, in queue order (holders first).
    pub contenders: Vec<ContenderView>,
    /// Why the engine could not answer (unsupported, unreachable, out of time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One contender as the engine records it.
#[derive(Serialize)]
pub(crate) struct ContenderView {
    /// The owner label the lock service keeps.
    pub owner: String,
    /// `exclusive` or `shared`.
    pub mode: &'static str,
    /// Holds (true) or waits (false).
    pub holds: bool,
    /// A holder's token, where the engine can tell it.
    pub token: Option<u64>,
    /// The engine's node or key, if it has one.
    pub node: Option<String>,
}

impl LocksSource {
    /// Wait-for cycles the host's table found so far (for `/metrics`).
    pub(crate) fn cycles_found(&self) -> u64 {
        self.table.cycles_found()
    }

    /// Reads `table`, and asks `backends` about the locks it lists.
    pub(crate) fn new(table: LockTable, backends: BTreeMap<String, Arc<dyn LockBackend>>) -> Self {
        LocksSource {
            table,
            backends: Arc::new(backends),
        }
    }

    /// The table, for its change notifications.
    pub(crate) fn table(&self) -> &LockTable {
        &self.table
    }

    /// The view of locks whose names start with `prefix` (all without one).
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads; a dropped call drops its engine sessions.
    pub(crate) async fn view(&self, prefix: Option<&str>) -> LocksView {
        let snapshot = self.table.snapshot(prefix);
        let mut locks: Vec<LockView> = snapshot
            .locks
            .into_iter()
            .map(|entry| LockView {
                entry,
                engines: Vec::new(),
            })
            .collect();
        let asked = locks.len().min(ENGINE_LOCKS);
        let deadline = Instant::now() + ENGINE_BUDGET;
        for (label, backend) in self.backends.iter() {
            if !locks
                .iter()
                .take(asked)
                .any(|l| l.entry.engine == backend.kind())
            {
                continue;
            }
            let session = backend.open_session(ADMIN_OWNER);
            // A lock lives in one engine: only that engine is asked.
            for lock in locks
                .iter_mut()
                .take(asked)
                .filter(|l| l.entry.engine == backend.kind())
            {
                let view = ask(&*session, &lock.entry.name, deadline).await;
                lock.engines.push(EngineView {
                    backend: label.clone(),
                    kind: backend.kind(),
                    ..view
                });
            }
        }
        LocksView {
            host: snapshot.host,
            version: snapshot.version,
            locks,
            cycles: snapshot.cycles,
            cycles_found: snapshot.cycles_found,
            engine_asked: asked,
        }
    }
}

/// What `session`'s engine shows of `name`, or why it cannot say, by
/// `deadline`.
async fn ask(
    session: &dyn wardlock_host::backend::LockSession,
    name: &str,
    deadline: Instant,
) -> EngineView {
    let unanswered = |error: String| EngineView {
        backend: String::new(),
        kind: "",
        total: None,
        contenders: Vec::new(),
        error: Some(error),
    };
    let Ok(lock) = LockName::new(name) else {
        return unanswered("not a lock name the engine knows".into());
    };
    if Instant::now() >= deadline {
        return unanswered("not asked: out of time for this answer".into());
    }
    let listed = async {
        session
            .contention()?
            .contenders(&lock, ENGINE_CONTENDERS)
            .await
    };
    match tokio::time::timeout_at(deadline, listed).await {
        Err(_) => unanswered("no answer in time".into()),
        Ok(Err(BackendError::Unsupported(_))) => {
            unanswered("this engine cannot list contenders".into())
        }
        Ok(Err(error)) => unanswered(error.to_string()),
        Ok(Ok(found)) => EngineView {
            backend: String::new(),
            kind: "",
            total: Some(found.total),
            contenders: found
                .listed
                .into_iter()
                .map(|c| ContenderView {
                    owner: c.owner,
                    mode: c.mode.as_str(),
                    holds: c.holds,
                    token: c.token,
                    node: c.node,
                })
                .collect(),
            error: None,
        },
    }
}

/// The query of a locks request: the name prefix, and the admin token for
/// clients that cannot send headers (a browser's address bar, EventSource).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct LocksQuery {
    /// Only locks whose names start with it (empty: all).
    pub prefix: Option<String>,
    /// The admin token, when given as `?token=`.
    pub token: Option<String>,
}

impl LocksQuery {
    /// Parses a URI's query (`application/x-www-form-urlencoded`, as a
    /// `<form method=get>` sends it); unknown keys are ignored.
    pub(crate) fn parse(query: Option<&str>) -> Self {
        let mut parsed = LocksQuery::default();
        for pair in query.unwrap_or_default().split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = form_decode(value);
            match form_decode(key).as_str() {
                "prefix" if !value.is_empty() => parsed.prefix = Some(value),
                "token" if !value.is_empty() => parsed.token = Some(value),
                _ => {}
            }
        }
        parsed
    }
}

/// Decodes `+` and `%XX` of a form field; a malformed escape stays as given,
/// and bytes that are not UTF-8 become U+FFFD.
fn form_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(byte) => {
                        out.push(byte);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GETs `path` of `addr` over a fresh connection; the status and body.
    async fn get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        let text = String::from_utf8(answer).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        (head.lines().next().unwrap().to_owned(), body.to_owned())
    }

    /// The bound: `/api/locks` lists 10,000 locks in under a second,
    /// over HTTP, engine questions included (memory engine, debug build).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ten_thousand_locks_are_served_within_a_second() {
        use wardlock_host::backend::Mode;
        let table = LockTable::new("bench");
        let engine: Arc<dyn LockBackend> = Arc::new(wardlock_host::MemoryBackend::new());
        let tracked = table.wrap(engine.clone());
        let session = tracked.open_session("bench.wasm#0");
        for i in 0..10_000 {
            let name = LockName::new(&format!("bench/l{i:05}")).unwrap();
            session.acquire(&name, Mode::Exclusive, None).await.unwrap();
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = crate::admin::AdminState::for_run(
            BTreeMap::from([("default".to_owned(), engine)]),
            None,
        )
        .with_locks(table);
        let (_stop, stopped) = tokio::sync::watch::channel(false);
        tokio::spawn(crate::admin::serve(listener, state, stopped));

        for path in ["/api/locks", "/locks"] {
            let started = std::time::Instant::now();
            let (status, body) = get(addr, path).await;
            let took = started.elapsed();
            assert!(status.contains(" 200 "), "{path}: {status}");
            eprintln!("{path}: 10,000 locks, {} bytes in {took:?}", body.len());
            assert!(took < Duration::from_secs(1), "{path} took {took:?}");
            if path == "/api/locks" {
                let view: serde_json::Value = serde_json::from_str(&body).unwrap();
                assert_eq!(view["locks"].as_array().unwrap().len(), 10_000);
                assert_eq!(view["engine_asked"], ENGINE_LOCKS);
                assert_eq!(view["locks"][0]["engines"][0]["total"], 1);
            } else {
                assert_eq!(body.matches("data-role=\"holder\"").count(), 10_000);
            }
        }
    }

    #[test]
    fn queries_decode_as_forms_send_them() {
        assert_eq!(
            LocksQuery::parse(Some("prefix=orders%2Feu+1&token=s%3Dx&other=1")),
            LocksQuery {
                prefix: Some("orders/eu 1".into()),
                token: Some("s=x".into()),
            }
        );
        assert_eq!(LocksQuery::parse(Some("prefix=")), LocksQuery::default());
        assert_eq!(LocksQuery::parse(None), LocksQuery::default());
        assert_eq!(form_decode("100%"), "100%");
        assert_eq!(form_decode("%zz%4"), "%zz%4");
    }
}

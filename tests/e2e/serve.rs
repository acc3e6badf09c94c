//! `wardlock serve`: the real binary, driven over real HTTP.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use wardlock_tests::Guest;
use wardlock_tests::ports::free_port;
use wardlock_tests::serve::{
    Server, assert_exact_and_fenced, concurrent_increments, get, metric, post, post_and_hold,
};
use wardlock_tests::zookeeper::ZkServer;

/// How soon a lock freed by a stopped request must be back (the bound).
const LOCK_BACK_WITHIN: Duration = Duration::from_millis(1500);

fn data_dir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = format!("{}::/data", dir.path().display());
    (dir, spec)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_backend_counts_exactly_with_rising_tokens() {
    let (dir, data) = data_dir();
    let server = Server::start(&["--dir", &data, Guest::HttpCounter.path()]).await;
    let results = concurrent_increments(&[&server.addr], 40).await;
    assert_exact_and_fenced(&results);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("c")).expect("file"),
        "40"
    );
    until_metric(
        &server,
        "wardlock_requests_total",
        &["outcome=\"completed\""],
        40.0,
    )
    .await;
    let metrics = get(&server.admin, "/metrics").await.expect("metrics").body;
    assert_eq!(
        metric(&metrics, "wardlock_grants_total", &["mode=\"exclusive\""]),
        40.0
    );
    assert_eq!(metric(&metrics, "wardlock_requests_total", &[]), 40.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn javascript_http_guest_counts_exactly() {
    let (dir, data) = data_dir();
    let server = Server::start(&["--dir", &data, Guest::HttpCounterJs.path()]).await;
    let results = concurrent_increments(&[&server.addr], 20).await;
    assert_exact_and_fenced(&results);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("c"))
            .expect("file")
            .trim(),
        "20"
    );
    let bad = post(&server.addr, "/a//b").await.expect("request");
    assert_eq!(bad.status, 400, "{bad:?}");
    assert!(bad.body.contains("empty segment"), "{:?}", bad.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_names_and_paths_get_400_with_the_reason() {
    let (_dir, data) = data_dir();
    let server = Server::start(&["--dir", &data, "--grant", "ok", Guest::HttpCounter.path()]).await;
    let cases = [
        ("/a//b", "empty segment"),
        ("/", "no counter name"),
        ("/ok?hold-ms=soon", "hold-ms"),
        ("/other", "not granted"),
    ];
    for (path, reason) in cases {
        let response = post(&server.addr, path).await.expect("request");
        assert_eq!(response.status, 400, "{path}: {response:?}");
        assert!(
            response.body.contains(reason),
            "{path}: {:?}",
            response.body
        );
    }
    let ok = post(&server.addr, "/ok").await.expect("request");
    assert_eq!((ok.status, ok.body.trim()), (200, "1"));
}

/// Waits until the server's sample `name{labels…}` reaches `at_least`
/// (bounded). Outcomes are counted when an instance has returned, which may be
/// after its client has read the whole response.
async fn until_metric(server: &Server, name: &str, labels: &[&str], at_least: f64) {
    let started = Instant::now();
    loop {
        let text = get(&server.admin, "/metrics").await.expect("metrics").body;
        let value = metric(&text, name, labels);
        if value >= at_least {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{name}{labels:?} stayed at {value}, wanted {at_least}:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the server has granted `grants` locks in all (bounded).
async fn until_granted(server: &Server, grants: f64) {
    until_metric(server, "wardlock_grants_total", &[], grants).await;
}

/// Serves with `backend` flags (none: the in-memory backend) and `limit` (a
/// flag and its value), sends a request that would hold the lock for 30 s,
/// expects `status` with `reason` in the body, then checks the lock is back at
/// once and the request counted as `outcome`.
async fn stopped_request_frees_its_lock(
    backend: &[&str],
    limit: [&str; 2],
    status: u16,
    reason: &str,
    outcome: &str,
) {
    let (_dir, data) = data_dir();
    let mut args = backend.to_vec();
    args.extend([
        "--dir",
        &data,
        limit[0],
        limit[1],
        Guest::HttpCounter.path(),
    ]);
    let server = Server::start(&args).await;
    let stuck = post(&server.addr, "/c?hold-ms=30000")
        .await
        .expect("request");
    assert_eq!(stuck.status, status, "{stuck:?}");
    assert!(stuck.body.contains(reason), "{:?}", stuck.body);
    lock_is_back_and_counted(&server, outcome).await;
}

/// Serves with `backend` flags; a client that hangs up while its request holds
/// the lock frees it for the next request at once.
async fn hang_up_frees_its_lock(backend: &[&str]) {
    let (_dir, data) = data_dir();
    let mut args = backend.to_vec();
    args.extend(["--dir", &data, Guest::HttpCounter.path()]);
    let server = Server::start(&args).await;
    let hanging = post_and_hold(&server.addr, "/c?hold-ms=30000")
        .await
        .expect("connect");
    until_granted(&server, 1.0).await;
    drop(hanging);
    lock_is_back_and_counted(&server, "client_gone").await;
}

/// The lock of a request just stopped is free for the next request at once, and
/// the stopped request was counted as `outcome`.
async fn lock_is_back_and_counted(server: &Server, outcome: &str) {
    let freed = Instant::now();
    let next = post(&server.addr, "/c").await.expect("request");
    assert_eq!((next.status, next.body.trim()), (200, "1"), "{next:?}");
    eprintln!(
        "{{\"metric\":\"lock_back\",\"outcome\":\"{outcome}\",\"ms\":{}}}",
        freed.elapsed().as_millis()
    );
    assert!(
        freed.elapsed() < LOCK_BACK_WITHIN,
        "lock back after {:?}",
        freed.elapsed()
    );
    let label = format!("outcome=\"{outcome}\"");
    until_metric(server, "wardlock_requests_total", &[&label], 1.0).await;
    let metrics = get(&server.admin, "/metrics").await.expect("metrics").body;
    assert_eq!(metric(&metrics, "wardlock_requests_total", &[&label]), 1.0);
}

/// With every request slot taken, a request waits for one and is served,
/// instead of failing to instantiate from a full instance pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_beyond_max_concurrent_waits_for_a_slot() {
    let (_dir, data) = data_dir();
    let server = Server::start(&[
        "--dir",
        &data,
        "--max-concurrent-requests",
        "1",
        Guest::HttpCounter.path(),
    ])
    .await;
    let addr = server.addr.clone();
    let first = tokio::spawn(async move { post(&addr, "/slow?hold-ms=1000").await });
    // The first request holds its lock, so its slot is taken.
    until_metric(&server, "wardlock_grants_total", &[], 1.0).await;
    let asked = Instant::now();
    let second = post(&server.addr, "/fast").await.expect("second request");
    let waited = asked.elapsed();
    let first = first.await.expect("task").expect("first request");
    assert_eq!(
        (first.status, second.status),
        (200, 200),
        "{}\n{}\n{}",
        first.body,
        second.body,
        server.log()
    );
    assert!(
        waited >= Duration::from_millis(500),
        "answered in {waited:?}: it did not wait for the slot"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_timeout_stops_the_instance_and_frees_its_lock() {
    stopped_request_frees_its_lock(
        &[],
        ["--request-timeout", "2"],
        504,
        "request timeout",
        "timeout",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_hang_up_stops_the_instance_and_frees_its_lock() {
    hang_up_frees_its_lock(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_hold_takes_the_lock_back() {
    stopped_request_frees_its_lock(
        &[],
        ["--max-hold", "0.5"],
        503,
        "hold lease",
        "lease_expired",
    )
    .await;
}

/// The same on ZooKeeper (one server for the three): the stopped request's
/// node goes at once, not at the session timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_zookeeper_a_stopped_request_frees_its_lock_at_once() {
    let zk = ZkServer::start();
    let address = zk.address();
    let backend = ["--zookeeper", address.as_str()];
    stopped_request_frees_its_lock(
        &backend,
        ["--request-timeout", "2"],
        504,
        "request timeout",
        "timeout",
    )
    .await;
    hang_up_frees_its_lock(&backend).await;
    stopped_request_frees_its_lock(
        &backend,
        ["--max-hold", "0.5"],
        503,
        "hold lease",
        "lease_expired",
    )
    .await;
}

/// `plugins/http-counter/fenced_store.py`, stopped by `Drop`.
struct FencedStore {
    child: Child,
    addr: String,
}

impl FencedStore {
    fn start() -> FencedStore {
        let port = free_port();
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../plugins/http-counter/fenced_store.py"
        );
        let mut child = Command::new("python3")
            .args([script, &port.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 fenced_store.py");
        let mut ready = String::new();
        let stdout = child.stdout.take().expect("stdout");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut ready)
            .expect("ready line");
        assert!(ready.starts_with("listening"), "{ready:?}");
        FencedStore {
            child,
            addr: format!("127.0.0.1:{port}"),
        }
    }
}

impl Drop for FencedStore {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbound_http_is_denied_unless_allowed() {
    let store = FencedStore::start();
    let env = format!("COUNTER_STORE=http://{}", store.addr);
    let denied = Server::start(&["--env", &env, Guest::HttpCounter.path()]).await;
    let response = post(&denied.addr, "/c").await.expect("request");
    assert_eq!(response.status, 500, "{response:?}");
    assert!(
        response.body.contains("HttpRequestDenied"),
        "{:?}",
        response.body
    );
    drop(denied);

    let allowed = Server::start(&[
        "--env",
        &env,
        "--allow-outbound",
        &store.addr,
        Guest::HttpCounter.path(),
    ])
    .await;
    let results = concurrent_increments(&[&allowed.addr], 10).await;
    assert_exact_and_fenced(&results);
    let stats = get(&store.addr, "/_stats").await.expect("stats").body;
    assert_eq!(stats.trim(), "accepted 10 rejected 0");
}

/// `--fence-header wardlock-fence`: every request the guest sends while it
/// holds its lock carries `LOCK=TOKEN` with its grant's token (the one the
/// guest reports), added by the host; without the flag, none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_presents_the_guests_fencing_tokens_downstream() {
    let store = FencedStore::start();
    let env = format!("COUNTER_STORE=http://{}", store.addr);
    let fenced = Server::start(&[
        "--env",
        &env,
        "--allow-outbound",
        &store.addr,
        "--fence-header",
        "wardlock-fence",
        Guest::HttpCounter.path(),
    ])
    .await;
    let response = post(&fenced.addr, "/c").await.expect("POST");
    assert_eq!(response.status, 200, "{response:?}");
    let token = response
        .headers
        .iter()
        .find(|(name, _)| name == "fencing-token")
        .map(|(_, value)| value.clone())
        .expect("the guest reports its token");
    drop(fenced);
    let plain = Server::start(&[
        "--env",
        &env,
        "--allow-outbound",
        &store.addr,
        Guest::HttpCounter.path(),
    ])
    .await;
    assert_eq!(post(&plain.addr, "/d").await.expect("POST").status, 200);
    let fences = get(&store.addr, "/_fences").await.expect("fences").body;
    let seen: Vec<&str> = fences
        .lines()
        .filter(|line| line.contains(" /c ") || line.contains(" /d "))
        .collect();
    assert_eq!(
        seen,
        [
            format!("GET /c c={token}"),
            format!("PUT /c c={token}"),
            "GET /d -".to_owned(),
            "PUT /d -".to_owned(),
        ],
        "{fences}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_file_mistakes_are_one_line_naming_file_and_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("wardlock.toml");
    std::fs::write(
        &file,
        format!(
            "[[plugins]]\nroute = \"/\"\ncomponent = \"{}\"\nmax_hold = \"long\"\n",
            Guest::HttpCounter.path()
        ),
    )
    .expect("write config");
    let output = Command::new(wardlock_tests::serve::wardlock_bin())
        .args(["serve", "--config"])
        .arg(&file)
        .output()
        .expect("run wardlock");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("wardlock.toml") && stderr.contains("max_hold"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_file_serves_two_plugins_on_their_routes() {
    let (dir, _) = data_dir();
    let file = dir.path().join("wardlock.toml");
    std::fs::write(
        &file,
        format!(
            "[backends.local]\nkind = \"memory\"\n\n\
             [[plugins]]\nname = \"a\"\nroute = \"/a\"\ncomponent = \"{0}\"\ndirs = [\".::/data\"]\ngrants = [\"a\"]\n\n\
             [[plugins]]\nname = \"b\"\nroute = \"/b\"\ncomponent = \"{0}\"\ndirs = [\".::/data\"]\ngrants = [\"b\"]\n",
            Guest::HttpCounter.path()
        ),
    )
    .expect("write config");
    let config = file.display().to_string();
    let server = Server::start(&["--config", &config]).await;
    assert_eq!(
        post(&server.addr, "/a/x").await.expect("a").body.trim(),
        "1"
    );
    assert_eq!(
        post(&server.addr, "/b/x").await.expect("b").body.trim(),
        "1"
    );
    assert_eq!(post(&server.addr, "/c").await.expect("c").status, 404);
    let metrics = get(&server.admin, "/metrics").await.expect("metrics").body;
    assert_eq!(
        metric(&metrics, "wardlock_grants_total", &["plugin=\"a\""]),
        1.0
    );
    assert_eq!(
        metric(&metrics, "wardlock_grants_total", &["plugin=\"b\""]),
        1.0
    );
}

fn ephemerals(server: &ZkServer) -> u64 {
    server
        .four_letter("mntr")
        .lines()
        .find_map(|l| l.strip_prefix("zk_ephemerals_count"))
        .and_then(|v| v.trim().parse().ok())
        .expect("mntr reports zk_ephemerals_count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_on_zookeeper_lose_no_update_and_stop_cleanly() {
    let zk = ZkServer::start();
    let (dir, data) = data_dir();
    let args = [
        "--zookeeper",
        &zk.address(),
        "--dir",
        &data,
        Guest::HttpCounter.path(),
    ];
    let mut one = Server::start(&args).await;
    let mut two = Server::start(&args).await;
    let results = concurrent_increments(&[&one.addr, &two.addr], 200).await;
    assert_exact_and_fenced(&results);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("c")).expect("file"),
        "200"
    );
    let mut grants = 0.0;
    for server in [&one, &two] {
        let text = get(&server.admin, "/metrics").await.expect("metrics").body;
        grants += metric(&text, "wardlock_grants_total", &[]);
        assert_eq!(metric(&text, "wardlock_backend_session_state", &[]), 1.0);
    }
    assert_eq!(grants, 200.0);

    // A request holding the lock while the hosts stop: drained, then released.
    let before = metric(
        &get(&one.admin, "/metrics").await.expect("metrics").body,
        "wardlock_grants_total",
        &[],
    );
    let holding = tokio::spawn({
        let addr = one.addr.clone();
        async move { post(&addr, "/c?hold-ms=300").await }
    });
    until_granted(&one, before + 1.0).await;
    for server in [&mut one, &mut two] {
        let (status, took) = server.terminate(Duration::from_secs(5));
        assert!(status.success(), "{status}: {}", server.log());
        eprintln!(
            "{{\"metric\":\"sigterm_stop\",\"ms\":{}}}",
            took.as_millis()
        );
    }
    let drained = holding.await.expect("task").expect("request");
    assert_eq!(
        drained.status, 200,
        "in-flight request not drained: {drained:?}"
    );
    assert_eq!(ephemerals(&zk), 0, "znodes left after SIGTERM");
}

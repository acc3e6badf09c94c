//! `wardlock serve` as users run it: the real binary on a free loopback port,
//! stopped (SIGTERM, then SIGKILL) by `Drop` even when the test fails; plus a
//! minimal HTTP/1.1 client.

mod keep_alive;

pub use keep_alive::KeepAlive;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::ports::free_port;

/// The `wardlock` binary of this workspace, built once per test process (the
/// tests crate cannot name another package's binary, so ask cargo for it), in
/// the profile this code was built in: debug for the tests, release for
/// `serve-bench`.
///
/// # Panics
/// When cargo cannot build it.
pub fn wardlock_bin() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| host_target(&["--bin", "wardlock"], "wardlock"))
}

/// Builds a target of the host package (`--bin NAME`, `--example NAME`) with
/// cargo, in this code's profile, and returns the path of `file` (relative to
/// the profile's directory: `wardlock`, `examples/embed`).
///
/// Built as the test build resolved its dependencies' features, so nothing
/// but the target itself is compiled: from the workspace's root (its default
/// members, as `cargo nextest run` selects them) and with `--examples`
/// (examples need the dev-dependencies, as the tests do). Built alone from
/// `host/cli`, the binary unified features over that package only (tokio
/// without `fs`, `process` and `test-util`, among others), so the first test
/// to ask for it compiled tokio and all that uses it a second time, a
/// minute or more of CPU while every other test asking waited on cargo's
/// lock.
///
/// # Panics
/// When cargo cannot build it.
pub fn host_target(target: &[&str], file: &str) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let release = !cfg!(debug_assertions);
    let status = crate::cargo_env::without_package_variables(&mut Command::new(cargo))
        .args([
            "build",
            "--quiet",
            "--manifest-path",
            manifest,
            "--examples",
        ])
        .args(target)
        .args(release.then_some("--release"))
        .status()
        .expect("run cargo build for a host target");
    assert!(status.success(), "cargo build {target:?} failed");
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")));
    dir.join(if release { "release" } else { "debug" })
        .join(file)
}

/// `--cache-dir <the tests' cache>` unless `args` choose a cache themselves.
pub fn cache_flags(args: &[&str]) -> Vec<String> {
    if args
        .iter()
        .any(|a| *a == "--no-cache" || a.starts_with("--cache-dir"))
    {
        return Vec::new();
    }
    vec!["--cache-dir".to_owned(), crate::cache_dir().to_owned()]
}

/// `VmHWM` of a `/proc/PID/status` file, in MiB.
pub fn peak_rss_mib(status: &str) -> Option<f64> {
    let text = std::fs::read_to_string(status).ok()?;
    let kib: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// A free loopback port (bound and released; the server binds it next).
/// A `wardlock run` child, killed by `Drop` if the test did not stop it.
pub struct RunChild(pub Child);

impl Drop for RunChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `wardlock run BACKEND_FLAGS lockctl -- "acquire exclusive - LOCK"
/// spin` and returns once its guest holds `lock` and spins (a host to stop
/// or kill while it holds).
///
/// # Panics
/// When the guest does not report holding the lock.
pub async fn spinning_holder(backend_flags: &[&str], lock: &str) -> RunChild {
    let acquire = format!("acquire exclusive - {lock}");
    let mut command = Command::new(wardlock_bin());
    command
        .arg("run")
        .args(backend_flags)
        .args(cache_flags(&[]))
        .args([crate::Guest::Lockctl.path(), "--", &acquire, "spin"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = RunChild(command.spawn().expect("start wardlock run"));
    let stdout = child.0.stdout.take().expect("stdout");
    let said = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .take(2)
            .collect::<Vec<_>>()
    })
    .await
    .expect("reader");
    assert!(
        said.first().is_some_and(|l| l.starts_with("h1 token=")) && said.len() == 2,
        "the guest did not take the lock and spin: {said:?}"
    );
    child
}

/// A running `wardlock serve`.
pub struct Server {
    child: Option<Child>,
    /// `127.0.0.1:PORT` of the request listener.
    pub addr: String,
    /// `127.0.0.1:PORT` of the admin listener.
    pub admin: String,
    log: tempfile::NamedTempFile,
}

impl Server {
    /// Starts `wardlock serve --listen … --admin … ARGS…` and waits until it
    /// answers `/healthz` (at most 60 s: the first start compiles the guest).
    pub async fn start(args: &[&str]) -> Server {
        Self::start_until(args, "/healthz", None).await
    }

    /// Starts `wardlock serve` as [`Server::start`] does, for admin endpoints
    /// that require the bearer `token`.
    pub async fn start_with_token(args: &[&str], token: &str) -> Server {
        Self::start_until(args, "/healthz", Some(token)).await
    }

    /// Starts `wardlock serve` as [`Server::start`] does, but waits only until
    /// the process is live (`/livez`), ready or not (its lock service may be
    /// down).
    pub async fn start_live(args: &[&str]) -> Server {
        Self::start_until(args, "/livez", None).await
    }

    async fn start_until(args: &[&str], answers: &str, token: Option<&str>) -> Server {
        let addr = format!("127.0.0.1:{}", free_port());
        let admin = format!("127.0.0.1:{}", free_port());
        let log = tempfile::NamedTempFile::new().expect("log file");
        let child = Command::new(wardlock_bin())
            .args(["serve", "--listen", &addr, "--admin", &admin])
            .args(cache_flags(args))
            .args(args)
            .stdout(Stdio::null())
            .stderr(log.reopen().expect("log file"))
            .spawn()
            .expect("start wardlock serve");
        let mut server = Server {
            child: Some(child),
            addr,
            admin,
            log,
        };
        let started = Instant::now();
        loop {
            if let Ok(response) = get_authorized(&server.admin, answers, token).await
                && response.status == 200
            {
                return server;
            }
            if let Some(child) = server.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("wardlock serve exited ({status}):\n{}", server.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "wardlock serve not healthy after 60 s:\n{}",
                server.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The server process's peak resident memory so far (`VmHWM`), in MiB.
    pub fn peak_rss_mib(&self) -> Option<f64> {
        let pid = self.child.as_ref()?.id();
        peak_rss_mib(&format!("/proc/{pid}/status"))
    }

    /// What the server wrote on stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Sends SIGTERM and waits for the exit (at most `within`); returns the
    /// exit status and how long the stop took.
    pub fn terminate(&mut self, within: Duration) -> (std::process::ExitStatus, Duration) {
        let mut child = self.child.take().expect("server still running");
        let started = Instant::now();
        // SAFETY: kill(2) on the PID of a child this test spawned and has not reaped.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return (status, started.elapsed());
            }
            if started.elapsed() > within {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "wardlock serve did not stop within {within:?} of SIGTERM:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Header lines, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body (chunked transfer decoded).
    pub body: String,
}

impl Response {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `POST path` with an empty body.
///
/// # Errors
/// Connection or protocol errors.
pub async fn post(addr: &str, path: &str) -> std::io::Result<Response> {
    request(addr, "POST", path, "").await
}

/// `GET path`.
///
/// # Errors
/// Connection or protocol errors.
pub async fn get(addr: &str, path: &str) -> std::io::Result<Response> {
    request(addr, "GET", path, "").await
}

/// Polls `path` on `server`'s admin port until it answers `want`; how long
/// that took.
///
/// # Panics
/// After `within`, with the last answer and the server's log; when the port
/// does not answer at all.
pub async fn admin_answers(server: &Server, path: &str, want: u16, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let answer = get(&server.admin, path).await.expect(path);
        if answer.status == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "{path} not {want} within {within:?}: {}\n{}",
            answer.body,
            server.log()
        );
        // A reading, not an event: look again soon.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `GET path` with `Authorization: Bearer TOKEN` when there is a token.
///
/// # Errors
/// Connection or protocol errors.
pub async fn get_authorized(
    addr: &str,
    path: &str,
    token: Option<&str>,
) -> std::io::Result<Response> {
    let header = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
    request(addr, "GET", path, &header).await
}

async fn request(addr: &str, method: &str, path: &str, headers: &str) -> std::io::Result<Response> {
    let mut stream = TcpStream::connect(addr).await?;
    stream
        .write_all(
            format!("{method} {path} HTTP/1.1\r\nhost: {addr}\r\n{headers}content-length: 0\r\nconnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    parse(&raw).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("bad response: {:?}", String::from_utf8_lossy(&raw)),
        )
    })
}

/// Sends `POST path` and returns the open connection without reading: dropping
/// it is a client hanging up mid-request.
///
/// # Errors
/// Connection errors.
pub async fn post_and_hold(addr: &str, path: &str) -> std::io::Result<TcpStream> {
    let mut stream = TcpStream::connect(addr).await?;
    stream
        .write_all(
            format!("POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 0\r\n\r\n").as_bytes(),
        )
        .await?;
    Ok(stream)
}

fn parse(raw: &[u8]) -> Option<Response> {
    let text = String::from_utf8_lossy(raw);
    let (head, rest) = text.split_once("\r\n\r\n")?;
    let (status, headers) = parse_head(head)?;
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest.to_owned()
    };
    Some(Response {
        status,
        headers,
        body,
    })
}

/// The status and headers (names lower-cased) of a response head, without its
/// blank line.
fn parse_head(head: &str) -> Option<(u16, Vec<(String, String)>)> {
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Some((status, headers))
}

fn dechunk(mut rest: &str) -> Option<String> {
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.push_str(after.get(..size)?);
        rest = after.get(size + 2..)?;
    }
}

/// The value of metric sample `name{labels…}` in Prometheus text (summed over
/// label sets containing every `label` given).
pub fn metric(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .filter(|l| labels.iter().all(|label| l.contains(label)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Posts `count` increments of the http-counter plugin's counter `c`
/// concurrently, spread over `hosts`; returns (value, token) per response,
/// sorted.
pub async fn concurrent_increments(hosts: &[&str], count: usize) -> Vec<(u64, u64)> {
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..count {
        let host = hosts[i % hosts.len()].to_owned();
        tasks.spawn(async move { post(&host, "/c").await });
    }
    let mut results = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let response = joined.expect("task").expect("request");
        assert_eq!(response.status, 200, "{response:?}");
        let value: u64 = response.body.trim().parse().expect("value");
        let token: u64 = response
            .header("fencing-token")
            .expect("fencing-token header")
            .parse()
            .expect("token");
        results.push((value, token));
    }
    results.sort();
    results
}

/// Panics unless the values are 1..=n with fencing tokens rising with them.
pub fn assert_exact_and_fenced(results: &[(u64, u64)]) {
    let values: Vec<u64> = results.iter().map(|(v, _)| *v).collect();
    let expected: Vec<u64> = (1..=results.len() as u64).collect();
    assert_eq!(values, expected, "lost or duplicated updates");
    for pair in results.windows(2) {
        assert!(
            pair[0].1 < pair[1].1,
            "tokens do not rise with values: {pair:?}"
        );
    }
}

/// `requests` `POST /k<i % keys><query>` requests, spread over `hosts` and
/// sent all at once: each key's answers (the counter's new value), sorted.
/// A counter kept whole answers exactly `1..=requests / keys` for each key.
///
/// # Panics
/// When a request fails or answers other than 200 with a number.
pub async fn counts_per_key(
    hosts: &[Server],
    keys: usize,
    requests: usize,
    query: &str,
) -> std::collections::BTreeMap<String, Vec<u64>> {
    let mut sent = tokio::task::JoinSet::new();
    for i in 0..requests {
        let host = hosts[i % hosts.len()].addr.clone();
        let key = format!("k{}", i % keys);
        let path = format!("/{key}{query}");
        sent.spawn(async move { (key, post(&host, &path).await.expect("request")) });
    }
    let mut values: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    while let Some(joined) = sent.join_next().await {
        let (key, response) = joined.expect("join");
        assert_eq!(response.status, 200, "{response:?}");
        let value = response.body.trim().parse().expect("a value");
        values.entry(key).or_default().push(value);
    }
    for answers in values.values_mut() {
        answers.sort_unstable();
    }
    values
}

//! The locks page (`/locks`) in a real browser: Debian's headless
//! `chromium`, driven over the DevTools protocol (`wardlock_tests::browser`),
//! against `wardlock run --admin` with two guests contending for one lock.
//! The page must show the holder appear and go, live (no reload), within
//! 1 s of the grant and the release, and the waiter at position 1; without
//! the admin token the page and its API answer 401. Two guests of one host
//! that take `a` and `b` and then each other's lock (an AB/BA cycle): the
//! closing wait gets `would-deadlock`, the other guest proceeds, and the
//! page shows the cycle's banner, live, naming the loser and both locks.
//!
//! Without chromium the test is skipped with a message, unless `CI` is set:
//! `.ci/run` installs it, so there a missing browser is a failure.
//! `WARDLOCK_SCREENSHOT=1` also writes the book's screenshot
//! (`docs/images/locks-page.png`).

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use wardlock_tests::Guest;
use wardlock_tests::browser::{self, Browser};
use wardlock_tests::serve::{RunChild, cache_flags, get, get_authorized, wardlock_bin};

const TOKEN: &str = "page-s3cret";
const LOCK: &str = "orders/eu-west";

/// How late the page may show a grant or a release (the bound).
const LIVE: Duration = Duration::from_secs(1);

/// The rows of role `role` (holder, waiter, engine) of [`LOCK`], as
/// `owner|position|token`, as JavaScript.
fn rows(role: &str) -> String {
    rows_of(LOCK, role)
}

/// The rows of role `role` of `lock`, as `owner|position|token`, as
/// JavaScript.
fn rows_of(lock: &str, role: &str) -> String {
    format!(
        "[...document.querySelectorAll('#locks tbody tr[data-role={role}]')]\
         .filter((r) => r.dataset.lock === '{lock}')\
         .map((r) => [r.querySelector('.owner').textContent, r.querySelector('.position').textContent, r.querySelector('.token').textContent].join('|'))"
    )
}

/// The owners in rows of role `role` (any lock), as JavaScript.
fn owners(role: &str) -> String {
    format!(
        "[...document.querySelectorAll('#locks tbody tr[data-role={role}]')]\
         .map((r) => [r.dataset.lock, r.querySelector('.owner').textContent].join('|'))"
    )
}

/// The cycle banners, as JavaScript.
const BANNERS: &str =
    "[...document.querySelectorAll('#cycles [role=alert]')].map((b) => b.textContent)";

/// Waits for the next stdout line of the guests that starts with `prefix`.
fn line_starting(lines: &mpsc::Receiver<String>, prefix: &str) -> String {
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no guest line starting with {prefix:?} within 30 s"));
        if line.starts_with(prefix) {
            return line;
        }
    }
}

/// The chromium binary, or `None` (the test is then skipped, with a
/// message) when it is not installed and `CI` is not set.
fn chromium_or_skip(test: &str) -> Option<std::path::PathBuf> {
    let chromium = browser::chromium();
    if chromium.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is not installed, and CI is set: .ci/run installs it (apt-get install chromium)"
        );
        eprintln!("SKIPPED {test}: no chromium on PATH (apt-get install chromium)");
    }
    chromium
}

/// Starts `wardlock run -n 2 --admin 127.0.0.1:0` (token [`TOKEN`]) with
/// `data` as the guests' `/data`, both `lockctl2` instances running
/// `commands`; returns the host, its admin address and the guests' stdout
/// lines.
fn start_run(
    data: &std::path::Path,
    commands: &[&str],
) -> (RunChild, String, mpsc::Receiver<String>) {
    let token_file = data.join("token");
    std::fs::write(&token_file, TOKEN).expect("token file");
    let mut child = Command::new(wardlock_bin());
    child
        .args([
            "run",
            "-n",
            "2",
            "--admin",
            "127.0.0.1:0",
            "--admin-token-file",
        ])
        .arg(&token_file)
        .args(cache_flags(&[]))
        .arg("--dir")
        .arg(format!("{}::/data", data.display()))
        .args([Guest::Lockctl2.path(), "--"])
        .args(commands)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut run = RunChild(child.spawn().expect("start wardlock run"));
    let stderr = run.0.stderr.take().expect("stderr");
    let (admin_tx, admin_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            eprintln!("wardlock: {line}");
            if let Some(rest) = line.strip_prefix("wardlock: admin on http://") {
                let _ = admin_tx.send(rest.split_whitespace().next().unwrap_or("").to_owned());
            }
        }
    });
    let stdout = run.0.stdout.take().expect("stdout");
    let (lines_tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            eprintln!("guest: {line}");
            let _ = lines_tx.send(line);
        }
    });
    let admin = admin_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("wardlock run printed its admin address");
    (run, admin, lines)
}

/// Like [`line_starting`], keeping every line read in `seen`.
fn line_seen(lines: &mpsc::Receiver<String>, seen: &mut Vec<String>, prefix: &str) -> String {
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| {
                panic!("no guest line starting with {prefix:?} within 30 s (seen: {seen:?})")
            });
        seen.push(line.clone());
        if line.starts_with(prefix) {
            return line;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_locks_page_follows_grants_and_releases_live() {
    let Some(chromium) = chromium_or_skip("the_locks_page_follows_grants_and_releases_live") else {
        return;
    };
    let data = tempfile::tempdir().expect("temp dir");
    let acquire = format!("acquire x - {LOCK}");
    let (mut run, admin, lines) = start_run(
        data.path(),
        &[
            "wait-file /data/start",
            &acquire,
            "wait-file /data/release",
            "release 1",
            "wait-file /data/end",
        ],
    );

    // Nothing readable without the token; the header or ?token= opens it.
    for path in ["/locks", "/api/locks", "/api/locks/events"] {
        let response = get(&admin, path).await.expect("admin answers");
        assert_eq!(response.status, 401, "{path} without the token");
    }
    let wrong = get(&admin, "/api/locks?token=guess")
        .await
        .expect("admin answers");
    assert_eq!(wrong.status, 401, "a wrong ?token=");
    let api = get_authorized(&admin, "/api/locks", Some(TOKEN))
        .await
        .expect("admin answers");
    assert_eq!(api.status, 200, "/api/locks with the bearer token");

    let browser = Browser::launch(&chromium);
    let mut page = browser.page().await;
    page.navigate(&format!("http://{admin}/locks?token={TOKEN}"))
        .await;
    page.evaluate("window.notReloaded = true").await;
    assert_eq!(
        page.evaluate(&format!("{}.length", rows("holder"))).await,
        serde_json::json!(0),
        "no holder before the guests start"
    );
    // The stream is connected once the script has rendered an event.
    assert!(
        page.wait_for(
            "document.getElementById('live').textContent.startsWith('Live')",
            Duration::from_secs(10)
        )
        .await,
        "the page did not connect to its event stream"
    );

    std::fs::write(data.path().join("start"), "").expect("start the guests");
    let granted = line_starting(&lines, "h1 token=");
    let at = Instant::now();
    assert!(
        page.wait_for(
            &format!(
                "{}.length === 1 && {}.length === 1",
                rows("holder"),
                rows("waiter")
            ),
            LIVE
        )
        .await,
        "the holder and the waiter did not appear within {LIVE:?} of the grant ({granted})"
    );
    let shown_after = at.elapsed();
    let holder = page.evaluate(&format!("{}[0]", rows("holder"))).await;
    let waiter = page.evaluate(&format!("{}[0]", rows("waiter"))).await;
    let holder = holder.as_str().expect("a holder row").to_owned();
    let waiter = waiter.as_str().expect("a waiter row").to_owned();
    assert!(
        holder.starts_with("lockctl2.wasm#")
            && holder.ends_with(&format!("|1|{}", &granted["h1 token=".len()..])),
        "holder row {holder:?} after {granted}"
    );
    assert!(
        waiter.starts_with("lockctl2.wasm#") && waiter.ends_with("|1|"),
        "the waiter is at position 1 with no token: {waiter:?}"
    );
    eprintln!("holder shown {shown_after:?} after the grant");

    if std::env::var_os("WARDLOCK_SCREENSHOT").is_some() {
        let png = page.screenshot().await;
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/images/locks-page.png");
        std::fs::write(path, png).expect("write the screenshot");
        eprintln!("wrote {path}");
    }

    // The first holder releases; the second is granted, sees the same
    // go-ahead and releases too: the page ends with no row for the lock.
    std::fs::write(data.path().join("release"), "").expect("let the holders release");
    line_starting(&lines, "ok");
    line_starting(&lines, "ok");
    let at = Instant::now();
    assert!(
        page.wait_for(
            &format!(
                "{}.length === 0 && {}.length === 0",
                rows("holder"),
                rows("waiter")
            ),
            LIVE
        )
        .await,
        "the holders did not go within {LIVE:?} of the release"
    );
    eprintln!("release shown {:?} after it", at.elapsed());
    assert_eq!(
        page.evaluate("window.notReloaded === true").await,
        serde_json::json!(true),
        "the page updated itself, without a reload"
    );

    std::fs::write(data.path().join("end"), "").expect("end the guests");
    let status = tokio::task::spawn_blocking(move || run.0.wait())
        .await
        .expect("join")
        .expect("wardlock run exits");
    assert!(status.success(), "wardlock run: {status}");
}

/// Two instances of one host run one script: `claim` makes one role 1 (it
/// takes `a`, then asks for `b`) and the other role 2 (`b`, then `a`). Once
/// the page shows both holding their first lock, the test lets them cross:
/// the wait that closes the cycle gets `would-deadlock`, the other guest
/// waits on and is granted once the loser releases, and the page shows,
/// live, a banner naming the loser (`broken:`), both parties and both locks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_locks_page_flags_a_wait_for_cycle_live() {
    let Some(chromium) = chromium_or_skip("the_locks_page_flags_a_wait_for_cycle_live") else {
        return;
    };
    let data = tempfile::tempdir().expect("temp dir");
    let (mut run, admin, lines) = start_run(
        data.path(),
        &[
            "claim /data/claim",
            "acquire x - {mine}",
            "wait-file /data/cross",
            "acquire x - {theirs}",
            "wait-file /data/settle",
            "release 1",
            "wait-file /data/end",
        ],
    );
    let mut seen = Vec::new();

    let browser = Browser::launch(&chromium);
    let mut page = browser.page().await;
    page.navigate(&format!("http://{admin}/locks?token={TOKEN}"))
        .await;
    page.evaluate("window.notReloaded = true").await;
    assert!(
        page.wait_for(
            "document.getElementById('live').textContent.startsWith('Live')",
            Duration::from_secs(10)
        )
        .await,
        "the page did not connect to its event stream"
    );
    // Both guests hold their first lock: `a` one of them, `b` the other.
    assert!(
        page.wait_for(
            &format!(
                "{}.length === 1 && {}.length === 1",
                rows_of("a", "holder"),
                rows_of("b", "holder")
            ),
            Duration::from_secs(30)
        )
        .await,
        "the page did not show `a` and `b` held (guest lines: {seen:?})"
    );
    let holder_of = |row: serde_json::Value| -> String {
        let row = row.as_str().expect("a holder row");
        row.split('|').next().unwrap_or_default().to_owned()
    };
    let holder_a = holder_of(
        page.evaluate(&format!("{}[0]", rows_of("a", "holder")))
            .await,
    );
    let holder_b = holder_of(
        page.evaluate(&format!("{}[0]", rows_of("b", "holder")))
            .await,
    );
    assert!(
        holder_a.starts_with("lockctl2.wasm#")
            && holder_b.starts_with("lockctl2.wasm#")
            && holder_a != holder_b,
        "one guest holds each lock: a by {holder_a:?}, b by {holder_b:?}"
    );
    assert_eq!(
        page.evaluate(&format!("{BANNERS}.length")).await,
        serde_json::json!(0),
        "no cycle banner before the guests cross"
    );

    // Each asks for the other's lock: the closing wait is refused at once.
    std::fs::write(data.path().join("cross"), "").expect("let the guests cross");
    let refused = line_seen(&lines, &mut seen, "err ");
    assert_eq!(refused, "err would-deadlock", "the closing wait's answer");
    let at = Instant::now();
    assert!(
        page.wait_for(
            &format!(
                "{BANNERS}.length === 1 && {}.length === 1",
                owners("waiter")
            ),
            LIVE
        )
        .await,
        "no cycle banner (and one waiter) within {LIVE:?} of the refusal"
    );
    eprintln!("cycle shown {:?} after the refusal", at.elapsed());
    let banner = page.evaluate(&format!("{BANNERS}[0]")).await;
    let banner = banner.as_str().expect("the banner's text").to_owned();
    // The winner still waits, for the lock the loser holds.
    let waiter = page.evaluate(&format!("{}[0]", owners("waiter"))).await;
    let (waited, winner) = waiter
        .as_str()
        .and_then(|w| w.split_once('|'))
        .expect("a waiter row");
    let loser = if waited == "a" { &holder_a } else { &holder_b };
    assert!(
        (waited == "a" || waited == "b") && loser != winner,
        "the waiter {winner:?} waits for {waited:?}, held by {loser:?}"
    );
    let text = banner
        .strip_prefix("Wait-for cycle (among this host's guests): ")
        .and_then(|rest| rest.strip_suffix('.'))
        .unwrap_or_else(|| panic!("a host cycle's banner: {banner:?}"));
    let (parties, rest) = text.split_once(" over ").expect("parties over locks");
    let (locks, broken) = rest.split_once("; broken: ").expect("locks; broken");
    let mut parties: Vec<&str> = parties.split(" → ").collect();
    let mut locks: Vec<&str> = locks.split(", ").collect();
    parties.sort_unstable();
    locks.sort_unstable();
    let mut both = vec![holder_a.as_str(), holder_b.as_str()];
    both.sort_unstable();
    assert_eq!(parties, both, "the banner names both guests: {banner:?}");
    assert_eq!(locks, ["a", "b"], "the banner names both locks: {banner:?}");
    assert_eq!(broken, loser, "the banner names the loser: {banner:?}");
    assert_eq!(
        page.evaluate("window.notReloaded === true").await,
        serde_json::json!(true),
        "the page showed the cycle without a reload"
    );

    // The loser releases its lock: the winner, still waiting, gets it.
    std::fs::write(data.path().join("settle"), "").expect("let the loser release");
    line_seen(&lines, &mut seen, "h2 token=");
    std::fs::write(data.path().join("end"), "").expect("end the guests");
    let status = tokio::task::spawn_blocking(move || run.0.wait())
        .await
        .expect("join")
        .expect("wardlock run exits");
    assert!(status.success(), "wardlock run: {status}");
    // The rest of the guests' lines (the reader ends with their stdout).
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(10)) {
        seen.push(line);
    }
    let count = |line: &str| seen.iter().filter(|l| l.as_str() == line).count();
    let starting = |prefix: &str| seen.iter().filter(|l| l.starts_with(prefix)).count();
    assert!(
        count("claim 1") == 1
            && count("claim 2") == 1
            && starting("h1 token=") == 2
            && count("err would-deadlock") == 1
            && starting("h2 token=") == 1
            && count("ok") == 2,
        "one role each, both first locks granted, one refusal, the winner's second grant, both releases: {seen:?}"
    );
}

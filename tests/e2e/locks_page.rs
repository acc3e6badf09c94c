//! The locks page (`/locks`) in a real browser: Debian's headless
//! `chromium`, driven over the DevTools protocol (`wardlock_tests::browser`),
//! against `wardlock run --admin` with two guests contending for one lock.
//! The page must show the holder appear and go, live (no reload), within
//! 1 s of the grant and the release, and the waiter at position 1; without
//! the admin token the page and its API answer 401.
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
    format!(
        "[...document.querySelectorAll('#locks tbody tr[data-role={role}]')]\
         .filter((r) => r.dataset.lock === '{LOCK}')\
         .map((r) => [r.querySelector('.owner').textContent, r.querySelector('.position').textContent, r.querySelector('.token').textContent].join('|'))"
    )
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_locks_page_follows_grants_and_releases_live() {
    let Some(chromium) = browser::chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is not installed, and CI is set: .ci/run installs it (apt-get install chromium)"
        );
        eprintln!(
            "SKIPPED the_locks_page_follows_grants_and_releases_live: no chromium on PATH (apt-get install chromium)"
        );
        return;
    };
    let data = tempfile::tempdir().expect("temp dir");
    let token_file = data.path().join("token");
    std::fs::write(&token_file, TOKEN).expect("token file");
    let acquire = format!("acquire x - {LOCK}");
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
        .arg(format!("{}::/data", data.path().display()))
        .args([
            Guest::Lockctl2.path(),
            "--",
            "wait-file /data/start",
            &acquire,
            "wait-file /data/release",
            "release 1",
            "wait-file /data/end",
        ])
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
            let _ = lines_tx.send(line);
        }
    });
    let admin = admin_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("wardlock run printed its admin address");

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

//! A headless Chromium driven over the DevTools protocol, for tests of the
//! pages wardlock serves (`tests/e2e/locks_page.rs`): launched on a free
//! port (`--remote-debugging-port=0`, the address read from its stderr) with
//! a profile of its own, and killed by `Drop` — its process group, by the
//! PID it was started with — even when the test fails.

mod cdp;

use std::io::BufRead;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub use cdp::Page;

/// The Chromium binary (`chromium`, Debian's package), if installed.
pub fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

/// A running headless Chromium.
pub struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    /// The browser's DevTools websocket (`ws://127.0.0.1:PORT/devtools/browser/…`).
    pub endpoint: String,
}

impl Browser {
    /// Starts `chromium` headless and waits (at most 30 s) for its DevTools
    /// address.
    ///
    /// # Panics
    /// When it cannot be started or prints no address.
    pub fn launch(binary: &std::path::Path) -> Browser {
        let profile = tempfile::tempdir().expect("a profile directory");
        let mut command = Command::new(binary);
        command
            .args([
                "--headless=new",
                "--remote-debugging-port=0",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--hide-scrollbars",
                "--window-size=1100,700",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            // Chromium makes temp dirs of its own (`org.chromium.Chromium.*`)
            // and leaves them when it is killed: inside the profile, they go
            // with it.
            .env("TMPDIR", profile.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Its own process group, so Drop ends its helpers (renderer,
            // zygote) with it.
            .process_group(0);
        let mut child = command.spawn().expect("start chromium");
        let stderr = child.stderr.take().expect("chromium's stderr");
        let (found, told) = std::sync::mpsc::channel();
        // Reads stderr to its end, so chromium never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut found = Some(found);
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if let Some(url) = line.strip_prefix("DevTools listening on ")
                    && let Some(found) = found.take()
                {
                    let _ = found.send(url.trim().to_owned());
                }
            }
        });
        let mut browser = Browser {
            child,
            _profile: profile,
            endpoint: String::new(),
        };
        browser.endpoint = told
            .recv_timeout(Duration::from_secs(30))
            .expect("chromium printed no DevTools address within 30 s");
        browser
    }

    /// A new tab, attached.
    pub async fn page(&self) -> Page {
        Page::open(&self.endpoint).await
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) with the group of the process this guard
            // started; it touches no memory.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

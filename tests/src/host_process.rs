//! A `wardlock run` host as a process of its own, so a test can do to it what
//! happens to real hosts: pause it (SIGSTOP, as a long GC or a stopped VM
//! does) past its session, resume it (SIGCONT) and read what its guest says,
//! line by line. Killed (after a resume) when dropped, whatever the test did.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::TEST_WAIT_LIMIT;
use crate::serve::wardlock_bin;

/// One `wardlock run` process with its guest's stdout.
pub struct HostProcess {
    child: Child,
    /// `None` once handed to [`HostProcess::forward_lines`].
    lines: Option<Lines<BufReader<ChildStdout>>>,
}

impl HostProcess {
    /// Starts `wardlock run ARGS…` (the caller's flags, component and guest
    /// arguments); its stderr goes to the test's.
    ///
    /// # Panics
    /// When the binary cannot be started.
    pub fn start(args: &[String]) -> HostProcess {
        let mut child = Command::new(wardlock_bin())
            .arg("run")
            .args(["--cache-dir", crate::cache_dir()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start wardlock run");
        let stdout = child.stdout.take().expect("stdout");
        HostProcess {
            child,
            lines: Some(BufReader::new(stdout).lines()),
        }
    }

    /// The guest's next line, within `within`.
    ///
    /// # Panics
    /// When none came in time or the host ended first.
    pub async fn line_within(&mut self, within: Duration) -> String {
        let lines = self
            .lines
            .as_mut()
            .expect("the lines were forwarded elsewhere");
        match tokio::time::timeout(within, lines.next_line()).await {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => panic!("the host ended before its guest printed a line"),
            Ok(Err(error)) => panic!("reading the host's output: {error}"),
            Err(_) => panic!("the guest printed no line within {within:?}"),
        }
    }

    /// The guest's next line, within [`TEST_WAIT_LIMIT`].
    pub async fn line(&mut self) -> String {
        self.line_within(TEST_WAIT_LIMIT).await
    }

    /// Sends every line the guest prints from now on to `to`, tagged `host`
    /// (for a test following several hosts at once). The lines end when the
    /// process does.
    pub fn forward_lines(
        &mut self,
        host: usize,
        to: tokio::sync::mpsc::UnboundedSender<(usize, String)>,
    ) {
        let Some(mut lines) = self.lines.take() else {
            return;
        };
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if to.send((host, line)).is_err() {
                    return;
                }
            }
        });
    }

    /// Kills the process at once (SIGKILL): nothing of it runs any more; its
    /// lock service session ends only when the service expires it.
    pub fn kill(&mut self) {
        let _ = self.child.start_kill();
    }

    /// Asks the process to stop (SIGTERM): a clean stop.
    pub fn terminate(&self) {
        self.signal(libc::SIGTERM);
    }

    /// Stops the whole process (SIGSTOP): no thread of it runs, no
    /// heartbeat leaves it, until [`HostProcess::resume`].
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// Lets a paused process run again (SIGCONT).
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    /// Waits for the process to exit: its exit code.
    ///
    /// # Panics
    /// When it does not exit within [`TEST_WAIT_LIMIT`].
    pub async fn exit_code(&mut self) -> Option<i32> {
        let status = tokio::time::timeout(TEST_WAIT_LIMIT, self.child.wait())
            .await
            .expect("the host exits in time")
            .expect("wait for the host");
        status.code()
    }

    fn signal(&self, signal: i32) {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) on the PID of a child this harness spawned and
            // has not reaped (`id` is `None` once it was).
            unsafe { libc::kill(pid as i32, signal) };
        }
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        // A stopped process dies of SIGKILL too, but resume it first so
        // nothing of it lingers stopped if the kill races its reaping.
        self.resume();
    }
}

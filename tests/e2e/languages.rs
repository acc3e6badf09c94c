//! Guests written in C, Python and JavaScript (`plugins/{c,python,js}`) run the
//! same lock workloads as the Rust guests and get the same guarantees: exact
//! counts, clean readers/writers, and every lock released when the instance
//! ends, whether it traps or returns still holding a handle it never dropped.
//!
//! Each check takes a [`Subject`] (any backend plus a probe watching it), so the
//! same checks run on the in-memory backend (one test per check and language)
//! and on a real ZooKeeper server (`languages::all_on_zookeeper`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use wardlock_host::Mode;
use wardlock_host::runner::{InstanceReport, Outcome, Runner, RunnerConfig, Stdio};
use wardlock_tests::conformance::Subject;
use wardlock_tests::zookeeper::ZkServer;
use wardlock_tests::{
    Guest, TEST_WAIT_LIMIT, assert_outcome, assert_success, granted, hold, lines, runner_in,
    runtime, spawn_acquire, spawn_run, tally, value_in,
};

/// A guest language other than Rust.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Language {
    C,
    Python,
    Js,
}

impl Language {
    const ALL: [Language; 3] = [Language::C, Language::Python, Language::Js];

    fn counter(self) -> Guest {
        match self {
            Language::C => Guest::CounterC,
            Language::Python => Guest::CounterPython,
            Language::Js => Guest::CounterJs,
        }
    }

    fn readers_writers(self) -> Guest {
        match self {
            Language::C => Guest::ReadersWritersC,
            Language::Python => Guest::ReadersWritersPython,
            Language::Js => Guest::ReadersWritersJs,
        }
    }

    /// A lock name of this language's own, so checks never share a lock.
    fn lock(self, what: &str) -> String {
        format!("lang/{self:?}/{what}").to_lowercase()
    }
}

/// A runner for `guest` on the subject's backend, with `dir` visible to the guest
/// as `/data` and a deadline as a hang guard.
fn runner(s: &Subject, guest: Guest, dir: &Path) -> Arc<Runner> {
    runner_in(
        guest,
        s.backend.clone(),
        dir,
        Some(Duration::from_secs(120)),
    )
}

/// Four instances of the counter, 25 increments each, lose no update.
pub(crate) async fn counter_is_exact(s: &Subject, language: Language) {
    let dir = tempfile::tempdir().expect("temp dir");
    let lock = language.lock("counter");
    let runner = runner(s, language.counter(), dir.path());
    let tasks: Vec<_> = (0..4)
        .map(|_| spawn_run(&runner, 0, &[&lock, "25", "/data/count"]))
        .collect();
    for task in tasks {
        let report = task.await.expect("instance task");
        assert_success(&report);
        assert!(
            report
                .stdout_text()
                .starts_with(&format!("counter: {lock} +25")),
            "{}",
            report.stdout_text()
        );
    }
    assert_eq!(value_in(dir.path(), "count"), 100);
    s.probe.wait_len(&lock, 0).await;
}

/// Four readers-writers instances on one file see no violation, and every write
/// added exactly 2.
pub(crate) async fn readers_writers_is_clean(s: &Subject, language: Language) {
    let dir = tempfile::tempdir().expect("temp dir");
    let lock = language.lock("rw");
    let runner = runner(s, language.readers_writers(), dir.path());
    let tasks: Vec<_> = (0..4)
        .map(|_| spawn_run(&runner, 0, &[&lock, "20", "/data/value", "30"]))
        .collect();
    let mut writes = 0;
    for task in tasks {
        let report = task.await.expect("instance task");
        assert_success(&report);
        let out = report.stdout_text();
        assert_eq!(tally(&out, "violations"), 0, "{out}");
        assert_eq!(tally(&out, "reads") + tally(&out, "writes"), 20, "{out}");
        writes += tally(&out, "writes");
    }
    assert_eq!(value_in(dir.path(), "value"), 2 * writes);
    s.probe.wait_len(&lock, 0).await;
}

/// A reading guest shares the lock with a native reader; a writing guest waits
/// for that reader, and a reading guest waits for a native writer.
pub(crate) async fn readers_share_writers_wait(s: &Subject, language: Language) {
    let dir = tempfile::tempdir().expect("temp dir");
    let lock = language.lock("share");
    let runner = runner(s, language.readers_writers(), dir.path());
    let (reader, read_grant) = hold(&*s.backend, &lock, Mode::Shared).await;

    // WRITE_PERCENT 0: every round reads, while the native reader holds.
    let report = spawn_run(&runner, 0, &[&lock, "3", "/data/value", "0"])
        .await
        .expect("guest task");
    assert_success(&report);
    assert_eq!(
        report.stdout_text().trim(),
        "readers-writers: reads=3 writes=0 violations=0"
    );

    // WRITE_PERCENT 100: the writer queues behind the native reader.
    let writer = spawn_run(&runner, 0, &[&lock, "1", "/data/value", "100"]);
    s.probe.wait_len(&lock, 2).await;
    assert_eq!(
        value_in(dir.path(), "value"),
        0,
        "the writer wrote under a reader"
    );
    assert!(!writer.is_finished());
    reader.release(read_grant.id).expect("release");
    let report = writer.await.expect("guest task");
    assert_success(&report);
    assert_eq!(tally(&report.stdout_text(), "writes"), 1);
    assert_eq!(value_in(dir.path(), "value"), 2);

    // A reader queues behind a native writer.
    let (writer, write_grant) = hold(&*s.backend, &lock, Mode::Exclusive).await;
    let guest_reader = spawn_run(&runner, 0, &[&lock, "1", "/data/value", "0"]);
    s.probe.wait_len(&lock, 2).await;
    assert!(!guest_reader.is_finished());
    writer.release(write_grant.id).expect("release");
    let report = guest_reader.await.expect("guest task");
    assert_success(&report);
    assert_eq!(tally(&report.stdout_text(), "reads"), 1);
    s.probe.wait_len(&lock, 0).await;
}

/// Runs the counter with ITERATIONS = `mode` (`trap` or `leak`) queued behind a
/// native holder, with a native waiter queued behind the guest; releases the
/// holder and returns the guest's report once the waiter has the lock.
async fn hand_over(s: &Subject, language: Language, mode: &str) -> InstanceReport {
    let dir = tempfile::tempdir().expect("temp dir");
    let lock = language.lock(mode);
    let runner = runner(s, language.counter(), dir.path());
    let (holder, held) = hold(&*s.backend, &lock, Mode::Exclusive).await;
    let guest = spawn_run(&runner, 0, &[&lock, mode, "/data/unused"]);
    s.probe.wait_len(&lock, 2).await;
    let waiter = spawn_acquire(s.backend.open_session("waiter"), &lock, Mode::Exclusive);
    s.probe.wait_len(&lock, 3).await;
    holder.release(held.id).expect("release");
    let report = guest.await.expect("guest task");
    let (session, grant) = waiter.await.expect("waiter task");
    let grant = grant.unwrap_or_else(|e| {
        panic!(
            "the waiter behind a {mode} guest never got the lock: {e:?}; guest: {:?} {}",
            report.outcome,
            report.stderr_text()
        )
    });
    assert!(grant.token > held.token);
    session.release(grant.id).expect("release");
    s.probe.wait_len(&lock, 0).await;
    assert!(!dir.path().join("unused").exists());
    report
}

/// A guest that traps while holding its lock loses it: the waiter queued behind
/// it gets it, and the lock is free afterwards.
pub(crate) async fn trap_releases(s: &Subject, language: Language) {
    let report = hand_over(s, language, "trap").await;
    assert_outcome!(report, Outcome::Trap(_));
    assert_eq!(report.stdout_text().trim(), "holding");
}

/// A guest that returns successfully while still referencing a handle it never
/// released or dropped loses the lock when the instance ends.
pub(crate) async fn leaked_handle_released_at_end(s: &Subject, language: Language) {
    let report = hand_over(s, language, "leak").await;
    assert_success(&report);
    assert_eq!(report.stdout_text().trim(), "leaked");
}

/// The SDK's scoped release: an error inside the scope (Python's `with`,
/// JavaScript's `withLock`, C's `WARDLOCK_SCOPED` block) releases the lock while
/// the guest goes on, and the guest catches it as the typed invalid-name error
/// (`wardlock.InvalidName`, `LockError` with `kind === 'invalid-name'`,
/// `WARDLOCK_ERROR_INVALID_NAME`). The counter with ITERATIONS = `error` queues
/// behind a native holder, a native waiter behind it; the waiter gets the lock
/// while the guest still runs (it asks for the lock again after its scope and
/// queues behind the waiter), so the guest released it, not its end.
pub(crate) async fn error_in_scope_releases(s: &Subject, language: Language) {
    let dir = tempfile::tempdir().expect("temp dir");
    let lock = language.lock("error");
    let runner = runner(s, language.counter(), dir.path());
    let (holder, held) = hold(&*s.backend, &lock, Mode::Exclusive).await;
    let guest = spawn_run(&runner, 0, &[&lock, "error", "/data/unused"]);
    s.probe.wait_len(&lock, 2).await;
    let waiter = spawn_acquire(s.backend.open_session("waiter"), &lock, Mode::Exclusive);
    s.probe.wait_len(&lock, 3).await;
    holder.release(held.id).expect("release");
    let (session, grant) = granted("the waiter behind the guest's scope", waiter).await;
    assert!(grant.token > held.token);
    // Had the scope kept the lock, the guest's second acquire would be
    // re-entrant and the guest would end instead of queueing here.
    s.probe.wait_len(&lock, 2).await;
    assert!(
        !guest.is_finished(),
        "the guest ended while the waiter held the lock"
    );
    session.release(grant.id).expect("release");
    let report = guest.await.expect("guest task");
    assert_success(&report);
    let out = report.stdout_text();
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["caught invalid-name", "reacquired"],
        "{out}"
    );
    s.probe.wait_len(&lock, 0).await;
    assert!(!dir.path().join("unused").exists());
}

/// Bad arguments end the guest with an error and a usage line, taking no lock.
pub(crate) async fn bad_arguments_are_refused(s: &Subject, language: Language) {
    let dir = tempfile::tempdir().expect("temp dir");
    let lock = language.lock("args");
    let counter = runner(s, language.counter(), dir.path());
    let readers_writers = runner(s, language.readers_writers(), dir.path());
    for (runner, args) in [
        (&counter, vec![lock.as_str(), "/data/count"]),
        (&counter, vec![lock.as_str(), "0", "/data/count"]),
        (&counter, vec![lock.as_str(), "many", "/data/count"]),
        (
            &readers_writers,
            vec![lock.as_str(), "1", "/data/value", "101"],
        ),
        (
            &readers_writers,
            vec![lock.as_str(), "x", "/data/value", "5"],
        ),
    ] {
        let report = spawn_run(runner, 0, &args).await.expect("guest task");
        assert!(
            matches!(report.outcome, Outcome::Exit(code) if code != 0),
            "{args:?}: {:?}",
            report.outcome
        );
        assert!(
            report.stderr_text().starts_with("usage: "),
            "{args:?}: {}",
            report.stderr_text()
        );
    }
    // A lock error is reported, not a trap.
    let report = spawn_run(&counter, 0, &["a//b", "1", "/data/count"])
        .await
        .expect("guest task");
    assert_outcome!(report, Outcome::Exit(_));
    assert!(
        report.stderr_text().contains("invalid-name"),
        "{}",
        report.stderr_text()
    );
    assert!(!dir.path().join("count").exists());
    s.probe.wait_len(&lock, 0).await;
}

/// Calls `$then!` with every check, in order: the one list of them.
macro_rules! language_checks {
    ($then:ident) => {
        $then!(
            counter_is_exact,
            readers_writers_is_clean,
            readers_share_writers_wait,
            trap_releases,
            leaked_handle_released_at_end,
            error_in_scope_releases,
            bad_arguments_are_refused,
        );
    };
}

/// Every check for every language, in order, each named on stderr first.
pub(crate) async fn all(s: &Subject) {
    for language in Language::ALL {
        macro_rules! check {
            ($($check:ident),* $(,)?) => {$(
                eprintln!("languages: {} {language:?}", stringify!($check));
                $check(s, language).await;
            )*};
        }
        language_checks!(check);
    }
}

/// One test per check and language on the in-memory backend:
/// `languages::<check>::{c,python,js}`.
macro_rules! on_memory {
    ($($check:ident),* $(,)?) => {$(
        mod $check {
            use super::{Language, Subject};

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn c() {
                super::$check(&Subject::memory(), Language::C).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn python() {
                super::$check(&Subject::memory(), Language::Python).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn js() {
                super::$check(&Subject::memory(), Language::Js).await;
            }
        }
    )*};
}

language_checks!(on_memory);

/// Every check for every language on a real ZooKeeper server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_on_zookeeper() {
    let server = ZkServer::start();
    let subject = crate::zookeeper::subject(&server, "/wardlock-languages").await;
    all(&subject).await;
}

/// The JavaScript SDK's shared core (scoped release, `withLock(name, fn)`,
/// checked timeouts) passes its unit tests in Node
/// (`guest-sdk/js/test/wardlock-core.test.mjs`, over stand-ins for the raw
/// WIT resources). Node comes with the JavaScript toolchain; without it the
/// check is skipped, but not in CI (`CI` set), where every toolchain is.
#[test]
fn js_sdk_core_unit_tests_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut node = std::process::Command::new("node");
    node.arg("--test").arg(root.join("guest-sdk/js/test"));
    assert_js_tool_passes(node);
}

/// The JavaScript SDK's type declarations (`guest-sdk/js/*.d.ts`) are valid
/// TypeScript, strict, with `using` (TypeScript from `plugins/js`'s
/// devDependencies, installed by `plugins/install-toolchains.sh`).
#[test]
fn js_sdk_type_declarations_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let sdk = root.join("guest-sdk/js");
    let mut tsc = std::process::Command::new(root.join("plugins/js/node_modules/.bin/tsc"));
    tsc.args(["--noEmit", "--strict", "--target", "es2022"])
        .args(["--lib", "es2022,esnext.disposable", "--module", "nodenext"])
        .arg(sdk.join("wardlock.d.ts"))
        .arg(sdk.join("wardlock1.d.ts"))
        .arg(sdk.join("wardlock2.d.ts"));
    assert_js_tool_passes(tsc);
}

/// Runs a JavaScript tool of the SDK checks and asserts it succeeded. A tool
/// that cannot be started skips the check outside CI (naming the installer)
/// and fails it in CI (`CI` set), where every toolchain is installed.
fn assert_js_tool_passes(mut command: std::process::Command) {
    let output = match command.output() {
        Ok(output) => output,
        Err(error) if std::env::var_os("CI").is_none() => {
            eprintln!(
                "skipped: cannot run {command:?} ({error}); plugins/install-toolchains.sh installs it"
            );
            return;
        }
        Err(error) => panic!("{command:?} is needed in CI: {error}"),
    };
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A copy of `guest-sdk/` alone, outside the repository, builds a Rust
/// guest for `wasm32-wasip2`: the crate carries its WIT and names its own
/// dependencies and lints (nothing from the workspace). With default
/// features its root is the 0.2 API (`v2::` naming the same types) and the
/// guest imports `wardlock:lock@0.2.2` alone; it runs on the memory engine
/// and sees itself as the lock's one holder through `contenders`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_sdk_builds_alone_outside_the_repository() {
    let wasm = standalone_build(
        "",
        "use wardlock_guest::{Lock, contenders};\n\n\
         fn main() -> Result<(), wardlock_guest::Error> {\n\
         \x20   let same: fn(&'static str) -> wardlock_guest::v2::Lock = Lock::exclusive;\n\
         \x20   let guard = same(\"app/job\").acquire()?;\n\
         \x20   guard.check()?;\n\
         \x20   println!(\"token {}\", guard.fencing_token());\n\
         \x20   let queue = contenders(\"app/job\", 10)?;\n\
         \x20   for c in queue.holders() {\n\
         \x20       println!(\"holder {:?} {:?} {}\", c.mode, c.fencing_token, c.owner);\n\
         \x20   }\n\
         \x20   println!(\"total {} waiting {}\", queue.total, queue.waiters().count());\n\
         \x20   guard.release()\n}\n",
    );
    let (imports, out) = run_standalone(&wasm).await;
    assert_eq!(
        imports,
        ["wardlock:lock/locks@0.2.2"],
        "one version imported"
    );
    let token = out[0].strip_prefix("token ").expect("a token line");
    let holder = format!("holder Exclusive Some({token}) ");
    assert!(
        out[1].starts_with(&holder) && out[1].contains("app.wasm"),
        "{out:?}"
    );
    assert_eq!(out[2], "total 1 waiting 0", "{out:?}");
}

/// Without its default feature the SDK's root is the 0.1.0 API, for hosts
/// that serve only 0.1.0: the same guest code builds, imports
/// `wardlock:lock@0.1.0` alone, and runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_sdk_without_default_features_imports_0_1_0_alone() {
    let wasm = standalone_build(
        ", default-features = false",
        "fn main() -> Result<(), wardlock_guest::Error> {\n\
         \x20   let guard = wardlock_guest::Lock::exclusive(\"app/job\").acquire()?;\n\
         \x20   let _same: &wardlock_guest::v1::Guard = &guard;\n\
         \x20   guard.check()?;\n\
         \x20   println!(\"token {}\", guard.fencing_token());\n\
         \x20   guard.release()\n}\n",
    );
    let (imports, out) = run_standalone(&wasm).await;
    assert_eq!(
        imports,
        ["wardlock:lock/locks@0.1.0"],
        "one version imported"
    );
    assert!(out[0].starts_with("token "), "{out:?}");
}

/// Builds the standalone app (see [`standalone_app`]) and returns its
/// component's path, asserting the build succeeded.
fn standalone_build(features: &str, main_rs: &str) -> std::path::PathBuf {
    let (output, component) = standalone_app("build", features, main_rs);
    assert!(
        output.status.success(),
        "the SDK copied alone does not build: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    component
}

/// Runs the standalone app on a memory engine: its `wardlock:lock/locks`
/// imports and its output lines (asserting it succeeded).
async fn run_standalone(wasm: &Path) -> (Vec<String>, Vec<String>) {
    let component = runtime().compile(wasm).expect("the app compiles");
    let imports = component
        .component_type()
        .imports(runtime().wasm_engine())
        .map(|(name, _)| name.to_string())
        .filter(|name| name.starts_with("wardlock:lock/locks"))
        .collect();
    let config = RunnerConfig {
        stdio: Stdio::Capture,
        timeout: Some(TEST_WAIT_LIMIT),
        ..RunnerConfig::default()
    };
    let runner = Runner::new(runtime(), &component, "app.wasm", config).expect("runner");
    let report = runner.run(0, &[]).await;
    assert_success(&report);
    (imports, lines(&report))
}

/// A subscription borrows its guard: releasing (or dropping) the guard while
/// its subscription lives does not compile, where an owned pollable would
/// have made the host trap at run time.
#[test]
fn a_rust_subscription_cannot_outlive_its_guard() {
    let (output, _) = standalone_app(
        "check",
        "",
        "fn main() -> Result<(), wardlock_guest::Error> {\n\
         \x20   let guard = wardlock_guest::Lock::exclusive(\"app/job\").acquire()?;\n\
         \x20   let lost = guard.subscribe();\n\
         \x20   guard.release()?;\n\
         \x20   lost.block();\n\
         \x20   Ok(())\n}\n",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "the misuse compiled");
    assert!(
        stderr.contains("E0505") && stderr.contains("borrowed"),
        "not refused for the borrow: {stderr}"
    );
}

/// Runs `cargo COMMAND --release` for wasm32-wasip2 on an app whose
/// `main.rs` is `main_rs`, depending on a copy of what `guest-sdk/`
/// packages (with `features` added to the dependency, e.g.
/// `, default-features = false`), both in a temporary directory outside
/// the repository; its output and its component's path (once built).
///
/// The copy holds exactly the files `cargo package` would publish (its
/// `--list`), so a file the crate needs but its `include` leaves out fails
/// here: the check a verifying `cargo package` made, without that build of
/// its own (a cold one compiled the SDK's dependencies again, about 100 s
/// of CPU beside the test build on a new machine). The app is resolved
/// with the workspace's `Cargo.lock` and built in release in the Rust
/// guests' target dir (`plugins/build.sh`'s), so wit-bindgen's macro and
/// its parsers come from the guests' build: the test compiles the SDK and
/// the app alone (2 s, against 160 s of a cold test in a target dir of its
/// own on a new machine; without the lock cargo resolves the newest
/// releases, which nothing else here compiles). Offline, as the out-of-tree
/// engine's build: the test build downloaded every crate the lock names.
fn standalone_app(
    command: &str,
    features: &str,
    main_rs: &str,
) -> (std::process::Output, std::path::PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let outside = tempfile::tempdir().expect("temp dir");
    copy_packaged_sdk(&cargo, &root, &outside.path().join("wardlock-guest"));
    // One app name per command and set of features: the apps share one
    // target dir, where each one's component is named after it.
    let flavour = if features.is_empty() {
        "default"
    } else {
        "custom"
    };
    let package = format!("app-{command}-{flavour}");
    let app = outside.path().join("app");
    std::fs::create_dir_all(app.join("src")).expect("app dir");
    std::fs::write(
        app.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{package}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [dependencies]\nwardlock-guest = {{ path = \"../wardlock-guest\"{features} }}\n\n\
             [workspace]\n"
        ),
    )
    .expect("Cargo.toml");
    std::fs::write(app.join("src/main.rs"), main_rs).expect("main.rs");
    std::fs::copy(root.join("Cargo.lock"), app.join("Cargo.lock")).expect("Cargo.lock");
    let target = guests_target_dir();
    let output = std::process::Command::new(&cargo)
        .args([
            command,
            "--quiet",
            "--offline",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--manifest-path",
        ])
        .arg(app.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .expect("run cargo");
    let component = target.join(format!("wasm32-wasip2/release/{package}.wasm"));
    (output, component)
}

/// The target dir `plugins/build.sh` built the Rust guests in for this test
/// build, read off a guest's path (`DIR/wasm32-wasip2/release/counter.wasm`)
/// rather than worked out again from the environment the tests run in.
fn guests_target_dir() -> std::path::PathBuf {
    Path::new(Guest::Counter.path())
        .ancestors()
        .nth(3)
        .expect("a Rust guest lies three levels below its target dir")
        .to_path_buf()
}

/// Copies into `to` the files of `guest-sdk/` that `cargo package` lists
/// for `wardlock-guest` (paths relative to the crate; `Cargo.toml.orig`,
/// the manifest as written, is copied as `Cargo.toml`, and cargo's own
/// `.cargo_vcs_info.json` is left out).
fn copy_packaged_sdk(cargo: &str, root: &Path, to: &Path) {
    let listed = std::process::Command::new(cargo)
        .args([
            "package",
            "--list",
            "--quiet",
            "--offline",
            "--allow-dirty",
            "-p",
            "wardlock-guest",
        ])
        .current_dir(root)
        .output()
        .expect("run cargo package --list");
    assert!(
        listed.status.success(),
        "cargo package --list failed: {}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let sdk = root.join("guest-sdk");
    let files = String::from_utf8(listed.stdout).expect("utf-8 file list");
    let mut copied = 0;
    for file in files.lines().map(str::trim).filter(|f| !f.is_empty()) {
        let name = match file {
            "Cargo.toml" | ".cargo_vcs_info.json" | "Cargo.lock" => continue,
            "Cargo.toml.orig" => "Cargo.toml",
            _ => file,
        };
        let (from, dest) = (sdk.join(name), to.join(name));
        std::fs::create_dir_all(dest.parent().expect("a parent")).expect("create dir");
        std::fs::copy(&from, &dest).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
        copied += 1;
    }
    assert!(
        to.join("Cargo.toml").is_file() && to.join("src/lib.rs").is_file(),
        "cargo package --list named no manifest or no src/lib.rs ({copied} files): {files}"
    );
}

/// 0.2 is every SDK's default, and the 0.1.0 forms stay exercised: the
/// example guests import the version their build says, one version each
/// (a guest that says nothing gets 0.2.1; `readers-writers` in C and Python
/// and `counter` in JavaScript say they run on 0.1.0 alone).
#[test]
fn guests_import_the_wit_version_their_sdk_defaults_to() {
    let expected = [
        (Guest::Counter, "0.2.2"),
        (Guest::CounterC, "0.2.2"),
        (Guest::CounterPython, "0.2.2"),
        (Guest::ReadersWritersJs, "0.2.2"),
        (Guest::HttpCounterJs, "0.2.2"),
        (Guest::ReadersWritersC, "0.1.0"),
        (Guest::ReadersWritersPython, "0.1.0"),
        (Guest::CounterJs, "0.1.0"),
    ];
    for (guest, version) in expected {
        let imports: Vec<String> = wardlock_tests::component(guest)
            .component_type()
            .imports(runtime().wasm_engine())
            .map(|(name, _)| name.to_string())
            .filter(|name| name.starts_with("wardlock:lock/locks"))
            .collect();
        assert_eq!(
            imports,
            [format!("wardlock:lock/locks@{version}")],
            "{guest:?}"
        );
    }
}

//! The `wardlock run` command, driven in-process through its argument parser.

use wardlock::{Invocation, Registry, execute};
use wardlock_tests::Guest;
use wardlock_tests::serve::cache_flags;

/// `wardlock ARGS...` in-process; `run` and `serve` get the tests' compilation
/// cache unless `args` choose one.
pub(crate) async fn wardlock(args: &[&str]) -> anyhow::Result<i32> {
    let mut argv: Vec<String> = vec!["wardlock".to_owned()];
    if let Some((command, rest)) = args.split_first() {
        argv.push(command.to_string());
        if matches!(*command, "run" | "serve") {
            argv.extend(cache_flags(rest));
        }
        argv.extend(rest.iter().map(|a| a.to_string()));
    }
    execute(parse(argv)?).await
}

/// `argv` parsed by the `wardlock` binary's command line (the built-in engines).
pub(crate) fn parse<T: Into<std::ffi::OsString> + Clone>(
    argv: impl IntoIterator<Item = T>,
) -> Result<Invocation, clap::Error> {
    Invocation::try_parse_from(Registry::builtin(), argv)
}

/// `wardlock run FLAGS --instances 8 --dir DIR::/data counter.wasm -- LOCK
/// ITERATIONS /data/count` on a fresh DIR: the exit code and the final count.
pub(crate) async fn run_counters(flags: &[&str], lock: &str, iterations: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let data = format!("{}::/data", dir.path().display());
    let mut args = vec!["run"];
    args.extend(flags);
    args.extend(["--instances", "8", "--dir", &data, Guest::Counter.path()]);
    args.extend(["--", lock, iterations, "/data/count"]);
    let code = wardlock(&args).await.expect("run");
    let count = std::fs::read_to_string(dir.path().join("count")).unwrap_or_default();
    (code, count.trim().to_owned())
}

/// The README demo: 8 counter instances, exact total.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_counter_demo_gives_exact_count() {
    assert_eq!(run_counters(&[], "demo", "25").await, (0, "200".to_owned()));
}

/// The same with `--pooled-file-io` (file operations on a thread pool):
/// still exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_counter_with_pooled_file_io_gives_exact_count() {
    let counted = run_counters(&["--pooled-file-io"], "demo", "25").await;
    assert_eq!(counted, (0, "200".to_owned()));
}

/// A failing instance makes the run fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_instance_fails_the_run() {
    let code = wardlock(&[
        "run",
        "-n",
        "2",
        "--timeout",
        "0.2",
        Guest::Misbehave.path(),
        "--",
        "spin-holding",
        "a",
    ])
    .await
    .unwrap();
    assert_eq!(code, 1);
}

/// Bad input gets a clear error naming what was wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_clear_errors() {
    let err = |r: anyhow::Result<i32>| format!("{:#}", r.expect_err("should fail"));
    let missing = err(wardlock(&["run", "/nonexistent/x.wasm"]).await);
    assert!(
        missing.contains("cannot load component /nonexistent/x.wasm"),
        "{missing}"
    );

    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.wasm");
    std::fs::write(&junk, b"not wasm").unwrap();
    let junk_err = err(wardlock(&["run", junk.to_str().unwrap()]).await);
    assert!(junk_err.contains("cannot load component"), "{junk_err}");

    // An empty component: valid, but exports no `wasi:cli/run`.
    let empty = dir.path().join("empty.wasm");
    std::fs::write(&empty, [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00]).unwrap();
    let world = err(wardlock(&["run", empty.to_str().unwrap()]).await);
    assert!(
        world.contains("does not fit the wardlock guest world"),
        "{world}"
    );

    let grant = err(wardlock(&["run", "--grant", "../x", Guest::Counter.path()]).await);
    assert!(grant.contains("--grant"), "{grant}");
    let not_dir = err(wardlock(&["run", "--dir", "/nonexistent::/d", Guest::Counter.path()]).await);
    assert!(not_dir.contains("is not a directory"), "{not_dir}");
    let timeout = err(wardlock(&["run", "--timeout=0", Guest::Counter.path()]).await);
    assert!(timeout.contains("--timeout"), "{timeout}");

    let instances = parse(["wardlock", "run", "--instances", "0", "x.wasm"]).unwrap_err();
    assert!(instances.to_string().contains("--instances"), "{instances}");
    let env = parse(["wardlock", "run", "--env", "NOEQUALS", "x.wasm"]).unwrap_err();
    assert!(env.to_string().contains("KEY=VALUE"), "{env}");
}

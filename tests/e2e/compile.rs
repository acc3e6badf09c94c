//! Compile once: the compilation cache (`--cache-dir`), `wardlock compile` and
//! running its `.cwasm` with `--allow-precompiled`, by `run` and by `serve`.

use std::path::Path;
use std::time::SystemTime;

use crate::cli::{run_counters, wardlock};
use wardlock_tests::Guest;
use wardlock_tests::serve::{Server, post};

/// Every file under `dir` (recursively) with its modification time.
fn files(dir: &Path) -> Vec<(std::path::PathBuf, SystemTime)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(modified) = entry.metadata().and_then(|m| m.modified()) {
                found.push((path, modified));
            }
        }
    }
    found.sort();
    found
}

/// Cache entries: the compiled code, not wasmtime's `.stats` bookkeeping
/// (updated on every hit).
fn entries(dir: &Path) -> Vec<(std::path::PathBuf, SystemTime)> {
    files(dir)
        .into_iter()
        .filter(|(path, _)| path.extension().is_none_or(|e| e != "stats"))
        .collect()
}

/// The first run compiles into an empty cache directory; the second loads the
/// entry as it is (not compiled again: the entry is not rewritten).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_run_fills_the_cache_and_the_next_one_reuses_it() {
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().display().to_string();
    let flags = ["--cache-dir", dir.as_str()];
    assert_eq!(
        run_counters(&flags, "cache", "3").await,
        (0, "24".to_owned())
    );
    let first = entries(cache.path());
    assert!(
        !first.is_empty(),
        "the first run left no cache entry in {dir}"
    );
    assert_eq!(
        run_counters(&flags, "cache", "3").await,
        (0, "24".to_owned())
    );
    assert_eq!(
        entries(cache.path()),
        first,
        "the second run compiled again instead of loading the cache entry"
    );

    // A cache directory that cannot be created degrades to compiling.
    let blocked = cache.path().join("a-file");
    std::fs::write(&blocked, b"not a directory").unwrap();
    let inside = blocked.join("cache").display().to_string();
    let flags = ["--cache-dir", inside.as_str()];
    assert_eq!(
        run_counters(&flags, "cache", "1").await,
        (0, "8".to_owned())
    );

    let both = wardlock(&[
        "run",
        "--no-cache",
        "--cache-dir",
        &dir,
        Guest::Counter.path(),
    ])
    .await;
    let both = format!(
        "{:#}",
        both.expect_err("--no-cache and --cache-dir conflict")
    );
    assert!(both.contains("--no-cache"), "{both}");
}

/// `wardlock compile` makes a `.cwasm` that `run` refuses without
/// `--allow-precompiled` and runs with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_precompiled_component_runs_only_when_allowed() {
    let out = tempfile::tempdir().unwrap();
    let cwasm = out.path().join("counter.cwasm").display().to_string();
    let code = wardlock(&["compile", Guest::Counter.path(), "-o", &cwasm])
        .await
        .expect("compile");
    assert_eq!(code, 0);
    let head = std::fs::read(&cwasm).expect("the .cwasm was written");
    assert!(head.starts_with(b"\x7fELF"), "not a precompiled artifact");

    let refused = wardlock(&["run", &cwasm]).await;
    let refused = format!("{:#}", refused.expect_err("a .cwasm needs consent"));
    assert!(
        refused.contains(&cwasm) && refused.contains("--allow-precompiled"),
        "{refused}"
    );
    let data = tempfile::tempdir().unwrap();
    let dir = format!("{}::/data", data.path().display());
    let code = wardlock(&[
        "run",
        "--allow-precompiled",
        "-n",
        "4",
        "--dir",
        &dir,
        &cwasm,
        "--",
        "pre",
        "5",
        "/data/count",
    ])
    .await
    .expect("run the .cwasm");
    assert_eq!(code, 0);
    assert_eq!(wardlock_tests::value_in(data.path(), "count"), 20);

    let same = wardlock(&["compile", &cwasm, "-o", &cwasm]).await;
    let same = format!("{:#}", same.expect_err("input and output are one file"));
    assert!(same.contains("would overwrite"), "{same}");
    let again = wardlock(&["compile", &cwasm, "-o", &format!("{cwasm}.2")]).await;
    let again = format!("{:#}", again.expect_err("a .cwasm is compiled already"));
    assert!(again.contains(&cwasm), "{again}");
}

/// `serve` (pooling allocator) runs a `.cwasm` from `wardlock compile` too: the
/// two engines make compatible code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_runs_a_precompiled_component() {
    let out = tempfile::tempdir().unwrap();
    let cwasm = out.path().join("http-counter.cwasm").display().to_string();
    let code = wardlock(&["compile", Guest::HttpCounter.path(), "-o", &cwasm])
        .await
        .expect("compile");
    assert_eq!(code, 0);
    let data = tempfile::tempdir().unwrap();
    let dir = format!("{}::/data", data.path().display());
    let server = Server::start(&["--allow-precompiled", "--dir", &dir, &cwasm]).await;
    for expected in 1..=3 {
        let response = post(&server.addr, "/pre").await.expect("POST /pre");
        assert_eq!(response.status, 200, "{response:?}");
        assert_eq!(response.body.trim(), expected.to_string());
    }
}

/// A component missing from wasmtime's cache (a guest rebuilt after an edit
/// is a new component) compiles only the functions no earlier compile made:
/// the rest comes from Cranelift's incremental cache beside it.
#[test]
fn a_component_not_in_the_cache_reuses_the_functions_compiled_before() {
    use wardlock_host::runner::{CompileCache, FunctionCacheCounts, Runtime, RuntimeOptions};
    let cache = tempfile::tempdir().unwrap();
    let compile = || {
        let runtime = Runtime::with_options(RuntimeOptions {
            cache: CompileCache::Dir(cache.path().to_path_buf()),
            pooling: None,
        })
        .expect("runtime");
        runtime
            .compile(Path::new(Guest::Counter.path()))
            .expect("compile");
        runtime.function_cache_counts().expect("a cache directory")
    };
    // (Functions the component holds more than once are reused even here.)
    let first = compile();
    assert!(first.compiled > 100, "{first:?}");

    // Loaded whole from wasmtime's cache: no function compiled or looked up.
    assert_eq!(compile(), FunctionCacheCounts::default());

    // Not in wasmtime's cache: its functions come from the incremental cache.
    std::fs::remove_dir_all(cache.path().join("wasmtime")).expect("wasmtime's folder");
    let again = compile();
    assert_eq!(
        again.reused + again.compiled,
        first.reused + first.compiled,
        "the same functions"
    );
    // Not every function: about a tenth of this guest's get another key in
    // each compile (69 of 431 at most, seen), so they are compiled again.
    assert!(
        again.compiled * 4 <= first.compiled,
        "compiled again instead of reused: {again:?} after {first:?}"
    );
}

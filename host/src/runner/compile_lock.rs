//! One compile at a time per component file among the processes that share a
//! compilation cache directory.
//!
//! wasmtime's cache makes the second load of a component cheap, but only
//! once the first compile has written its entry: processes that start at once
//! (a fleet host starting several `wardlock run`s, a test suite's processes)
//! each compiled the same component in full. A JavaScript or Python
//! component is 13-21 MB of Wasm and 15-30 s of both cores in a debug build;
//! a CI run compiled each several times over. With this lock the first
//! process compiles and the others wait, then load its entry from the cache.
//!
//! The lock is an advisory `flock`-style lock on a file named after the
//! cache directory and the component's path (per path, not per content: it
//! only orders compiles, the cache still keys entries by content), in
//! `$TMPDIR/wardlock-compiling-UID/`: not in the cache directory, whose
//! cleanup (wasmtime's cache worker) deletes every file it does not know.
//! The operating system releases a lock when its holder exits or crashes, so
//! none is left behind.

use std::fs::File;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// Held while one component file is compiled.
pub(super) struct CompileLock {
    _file: File,
}

impl CompileLock {
    /// Waits until no other process compiles `component` through the cache in
    /// `cache_dir`, and holds that until dropped. `None` when the lock file
    /// cannot be made (a read-only cache, say): compiling without it is only
    /// slower, so that is logged and not an error.
    pub(super) fn acquire(cache_dir: &Path, component: &Path) -> Option<CompileLock> {
        Self::acquire_in(&locks_dir(), cache_dir, component)
    }

    /// As [`CompileLock::acquire`], with the lock files in `locks`.
    fn acquire_in(locks: &Path, cache_dir: &Path, component: &Path) -> Option<CompileLock> {
        let path = lock_path(locks, cache_dir, component);
        let opened = std::fs::create_dir_all(locks).and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
        });
        let file = match opened {
            Ok(file) => file,
            Err(why) => {
                tracing::debug!(lock = %path.display(), %why, "compiling without the compile lock");
                return None;
            }
        };
        if let Err(std::fs::TryLockError::WouldBlock) = file.try_lock() {
            tracing::info!(
                component = %component.display(),
                "another process compiles this component: waiting to load its result from the cache"
            );
            if let Err(why) = file.lock() {
                tracing::debug!(lock = %path.display(), %why, "compiling without the compile lock");
                return None;
            }
        }
        Some(CompileLock { _file: file })
    }
}

/// `$TMPDIR/wardlock-compiling-UID`: one user's lock files.
fn locks_dir() -> PathBuf {
    #[cfg(unix)]
    let uid = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .unwrap_or(0);
    #[cfg(not(unix))]
    let uid = 0;
    std::env::temp_dir().join(format!("wardlock-compiling-{uid}"))
}

/// `LOCKS/HASH.lock`, HASH naming the cache directory and the component's
/// absolute path.
fn lock_path(locks: &Path, cache_dir: &Path, component: &Path) -> PathBuf {
    let absolute = |path: &Path| {
        std::fs::canonicalize(path)
            .or_else(|_| std::path::absolute(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    absolute(cache_dir).hash(&mut hasher);
    absolute(component).hash(&mut hasher);
    locks.join(format!("{:016x}.lock", hasher.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::mpsc;
    use std::time::Duration;

    /// A directory of its own under the system's temporary one, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!(
                "wardlock-compile-lock-{name}-{}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).expect("temp dir");
            TempDir(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_second_compile_of_one_file_waits_for_the_first() {
        let dir = TempDir::new("waits");
        let locks = dir.path().join("locks");
        let component = dir.path().join("guest.wasm");
        std::fs::write(&component, b"").expect("component");
        let first = CompileLock::acquire_in(&locks, dir.path(), &component).expect("first lock");
        let (took, taken) = mpsc::channel();
        let waiter = std::thread::spawn({
            let (locks, dir, component) =
                (locks.clone(), dir.path().to_path_buf(), component.clone());
            move || {
                let lock = CompileLock::acquire_in(&locks, &dir, &component);
                took.send(lock.is_some()).expect("send");
            }
        });
        // Another file, or the same through another cache, compiles
        // meanwhile: its lock is another.
        let other = dir.path().join("other.wasm");
        assert!(CompileLock::acquire_in(&locks, dir.path(), &other).is_some());
        let elsewhere = dir.path().join("another-cache");
        assert!(CompileLock::acquire_in(&locks, &elsewhere, &component).is_some());
        assert!(
            taken.recv_timeout(Duration::from_millis(200)).is_err(),
            "the second compile of the same file did not wait"
        );
        drop(first);
        assert_eq!(taken.recv_timeout(Duration::from_secs(10)), Ok(true));
        waiter.join().expect("waiter");
    }

    #[test]
    fn an_unwritable_cache_compiles_without_a_lock() {
        let lock = CompileLock::acquire_in(
            Path::new("/proc/wardlock-cannot-be-here"),
            Path::new("cache"),
            Path::new("guest.wasm"),
        );
        assert!(lock.is_none());
    }
}

//! Cranelift's incremental compilation cache on disk: compiled functions
//! kept one file each, so a component compiles only the functions no
//! earlier compile has seen.
//!
//! Why: wasmtime's compilation cache is keyed by the whole component, and a
//! Python or JavaScript guest is a new component after every edit of its
//! source (componentize-py and componentize-js do not even build the same
//! bytes twice), yet almost all of its code, the interpreter, is the same
//! from one build to the next. This cache is keyed by each function's code
//! (Cranelift hashes the function and the compiler's settings and version),
//! so such a rebuild compiles only what changed.
//!
//! Entries are written to a temporary file and renamed into place, so
//! processes sharing the directory never read half an entry; an entry that
//! cannot be read is a miss, and one that cannot be written is skipped.
//! The cache starts over (its folder is deleted) when a compile leaves it
//! larger than [`SIZE_LIMIT`]: an edited guest adds a few megabytes each
//! time, and nothing says which entries are still wanted. The folder can
//! be deleted at any time.

use std::borrow::Cow;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// The folder of the compilation cache's directory that holds the entries.
pub(super) const FOLDER: &str = "functions";

/// The size past which the cache starts over: about fifteen compiles of a
/// Python or JavaScript guest (60-70 MB of entries each, when nothing
/// is shared).
pub(super) const SIZE_LIMIT: u64 = 1 << 30;

/// Cranelift's keys are hashes of 32 bytes; anything much longer is not a
/// key this store names files after.
const MAX_KEY_LEN: usize = 64;

/// How many functions the compiles of a [`super::Runtime`] took from its
/// function cache and how many they compiled, since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FunctionCacheCounts {
    /// Functions whose compiled code came from the cache.
    pub reused: u64,
    /// Functions compiled (not in the cache, or their entry unreadable).
    pub compiled: u64,
}

/// A [`wasmtime::CacheStore`] over a directory.
#[derive(Debug)]
pub(super) struct FunctionCache {
    dir: PathBuf,
    /// Numbers this process's temporary files (with its PID, unique on the
    /// machine while it runs).
    written: AtomicU64,
    reused: AtomicU64,
    compiled: AtomicU64,
}

impl FunctionCache {
    /// The store in `dir` (created on the first insert).
    pub(super) fn new(dir: PathBuf) -> Self {
        FunctionCache {
            dir,
            written: AtomicU64::new(0),
            reused: AtomicU64::new(0),
            compiled: AtomicU64::new(0),
        }
    }

    /// The lookups so far: hits and misses.
    pub(super) fn counts(&self) -> FunctionCacheCounts {
        FunctionCacheCounts {
            reused: self.reused.load(Ordering::Relaxed),
            compiled: self.compiled.load(Ordering::Relaxed),
        }
    }

    /// Deletes the whole cache when its entries take more than `limit`
    /// bytes; returns whether it did. The folder is renamed first, so a
    /// process reading it meanwhile finds entries whole or not at all.
    pub(super) fn keep_within(&self, limit: u64) -> bool {
        let size = folder_size(&self.dir);
        if size <= limit {
            return false;
        }
        let number = self.written.fetch_add(1, Ordering::Relaxed);
        let mut doomed = self.dir.clone().into_os_string();
        doomed.push(format!(".old-{}-{number}", std::process::id()));
        let doomed = PathBuf::from(doomed);
        if std::fs::rename(&self.dir, &doomed).is_err() {
            // Another process started it over first.
            return false;
        }
        tracing::info!(
            "the incremental compilation cache {} took {} MB: started over",
            self.dir.display(),
            size >> 20
        );
        let _ = std::fs::remove_dir_all(&doomed);
        true
    }

    /// `<dir>/<first two hex digits>/<the rest>`: at most 256 entries of
    /// the top folder, whatever the number of functions.
    fn path(&self, key: &[u8]) -> Option<PathBuf> {
        if key.is_empty() || key.len() > MAX_KEY_LEN {
            return None;
        }
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        let (fan, rest) = hex.split_at(2);
        Some(self.dir.join(fan).join(rest))
    }

    fn write(&self, path: &std::path::Path, value: &[u8]) -> std::io::Result<()> {
        let parent = path
            .parent()
            .ok_or_else(|| std::io::Error::other("an entry's path has no folder"))?;
        std::fs::create_dir_all(parent)?;
        let number = self.written.fetch_add(1, Ordering::Relaxed);
        let temporary = parent.join(format!(".tmp-{}-{number}", std::process::id()));
        let result = (|| {
            let mut file = std::fs::File::create(&temporary)?;
            file.write_all(value)?;
            std::fs::rename(&temporary, path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        result
    }
}

/// The bytes of the files in `dir` and its folders one level down (the
/// layout [`FunctionCache::path`] makes); 0 when it does not exist.
fn folder_size(dir: &std::path::Path) -> u64 {
    let Ok(fans) = std::fs::read_dir(dir) else {
        return 0;
    };
    fans.filter_map(Result::ok)
        .filter_map(|fan| std::fs::read_dir(fan.path()).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.metadata().ok())
        .map(|metadata| metadata.len())
        .sum()
}

impl wasmtime::CacheStore for FunctionCache {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        let found = self.path(key).and_then(|path| std::fs::read(path).ok());
        let counter = if found.is_some() {
            &self.reused
        } else {
            &self.compiled
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found.map(Cow::Owned)
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        let Some(path) = self.path(key) else {
            return false;
        };
        match self.write(&path, &value) {
            Ok(()) => true,
            Err(why) => {
                tracing::debug!("compiled function not cached in {}: {why}", path.display());
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::CacheStore;

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!(
            "wardlock-function-cache-{name}-{}",
            std::process::id()
        ))
    }

    #[test]
    fn an_entry_written_is_read_back_and_a_missing_one_is_a_miss() {
        let dir = scratch("roundtrip");
        let cache = FunctionCache::new(dir.clone());
        let key = [0xab_u8; 32];
        assert!(cache.get(&key).is_none());
        assert!(cache.insert(&key, b"code".to_vec()));
        assert_eq!(cache.get(&key).as_deref(), Some(&b"code"[..]));
        assert!(cache.get(&[0xac_u8; 32]).is_none());
        assert_eq!(
            cache.counts(),
            FunctionCacheCounts {
                reused: 1,
                compiled: 2
            }
        );
        // A second writer of the same key replaces the entry whole.
        assert!(FunctionCache::new(dir.clone()).insert(&key, b"again".to_vec()));
        assert_eq!(cache.get(&key).as_deref(), Some(&b"again"[..]));
        let left: Vec<_> = std::fs::read_dir(dir.join("ab"))
            .expect("the fan-out folder")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_cache_past_its_limit_starts_over() {
        let dir = scratch("limit");
        let cache = FunctionCache::new(dir.clone());
        for key in 0..4_u8 {
            assert!(cache.insert(&[key; 32], vec![0; 100]));
        }
        assert!(!cache.keep_within(400), "400 bytes are within 400");
        assert!(cache.get(&[0; 32]).is_some());
        assert!(cache.insert(&[9; 32], vec![0; 1]));
        assert!(cache.keep_within(400), "401 bytes are past 400");
        assert!(!dir.exists(), "the old entries are deleted");
        let old: Vec<_> = std::fs::read_dir(std::env::temp_dir())
            .expect("the temporary directory")
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name().to_string_lossy().starts_with(&format!(
                    "wardlock-function-cache-limit-{}.old",
                    std::process::id()
                ))
            })
            .collect();
        assert!(old.is_empty(), "renamed but not deleted: {old:?}");
        // It goes on from empty.
        assert!(cache.get(&[0; 32]).is_none());
        assert!(cache.insert(&[0; 32], vec![0; 1]));
        assert!(cache.get(&[0; 32]).is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn keys_it_cannot_name_a_file_after_are_neither_read_nor_written() {
        let cache = FunctionCache::new(scratch("keys"));
        assert!(!cache.insert(&[], b"x".to_vec()));
        assert!(!cache.insert(&[1; MAX_KEY_LEN + 1], b"x".to_vec()));
        assert!(cache.get(&[]).is_none());
    }

    #[test]
    fn an_unwritable_directory_is_a_skipped_insert() {
        let cache = FunctionCache::new(PathBuf::from("/proc/wardlock-cannot-be-here"));
        assert!(!cache.insert(&[7; 32], b"x".to_vec()));
        assert!(cache.get(&[7; 32]).is_none());
    }
}

//! `counter3 LOCK_NAME ITERATIONS FILE`: the `counter` example as a WASI 0.3
//! command on the SDK's 0.3 API. ITERATIONS times: await one of 4 permits of
//! `LOCK_NAME-slots` (at most 4 counters work at once), then LOCK_NAME
//! exclusively together with `LOCK_NAME-config` shared (one `acquire_all`),
//! add one to the integer in FILE (missing or empty: 0), and release by
//! dropping the guards. Between the read and the write it checks that the
//! lock is still held; it stops at the first error.
//!
//! Exit: 0 success, 1 lock or I/O error or bad arguments.

use wardlock_guest::v3::{Error, Lock, Run, acquire_all, acquire_permit, export_command};

struct Counter;

impl Run for Counter {
    async fn run() -> Result<(), ()> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let [lock, iterations, file] = args.as_slice() else {
            eprintln!("usage: counter3 LOCK_NAME ITERATIONS FILE");
            return Err(());
        };
        let Ok(iterations) = iterations.parse::<u64>() else {
            eprintln!("counter3: ITERATIONS must be a number, not {iterations}");
            return Err(());
        };
        match count(lock, iterations, file).await {
            Ok(token) => {
                println!("counter3: {lock} +{iterations} (last fencing token {token})");
                Ok(())
            }
            Err(message) => {
                eprintln!("counter3: {message}");
                Err(())
            }
        }
    }
}

/// Adds `iterations` to the number in `file` under `lock`; the last token.
async fn count(lock: &str, iterations: u64, file: &str) -> Result<u64, String> {
    let mut token = 0;
    for _ in 0..iterations {
        let slot = acquire_permit(&format!("{lock}-slots"), 4, None)
            .await
            .map_err(|e| e.to_string())?;
        let wanted = [
            Lock::exclusive(lock),
            Lock::shared(format!("{lock}-config")),
        ];
        let guards = acquire_all(&wanted, None)
            .await
            .map_err(|e| e.to_string())?;
        let Some(guard) = guards.first() else {
            return Err("acquire_all returned no guard".into());
        };
        token = guard.fencing_token();
        let value = read(file)?;
        guard.check().map_err(|e: Error| e.to_string())?;
        std::fs::write(file, (value + 1).to_string()).map_err(|e| format!("{file}: {e}"))?;
        drop(guards);
        drop(slot);
    }
    Ok(token)
}

/// The integer in `file`; 0 when it is missing or empty.
fn read(file: &str) -> Result<u64, String> {
    match std::fs::read_to_string(file) {
        Ok(text) if text.trim().is_empty() => Ok(0),
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|_| format!("{file} holds {text:?}, not a number")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(format!("{file}: {e}")),
    }
}

export_command!(Counter);

//! `singleton-job RECORDS [BEATS]`: the job `wardlock run --singleton NAME`
//! runs on exactly one host. It reads its term from the environment
//! (`WARDLOCK_SINGLETON_TERM`, set by the host), appends `start TERM NANOS`
//! to the file RECORDS, then `alive TERM NANOS` every 20 ms, BEATS times
//! (default: until stopped); after its third heartbeat it prints `start
//! TERM` on stdout (so a test that stops it then finds its records). NANOS is
//! the wall clock in nanoseconds, so a test reading the records of every
//! host's job can check that no two terms ever ran at once: each term's last
//! heartbeat comes before the next term's start.

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(records) = args.next() else {
        eprintln!("usage: singleton-job RECORDS [BEATS]");
        std::process::exit(2);
    };
    let beats: u64 = args.next().and_then(|b| b.parse().ok()).unwrap_or(u64::MAX);
    let term = std::env::var("WARDLOCK_SINGLETON_TERM").unwrap_or_else(|_| "none".into());
    record(&records, "start", &term);
    for beat in 0..beats {
        std::thread::sleep(Duration::from_millis(20));
        record(&records, "alive", &term);
        if beat == 2 {
            println!("start {term}");
            let _ = std::io::stdout().flush();
        }
    }
}

/// Appends `WHAT TERM NANOS` to `file`, in one write.
fn record(file: &str, what: &str, term: &str) {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let line = format!("{what} {term} {nanos}\n");
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(error) = appended {
        eprintln!("singleton-job: cannot append to {file}: {error}");
        std::process::exit(1);
    }
}

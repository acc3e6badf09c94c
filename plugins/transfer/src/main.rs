//! `transfer FROM TO ROUNDS DIR`: the 0.2.0 SDK (`wardlock_guest::v2`) at work.
//!
//! ROUNDS times: take the locks `accounts/FROM` and `accounts/TO` as one
//! request ([`acquire_all`]: all or nothing, deadlock-free whatever the order,
//! so `transfer a b` and `transfer b a` run side by side), move one unit from
//! the balance in `DIR/FROM` to the one in `DIR/TO` (signed integers; a
//! missing file is 0), and release both. Before writing it checks, without
//! asking the host, that neither lock stopped being held ([`Guard::subscribe`]
//! pollables that are not ready), and stops otherwise. Then it audits: a shared
//! lock on `accounts/FROM` requested with [`Lock::acquire_async`], waited for
//! beside a 10 s timer with one `poll`.
//!
//! Prints `transfer: FROM->TO ROUNDS rounds, audit FROM=<balance>`.
//! Exit codes: 0 success, 1 lock or I/O error, 2 bad arguments.

use std::process::ExitCode;
use std::time::Duration;

use wardlock_guest::Error;
use wardlock_guest::v2::{Guard, Lock, acquire_all};
use wasip2::clocks::monotonic_clock::subscribe_duration;
use wasip2::io::poll::poll;

const USAGE: &str = "usage: transfer FROM TO ROUNDS DIR";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [from, to, rounds, dir] = args.as_slice() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let Ok(rounds) = rounds.parse::<u64>() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    match run(from, to, rounds, dir) {
        Ok(audit) => {
            println!("transfer: {from}->{to} {rounds} rounds, audit {from}={audit}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("transfer: {why}");
            ExitCode::from(1)
        }
    }
}

fn run(from: &str, to: &str, rounds: u64, dir: &str) -> Result<i64, String> {
    let accounts = [
        Lock::exclusive(format!("accounts/{from}")),
        Lock::exclusive(format!("accounts/{to}")),
    ];
    for round in 0..rounds {
        let guards = acquire_all(&accounts, Some(Duration::from_secs(10)))
            .map_err(|e| format!("round {round}: {e}"))?;
        let (source, target) = (balance(dir, from)?, balance(dir, to)?);
        still_held(&guards).map_err(|e| format!("round {round}: {e}"))?;
        write(dir, from, source - 1)?;
        write(dir, to, target + 1)?;
        for guard in guards {
            guard.release().map_err(|e| format!("round {round}: {e}"))?;
        }
    }
    audit(dir, from)
}

/// Fails if some guard is no longer held, without asking the host for
/// statuses: a guard's pollable is ready only then.
fn still_held(guards: &[Guard]) -> Result<(), Error> {
    for guard in guards {
        let gone = guard.subscribe();
        if gone.ready() {
            drop(gone);
            return Err(Error::Lost);
        }
    }
    Ok(())
}

/// Reads `dir/from` under a shared lock requested without blocking, waiting
/// for it beside a timer.
fn audit(dir: &str, from: &str) -> Result<i64, String> {
    let pending = Lock::shared(format!("accounts/{from}"))
        .acquire_async()
        .map_err(|e| format!("audit: {e}"))?;
    let granted = pending.subscribe();
    let timer = subscribe_duration(10_000_000_000);
    let ready = poll(&[&granted, &timer]);
    drop((granted, timer));
    if !ready.contains(&0) {
        return Err("audit: no shared lock within 10 s".into());
    }
    let guard = match pending.get() {
        Some(result) => result.map_err(|e| format!("audit: {e}"))?,
        None => return Err("audit: the pending lock was not finished".into()),
    };
    let value = balance(dir, from)?;
    drop(guard);
    Ok(value)
}

fn balance(dir: &str, account: &str) -> Result<i64, String> {
    let path = format!("{dir}/{account}");
    match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => Ok(0),
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|e| format!("{path}: not an integer: {e}")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(format!("{path}: {e}")),
    }
}

fn write(dir: &str, account: &str, value: i64) -> Result<(), String> {
    let path = format!("{dir}/{account}");
    std::fs::write(&path, format!("{value}\n")).map_err(|e| format!("{path}: {e}"))
}

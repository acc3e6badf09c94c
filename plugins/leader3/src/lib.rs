//! `leader3 COMMAND ARGS...`: a singleton job as a WASI 0.3 command on the
//! SDK's 0.3 API (`wardlock_guest::v3`): its election, its guarded store
//! and revocation, each call awaited.
//!
//! - `lead ELECTION VALUE ROUNDS`: campaign for ELECTION as VALUE; once it
//!   leads, ROUNDS times read `count` from the election's store and write
//!   it plus one as the leader (stopping if the leadership's `not_held`
//!   future completed); resign. Prints `lead: VALUE +ROUNDS (term T)`.
//! - `watch ELECTION COUNT`: observe ELECTION and print the first COUNT
//!   leaders of the stream, one line each: `leader: VALUE` or
//!   `leader: none`.
//! - `yield LOCK`: hold LOCK, then hold `parked` (the caller's sign that
//!   the guard's `revoked` future exists), await that future, and print
//!   `asked to yield; requested: BOOL` before letting go.
//! - `ask LOCK`: ask LOCK's holders to give it up; prints `asked N`.
//!
//! Exit: 0 success, 1 lock error or bad arguments (said on stderr).

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};

use wardlock_guest::v3::election::{campaign, observe};
use wardlock_guest::v3::{Error, Lock, Run, export_command, guarded, request_revocation};

struct Leader;

impl Run for Leader {
    async fn run() -> Result<(), ()> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let result = match args.as_slice() {
            ["lead", election, value, rounds] => lead(election, value, rounds).await,
            ["watch", election, count] => watch(election, count).await,
            ["yield", lock] => give_way(lock).await,
            ["ask", lock] => ask(lock).await,
            _ => Err("usage: leader3 lead|watch|yield|ask ARGS...".into()),
        };
        result.map_err(|message| eprintln!("leader3: {message}"))
    }
}

fn number(text: &str) -> Result<u64, String> {
    text.parse().map_err(|_| format!("not a number: {text}"))
}

fn said(error: Error) -> String {
    error.to_string()
}

/// Whether `future` has completed, polled once (it does not wait).
fn ready(future: std::pin::Pin<&mut impl Future>) -> bool {
    let mut cx = Context::from_waker(std::task::Waker::noop());
    matches!(future.poll(&mut cx), Poll::Ready(_))
}

async fn lead(election: &str, value: &str, rounds: &str) -> Result<(), String> {
    let rounds = number(rounds)?;
    let leadership = campaign(election, value, None).await.map_err(said)?;
    let mut lost = pin!(leadership.not_held());
    for _ in 0..rounds {
        if ready(lost.as_mut()) {
            return Err(format!("{election}: no longer the leader"));
        }
        let now = match guarded::get(election, "count").await.map_err(said)? {
            Some(entry) => number(&String::from_utf8_lossy(&entry.value))?,
            None => 0,
        };
        leadership
            .put("count", (now + 1).to_string().as_bytes())
            .await
            .map_err(said)?;
    }
    println!("lead: {value} +{rounds} (term {})", leadership.term());
    leadership.resign().map_err(said)
}

async fn watch(election: &str, count: &str) -> Result<(), String> {
    let mut leaders = observe(election).map_err(said)?;
    for _ in 0..number(count)? {
        match leaders.next().await {
            Some(Some(leader)) => println!("leader: {}", leader.value),
            Some(None) => println!("leader: none"),
            None => return Err(format!("{election}: the stream of leaders ended")),
        }
    }
    Ok(())
}

async fn give_way(lock: &str) -> Result<(), String> {
    let guard = Lock::exclusive(lock).await.map_err(said)?;
    let asked = guard.revoked();
    let parked = Lock::exclusive("parked").await.map_err(said)?;
    asked.await;
    let requested = guard.revocation_requested().await;
    println!("asked to yield; requested: {requested}");
    drop(parked);
    guard.release().map_err(said)
}

async fn ask(lock: &str) -> Result<(), String> {
    let asked = request_revocation(lock).await.map_err(said)?;
    println!("asked {asked}");
    Ok(())
}

export_command!(Leader);

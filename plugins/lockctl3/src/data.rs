//! `lockctl3`'s commands on 0.3.0's `guarded` store and `election`.
//!
//! - `store NAME`: hold NAME; put, get, list, delete an entry `k1` of its
//!   store, and try the calls a holder may not make; one line each:
//!   `put: rev=R`, `get: v1 token=T`, `keys: k1`, `shared put: ERROR`,
//!   `delete: true`, `delete again: false`, `get after delete: none`,
//!   `put after release: ERROR`.
//! - `put-count NAME KEY ITERATIONS`: ITERATIONS times, await NAME, read
//!   KEY of its store (a decimal number; none is 0), write it plus one,
//!   release; prints `put-count: NAME/KEY +ITERATIONS`.
//! - `elect NAME`: the whole election, one line each: `leader: none`,
//!   `observed: none`, `leads term=T`, `observed: alpha term=T`,
//!   `proclaim: ok`, `observed: alpha-2 term=T`, `put: rev=R`,
//!   `second: ERROR` (a second campaign's 50 ms timeout),
//!   `resign: ok`, `not-held: STATUS`, `resign again: ERROR`,
//!   `observed: none`, `leader: none`, `bad name: ERROR`.
//! - `campaign-cancel NAME GATE`: campaign for NAME while awaiting `parked`
//!   then GATE; once GATE is granted, drop (cancel) the campaign, print
//!   `campaign-cancel: GATE first`, then await `GATE-2` and print `gate`.

use futures::future::{Either, select};

use super::bindings::wardlock::lock::election::{self, LeaderInfo};
use super::bindings::wardlock::lock::guarded;
use super::bindings::wardlock::lock::locks::{self, Options};
use super::bindings::wardlock::lock::types::Mode;
use super::{exclusive, number, say};

pub(super) async fn store(name: &str) -> Result<(), String> {
    let lock = locks::acquire(name.to_string(), exclusive(None))
        .await
        .map_err(|e| say(&e))?;
    let revision = guarded::put(&lock, "k1".into(), b"v1".to_vec())
        .await
        .map_err(|e| say(&e))?;
    println!("put: rev={revision}");
    match guarded::get(name.to_string(), "k1".into()).await {
        Ok(Some(entry)) => println!(
            "get: {} token={}",
            String::from_utf8_lossy(&entry.value),
            entry.token
        ),
        other => println!("get: {other:?}"),
    }
    let keys = guarded::keys(name.to_string(), String::new(), 10)
        .await
        .map_err(|e| say(&e))?;
    println!("keys: {}", keys.join(" "));
    let shared = locks::acquire(
        format!("{name}-s"),
        Options {
            mode: Mode::Shared,
            timeout_ms: None,
        },
    )
    .await
    .map_err(|e| say(&e))?;
    let refused = guarded::put(&shared, "k1".into(), b"x".to_vec()).await;
    println!("shared put: {}", shown(refused.map(|r| r.to_string())));
    println!(
        "delete: {}",
        shown(
            guarded::delete(&lock, "k1".into())
                .await
                .map(|d| d.to_string())
        )
    );
    println!(
        "delete again: {}",
        shown(
            guarded::delete(&lock, "k1".into())
                .await
                .map(|d| d.to_string())
        )
    );
    let after = guarded::get(name.to_string(), "k1".into()).await;
    println!(
        "get after delete: {}",
        shown(after.map(|e| e.map_or("none".into(), |e| format!("{:?}", e.value))))
    );
    lock.release().map_err(|e| say(&e))?;
    let late = guarded::put(&lock, "k1".into(), b"late".to_vec()).await;
    println!("put after release: {}", shown(late.map(|r| r.to_string())));
    shared.release().map_err(|e| say(&e))
}

pub(super) async fn put_count(name: &str, key: &str, iterations: &str) -> Result<(), String> {
    for _ in 0..number(iterations)? {
        let lock = locks::acquire(name.to_string(), exclusive(None))
            .await
            .map_err(|e| say(&e))?;
        let now = match guarded::get(name.to_string(), key.to_string())
            .await
            .map_err(|e| say(&e))?
        {
            Some(entry) => number(&String::from_utf8_lossy(&entry.value))?,
            None => 0,
        };
        guarded::put(&lock, key.to_string(), (now + 1).to_string().into_bytes())
            .await
            .map_err(|e| say(&e))?;
        lock.release().map_err(|e| say(&e))?;
    }
    println!("put-count: {name}/{key} +{iterations}");
    Ok(())
}

pub(super) async fn elect(name: &str) -> Result<(), String> {
    let before = election::leader(name.to_string()).await;
    println!("leader: {}", shown(before.map(|l| leader_line(l.as_ref()))));
    let mut observed = election::observe(name).map_err(|e| say(&e))?;
    let mut observe = async || match observed.next().await {
        Some(leader) => println!("observed: {}", leader_line(leader.as_ref())),
        None => println!("observed: the stream ended"),
    };
    observe().await;
    let leadership = election::campaign(name.to_string(), "alpha".into(), None)
        .await
        .map_err(|e| say(&e))?;
    println!("leads term={}", leadership.term());
    observe().await;
    let proclaimed = leadership.proclaim("alpha-2".into()).await;
    println!("proclaim: {}", shown(proclaimed.map(|()| "ok".to_string())));
    observe().await;
    let written = leadership.put("epoch".into(), b"one".to_vec()).await;
    println!("put: {}", shown(written.map(|r| format!("rev={r}"))));
    let second = election::campaign(name.to_string(), "again".into(), Some(50)).await;
    println!(
        "second: {}",
        shown(second.map(|l| format!("term={}", l.term())))
    );
    let not_held = leadership.not_held();
    println!(
        "resign: {}",
        shown(leadership.resign().map(|()| "ok".into()))
    );
    println!("not-held: {:?}", not_held.await);
    let again = leadership.resign();
    println!("resign again: {}", shown(again.map(|()| "ok".into())));
    observe().await;
    let after = election::leader(name.to_string()).await;
    println!("leader: {}", shown(after.map(|l| leader_line(l.as_ref()))));
    let bad = election::campaign("../bad".into(), "x".into(), None).await;
    println!(
        "bad name: {}",
        shown(bad.map(|l| format!("term={}", l.term())))
    );
    Ok(())
}

pub(super) async fn campaign_cancel(name: &str, gate: &str) -> Result<(), String> {
    let campaign = Box::pin(election::campaign(
        name.to_string(),
        "cancelled".into(),
        None,
    ));
    let gated = Box::pin(async {
        let parked = locks::acquire("parked".to_string(), exclusive(None)).await;
        let gate = locks::acquire(gate.to_string(), exclusive(None)).await;
        (parked, gate)
    });
    let held = match select(campaign, gated).await {
        Either::Left((won, _)) => {
            return Err(format!(
                "the campaign ended first: {:?}",
                won.map(|l| l.term())
            ));
        }
        // Dropping `campaign` here cancels it.
        Either::Right(((parked, gate), campaign)) => {
            drop(campaign);
            (parked.map_err(|e| say(&e))?, gate.map_err(|e| say(&e))?)
        }
    };
    println!("campaign-cancel: {gate} first");
    let last = locks::acquire(format!("{gate}-2"), exclusive(None))
        .await
        .map_err(|e| say(&e))?;
    println!("gate");
    drop((held, last));
    Ok(())
}

/// `leader-info` as `VALUE term=T`, or `none`.
fn leader_line(leader: Option<&LeaderInfo>) -> String {
    leader.map_or("none".into(), |l| format!("{} term={}", l.value, l.term))
}

/// A call's answer, or its error as `say` shows it.
fn shown(answer: Result<String, super::Error>) -> String {
    answer.unwrap_or_else(|e| say(&e))
}

//! Leader election (0.2.2): leaderships l1, l2… and observers o1, o2….
//!
//! | command                     | prints                                       |
//! |-----------------------------|----------------------------------------------|
//! | `campaign NAME VALUE TIMEOUT` | `l<N> term=<T>` or an error line           |
//! | `leader NAME`               | `none` or `<VALUE> term=<T>`, or an error    |
//! | `lstatus lN`                | `held`, `suspended`, `lost` or `released`    |
//! | `proclaim lN VALUE`         | `ok` or an error line                        |
//! | `lput lN KEY VALUE`         | `rev=<R>` or an error line                   |
//! | `resign lN`                 | `ok` or an error line                        |
//! | `observe NAME`              | `o<N>` or an error line                      |
//! | `oleader oN`                | as `leader`, through the observer            |
//! | `owait oN MS`               | `changed` or `timer`: the observer's pollable or a timer, first |
//!
//! TIMEOUT is milliseconds or `-`.

use super::bindings::wardlock::lock::election::{self, LeaderInfo, Leadership, Observer};
use super::{State, error_line, status_name, timeout_of};

/// Leaderships and observers of one run.
#[derive(Default)]
pub(super) struct Elections {
    leaderships: Vec<Option<Leadership>>,
    observers: Vec<Observer>,
}

impl Elections {
    fn leadership(&self, word: &str) -> Option<&Leadership> {
        let n: usize = word.strip_prefix('l')?.parse().ok()?;
        self.leaderships.get(n.checked_sub(1)?)?.as_ref()
    }

    fn observer(&self, word: &str) -> Option<&Observer> {
        let n: usize = word.strip_prefix('o')?.parse().ok()?;
        self.observers.get(n.checked_sub(1)?)
    }
}

/// Runs the command; `None` when `words` is not one (or malformed).
pub(super) fn execute(words: &[&str], state: &mut State) -> Option<String> {
    let elections = &mut state.elections;
    let line = match words {
        ["campaign", name, value, timeout] => {
            match election::campaign(name, value, timeout_of(timeout)?) {
                Ok(leadership) => {
                    let term = leadership.term();
                    elections.leaderships.push(Some(leadership));
                    format!("l{} term={term}", elections.leaderships.len())
                }
                Err(error) => error_line(&error),
            }
        }
        ["leader", name] => leader_line(election::leader(name)),
        ["lstatus", l] => match elections.leadership(l) {
            Some(leadership) => status_name(leadership.status()).into(),
            None => "err no-such-leadership".into(),
        },
        ["proclaim", l, value] => match elections.leadership(l) {
            Some(leadership) => match leadership.proclaim(value) {
                Ok(()) => "ok".into(),
                Err(error) => error_line(&error),
            },
            None => "err no-such-leadership".into(),
        },
        ["lput", l, key, value] => match elections.leadership(l) {
            Some(leadership) => match leadership.put(key, value.as_bytes()) {
                Ok(revision) => format!("rev={revision}"),
                Err(error) => error_line(&error),
            },
            None => "err no-such-leadership".into(),
        },
        ["resign", l] => match elections.leadership(l) {
            Some(leadership) => match leadership.resign() {
                Ok(()) => "ok".into(),
                Err(error) => error_line(&error),
            },
            None => "err no-such-leadership".into(),
        },
        ["observe", name] => match election::observe(name) {
            Ok(observer) => {
                elections.observers.push(observer);
                format!("o{}", elections.observers.len())
            }
            Err(error) => error_line(&error),
        },
        ["oleader", o] => match elections.observer(o) {
            Some(observer) => leader_line(observer.leader()),
            None => "err no-such-observer".into(),
        },
        ["owait", o, ms] => {
            let millis: u64 = ms.parse().ok()?;
            match elections.observer(o) {
                Some(observer) => {
                    let changed = observer.subscribe();
                    let timer = wasip2::clocks::monotonic_clock::subscribe_duration(
                        millis.saturating_mul(1_000_000),
                    );
                    let ready = wasip2::io::poll::poll(&[&changed, &timer]);
                    if ready.contains(&0) {
                        "changed"
                    } else {
                        "timer"
                    }
                    .into()
                }
                None => "err no-such-observer".into(),
            }
        }
        _ => return None,
    };
    Some(line)
}

fn leader_line(
    leader: Result<Option<LeaderInfo>, super::bindings::wardlock::lock::types::Error>,
) -> String {
    match leader {
        Ok(None) => "none".into(),
        Ok(Some(leader)) => format!("{} term={}", leader.value, leader.term),
        Err(error) => error_line(&error),
    }
}

//! The checker of `lock-set` histories (Jepsen's lock-set, issue 35): the
//! JSON lines every `plugins/lock-set` guest printed, plus the set as it
//! ended, judged against what a lock with fenced writes promises.
//!
//! - (a) every acknowledged add (`add` `ok`) is in the final set; one that
//!   is not is **lost**;
//! - (b) guarded variant only (its commits carry the engine's revision and
//!   the writer's token): sorted by revision, acknowledged writes' tokens
//!   never go down; the final entry's token is at least the largest
//!   acknowledged one, and above it only if it is the token of a write whose
//!   outcome is unknown (`info`), never of a refused one;
//! - (c) no two guests held the lock at once unless one of the two holds
//!   was told `lost`: a hold runs from its `acquire` `ok` to its `release`
//!   `invoke` (the span the guest surely believed it held the lock; without
//!   a release, a killed host's, to the guest's last line), so an overlap
//!   is never a timing artefact of when lines were stamped.
//!
//! Timestamps are the guests' wall clocks (`wasi:clocks`), one machine's
//! clock for every host process.
//!
//! The native chaos workers (`crate::chaos`: leader kills, restarts) write
//! the same events, stamped on one monotonic clock, plus what a guest cannot
//! see as it happens: `lost` (`info`), the moment the host told a hold it
//! was lost. That ends the hold there, and excuses nothing after: a hold
//! that overlaps another before its `lost` is a double holder, so the check
//! shows the order (the old holder told `lost` before the next grant), not
//! a margin. Their histories also go through (d):
//! - (d) tokens rise: ordered by when they began, holds carry strictly
//!   rising fencing tokens (`token_regressions`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

/// How an operation's line ended it (or that it started).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Invoke,
    Ok,
    /// Definitely did not happen.
    Fail,
    /// Unknown: may or may not have happened.
    Info,
}

/// One line of a guest's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// `acquire`, `add`, `read`, `release` (others are kept and ignored).
    pub op: String,
    pub kind: Kind,
    /// The guest instance.
    pub id: String,
    pub element: Option<String>,
    pub token: Option<u64>,
    /// The engine's revision of an acknowledged guarded write.
    pub revision: Option<u64>,
    pub error: Option<String>,
    pub t_ns: u64,
}

/// Which store the guests wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// A file every host shares: nothing fences a write.
    Plain,
    /// The guarded store: a write commits only while its lock stands.
    Guarded,
}

impl Variant {
    /// The guest's MODE argument and the name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Plain => "plain",
            Variant::Guarded => "guarded",
        }
    }
}

/// The set as it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FinalSet {
    pub elements: BTreeSet<String>,
    /// The guarded entry's token and revision (none for a file, or without
    /// an entry).
    pub token: Option<u64>,
    pub revision: Option<u64>,
}

impl FinalSet {
    /// A plain set: the file's lines.
    pub fn from_file_text(text: &str) -> FinalSet {
        FinalSet {
            elements: text
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect(),
            ..FinalSet::default()
        }
    }

    /// A guarded set from `lock-set read`'s `final` line.
    ///
    /// # Errors
    /// When the line is not a successful `final` line.
    pub fn from_final_line(line: &str) -> Result<FinalSet, String> {
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("not JSON: {e}: {line}"))?;
        if value["op"] != "final" || value["type"] != "ok" {
            return Err(format!("not a successful final read: {line}"));
        }
        let elements = value["set"]
            .as_array()
            .ok_or_else(|| format!("no set in {line}"))?
            .iter()
            .filter_map(|e| e.as_str().map(str::to_owned))
            .collect();
        Ok(FinalSet {
            elements,
            token: value["token"].as_u64(),
            revision: value["rev"].as_u64(),
        })
    }
}

/// What a history shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Distinct elements whose add was acknowledged.
    pub acknowledged: u64,
    /// Acknowledged elements missing from the final set.
    pub lost: u64,
    /// Adds refused with `lost` (a stale holder's write, nothing written).
    pub stale_refused: u64,
    /// Adds whose outcome is unknown (`info`, or no completion: a killed host).
    pub unknown: u64,
    /// Holds seen (acquire `ok`).
    pub holds: u64,
    /// (c): pairs of holds of different guests that overlapped with neither
    /// told `lost`.
    pub overlaps: u64,
    /// (b): guarded writes out of token order, and a final entry no
    /// acknowledged or unknown write explains.
    pub order_violations: u64,
    /// Lines that were not history events (reported, not judged).
    pub malformed: u64,
    /// (d): a hold whose token is not above the token of the hold that
    /// began before it (judged apart: a guest's line can be stamped after a
    /// pause, out of grant order; the chaos workers stamp as they are
    /// granted).
    pub token_regressions: u64,
}

impl Counts {
    /// Everything that must never happen, whatever the variant: (b) + (c).
    pub fn violations(&self) -> u64 {
        self.overlaps + self.order_violations
    }

    /// Adds these counts to `self` (rounds summed).
    pub fn add(&mut self, other: &Counts) {
        self.acknowledged += other.acknowledged;
        self.lost += other.lost;
        self.stale_refused += other.stale_refused;
        self.unknown += other.unknown;
        self.holds += other.holds;
        self.overlaps += other.overlaps;
        self.order_violations += other.order_violations;
        self.malformed += other.malformed;
        self.token_regressions += other.token_regressions;
    }
}

/// The counts and, for a failure message, what was wrong (the first few).
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub counts: Counts,
    pub problems: Vec<String>,
}

/// Problems described in a report: enough to diagnose, not a flood.
const MAX_PROBLEMS: usize = 20;

impl Report {
    fn problem(&mut self, text: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(text);
        }
    }
}

/// Parses history lines: the events, and how many lines were not events
/// (a host's own messages, a line cut by a kill).
pub fn parse<'a>(lines: impl IntoIterator<Item = &'a str>) -> (Vec<Event>, u64) {
    let mut events = Vec::new();
    let mut malformed = 0;
    for line in lines {
        match event(line) {
            Some(event) => events.push(event),
            None => malformed += 1,
        }
    }
    (events, malformed)
}

fn event(line: &str) -> Option<Event> {
    let value: Value = serde_json::from_str(line.trim()).ok()?;
    let kind = match value["type"].as_str()? {
        "invoke" => Kind::Invoke,
        "ok" => Kind::Ok,
        "fail" => Kind::Fail,
        "info" => Kind::Info,
        _ => return None,
    };
    let text = |key: &str| value[key].as_str().map(str::to_owned);
    Some(Event {
        op: text("op")?,
        kind,
        id: text("id")?,
        element: text("el"),
        token: value["token"].as_u64(),
        revision: value["rev"].as_u64(),
        error: text("err"),
        t_ns: value["t_ns"].as_u64()?,
    })
}

/// One hold of the lock by one guest.
#[derive(Debug, Clone)]
struct Hold {
    id: String,
    token: Option<u64>,
    start: u64,
    end: u64,
    told_lost: bool,
}

/// An add as the history tells it.
#[derive(Debug, Clone)]
struct Add {
    element: String,
    token: Option<u64>,
    revision: Option<u64>,
    outcome: Option<Kind>,
    error: Option<String>,
}

/// Judges `events` (every guest's lines, each guest's in the order it
/// printed them) against `last`, the set as it ended.
pub fn check(events: &[Event], last: &FinalSet, variant: Variant, malformed: u64) -> Report {
    let mut report = Report::default();
    report.counts.malformed = malformed;
    let mut by_guest: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    for event in events {
        by_guest.entry(event.id.as_str()).or_default().push(event);
    }
    let mut holds = Vec::new();
    let mut adds = Vec::new();
    for guest in by_guest.values() {
        walk_guest(guest, &mut holds, &mut adds);
    }
    report.counts.holds = holds.len() as u64;
    check_adds(&adds, last, &mut report);
    if variant == Variant::Guarded {
        check_token_order(&adds, last, &mut report);
    }
    check_overlaps(&mut holds, &mut report);
    check_hold_tokens(&holds, &mut report);
    report
}

/// One guest's holds and adds, from its lines in order.
fn walk_guest(lines: &[&Event], holds: &mut Vec<Hold>, adds: &mut Vec<Add>) {
    let last_t = lines.last().map_or(0, |e| e.t_ns);
    let mut open: Option<Hold> = None;
    let mut add: Option<Add> = None;
    for event in lines {
        match (event.op.as_str(), event.kind) {
            ("acquire", Kind::Ok) => {
                holds.extend(open.take().map(|h| Hold {
                    end: event.t_ns,
                    ..h
                }));
                open = Some(Hold {
                    id: event.id.clone(),
                    token: event.token,
                    start: event.t_ns,
                    end: last_t,
                    told_lost: false,
                });
            }
            ("add", Kind::Invoke) => {
                adds.extend(add.take());
                add = Some(Add {
                    element: event.element.clone().unwrap_or_default(),
                    token: event.token,
                    revision: None,
                    outcome: None,
                    error: None,
                });
            }
            ("add", kind) => {
                if let Some(mut done) = add.take() {
                    done.outcome = Some(kind);
                    done.token = event.token.or(done.token);
                    done.revision = event.revision;
                    done.error = event.error.clone();
                    adds.push(done);
                }
            }
            ("release", Kind::Invoke) => {
                holds.extend(open.take().map(|h| Hold {
                    end: event.t_ns,
                    ..h
                }));
            }
            // The host told the open hold `lost` now (the hold of that
            // token: a late word of an earlier hold ends nothing): it ends
            // here, and nothing after is excused.
            ("lost", _)
                if open
                    .as_ref()
                    .is_some_and(|h| event.token.is_none_or(|t| h.token == Some(t))) =>
            {
                holds.extend(open.take().map(|h| Hold {
                    end: event.t_ns.max(h.start),
                    ..h
                }));
            }
            _ => {}
        }
        if event.error.as_deref() == Some("lost") {
            // The lost news belongs to the hold it came in: the open one,
            // or the one whose release just closed it.
            if let Some(hold) = open.as_mut() {
                hold.told_lost = true;
            } else if let Some(hold) = holds.last_mut().filter(|h| h.id == event.id) {
                hold.told_lost = true;
            }
        }
    }
    holds.extend(open);
    adds.extend(add);
}

/// (a): acknowledged adds in the final set; refused and unknown adds counted.
fn check_adds(adds: &[Add], last: &FinalSet, report: &mut Report) {
    let mut acknowledged = BTreeSet::new();
    for add in adds {
        match add.outcome {
            Some(Kind::Ok) => {
                acknowledged.insert(add.element.as_str());
            }
            Some(Kind::Fail) if add.error.as_deref() == Some("lost") => {
                report.counts.stale_refused += 1;
            }
            Some(Kind::Info) | None => report.counts.unknown += 1,
            _ => {}
        }
    }
    report.counts.acknowledged = acknowledged.len() as u64;
    for element in acknowledged {
        if !last.elements.contains(element) {
            report.counts.lost += 1;
            report.problem(format!(
                "acknowledged add of {element} is not in the final set"
            ));
        }
    }
}

/// (b): guarded writes committed in token order.
fn check_token_order(adds: &[Add], last: &FinalSet, report: &mut Report) {
    let mut committed: Vec<(u64, u64, &str)> = adds
        .iter()
        .filter(|a| a.outcome == Some(Kind::Ok))
        .filter_map(|a| Some((a.revision?, a.token?, a.element.as_str())))
        .collect();
    committed.sort_unstable();
    let mut highest: Option<(u64, u64)> = None;
    for &(revision, token, element) in &committed {
        if let Some((before_rev, before)) = highest
            && token < before
        {
            report.counts.order_violations += 1;
            report.problem(format!(
                "the write of {element} (token {token}, revision {revision}) committed after \
                 one with token {before} (revision {before_rev})"
            ));
        }
        if highest.is_none_or(|(_, t)| token >= t) {
            highest = Some((revision, token));
        }
    }
    let Some(token) = last.token else {
        return;
    };
    let max_acknowledged = committed.iter().map(|c| c.1).max();
    let unknown: Vec<u64> = adds
        .iter()
        .filter(|a| matches!(a.outcome, Some(Kind::Info) | None))
        .filter_map(|a| a.token)
        .collect();
    let refused: HashMap<u64, &str> = adds
        .iter()
        .filter(|a| a.outcome == Some(Kind::Fail))
        .filter_map(|a| Some((a.token?, a.element.as_str())))
        .collect();
    if let Some(element) = refused.get(&token) {
        report.counts.order_violations += 1;
        report.problem(format!(
            "the final entry has token {token}, whose write of {element} was refused"
        ));
    } else if max_acknowledged.is_some_and(|max| token < max) {
        report.counts.order_violations += 1;
        report.problem(format!(
            "the final entry's token {token} is below an acknowledged write's {}",
            max_acknowledged.unwrap_or_default()
        ));
    } else if max_acknowledged.is_none_or(|max| token > max) && !unknown.contains(&token) {
        report.counts.order_violations += 1;
        report.problem(format!(
            "the final entry's token {token} is no acknowledged or unknown write's"
        ));
    }
}

/// (d): holds that began one after the other carry rising tokens (holds
/// sorted by start, as [`check_overlaps`] leaves them; a hold ended by
/// `lost` before it was stamped, so empty, says nothing of the order).
fn check_hold_tokens(holds: &[Hold], report: &mut Report) {
    let mut before: Option<&Hold> = None;
    for hold in holds
        .iter()
        .filter(|h| h.end > h.start && h.token.is_some())
    {
        if let Some(earlier) = before
            && hold.token <= earlier.token
        {
            report.counts.token_regressions += 1;
            report.problem(format!(
                "{} began after {} with token {:?}, not above {:?}",
                hold.id, earlier.id, hold.token, earlier.token
            ));
        }
        before = Some(hold);
    }
}

/// (c): no two holds at once unless one was told `lost`.
fn check_overlaps(holds: &mut [Hold], report: &mut Report) {
    holds.sort_by_key(|h| h.start);
    for (index, first) in holds.iter().enumerate() {
        for second in &holds[index + 1..] {
            if second.start >= first.end {
                break;
            }
            if first.id != second.id && !first.told_lost && !second.told_lost {
                report.counts.overlaps += 1;
                report.problem(format!(
                    "{} (token {:?}) and {} (token {:?}) held the lock at once, neither told lost",
                    first.id, first.token, second.id, second.token
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line as the guest prints it.
    fn line(op: &str, kind: &str, id: &str, t: u64, extra: &str) -> String {
        format!(r#"{{"op":"{op}","type":"{kind}","id":"{id}"{extra},"t_ns":{t}}}"#)
    }

    /// One whole attempt: acquire at `t`, add `el` with `outcome`, release.
    fn attempt(id: &str, t: u64, token: u64, el: &str, outcome: &str) -> Vec<String> {
        let tok = format!(r#","token":{token}"#);
        let at = format!(r#","el":"{el}","token":{token}"#);
        let (kind, extra) = match outcome {
            "ok" => ("ok", format!(r#"{at},"rev":{}"#, 100 + token)),
            "lost" => ("fail", format!(r#"{at},"err":"lost""#)),
            "info" => ("info", format!(r#"{at},"err":"unavailable""#)),
            other => panic!("{other}"),
        };
        let release_lost = if outcome == "lost" {
            r#","err":"lost""#
        } else {
            ""
        };
        vec![
            line("acquire", "invoke", id, t, ""),
            line("acquire", "ok", id, t + 1, &tok),
            line("add", "invoke", id, t + 2, &at),
            line("read", "ok", id, t + 3, &at),
            line("add", kind, id, t + 4, &extra),
            line("release", "invoke", id, t + 5, &tok),
            line(
                "release",
                if outcome == "lost" { "fail" } else { "ok" },
                id,
                t + 6,
                &format!("{tok}{release_lost}"),
            ),
        ]
    }

    fn judged(lines: &[String], last: &FinalSet, variant: Variant) -> Counts {
        let (events, malformed) = parse(lines.iter().map(String::as_str));
        check(&events, last, variant, malformed).counts
    }

    fn set(elements: &[&str], token: Option<u64>) -> FinalSet {
        FinalSet {
            elements: elements.iter().map(|e| (*e).to_owned()).collect(),
            token,
            revision: token.map(|t| 100 + t),
        }
    }

    #[test]
    fn a_clean_guarded_history_passes() {
        let mut lines = attempt("a", 10, 1, "a-0", "ok");
        lines.extend(attempt("b", 20, 2, "b-0", "ok"));
        lines.extend(attempt("a", 30, 3, "a-1", "ok"));
        let counts = judged(
            &lines,
            &set(&["a-0", "b-0", "a-1"], Some(3)),
            Variant::Guarded,
        );
        assert_eq!(
            counts,
            Counts {
                acknowledged: 3,
                holds: 3,
                ..Counts::default()
            }
        );
    }

    #[test]
    fn an_acknowledged_add_missing_from_the_final_set_is_lost() {
        let mut lines = attempt("a", 10, 1, "a-0", "ok");
        lines.extend(attempt("b", 20, 2, "b-0", "ok"));
        let counts = judged(&lines, &FinalSet::from_file_text("a-0\n"), Variant::Plain);
        assert_eq!((counts.acknowledged, counts.lost), (2, 1));
        assert_eq!(counts.violations(), 0, "the file has no tokens to judge");
    }

    /// The paused holder: it read, was paused, `b` took the lock and wrote,
    /// and `a`'s write came back `lost` — refused, and its hold excused.
    #[test]
    fn a_refused_stale_write_counts_and_excuses_the_overlap() {
        let mut lines = attempt("a", 10, 1, "a-0", "lost");
        // b's whole attempt falls inside a's hold (10..15).
        lines.extend(attempt("b", 11, 2, "b-0", "ok").into_iter().take(5));
        lines.push(line("release", "invoke", "b", 14, r#","token":2"#));
        lines.extend(attempt("a", 30, 3, "a-0", "ok"));
        let counts = judged(&lines, &set(&["a-0", "b-0"], Some(3)), Variant::Guarded);
        assert_eq!(counts.stale_refused, 1);
        assert_eq!((counts.acknowledged, counts.lost), (2, 0));
        assert_eq!(counts.violations(), 0, "{counts:?}");
    }

    #[test]
    fn two_holds_at_once_without_lost_are_an_overlap() {
        let mut lines = attempt("a", 10, 1, "a-0", "ok");
        lines.extend(attempt("b", 12, 2, "b-0", "ok"));
        let counts = judged(&lines, &set(&["a-0", "b-0"], Some(2)), Variant::Guarded);
        assert_eq!(counts.overlaps, 1);
        assert_eq!(counts.violations(), 1);
    }

    /// A killed host's guest never released: its hold lasts to its last line,
    /// so a hold starting after that is fine and one before is not.
    #[test]
    fn a_killed_holder_holds_until_its_last_line() {
        let mut lines: Vec<String> = attempt("a", 10, 1, "a-0", "ok")
            .into_iter()
            .take(4)
            .collect();
        lines.extend(attempt("b", 20, 2, "b-0", "ok"));
        let last = set(&["b-0"], Some(2));
        let counts = judged(&lines, &last, Variant::Guarded);
        assert_eq!((counts.unknown, counts.overlaps, counts.lost), (1, 0, 0));
        let mut early: Vec<String> = attempt("a", 10, 1, "a-0", "ok")
            .into_iter()
            .take(4)
            .collect();
        early.extend(attempt("b", 11, 2, "b-0", "ok"));
        assert_eq!(judged(&early, &last, Variant::Guarded).overlaps, 1);
    }

    /// A host's `lost` ends the hold: a grant after it is no overlap, one
    /// before it is a double holder (the order is what counts).
    #[test]
    fn a_hold_ends_when_its_host_says_lost_and_not_before() {
        let history = |lost_at: u64| {
            let mut lines = vec![
                line("acquire", "ok", "a", 10, r#","token":1"#),
                line("lost", "info", "a", lost_at, ""),
                line("release", "invoke", "a", 40, r#","token":1"#),
            ];
            lines.extend(attempt("b", 20, 2, "b-0", "ok"));
            lines
        };
        let before = judged(&history(15), &set(&["b-0"], None), Variant::Plain);
        assert_eq!(before.overlaps, 0, "{before:?}");
        let after = judged(&history(25), &set(&["b-0"], None), Variant::Plain);
        assert_eq!(after.overlaps, 1, "told lost after b's grant: {after:?}");
    }

    /// Holds in the order they began carry rising tokens; a token at or
    /// below the one before is counted (a mutant that hands out stale
    /// tokens).
    #[test]
    fn tokens_that_do_not_rise_from_hold_to_hold_are_counted() {
        let mut rising = attempt("a", 10, 1, "a-0", "ok");
        rising.extend(attempt("b", 20, 2, "b-0", "ok"));
        let counts = judged(&rising, &set(&["a-0", "b-0"], None), Variant::Plain);
        assert_eq!(counts.token_regressions, 0);
        let mut stale = attempt("a", 10, 2, "a-0", "ok");
        stale.extend(attempt("b", 20, 2, "b-0", "ok"));
        stale.extend(attempt("c", 30, 1, "c-0", "ok"));
        let counts = judged(&stale, &set(&["a-0", "b-0", "c-0"], None), Variant::Plain);
        assert_eq!(counts.token_regressions, 2, "{counts:?}");
    }

    #[test]
    fn guarded_writes_out_of_token_order_are_violations() {
        let mut lines = attempt("a", 10, 5, "a-0", "ok");
        // Committed later (revision 110 > 105)... with a lower token.
        let mut late = attempt("b", 20, 10, "b-0", "ok");
        late[1] = line("acquire", "ok", "b", 21, r#","token":4"#);
        late[4] = line("add", "ok", "b", 24, r#","el":"b-0","token":4,"rev":110"#);
        lines.extend(late);
        let counts = judged(&lines, &set(&["a-0", "b-0"], Some(4)), Variant::Guarded);
        assert_eq!(counts.order_violations, 2, "the commit and the final entry");
    }

    #[test]
    fn a_final_entry_from_a_refused_write_is_a_violation() {
        let mut lines = attempt("a", 10, 1, "a-0", "ok");
        lines.extend(attempt("b", 20, 2, "b-0", "lost"));
        let counts = judged(&lines, &set(&["a-0", "b-0"], Some(2)), Variant::Guarded);
        assert_eq!(counts.order_violations, 1);
        let fine = judged(&lines, &set(&["a-0"], Some(1)), Variant::Guarded);
        assert_eq!(fine.violations(), 0);
        assert_eq!(fine.stale_refused, 1);
    }

    #[test]
    fn a_final_entry_from_an_unknown_write_is_allowed() {
        let mut lines = attempt("a", 10, 1, "a-0", "ok");
        lines.extend(attempt("b", 20, 2, "b-0", "info"));
        let counts = judged(&lines, &set(&["a-0", "b-0"], Some(2)), Variant::Guarded);
        assert_eq!((counts.unknown, counts.violations()), (1, 0));
        let unexplained = judged(&lines, &set(&["a-0"], Some(7)), Variant::Guarded);
        assert_eq!(unexplained.order_violations, 1);
    }

    #[test]
    fn lines_that_are_not_events_are_counted_apart() {
        let mut lines = attempt("a", 10, 1, "a-0", "ok");
        lines.push("wardlock: 1 instance(s) ...".to_owned());
        lines.push(r#"{"op":"add","type":"ok""#.to_owned());
        let counts = judged(&lines, &set(&["a-0"], Some(1)), Variant::Guarded);
        assert_eq!((counts.malformed, counts.acknowledged), (2, 1));
    }

    #[test]
    fn final_lines_parse() {
        let last =
            FinalSet::from_final_line(r#"{"op":"final","type":"ok","id":"read","set":["x-0","y-1"],"token":9,"rev":44,"t_ns":1}"#)
                .unwrap();
        assert_eq!(last, set(&["x-0", "y-1"], Some(9)).with_revision(44));
        let empty = FinalSet::from_final_line(
            r#"{"op":"final","type":"ok","id":"read","set":[],"token":null,"rev":null,"t_ns":1}"#,
        )
        .unwrap();
        assert_eq!(empty, FinalSet::default());
        assert!(
            FinalSet::from_final_line(r#"{"op":"final","type":"fail","err":"denied"}"#).is_err()
        );
    }

    impl FinalSet {
        fn with_revision(mut self, revision: u64) -> FinalSet {
            self.revision = Some(revision);
            self
        }
    }
}

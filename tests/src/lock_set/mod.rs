//! Jepsen's `lock-set` against wardlock (issue 35): `wardlock run` host
//! processes, each running `plugins/lock-set` guests that add unique
//! elements to one set under one lock, while a nemesis pauses (SIGSTOP) the
//! host holding the lock for longer than its session, and now and then
//! kills it (SIGKILL) and starts a replacement. The guests' histories and
//! the set as it ended go to [`history::check`].
//!
//! The nemesis aims, it does not guess: a guest prints its `read` line just
//! before its DELAY window (between reading the set and writing it back), so
//! the host that printed it is the holder, caught mid read-modify-write. It
//! stays stopped at least [`Scenario::min_pause`] (past the session, so the
//! engine hands the lock on) and until a guest of another host acknowledged
//! an add (so the next holder wrote meanwhile), at most
//! [`Scenario::max_pause`]. With a `plain` file that schedule loses the
//! other guest's add whenever the paused holder resumes and writes its stale
//! set; with the guarded store the resumed holder's write is refused with
//! `lost`. Every loop is bounded in faults and in time
//! ([`Scenario::round_limit`]); every process started here is killed when
//! its handle drops, whatever happens to the round.
//!
//! With `LOCK_SET_DUMP=DIR` in the environment each round's raw history is
//! written to `DIR/<lock name with _ for />`, for reading a failure.

pub mod history;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use self::history::{Counts, FinalSet, Kind, Report, Variant};
use crate::Guest;
use crate::serve::wardlock_bin;

/// One round's shape.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The engine's `wardlock run` flags: `["--zookeeper", ADDR]`, `["--etcd", ADDR]`.
    pub engine: Vec<String>,
    pub variant: Variant,
    /// Host processes at the start (a killed one is replaced).
    pub hosts: usize,
    /// Guests per host (`--instances`).
    pub instances: usize,
    /// Elements each guest adds.
    pub count: u64,
    /// Each guest's DELAY_MS: the window between read and write.
    pub delay: Duration,
    /// Faults the nemesis injects per round.
    pub faults: usize,
    /// Every `kill_every`-th fault (counted over rounds) kills the holder's
    /// host instead of pausing it.
    pub kill_every: usize,
    /// Each host's `--session-timeout`, seconds.
    pub session_timeout_secs: u64,
    /// A pause lasts at least this long (longer than the session timeout)...
    pub min_pause: Duration,
    /// ...and until another host acknowledged an add, at most this long.
    pub max_pause: Duration,
    /// A round that has not ended by then fails (its hosts are killed).
    pub round_limit: Duration,
}

impl Scenario {
    /// The shape the e2e test and the benchmark share: 3 hosts × 2 guests,
    /// 5 elements each with 100 ms between read and write (slow enough that
    /// the other hosts still have work when a pause ends, so the next fault
    /// finds a holder with someone left to take over), 2 s sessions, pauses
    /// of 3 s and up, every fifth fault a kill.
    pub fn new(engine: Vec<String>, variant: Variant) -> Scenario {
        Scenario {
            engine,
            variant,
            hosts: 3,
            instances: 2,
            count: 5,
            delay: Duration::from_millis(100),
            faults: 2,
            kill_every: 5,
            session_timeout_secs: 2,
            min_pause: Duration::from_secs(3),
            max_pause: Duration::from_secs(12),
            round_limit: Duration::from_secs(120),
        }
    }
}

/// What one round did and what its history shows.
#[derive(Debug, Clone)]
pub struct Round {
    pub report: Report,
    pub pauses: u64,
    pub kills: u64,
    pub wall: Duration,
    /// What the nemesis did, when (seconds into the round): for a reader of
    /// a failure or of a slow round.
    pub faults: Vec<String>,
}

/// The sum of several rounds.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    pub rounds: u64,
    pub counts: Counts,
    pub pauses: u64,
    pub kills: u64,
    pub wall: Duration,
    /// The first problems any round's checker described.
    pub problems: Vec<String>,
    /// Each round's wall time and faults, one line per round.
    pub timeline: Vec<String>,
}

impl Totals {
    /// Adds one round.
    pub fn add(&mut self, round: &Round) {
        self.rounds += 1;
        self.counts.add(&round.report.counts);
        self.pauses += round.pauses;
        self.kills += round.kills;
        self.wall += round.wall;
        self.timeline.push(format!(
            "round {} {:.1} s: {}",
            self.rounds - 1,
            round.wall.as_secs_f64(),
            round.faults.join(", ")
        ));
        let room = 20usize.saturating_sub(self.problems.len());
        self.problems
            .extend(round.report.problems.iter().take(room).cloned());
    }
}

/// Runs `rounds` rounds of `scenario`, each on its own lock
/// `lock-set/<prefix>/round<N>`, faults numbered on across rounds (so the
/// kills come every [`Scenario::kill_every`]-th fault of the whole run).
///
/// # Errors
/// As [`run_round`].
pub async fn run_rounds(scenario: &Scenario, prefix: &str, rounds: u64) -> anyhow::Result<Totals> {
    let mut totals = Totals::default();
    for round in 0..rounds {
        let lock = format!("lock-set/{prefix}/round{round}");
        let first_fault = usize::try_from(round).unwrap_or(0) * scenario.faults;
        let done = run_round(scenario, &lock, &format!("r{round}"), first_fault)
            .await
            .with_context(|| format!("round {round} of {prefix}"))?;
        totals.add(&done);
    }
    Ok(totals)
}

/// One round on `lock`: start the hosts (guest ids start with `tag`), run
/// the nemesis until every host has ended, read the final set, check.
///
/// # Errors
/// When a host cannot start, the round outlives [`Scenario::round_limit`]
/// or the final set cannot be read.
pub async fn run_round(
    scenario: &Scenario,
    lock: &str,
    tag: &str,
    first_fault: usize,
) -> anyhow::Result<Round> {
    // The first call builds the binary with cargo: not part of the round.
    wardlock_bin();
    let started = Instant::now();
    let dir = tempfile::tempdir().context("temp dir")?;
    let data = dir.path().join("data");
    std::fs::create_dir(&data).context("data dir")?;
    let mut nemesis = Nemesis {
        scenario,
        lock,
        tag,
        dir: dir.path(),
        data: &data,
        hosts: Vec::new(),
        live: 0,
        lines: Vec::new(),
        deadline: started + scenario.round_limit,
        pauses: 0,
        kills: 0,
        started,
        log: Vec::new(),
        fault: first_fault,
        acks_since_fault: 0,
        channel: mpsc::unbounded_channel(),
    };
    for _ in 0..scenario.hosts {
        nemesis.start_host()?;
    }
    let run = nemesis.run().await;
    if let Err(error) = run {
        return Err(error.context(nemesis.stderr_tails()));
    }
    let last = match scenario.variant {
        Variant::Plain => {
            FinalSet::from_file_text(&std::fs::read_to_string(data.join("set")).unwrap_or_default())
        }
        Variant::Guarded => read_guarded(scenario, lock).await?,
    };
    if let Some(dump) = std::env::var_os("LOCK_SET_DUMP") {
        let _ = std::fs::write(
            Path::new(&dump).join(lock.replace('/', "_")),
            nemesis.lines.join("\n"),
        );
    }
    let (events, malformed) = history::parse(nemesis.lines.iter().map(String::as_str));
    let report = history::check(&events, &last, scenario.variant, malformed);
    Ok(Round {
        report,
        pauses: nemesis.pauses,
        kills: nemesis.kills,
        wall: started.elapsed(),
        faults: nemesis.log,
    })
}

/// The guarded set as `lock-set read LOCK` reads it through the engine.
async fn read_guarded(scenario: &Scenario, lock: &str) -> anyhow::Result<FinalSet> {
    let output = Command::new(wardlock_bin())
        .arg("run")
        .args(["--cache-dir", crate::cache_dir()])
        .args(&scenario.engine)
        .arg(Guest::LockSet.path())
        .args(["--", "read", lock])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(crate::TEST_WAIT_LIMIT, output)
        .await
        .context("the final read did not end in time")?
        .context("start the final read")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains(r#""op":"final""#))
        .with_context(|| {
            format!(
                "no final line from the read: {stdout} {}",
                String::from_utf8_lossy(&output.stderr)
            )
        })?;
    FinalSet::from_final_line(line).map_err(anyhow::Error::msg)
}

/// A message from a host's stdout reader.
enum Message {
    Line(usize, String),
    Ended(usize),
}

/// One `wardlock run` of the round: killed (after a SIGCONT) when dropped.
struct Host {
    child: Child,
    stderr: PathBuf,
    /// Still running (not killed by the nemesis, stdout not closed).
    alive: bool,
}

impl Host {
    fn signal(&self, signal: i32) {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) on the PID of a child this round spawned and
            // has not reaped (`id` is `None` once it was).
            unsafe { libc::kill(pid as i32, signal) };
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        // `kill_on_drop` sends SIGKILL; resume first so nothing lingers
        // stopped if the kill races the reaping.
        self.signal(libc::SIGCONT);
    }
}

struct Nemesis<'a> {
    scenario: &'a Scenario,
    lock: &'a str,
    tag: &'a str,
    dir: &'a Path,
    data: &'a Path,
    hosts: Vec<Host>,
    /// Hosts whose stdout is still open.
    live: usize,
    /// Every line the guests printed, in arrival order (each guest's own
    /// lines in its order).
    lines: Vec<String>,
    deadline: Instant,
    pauses: u64,
    kills: u64,
    started: Instant,
    log: Vec<String>,
    /// The number of the next fault (over rounds).
    fault: usize,
    acks_since_fault: u64,
    channel: (
        mpsc::UnboundedSender<Message>,
        mpsc::UnboundedReceiver<Message>,
    ),
}

/// What a line tells the nemesis.
struct Seen {
    host: usize,
    read: bool,
    acknowledged: bool,
}

impl Nemesis<'_> {
    fn start_host(&mut self) -> anyhow::Result<()> {
        let index = self.hosts.len();
        let scenario = self.scenario;
        let stderr = self.dir.join(format!("host-{index}.stderr"));
        let mut child = Command::new(wardlock_bin())
            .arg("run")
            .args(["--cache-dir", crate::cache_dir()])
            .args(&scenario.engine)
            .args([
                "--session-timeout",
                &scenario.session_timeout_secs.to_string(),
            ])
            .args(["--instances", &scenario.instances.to_string()])
            .args(["--dir", &format!("{}::/data", self.data.display())])
            .arg(Guest::LockSet.path())
            .arg("--")
            .args([
                scenario.variant.name(),
                self.lock,
                &format!("{}h{index}", self.tag),
                &scenario.count.to_string(),
                &scenario.delay.as_millis().to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).context("host stderr file")?)
            .kill_on_drop(true)
            .spawn()
            .context("start wardlock run")?;
        let stdout = child.stdout.take().context("host stdout")?;
        let sender = self.channel.0.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if sender.send(Message::Line(index, line)).is_err() {
                    return;
                }
            }
            let _ = sender.send(Message::Ended(index));
        });
        self.hosts.push(Host {
            child,
            stderr,
            alive: true,
        });
        self.live += 1;
        Ok(())
    }

    /// Until every host has ended: record lines, strike at reads.
    async fn run(&mut self) -> anyhow::Result<()> {
        while self.live > 0 {
            let seen = self.next().await?;
            let Some(seen) = seen.filter(|s| s.read) else {
                continue;
            };
            let target = seen.host;
            let done = usize::try_from(self.pauses + self.kills).unwrap_or(usize::MAX);
            // Another host must still be running: the pause exists so that
            // someone else takes the lock and writes meanwhile.
            let others = self
                .hosts
                .iter()
                .enumerate()
                .any(|(index, host)| index != target && host.alive);
            let due = done < self.scenario.faults
                && self.acks_since_fault > 0
                && self.hosts[target].alive
                && others;
            if !due {
                continue;
            }
            let kill = self.scenario.kill_every > 0
                && self.fault % self.scenario.kill_every == self.scenario.kill_every - 1;
            if kill {
                self.kill(target).await?;
            } else {
                self.pause(target).await?;
            }
            self.fault += 1;
            self.acks_since_fault = 0;
        }
        self.log.push(format!(
            "{:.1} s: every host ended",
            self.started.elapsed().as_secs_f64()
        ));
        for host in &mut self.hosts {
            let _ = tokio::time::timeout(crate::TEST_WAIT_LIMIT, host.child.wait()).await;
        }
        Ok(())
    }

    /// The next message, recorded; `None` for a host's end.
    async fn next(&mut self) -> anyhow::Result<Option<Seen>> {
        self.next_until(self.deadline).await?.context("unreachable")
    }

    /// The next message before `until` (`Ok(None)` past it, unless `until`
    /// is the round's deadline: then an error).
    async fn next_until(&mut self, until: Instant) -> anyhow::Result<Option<Option<Seen>>> {
        let until = until.min(self.deadline);
        match tokio::time::timeout_at(until.into(), self.channel.1.recv()).await {
            Err(_) if until >= self.deadline => bail!(
                "the round did not end within {:?} ({} of {} hosts still running, {} lines)",
                self.scenario.round_limit,
                self.live,
                self.hosts.len(),
                self.lines.len()
            ),
            Err(_) => Ok(None),
            Ok(None) => bail!("every host reader is gone"),
            Ok(Some(Message::Ended(host))) => {
                self.live -= 1;
                self.hosts[host].alive = false;
                Ok(Some(None))
            }
            Ok(Some(Message::Line(host, line))) => {
                let (events, _) = history::parse([line.as_str()]);
                self.lines.push(line);
                let event = events.first();
                let read = event.is_some_and(|e| e.op == "read" && e.kind == Kind::Ok);
                let acknowledged = event.is_some_and(|e| e.op == "add" && e.kind == Kind::Ok);
                self.acks_since_fault += u64::from(acknowledged);
                Ok(Some(Some(Seen {
                    host,
                    read,
                    acknowledged,
                })))
            }
        }
    }

    /// SIGSTOP `target` for at least the minimum pause and until another
    /// host acknowledged an add (at most the maximum), then SIGCONT.
    async fn pause(&mut self, target: usize) -> anyhow::Result<()> {
        let scenario = self.scenario;
        self.hosts[target].signal(libc::SIGSTOP);
        let stopped = Instant::now();
        let mut other_wrote = false;
        loop {
            let until = stopped
                + if other_wrote {
                    scenario.min_pause
                } else {
                    scenario.max_pause
                };
            if Instant::now() >= until {
                break;
            }
            if let Some(Some(seen)) = self.next_until(until).await? {
                other_wrote |= seen.acknowledged && seen.host != target;
            }
        }
        self.hosts[target].signal(libc::SIGCONT);
        self.pauses += 1;
        self.log.push(format!(
            "{:.1} s: paused host {target} for {:.1} s{}",
            (stopped - self.started).as_secs_f64(),
            stopped.elapsed().as_secs_f64(),
            if other_wrote { "" } else { " (no other write)" }
        ));
        Ok(())
    }

    /// SIGKILL `target` and start a replacement host.
    async fn kill(&mut self, target: usize) -> anyhow::Result<()> {
        let host = &mut self.hosts[target];
        host.child.start_kill().context("kill a host")?;
        let _ = tokio::time::timeout(crate::TEST_WAIT_LIMIT, host.child.wait()).await;
        self.kills += 1;
        self.log.push(format!(
            "{:.1} s: killed host {target}, started host {}",
            self.started.elapsed().as_secs_f64(),
            self.hosts.len()
        ));
        self.start_host()
    }

    /// The last lines of every host's stderr, for a failed round's message.
    fn stderr_tails(&self) -> String {
        let mut text = String::from("hosts' stderr (last lines):");
        for (index, host) in self.hosts.iter().enumerate() {
            let tail = crate::last_lines(&host.stderr, 5).replace('\n', "\n   ");
            text.push_str(&format!("\n host {index}: {tail}"));
        }
        text
    }
}

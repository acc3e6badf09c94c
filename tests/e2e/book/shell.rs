//! How a shell block becomes what the runner does: its well-known ports
//! replaced, and its lines split into the servers the harness starts instead,
//! the services the runner keeps in the background, and commands.
//!
//! The rules (also in docs/architecture.md, "The book's commands"):
//! - the numbers in [`PORTS`] are replaced wherever they stand as a whole
//!   number: 2181 and 2379 by the ports of the ZooKeeper and etcd the harness
//!   starts, the others by free loopback ports;
//! - a line starting `etcd` or `zkServer.sh` is not run: the harness's server
//!   stands in for it (started before the block when the block names it or its
//!   port);
//! - a `wardlock serve` line, or one ending in `&`, is a service: it runs in the
//!   background until the block ends; the next line waits until the port it
//!   names (`--listen`'s, or the first port of [`PORTS`] on the line) accepts
//!   connections;
//! - every other line runs in order, in one `bash` with `set -euo pipefail`
//!   per run of lines between services.

use std::collections::BTreeMap;

/// The well-known ports the book's commands may use, replaced by the runner.
pub(super) const PORTS: &[u16] = &[ZOOKEEPER_PORT, ETCD_PORT, 8080, 9000, 9090];

/// ZooKeeper's client port in the book's commands.
pub(super) const ZOOKEEPER_PORT: u16 = 2181;
/// etcd's client port in the book's commands.
pub(super) const ETCD_PORT: u16 = 2379;

/// A server the harness starts for a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Server {
    /// `tests/src/zookeeper.rs`.
    ZooKeeper,
    /// `tests/src/etcd.rs`.
    Etcd,
}

/// One thing the runner does for a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// A line the harness's server stands in for (not run).
    Harness { line: usize, server: Server },
    /// A command kept in the background; `port` (a book port, before
    /// replacement) is awaited before the next step.
    Service {
        line: usize,
        command: String,
        port: u16,
    },
    /// Lines run in one `bash`, as printed (ports replaced), each with its
    /// document line.
    Commands { lines: Vec<(usize, String)> },
}

/// A logical line: physical lines joined at trailing backslashes.
struct Logical {
    /// Document line of the first physical line.
    line: usize,
    /// Each physical line with its document line.
    physical: Vec<(usize, String)>,
}

impl Logical {
    /// The command, continuations joined, a trailing `# comment` dropped.
    fn command(&self) -> String {
        let joined = self
            .physical
            .iter()
            .map(|(_, l)| l.trim_end().trim_end_matches('\\').trim())
            .collect::<Vec<_>>()
            .join(" ");
        match joined.find(" #") {
            Some(cut) => joined[..cut].trim_end().to_owned(),
            None => joined,
        }
    }
}

/// The servers a block needs: those whose lines or ports it names.
pub(super) fn servers(body: &[String]) -> Vec<Server> {
    let mut needed = Vec::new();
    let text = body.join("\n");
    let numbers = numbers(&text);
    if numbers.contains(&ZOOKEEPER_PORT)
        || body
            .iter()
            .any(|l| harness_server(l) == Some(Server::ZooKeeper))
    {
        needed.push(Server::ZooKeeper);
    }
    if numbers.contains(&ETCD_PORT) || body.iter().any(|l| harness_server(l) == Some(Server::Etcd))
    {
        needed.push(Server::Etcd);
    }
    needed
}

/// `text` with each whole number that is a key of `ports` replaced by its value.
pub(super) fn replace_ports(text: &str, ports: &BTreeMap<u16, u16>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        match digits.parse::<u16>().ok().and_then(|n| ports.get(&n)) {
            Some(port) if !digits.starts_with('0') => out.push_str(&port.to_string()),
            _ => out.push_str(digits),
        }
        digits.clear();
    };
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, &mut out);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
}

/// The whole numbers in `text` that fit a port.
fn numbers(text: &str) -> Vec<u16> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect()
}

/// The steps of a shell block whose first body line is document line
/// `first_line` (ports not replaced yet: [`Step::Service`] names the book's
/// port; the runner replaces ports in every command).
///
/// # Errors
/// A service whose port the runner cannot tell.
pub(super) fn steps(
    first_line: usize,
    body: &[String],
    console: bool,
) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut pending: Option<Vec<(usize, String)>> = None;
    for logical in logical_lines(first_line, body, console) {
        let command = logical.command();
        if let Some(server) = harness_server(&command) {
            steps.extend(pending.take().map(commands));
            steps.push(Step::Harness {
                line: logical.line,
                server,
            });
        } else if let Some(port) = service_port(&command, logical.line)? {
            steps.extend(pending.take().map(commands));
            steps.push(Step::Service {
                line: logical.line,
                command: command.trim_end_matches('&').trim_end().to_owned(),
                port,
            });
        } else {
            pending
                .get_or_insert_with(Vec::new)
                .extend(logical.physical);
        }
    }
    steps.extend(pending.map(commands));
    Ok(steps)
}

fn commands(lines: Vec<(usize, String)>) -> Step {
    Step::Commands { lines }
}

/// The logical lines of a body; in a `console` block only the `$ ` lines
/// (prompt removed) and their continuations, the rest being output.
fn logical_lines(first_line: usize, body: &[String], console: bool) -> Vec<Logical> {
    let mut lines = Vec::new();
    let mut continuing = false;
    for (index, raw) in body.iter().enumerate() {
        let line = if continuing || !console {
            Some(raw.clone())
        } else {
            raw.strip_prefix("$ ").map(str::to_owned)
        };
        let Some(line) = line else {
            continue;
        };
        let continues = line.trim_end().ends_with('\\');
        if continuing {
            if let Some(last) = lines.last_mut() {
                let last: &mut Logical = last;
                last.physical.push((first_line + index, line));
            }
        } else {
            lines.push(Logical {
                line: first_line + index,
                physical: vec![(first_line + index, line)],
            });
        }
        continuing = continues;
    }
    lines
}

/// The server a line starts, if the harness stands in for it.
fn harness_server(command: &str) -> Option<Server> {
    let program = command.split_whitespace().next()?;
    match program.rsplit('/').next()? {
        "etcd" => Some(Server::Etcd),
        "zkServer.sh" => Some(Server::ZooKeeper),
        _ => None,
    }
}

/// The book port a service line is awaited on, or `None` when the line is not
/// a service.
fn service_port(command: &str, line: usize) -> Result<Option<u16>, String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let serves = words
        .windows(2)
        .any(|w| w[0].ends_with("wardlock") && w[1] == "serve");
    if serves {
        let listen = words
            .windows(2)
            .find(|w| w[0] == "--listen")
            .and_then(|w| w[1].rsplit(':').next()?.parse::<u16>().ok());
        return listen.map(Some).ok_or_else(|| {
            format!("line {line}: a `wardlock serve` line needs `--listen 127.0.0.1:PORT` (a port of {PORTS:?}) for the runner to replace and await")
        });
    }
    if command.ends_with('&') && !command.ends_with("&&") {
        return numbers(command)
            .into_iter()
            .find(|n| PORTS.contains(n))
            .map(Some)
            .ok_or_else(|| {
                format!("line {line}: a background line must name a port of {PORTS:?} for the runner to await")
            });
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn ports_are_replaced_as_whole_numbers_only() {
        let ports = BTreeMap::from([(2379, 41000), (9000, 42000)]);
        assert_eq!(
            replace_ports("127.0.0.1:2379 x 9000 12379 90001 02379", &ports),
            "127.0.0.1:41000 x 42000 12379 90001 02379"
        );
    }

    #[test]
    fn servers_services_and_commands_are_told_apart() {
        let lines = body(
            "# comment\netcd --data-dir /tmp/e &\ncargo build \\\n  --bin wardlock\ntarget/debug/wardlock serve --listen 127.0.0.1:8080 x.wasm\ncurl localhost:8080/a   # 1\npython3 s.py 9000 &\nls",
        );
        let steps = steps(10, &lines, false).expect("steps");
        assert_eq!(
            steps,
            vec![
                Step::Commands {
                    lines: vec![(10, "# comment".to_owned())]
                },
                Step::Harness {
                    line: 11,
                    server: Server::Etcd
                },
                Step::Commands {
                    lines: vec![
                        (12, "cargo build \\".to_owned()),
                        (13, "  --bin wardlock".to_owned())
                    ]
                },
                Step::Service {
                    line: 14,
                    command: "target/debug/wardlock serve --listen 127.0.0.1:8080 x.wasm"
                        .to_owned(),
                    port: 8080
                },
                Step::Commands {
                    lines: vec![(15, "curl localhost:8080/a   # 1".to_owned())]
                },
                Step::Service {
                    line: 16,
                    command: "python3 s.py 9000".to_owned(),
                    port: 9000
                },
                Step::Commands {
                    lines: vec![(17, "ls".to_owned())]
                },
            ]
        );
        assert_eq!(servers(&lines), vec![Server::Etcd]);
    }

    #[test]
    fn a_serve_line_without_listen_is_refused() {
        let error = steps(3, &body("wardlock serve x.wasm"), false).expect_err("no --listen");
        assert!(error.starts_with("line 3:"), "{error}");
    }

    #[test]
    fn a_console_block_runs_its_prompted_lines_only() {
        let steps = steps(1, &body("$ echo hi\nhi\n$ ls \\\n  -l\noutput"), true).expect("steps");
        assert_eq!(
            steps,
            vec![Step::Commands {
                lines: vec![
                    (1, "echo hi".to_owned()),
                    (3, "ls \\".to_owned()),
                    (4, "  -l".to_owned())
                ]
            }]
        );
    }
}

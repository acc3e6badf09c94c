//! `GET /locks[?prefix=P]`: the locks page. The table is rendered here, so
//! it reads without JavaScript; the embedded script (`assets/locks.js`)
//! then follows `/api/locks/events` and re-renders the same rows live. The
//! assets are compiled into the binary: serving the page needs no files and
//! no build toolchain.

use std::collections::HashSet;
use std::fmt::Write;

use super::locks_api::{ENGINE_LOCKS, LocksView};

const TEMPLATE: &str = include_str!("assets/locks.html");
const CSS: &str = include_str!("assets/locks.css");
const JS: &str = include_str!("assets/locks.js");

/// The page for `view`, filtered by `prefix`; `token` (when the page was
/// opened with `?token=`) is kept in the filter form so filtering keeps it.
pub(crate) fn render(view: &LocksView, prefix: Option<&str>, token: Option<&str>) -> String {
    let token_field = token.map_or_else(String::new, |t| {
        format!(
            "<input type=\"hidden\" name=\"token\" value=\"{}\">\n",
            escape(t)
        )
    });
    let asked = if view.locks.len() > view.engine_asked {
        format!(
            " (the engine is asked about the first {ENGINE_LOCKS}; filter by prefix for the others)"
        )
    } else {
        String::new()
    };
    let host = escape(&view.host);
    let prefix = escape(prefix.unwrap_or_default());
    let version = view.version.to_string();
    let count = view.locks.len().to_string();
    let (cycles, rows) = (cycles(view), rows(view));
    fill(TEMPLATE, |key| match key {
        "CSS" => CSS,
        "JS" => JS,
        "HOST" => &host,
        "PREFIX" => &prefix,
        "TOKEN_FIELD" => &token_field,
        "VERSION" => &version,
        "COUNT" => &count,
        "ASKED" => &asked,
        "CYCLES" => &cycles,
        "ROWS" => &rows,
        _ => "",
    })
}

/// `template` with each `{{KEY}}` replaced by `value(KEY)`, in one pass: a
/// value that happens to contain `{{ROWS}}` (a guest's lock name, say) is
/// left as it is.
fn fill<'a>(template: &str, value: impl Fn(&str) -> &'a str) -> String {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                out.push_str(value(&after[..end]));
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// One banner per cycle, as the script renders them.
fn cycles(view: &LocksView) -> String {
    let mut html = String::new();
    for cycle in &view.cycles {
        let scope = if cycle.scope == "host" {
            "among this host's guests"
        } else {
            "across hosts"
        };
        let broken = match &cycle.broken {
            Some(how) => format!("broken: {how}"),
            None => "not broken".to_owned(),
        };
        let _ = writeln!(
            html,
            "<p class=\"cycle\" role=\"alert\">Wait-for cycle ({scope}): {} over {}; {}.</p>",
            escape(&cycle.parties.join(" → ")),
            escape(&cycle.locks.join(", ")),
            escape(&broken),
        );
    }
    html
}

/// The table's rows, as the script renders them.
fn rows(view: &LocksView) -> String {
    let cycled: HashSet<&str> = view
        .cycles
        .iter()
        .flat_map(|c| c.parties.iter().map(String::as_str))
        .collect();
    let mut html = String::new();
    for lock in &view.locks {
        let name = &lock.entry.name;
        for (role, text, parties) in [
            ("holder", "holds", &lock.entry.holders),
            ("waiter", "waits", &lock.entry.waiters),
        ] {
            for party in parties {
                row(
                    &mut html,
                    Row {
                        lock: name,
                        role,
                        text,
                        owner: &party.owner,
                        mode: party.mode,
                        position: Some(party.position),
                        for_ms: Some(party.for_ms),
                        token: party.token,
                        in_cycle: cycled.contains(party.owner.as_str()),
                    },
                );
            }
        }
        for engine in &lock.engines {
            if let Some(error) = &engine.error {
                let text = format!("engine {} ({})", engine.backend, engine.kind);
                row(&mut html, Row::engine(name, &text, error, "", None, None));
                continue;
            }
            for (index, contender) in engine.contenders.iter().enumerate() {
                let text = format!(
                    "engine {}: {}",
                    engine.backend,
                    if contender.holds { "holds" } else { "waits" }
                );
                let position = Some(index + 1);
                let engine_row = Row::engine(
                    name,
                    &text,
                    &contender.owner,
                    contender.mode,
                    position,
                    contender.token,
                );
                row(&mut html, engine_row);
            }
        }
    }
    if html.is_empty() {
        html.push_str("<tr><td class=\"empty\" colspan=\"7\">No lock is held or awaited by this host's guests.</td></tr>\n");
    }
    html
}

/// One table row's content.
struct Row<'a> {
    lock: &'a str,
    role: &'static str,
    text: &'a str,
    owner: &'a str,
    mode: &'a str,
    position: Option<usize>,
    for_ms: Option<u64>,
    token: Option<u64>,
    in_cycle: bool,
}

impl<'a> Row<'a> {
    /// A row of what an engine says of the lock: no time of its own, and
    /// never in one of this host's wait-for cycles.
    fn engine(
        lock: &'a str,
        text: &'a str,
        owner: &'a str,
        mode: &'a str,
        position: Option<usize>,
        token: Option<u64>,
    ) -> Self {
        Row {
            lock,
            role: "engine",
            text,
            owner,
            mode,
            position,
            for_ms: None,
            token,
            in_cycle: false,
        }
    }
}

fn row(html: &mut String, row: Row<'_>) {
    let lock = escape(row.lock);
    let class = if row.in_cycle {
        " class=\"in-cycle\""
    } else {
        ""
    };
    let text = if row.in_cycle {
        format!("{} (in a wait-for cycle)", row.text)
    } else {
        row.text.to_owned()
    };
    let _ = writeln!(
        html,
        "<tr data-role=\"{}\" data-lock=\"{lock}\"{class}><th scope=\"row\">{lock}</th><td class=\"role\">{}</td><td class=\"owner\">{}</td><td class=\"mode\">{}</td><td class=\"position\">{}</td><td class=\"for\">{}</td><td class=\"token\">{}</td></tr>",
        row.role,
        escape(&text),
        escape(row.owner),
        escape(row.mode),
        row.position.map(|p| p.to_string()).unwrap_or_default(),
        row.for_ms.map(duration).unwrap_or_default(),
        row.token.map(|t| t.to_string()).unwrap_or_default(),
    );
}

/// A duration as the script shows it: `850 ms`, `12.5 s`, `3 min 4 s`.
fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        let s = ms / 1000;
        format!("{} min {} s", s / 60, s % 60)
    }
}

/// `text` safe inside HTML text and double-quoted attributes: lock names and
/// owners come from guests and other clients of the lock service.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_names_is_text() {
        assert_eq!(
            escape("<script>\"a\"&'b'</script>"),
            "&lt;script&gt;&quot;a&quot;&amp;&#39;b&#39;&lt;/script&gt;"
        );
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(12_500), "12.5 s");
        assert_eq!(duration(184_000), "3 min 4 s");
    }
}

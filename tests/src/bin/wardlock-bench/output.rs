//! Output: JSON lines (`--json`) or a table, on stdout.

use std::io::Write;

use super::report::Row;

/// Prints one JSON object per row, one per line.
///
/// # Errors
/// When stdout is gone.
pub(crate) fn json_lines(rows: &[Row], out: &mut impl Write) -> std::io::Result<()> {
    for row in rows {
        writeln!(out, "{}", row.json_line())?;
    }
    out.flush()
}

const HEADERS: [&str; 15] = [
    "system",
    "workload",
    "clients",
    "ops",
    "ops/s",
    "p50 µs",
    "p99 µs",
    "viol",
    "zk req/op",
    "notif/op",
    "cpu µs/op",
    "p50/floor",
    "ops/floor",
    "p50/native",
    "notes",
];

/// Prints the rows as an aligned table.
///
/// # Errors
/// When stdout is gone.
pub(crate) fn table(rows: &[Row], out: &mut impl Write) -> std::io::Result<()> {
    let cells: Vec<Vec<String>> = rows.iter().map(cells).collect();
    let mut widths: Vec<usize> = HEADERS.iter().map(|h| h.chars().count()).collect();
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |out: &mut dyn Write, row: &[String]| -> std::io::Result<()> {
        let mut text = String::new();
        for (index, (cell, width)) in row.iter().zip(&widths).enumerate() {
            let pad = width - cell.chars().count();
            // Names and notes left-aligned, numbers right-aligned.
            if index < 2 || index == row.len() - 1 {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            } else {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            }
            text.push_str("  ");
        }
        writeln!(out, "{}", text.trim_end())
    };
    let headers: Vec<String> = HEADERS.iter().map(|h| (*h).to_owned()).collect();
    line(&mut *out, &headers)?;
    for row in &cells {
        line(&mut *out, row)?;
    }
    // The same on every PostgreSQL row: once, under the table.
    if let Some((_, settings)) =
        (rows.iter().flat_map(|r| &r.extra)).find(|(k, _)| *k == SERVER_SETTINGS)
    {
        writeln!(out, "PostgreSQL server: {settings}")?;
    }
    out.flush()
}

/// The extra of PostgreSQL rows that names the server's settings.
pub(crate) const SERVER_SETTINGS: &str = "pg_settings";

fn cells(row: &Row) -> Vec<String> {
    let mut notes: Vec<String> = row.variant.iter().map(|v| (*v).to_owned()).collect();
    notes.extend(
        (row.extra.iter())
            .filter(|(k, _)| *k != SERVER_SETTINGS)
            .map(|(k, v)| format!("{k}={v}")),
    );
    vec![
        row.system.name(),
        row.workload.name(),
        row.clients.to_string(),
        row.ops.to_string(),
        number(row.ops_per_s, 0),
        number(row.p50_us, 1),
        number(row.p99_us, 1),
        row.violations.to_string(),
        number(row.zk_requests_per_op, 2),
        number(row.notifications_per_op, 2),
        number(row.host_cpu_us_per_op, 1),
        number(row.p50_vs_floor, 2),
        number(row.ops_per_s_vs_floor, 2),
        number(row.p50_vs_native, 3),
        notes.join(" "),
    ]
}

fn number(value: Option<f64>, digits: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{v:.digits$}"),
        _ => "-".to_owned(),
    }
}

//! `bench-charts RESULTS.jsonl OUT_DIR`: the benchmark book page's charts,
//! drawn from `wardlock-bench --json` output (one JSON object per line).
//!
//! Writes one SVG per workload (`OUT_DIR/<workload>.svg`: a bar per system
//! and variant, its acquisitions per second; for `cached-handover`, whose
//! rows are latencies, its p99) and `OUT_DIR/index.md`, the
//! images in the order the workloads appear, which `docs/benchmarks.md`
//! includes. Lines that are not rows (no `workload`, `system` or
//! `ops_per_s`) are skipped. `.ci/run` runs it before `mdbook build docs`.

mod svg;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

/// One bar: who, and how many acquisitions per second (or the workload's
/// [`svg::measure`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The system, its variant and a curve point's size, written left of the bar.
    pub label: String,
    /// Acquisitions per second (or the workload's measure): the bar's length.
    pub ops_per_s: f64,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [results, out] = args.as_slice() else {
        eprintln!("usage: bench-charts RESULTS.jsonl OUT_DIR");
        return ExitCode::from(2);
    };
    match run(Path::new(results), Path::new(out)) {
        Ok(count) => {
            eprintln!("bench-charts: {count} charts in {out}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("bench-charts: {why}");
            ExitCode::from(1)
        }
    }
}

fn run(results: &Path, out: &Path) -> Result<usize, String> {
    let text = std::fs::read_to_string(results)
        .map_err(|e| format!("cannot read {}: {e}", results.display()))?;
    let charts = charts(&text);
    if charts.is_empty() {
        return Err(format!("{} holds no benchmark rows", results.display()));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut index = String::new();
    for (workload, bars) in &charts {
        let file = out.join(format!("{workload}.svg"));
        std::fs::write(&file, svg::bars(workload, bars))
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        index.push_str(&format!("![{workload}](charts/{workload}.svg)\n\n"));
    }
    let file = out.join("index.md");
    std::fs::write(&file, index).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    Ok(charts.len())
}

/// The bars of each workload, workloads in the order they first appear.
fn charts(text: &str) -> Vec<(String, Vec<Bar>)> {
    let mut order: Vec<String> = Vec::new();
    let mut bars: BTreeMap<String, Vec<Bar>> = BTreeMap::new();
    for line in text.lines() {
        let Ok(row) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let (Some(workload), Some(system)) = (row["workload"].as_str(), row["system"].as_str())
        else {
            continue;
        };
        let Some(ops_per_s) = row[svg::measure(workload).key].as_f64() else {
            continue;
        };
        let mut label = match row["variant"].as_str() {
            Some(variant) => format!("{system} ({variant})"),
            None => system.to_owned(),
        };
        // A curve's point (the `scale` workload): name it by its size.
        if let Some(instances) = row["instances"].as_u64() {
            label.push_str(&format!(", {instances} instances"));
        }
        // Runs of one workload at several sizes, or without lock caching.
        if workload == "spread"
            && let Some(clients) = row["clients"].as_u64()
        {
            label.push_str(&format!(", {clients} clients"));
        }
        if row["lock_cache"].as_bool() == Some(false) {
            label.push_str(", no cache");
        }
        // The `hosts` curve over the hand-off's count bound.
        if workload == "hosts"
            && let Some(max) = row["handoff_max"].as_u64()
        {
            label.push_str(&format!(", handoff-max {max}"));
        }
        if !bars.contains_key(workload) {
            order.push(workload.to_owned());
        }
        bars.entry(workload.to_owned())
            .or_default()
            .push(Bar { label, ops_per_s });
    }
    order
        .into_iter()
        .map(|w| {
            let b = bars.remove(&w).unwrap_or_default();
            (w, b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_group_by_workload_in_order_and_other_lines_are_skipped() {
        let text = "not json\n\
            {\"system\":\"zk-floor\",\"workload\":\"uncontended\",\"ops_per_s\":100.0}\n\
            {\"system\":\"curator\",\"workload\":\"contended\",\"ops_per_s\":50.5}\n\
            {\"system\":\"wardlock-guest\",\"workload\":\"uncontended\",\"variant\":\"handoff\",\"ops_per_s\":300.0}\n\
            {\"metric\":\"other\"}\n\
            {\"system\":\"wardlock-guest\",\"workload\":\"hosts\",\"ops_per_s\":9.0,\"handoff_max\":8}\n\
            {\"system\":\"wardlock-guest\",\"workload\":\"spread\",\"ops_per_s\":7.0,\"clients\":64,\"lock_cache\":false}\n\
            {\"system\":\"etcd-guest\",\"workload\":\"cached-handover\",\"ops_per_s\":null,\"p99_us\":2500.0}\n";
        let charts = charts(text);
        assert_eq!(charts.len(), 5);
        assert_eq!(charts[3].1[0].label, "wardlock-guest, 64 clients, no cache");
        assert_eq!(charts[4].1[0].ops_per_s, 2500.0);
        assert!(svg::bars("cached-handover", &charts[4].1).contains("p99"));
        assert_eq!(charts[2].1[0].label, "wardlock-guest, handoff-max 8");
        assert_eq!(charts[0].0, "uncontended");
        assert_eq!(
            charts[0].1,
            vec![
                Bar {
                    label: "zk-floor".into(),
                    ops_per_s: 100.0
                },
                Bar {
                    label: "wardlock-guest (handoff)".into(),
                    ops_per_s: 300.0
                },
            ]
        );
        let svg = svg::bars("uncontended", &charts[0].1);
        assert_eq!(svg.matches("<rect class=\"bar\"").count(), 2);
        assert!(svg.contains("wardlock-guest (handoff)") && svg.contains("300"));
    }
}

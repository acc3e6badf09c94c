//! One result line per (system, workload[, variant]) and the ratios against the
//! floor and the native twin measured in the same run.

use serde_json::{Value, json};

use super::stats::Samples;
use super::systems::System;
use super::workloads::Workload;

/// One result.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub system: System,
    pub workload: Workload,
    /// Distinguishes two rows of one system in one workload (`instantiate`:
    /// `on-demand` or `pooling`).
    pub variant: Option<&'static str>,
    pub clients: u64,
    pub ops: u64,
    pub ops_per_s: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub violations: u64,
    pub zk_requests_per_op: Option<f64>,
    pub notifications_per_op: Option<f64>,
    /// CPU time of the benchmark process per op (clients, client libraries,
    /// wasmtime; not the ZooKeeper server), µs.
    pub host_cpu_us_per_op: Option<f64>,
    /// `p50_us` ÷ zk-floor's `p50_us` in the same workload (lower is better).
    pub p50_vs_floor: Option<f64>,
    /// `ops_per_s` ÷ zk-floor's `ops_per_s` in the same workload (higher is
    /// better).
    pub ops_per_s_vs_floor: Option<f64>,
    /// Guest rows: `p50_us` ÷ the native twin's `p50_us` (same backend).
    pub p50_vs_native: Option<f64>,
    /// Workload-specific fields, in insertion order.
    pub extra: Vec<(&'static str, Value)>,
}

impl Row {
    /// A row from measured samples.
    pub(crate) fn new(system: System, workload: Workload, clients: u64, samples: &Samples) -> Row {
        Row {
            system,
            workload,
            variant: None,
            clients,
            ops: samples.ops,
            ops_per_s: samples.ops_per_s(),
            p50_us: samples.percentile_us(0.50),
            p99_us: samples.percentile_us(0.99),
            violations: samples.violations,
            zk_requests_per_op: samples.zk_requests_per_op(),
            notifications_per_op: samples.notifications_per_op(),
            host_cpu_us_per_op: samples.cpu_us_per_op(),
            p50_vs_floor: None,
            ops_per_s_vs_floor: None,
            p50_vs_native: None,
            extra: Vec::new(),
        }
    }

    /// Adds a workload-specific field.
    pub(crate) fn with(mut self, key: &'static str, value: impl Into<Value>) -> Row {
        self.extra.push((key, value.into()));
        self
    }

    /// Sets the variant.
    pub(crate) fn variant(mut self, variant: &'static str) -> Row {
        self.variant = Some(variant);
        self
    }

    /// The row's fields in output order (numbers rounded for reading).
    pub(crate) fn fields(&self) -> Vec<(&'static str, Value)> {
        let mut fields = vec![
            ("system", json!(self.system.name())),
            ("workload", json!(self.workload.name())),
        ];
        if let Some(variant) = self.variant {
            fields.push(("variant", json!(variant)));
        }
        fields.extend([
            ("clients", json!(self.clients)),
            ("ops", json!(self.ops)),
            ("ops_per_s", round(self.ops_per_s, 1)),
            ("p50_us", round(self.p50_us, 2)),
            ("p99_us", round(self.p99_us, 2)),
            ("violations", json!(self.violations)),
            ("zk_requests_per_op", round(self.zk_requests_per_op, 3)),
            ("notifications_per_op", round(self.notifications_per_op, 3)),
            ("host_cpu_us_per_op", round(self.host_cpu_us_per_op, 1)),
            ("p50_vs_floor", round(self.p50_vs_floor, 3)),
            ("ops_per_s_vs_floor", round(self.ops_per_s_vs_floor, 3)),
            ("p50_vs_native", round(self.p50_vs_native, 3)),
        ]);
        fields.extend(self.extra.iter().cloned());
        fields
    }

    /// The row as one line of JSON, fields in output order.
    pub(crate) fn json_line(&self) -> String {
        let fields: Vec<String> = self
            .fields()
            .iter()
            .map(|(key, value)| format!("{}:{value}", Value::from(*key)))
            .collect();
        format!("{{{}}}", fields.join(","))
    }
}

/// Rounds to `digits` decimals; `null` for none (or a non-finite number).
pub(crate) fn round(value: Option<f64>, digits: i32) -> Value {
    match value {
        Some(v) if v.is_finite() => {
            let scale = 10f64.powi(digits);
            json!((v * scale).round() / scale)
        }
        _ => Value::Null,
    }
}

/// Fills in the ratios of one workload's rows.
pub(crate) fn add_ratios(rows: &mut [Row]) {
    let find = |rows: &[Row], system: System, variant: Option<&str>| {
        rows.iter()
            .find(|r| r.system == system && r.variant == variant)
            .map(|r| (r.p50_us, r.ops_per_s))
    };
    for index in 0..rows.len() {
        let (system, variant) = (rows[index].system, rows[index].variant);
        let floor = find(rows, system.floor(), variant);
        let twin = system.native_twin().and_then(|t| find(rows, t, variant));
        // Curator is a ZooKeeper client: a baseline for ZooKeeper systems
        // only, in both its shapes (a client per thread, one shared client).
        for (curator, p50_key, ops_key) in CURATORS {
            let Some((curator_p50, curator_ops)) = find(rows, curator, variant) else {
                continue;
            };
            if system == curator || !system.uses_zookeeper() {
                continue;
            }
            let row = &mut rows[index];
            let p50 = ratio(row.p50_us, curator_p50);
            let ops = ratio(row.ops_per_s, curator_ops);
            row.extra.push((p50_key, round(p50, 3)));
            row.extra.push((ops_key, round(ops, 3)));
        }
        let row = &mut rows[index];
        if let Some((floor_p50, floor_ops)) = floor {
            row.p50_vs_floor = ratio(row.p50_us, floor_p50);
            row.ops_per_s_vs_floor = ratio(row.ops_per_s, floor_ops);
        }
        if let Some((twin_p50, _)) = twin {
            row.p50_vs_native = ratio(row.p50_us, twin_p50);
        }
    }
}

/// The Curator systems every ZooKeeper row is compared with, and the keys of
/// its p50 and ops/s ratios to each.
const CURATORS: [(System, &str, &str); 2] = [
    (System::Curator, "p50_vs_curator", "ops_per_s_vs_curator"),
    (
        System::CuratorShared,
        "p50_vs_curator_shared",
        "ops_per_s_vs_curator_shared",
    ),
];

fn ratio(value: Option<f64>, base: Option<f64>) -> Option<f64> {
    let (value, base) = (value?, base?);
    (base > 0.0).then(|| value / base)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn row(system: System, latency_us: u64, ops: u64) -> Row {
        let samples = Samples {
            latencies_ns: vec![latency_us * 1000; 10],
            wall: Duration::from_secs(1),
            ops,
            ..Samples::default()
        };
        Row::new(system, Workload::Uncontended, 1, &samples)
    }

    #[test]
    fn ratios_against_floor_and_native_twin() {
        let mut rows = vec![
            row(System::ZkFloor, 400, 1000),
            row(System::ZooKeeperNative, 200, 2000),
            row(System::ZooKeeperGuest, 210, 1900),
        ];
        add_ratios(&mut rows);
        assert_eq!(rows[1].p50_vs_floor, Some(0.5));
        assert_eq!(rows[1].ops_per_s_vs_floor, Some(2.0));
        assert_eq!(rows[1].p50_vs_native, None);
        assert_eq!(rows[2].p50_vs_native, Some(1.05));
    }

    #[test]
    fn postgres_rows_are_compared_with_the_postgres_floor() {
        let mut rows = vec![
            row(System::ZkFloor, 100, 1000),
            row(System::PostgresFloor, 200, 500),
            row(System::PostgresNative, 100, 1500),
            row(System::PostgresGuest, 240, 1000),
        ];
        add_ratios(&mut rows);
        assert_eq!(rows[2].p50_vs_floor, Some(0.5));
        assert_eq!(rows[3].p50_vs_floor, Some(1.2));
        assert_eq!(rows[3].ops_per_s_vs_floor, Some(2.0));
        assert_eq!(rows[3].p50_vs_native, Some(2.4));
    }

    #[test]
    fn zookeeper_rows_are_compared_with_both_curators() {
        let mut rows = vec![
            row(System::ZooKeeperGuest, 100, 4000),
            row(System::Curator, 400, 1000),
            row(System::CuratorShared, 200, 2000),
            row(System::EtcdGuest, 100, 4000),
        ];
        add_ratios(&mut rows);
        let extra = |row: &Row, key: &str| {
            row.extra
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(extra(&rows[0], "ops_per_s_vs_curator"), Some(json!(4.0)));
        assert_eq!(
            extra(&rows[0], "ops_per_s_vs_curator_shared"),
            Some(json!(2.0))
        );
        assert_eq!(extra(&rows[0], "p50_vs_curator_shared"), Some(json!(0.5)));
        // Each Curator row against the other, not against itself.
        assert_eq!(extra(&rows[1], "ops_per_s_vs_curator"), None);
        assert_eq!(
            extra(&rows[1], "ops_per_s_vs_curator_shared"),
            Some(json!(0.5))
        );
        assert_eq!(extra(&rows[2], "ops_per_s_vs_curator"), Some(json!(2.0)));
        assert_eq!(extra(&rows[2], "ops_per_s_vs_curator_shared"), None);
        // etcd rows have no Curator baseline.
        assert_eq!(extra(&rows[3], "ops_per_s_vs_curator_shared"), None);
    }

    #[test]
    fn json_line_keeps_field_order() {
        let line = row(System::MemoryGuest, 2, 10)
            .with("peak_rss_mib", 12.5)
            .json_line();
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["system"], "memory-guest");
        assert_eq!(parsed["p50_us"], 2.0);
        assert_eq!(parsed["peak_rss_mib"], 12.5);
        assert!(parsed["zk_requests_per_op"].is_null());
        assert!(line.starts_with(r#"{"system":"memory-guest","workload":"uncontended","#));
    }
}

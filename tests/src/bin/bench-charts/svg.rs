//! A horizontal bar chart as SVG text: no dependency, readable in a browser
//! and on GitHub.

use super::Bar;

const WIDTH: f64 = 760.0;
const LABEL: f64 = 250.0;
const ROW: f64 = 26.0;
const TOP: f64 = 40.0;

/// What a workload's chart shows: the row's key and the title's words.
pub(crate) struct Measure {
    pub key: &'static str,
    pub title: &'static str,
}

/// Acquisitions per second, except for `cached-handover` (its rows are one
/// waiter's grant latency behind a cached lock: the p99).
pub(crate) fn measure(workload: &str) -> Measure {
    match workload {
        "cached-handover" => Measure {
            key: "p99_us",
            title: "p99 µs of a waiter behind a cached lock (lower is better)",
        },
        _ => Measure {
            key: "ops_per_s",
            title: "acquisitions per second (higher is better)",
        },
    }
}

/// The chart of `bars` titled with `workload`.
pub(crate) fn bars(workload: &str, bars: &[Bar]) -> String {
    let max = bars
        .iter()
        .map(|b| b.ops_per_s)
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let span = WIDTH - LABEL - 90.0;
    let height = TOP + ROW * bars.len() as f64 + 10.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"13\">\n\
         <style>.bar {{ fill: #4a7bb7; }} .label {{ fill: #222; }} .value {{ fill: #555; }}</style>\n\
         <text x=\"10\" y=\"22\" font-weight=\"bold\">{} — {}</text>\n",
        escape(workload),
        measure(workload).title
    );
    for (i, bar) in bars.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let width = (bar.ops_per_s / max * span).max(1.0);
        svg.push_str(&format!(
            "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n\
             <rect class=\"bar\" x=\"{LABEL}\" y=\"{y}\" width=\"{width:.1}\" height=\"{}\"/>\n\
             <text class=\"value\" x=\"{:.1}\" y=\"{}\">{}</text>\n",
            LABEL - 8.0,
            y + 16.0,
            escape(&bar.label),
            ROW - 6.0,
            LABEL + width + 6.0,
            y + 16.0,
            thousands(bar.ops_per_s),
        ));
    }
    svg.push_str("</svg>\n");
    svg
}

/// `12,345` for 12345.4.
fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

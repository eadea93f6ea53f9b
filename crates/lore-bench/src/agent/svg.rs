//! The plot of `lore bench agent --svg`: errors per run for each arm, the mean over the seeds,
//! with the phases marked. Plain SVG, no dependency.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{Arm, Report};

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 50.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 40.0;

fn colour(arm: Arm) -> &'static str {
    match arm {
        Arm::None => "#888888",
        Arm::Rag => "#d08020",
        Arm::Lore => "#1f5fbf",
    }
}

/// The SVG document.
pub fn plot(report: &Report) -> String {
    // Mean errors at each position of the stream, per arm.
    let mut sums: BTreeMap<Arm, BTreeMap<usize, (f64, f64)>> = BTreeMap::new();
    let mut phase_at: BTreeMap<usize, char> = BTreeMap::new();
    for r in &report.runs {
        let e = sums.entry(r.arm).or_default().entry(r.index).or_default();
        e.0 += (r.tool_errors + r.wrong_results) as f64;
        e.1 += 1.0;
        phase_at.insert(r.index, r.phase);
    }
    let runs = phase_at.keys().max().map_or(1, |m| m + 1);
    let top = sums
        .values()
        .flat_map(|m| m.values().map(|(s, n)| s / n))
        .fold(1.0_f64, f64::max)
        .ceil();
    let x =
        |i: usize| LEFT + (WIDTH - LEFT - RIGHT) * i as f64 / runs.saturating_sub(1).max(1) as f64;
    let y = |v: f64| TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - v / top);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{LEFT}\" y=\"16\">Errors per run with {}, mean of {} seed(s)</text>\n",
        report.model,
        report.seeds.len()
    );
    let mut legend = LEFT;
    for arm in sums.keys() {
        let _ = writeln!(
            svg,
            "<text x=\"{legend}\" y=\"32\" fill=\"{}\">■ {}</text>",
            colour(*arm),
            format!("{arm:?}").to_lowercase()
        );
        legend += 70.0;
    }
    let _ = writeln!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"black\"/>\n\
         <line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{0}\" stroke=\"black\"/>",
        y(0.0),
        WIDTH - RIGHT
    );
    for tick in 0..=top as usize {
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{tick}</text>",
            LEFT - 6.0,
            y(tick as f64) + 4.0
        );
    }
    let mut previous = None;
    for (&i, &p) in &phase_at {
        if previous != Some(p) {
            let _ = writeln!(
                svg,
                "<line x1=\"{0}\" y1=\"{TOP}\" x2=\"{0}\" y2=\"{1}\" stroke=\"#cccccc\"/>\n\
                 <text x=\"{2}\" y=\"{3}\">{p}</text>",
                x(i),
                y(0.0),
                x(i) + 4.0,
                HEIGHT - 12.0
            );
            previous = Some(p);
        }
    }
    for (arm, points) in &sums {
        let path: Vec<String> = points
            .iter()
            .map(|(&i, (s, n))| format!("{:.1},{:.1}", x(i), y(s / n)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
            colour(*arm),
            path.join(" ")
        );
    }
    svg.push_str("</svg>\n");
    svg
}

//! The plot of `lore bench learning --svg`: errors per run, with and without memory, averaged
//! over the seeds, with the phases marked. Plain SVG, no dependency.

use std::fmt::Write;

use super::LearningReport;
use super::curve::Curve;

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 50.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 40.0;

/// The SVG document.
pub fn plot(report: &LearningReport) -> String {
    let curve = Curve::of(report);
    let runs = curve.with_memory.len();
    let (with, without) = (&curve.with_memory, &curve.without_memory);
    let top = with
        .iter()
        .chain(without)
        .fold(1.0_f64, |a, b| a.max(*b))
        .ceil();
    let x =
        |i: usize| LEFT + (WIDTH - LEFT - RIGHT) * i as f64 / runs.saturating_sub(1).max(1) as f64;
    let y = |v: f64| TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - v / top);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{LEFT}\" y=\"18\">Errors per run, mean of {} seeds: with memory (blue) and \
         without (grey)</text>\n",
        curve.seeds
    );
    // Axes and the y scale.
    let _ = writeln!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>",
        y(0.0),
        WIDTH - RIGHT,
        y(0.0)
    );
    let _ = writeln!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{}\" stroke=\"black\"/>",
        y(0.0)
    );
    for tick in 0..=top as usize {
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{tick}</text>",
            LEFT - 6.0,
            y(tick as f64) + 4.0
        );
    }
    // Phase boundaries.
    for (n, (name, start)) in curve.phases.iter().enumerate() {
        let end = curve.phases.get(n + 1).map_or(runs, |(_, next)| *next);
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{name}</text>",
            (x(*start) + x(end.saturating_sub(1))) / 2.0,
            HEIGHT - 12.0,
        );
        if end < runs {
            let _ = writeln!(
                svg,
                "<line x1=\"{0}\" y1=\"{TOP}\" x2=\"{0}\" y2=\"{1}\" stroke=\"#bbb\" \
                 stroke-dasharray=\"4 3\"/>",
                (x(end - 1) + x(end)) / 2.0,
                y(0.0)
            );
        }
    }
    for (series, colour) in [(without, "#999"), (with, "#1f5fbf")] {
        let points: Vec<String> = series
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", x(i), y(*v)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.6\" points=\"{}\"/>",
            points.join(" ")
        );
    }
    svg.push_str("</svg>\n");
    svg
}

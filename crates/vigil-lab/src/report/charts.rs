//! The lab's standard figures.

use crate::report::svg::{Chart, Scale, Series, Style};
use crate::sweep::Point;

/// Every point of every family as a line per family: detection time against
/// mistakes per hour, both on log axes. Settings without any mistake are
/// drawn on a line marked "no mistakes", at half the smallest positive rate.
/// With `frontier`, the Pareto frontier is drawn over them as a dashed step.
pub fn frontier_chart(title: &str, x_label: &str, points: &[Point], frontier: Option<&[usize]>) -> Chart {
    let positive =
        points.iter().map(|p| p.mistakes_per_hour).filter(|r| *r > 0.0 && r.is_finite()).fold(f64::INFINITY, f64::min);
    let floor = if positive.is_finite() { positive / 2.0 } else { 1.0 };
    let at = |p: &Point| (p.detection_ms, p.mistakes_per_hour.max(floor));
    let mut chart = Chart::new(title, x_label, "mistakes per hour (log)")
        .with_x_scale(Scale::Log10)
        .with_y_scale(Scale::Log10)
        .with_hline(floor, "no mistakes");
    let mut families: Vec<&str> = Vec::new();
    for p in points {
        if !families.contains(&p.family.as_str()) {
            families.push(&p.family);
        }
    }
    for family in families {
        let mut line: Vec<(f64, f64)> =
            points.iter().filter(|p| p.family == family && p.detection_ms.is_finite()).map(at).collect();
        line.sort_by(|x, y| x.0.total_cmp(&y.0));
        chart = chart.with_series(Series::new(family, line).with_style(Style::LinePoints));
    }
    if let Some(front) = frontier {
        let line: Vec<(f64, f64)> = front.iter().filter_map(|&i| points.get(i)).map(at).collect();
        chart = chart
            .with_series(Series::new("frontier", line).with_style(Style::Step).with_dashed(true).with_color("#000000"));
    }
    chart
}

/// One detector's line in [`level_chart`]: its name, its `(time in ms,
/// level)` points and its threshold.
pub type LevelLine = (String, Vec<(f64, f64)>, f64);

/// The levels of several detectors over the same stretch of a trace, each
/// divided by its threshold so that 1 is where it suspects: one scale for φ,
/// timeouts and freshness points alike. `series` holds each detector's name,
/// its `(time in ms, level)` points and its threshold; heartbeat arrivals
/// and the crash, if any, are marked.
pub fn level_chart(title: &str, series: &[LevelLine], arrivals: &[f64], crash: Option<f64>) -> Chart {
    let mut chart = Chart::new(title, "time (ms)", "level ÷ threshold (1: suspect)")
        .with_y_range(0.0, 3.0)
        .with_hline(1.0, "threshold");
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    for (name, points, threshold) in series {
        let scaled: Vec<(f64, f64)> = points.iter().map(|&(t, l)| (t, (l / threshold).min(3.0))).collect();
        for &(t, _) in &scaled {
            x0 = x0.min(t);
            x1 = x1.max(t);
        }
        chart = chart.with_series(Series::new(name, scaled).with_style(Style::Line));
    }
    let marks: Vec<(f64, f64)> = arrivals.iter().filter(|&&t| t >= x0 && t <= x1).map(|&t| (t, 0.0)).collect();
    chart = chart.with_series(Series::new("heartbeat arrivals", marks).with_style(Style::Points));
    if let Some(c) = crash.filter(|c| c.is_finite()) {
        chart = chart.with_vline(c, "crash");
    }
    if x0.is_finite() && x1 > x0 {
        chart = chart.with_x_range(x0, x1);
    }
    chart
}

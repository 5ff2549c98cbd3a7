//! `--report DIR`: the lab commands' results as a self-contained HTML page
//! (tables and figures inline) with each figure also beside it as SVG, the
//! same kind of report `vigil lab demo` writes.

use std::path::PathBuf;

use anyhow::Result;
use vigil_lab::engine::level_series;
use vigil_lab::report::charts::level_chart;
use vigil_lab::report::document::Document;
use vigil_lab::spec::DetectorSpec;
use vigil_lab::trace::Trace;

use crate::output::OutputDir;

/// Detectors drawn in one level figure (more make it unreadable).
const MAX_DRAWN: usize = 6;

/// Heartbeats drawn before the moment a level figure is about.
const BEATS_BEFORE: usize = 20;

/// Writes `doc` into `dir` as `index.html` with its figures beside it, all or
/// nothing. Returns the page's path.
pub(crate) fn write(dir: &OutputDir, doc: &Document) -> Result<PathBuf> {
    let mut files = vec![("index.html".to_owned(), doc.to_html().into_bytes())];
    files.extend(doc.figures().map(|f| (f.file.clone(), f.svg.clone().into_bytes())));
    Ok(dir.write_set(files)?.swap_remove(0))
}

/// Adds a figure of the detectors' levels over the most telling stretch of
/// `trace`: up to its crash and on until every drawn detector suspects (or
/// the observation ends), or, without a crash, around its longest silence.
pub(crate) fn add_level_figure(doc: &mut Document, trace: &Trace, name: &str, specs: &[DetectorSpec]) -> Result<()> {
    let beats = &trace.beats;
    if beats.len() < 2 {
        return Ok(());
    }
    let gap = |k: usize| beats[k].arrival.as_nanos() - beats[k - 1].arrival.as_nanos();
    let (to, until, about) = match trace.crash {
        Some(crash) => {
            let last = beats.iter().rposition(|b| b.arrival <= crash).unwrap_or(0);
            // A few median periods past the crash show who detects it when.
            let period = trace.period().map_or(1_000_000_000, |p| p.as_nanos() as u64);
            let end = trace.observed_until().as_nanos().max(crash.as_nanos().saturating_add(period.saturating_mul(8)));
            (last, Some(vigil_detector::Instant::from_nanos(end)), "the crash")
        }
        None => {
            let longest = (1..beats.len()).max_by_key(|&k| gap(k)).unwrap_or(1);
            ((longest + 5).min(beats.len() - 1), None, "the longest silence")
        }
    };
    let from = to.saturating_sub(BEATS_BEFORE);
    let mut series = Vec::new();
    for spec in specs.iter().take(MAX_DRAWN) {
        let points = level_series(trace, spec.config(), from, to, 60, until)?;
        series.push((spec.to_string(), points, spec.threshold()));
    }
    let arrivals: Vec<f64> = beats[from..=to].iter().map(|b| b.arrival.as_nanos() as f64 / 1e6).collect();
    let crash = trace.crash.map(|c| c.as_nanos() as f64 / 1e6);
    let chart = level_chart(&format!("Levels around {about}: {name}"), &series, &arrivals, crash);
    let shown = specs.len().min(MAX_DRAWN);
    doc.figure(
        "levels.svg",
        &format!(
            "Each detector's level divided by its threshold (1: it suspects), over heartbeats {from} to {to} of {name}, \
             around {about}; {shown} of {} detectors drawn.",
            specs.len()
        ),
        chart.to_svg(),
    );
    Ok(())
}

//! A small, dependency-free SVG chart writer for the lab report.
//!
//! The report needs a handful of plot kinds: the suspicion level φ over time
//! around a network regime change (with a threshold line, a marker at the
//! change and a shaded "congested" interval), Pareto frontiers of detection
//! time against mistake rate per detector family (usually on log–log axes),
//! false alarms against threshold, and similar line, scatter and step plots.
//! A [`Chart`] covers all of them: a list of [`Series`] drawn as lines,
//! markers or step functions on linear or base-10 logarithmic axes, plus
//! labelled horizontal and vertical reference lines and shaded x-intervals.
//!
//! [`Chart::to_svg`] returns one complete `<svg>` element that works both
//! inline in HTML and as a standalone `.svg` file. It has no scripts, no CSS
//! and no external resources, and it is deterministic: the same chart always
//! gives byte-identical output. Coordinates carry at most two decimals.
//!
//! Rendering never panics. Points with a non-finite coordinate, and on a log
//! axis points with a non-positive coordinate, are skipped (lines are broken
//! there) and do not influence automatic ranges. Invalid explicit ranges fall
//! back to automatic ones, and anything outside the range is clipped to the
//! plot area.
//!
//! # Example
//!
//! ```
//! use vigil_lab::report::svg::{Chart, Scale, Series, Style};
//!
//! // φ over time, with a threshold, a regime change and a congested interval.
//! let phi: Vec<(f64, f64)> = (0..200).map(|i| (i as f64 * 0.05, (i as f64 * 0.04).powi(2))).collect();
//! let chart = Chart::new("φ around a regime change", "time (s)", "φ")
//!     .with_series(Series::new("normal", phi).with_style(Style::Line))
//!     .with_hline(8.0, "threshold 8")
//!     .with_vline(5.0, "regime change")
//!     .with_band(5.0, 7.5, "congested");
//! let svg = chart.to_svg();
//! assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
//! assert!(svg.ends_with("</svg>\n"));
//!
//! // A Pareto frontier on log–log axes; the zero mistake rate is skipped.
//! let frontier = vec![(120.0, 1e-2), (250.0, 1e-3), (600.0, 1e-5), (900.0, 0.0)];
//! let pareto = Chart::new("Pareto frontier", "detection time (ms)", "mistake rate (/s)")
//!     .with_x_scale(Scale::Log10)
//!     .with_y_scale(Scale::Log10)
//!     .with_series(Series::new("normal", frontier).with_style(Style::LinePoints));
//! assert!(pareto.to_svg().contains("mistake rate (/s)"));
//! ```

use crate::report::html::escape;
use std::fmt::Write as _;

/// The categorical palette: series without an explicit color take
/// `PALETTE[index % PALETTE.len()]`, where `index` is their position in
/// [`Chart::series`].
pub const PALETTE: [&str; 10] = [
    "#0072b2", // blue
    "#d55e00", // vermillion
    "#009e73", // bluish green
    "#cc79a7", // reddish purple
    "#e69f00", // orange
    "#56b4e9", // sky blue
    "#6a3d9a", // violet
    "#8c6d31", // brown
    "#4d4d4d", // dark grey
    "#a50f15", // dark red
];

/// How an axis maps values to positions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scale {
    /// Evenly spaced values.
    #[default]
    Linear,
    /// Base-10 logarithmic: evenly spaced decades. Non-positive values cannot
    /// be drawn and are skipped.
    Log10,
}

/// How a [`Series`] is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Style {
    /// Straight segments between consecutive points.
    #[default]
    Line,
    /// A marker at each point, no line.
    Points,
    /// Straight segments and a marker at each point.
    LinePoints,
    /// A step function: from each point horizontally to the next point's x,
    /// then vertically to its y.
    Step,
}

impl Style {
    fn has_line(self) -> bool {
        !matches!(self, Style::Points)
    }

    fn has_markers(self) -> bool {
        matches!(self, Style::Points | Style::LinePoints)
    }
}

/// One named data series.
///
/// Points are drawn in the given order (they are not sorted). A point that
/// cannot be drawn (non-finite, or non-positive on a log axis) is skipped and
/// breaks the line.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Name shown in the legend; an empty name keeps the series out of it.
    pub name: String,
    /// The `(x, y)` data points.
    pub points: Vec<(f64, f64)>,
    /// How the points are drawn.
    pub style: Style,
    /// An SVG color (`"#1f77b4"`, `"red"`, ...); `None` takes the next color
    /// of [`PALETTE`] by series position.
    pub color: Option<String>,
    /// Whether the line is dashed.
    pub dashed: bool,
}

impl Series {
    /// A [`Style::Line`] series with the palette color, not dashed.
    pub fn new(name: impl Into<String>, points: impl IntoIterator<Item = (f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points: points.into_iter().collect(),
            style: Style::Line,
            color: None,
            dashed: false,
        }
    }

    /// Sets how the series is drawn.
    #[must_use]
    pub fn with_style(mut self, style: Style) -> Series {
        self.style = style;
        self
    }

    /// Sets an explicit SVG color instead of the palette color.
    #[must_use]
    pub fn with_color(mut self, color: impl Into<String>) -> Series {
        self.color = Some(color.into());
        self
    }

    /// Sets whether the line is dashed.
    #[must_use]
    pub fn with_dashed(mut self, dashed: bool) -> Series {
        self.dashed = dashed;
        self
    }
}

/// A two-dimensional chart: axes, series, reference lines and bands.
///
/// All fields are public; the `with_*` methods are shorthands for building a
/// chart in one expression. See the [module documentation](self) for an
/// example.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Title above the plot; empty for none.
    pub title: String,
    /// Label under the x axis; empty for none.
    pub x_label: String,
    /// Label beside the y axis; empty for none.
    pub y_label: String,
    /// Scale of the x axis.
    pub x_scale: Scale,
    /// Scale of the y axis.
    pub y_scale: Scale,
    /// Explicit x range `(low, high)`; `None` (or an unusable range) picks
    /// one from the data, rounded outwards to tick-aligned bounds.
    pub x_range: Option<(f64, f64)>,
    /// Explicit y range `(low, high)`; `None` (or an unusable range) picks
    /// one from the data, rounded outwards to tick-aligned bounds.
    pub y_range: Option<(f64, f64)>,
    /// The data series, drawn in order (later ones on top).
    pub series: Vec<Series>,
    /// Horizontal reference lines `(y, label)`, e.g. a threshold.
    pub hlines: Vec<(f64, String)>,
    /// Vertical markers `(x, label)`, e.g. a regime change or a crash.
    pub vlines: Vec<(f64, String)>,
    /// Shaded x-intervals `(from, to, label)`, e.g. a congested period.
    pub bands: Vec<(f64, f64, String)>,
    /// Width in pixels (clamped to 160..=16384 when rendering).
    pub width: u32,
    /// Height in pixels (clamped to 120..=16384 when rendering).
    pub height: u32,
}

impl Chart {
    /// Default width in pixels.
    pub const DEFAULT_WIDTH: u32 = 720;
    /// Default height in pixels.
    pub const DEFAULT_HEIGHT: u32 = 420;

    /// An empty chart with linear axes, automatic ranges and the default size.
    pub fn new(title: impl Into<String>, x_label: impl Into<String>, y_label: impl Into<String>) -> Chart {
        Chart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            x_range: None,
            y_range: None,
            series: Vec::new(),
            hlines: Vec::new(),
            vlines: Vec::new(),
            bands: Vec::new(),
            width: Chart::DEFAULT_WIDTH,
            height: Chart::DEFAULT_HEIGHT,
        }
    }

    /// Adds a series.
    #[must_use]
    pub fn with_series(mut self, series: Series) -> Chart {
        self.series.push(series);
        self
    }

    /// Sets the scale of the x axis.
    #[must_use]
    pub fn with_x_scale(mut self, scale: Scale) -> Chart {
        self.x_scale = scale;
        self
    }

    /// Sets the scale of the y axis.
    #[must_use]
    pub fn with_y_scale(mut self, scale: Scale) -> Chart {
        self.y_scale = scale;
        self
    }

    /// Sets an explicit x range.
    #[must_use]
    pub fn with_x_range(mut self, low: f64, high: f64) -> Chart {
        self.x_range = Some((low, high));
        self
    }

    /// Sets an explicit y range.
    #[must_use]
    pub fn with_y_range(mut self, low: f64, high: f64) -> Chart {
        self.y_range = Some((low, high));
        self
    }

    /// Adds a labelled horizontal reference line at `y`.
    #[must_use]
    pub fn with_hline(mut self, y: f64, label: impl Into<String>) -> Chart {
        self.hlines.push((y, label.into()));
        self
    }

    /// Adds a labelled vertical marker at `x`.
    #[must_use]
    pub fn with_vline(mut self, x: f64, label: impl Into<String>) -> Chart {
        self.vlines.push((x, label.into()));
        self
    }

    /// Adds a labelled shaded interval from `from` to `to` on the x axis.
    #[must_use]
    pub fn with_band(mut self, from: f64, to: f64, label: impl Into<String>) -> Chart {
        self.bands.push((from, to, label.into()));
        self
    }

    /// Sets the size in pixels.
    #[must_use]
    pub fn with_size(mut self, width: u32, height: u32) -> Chart {
        self.width = width;
        self.height = height;
        self
    }

    /// Renders the chart as a complete, standalone SVG document (one `<svg>`
    /// element with `xmlns`, `width`, `height` and `viewBox`, ending in a
    /// newline).
    pub fn to_svg(&self) -> String {
        let layout = self.layout();
        let mut out = String::with_capacity(4096);
        self.render(&layout, &mut out);
        out
    }

    /// Every `x` worth including in an automatic x range.
    fn x_values(&self) -> Vec<f64> {
        let mut values: Vec<f64> = self.drawable_points().map(|(x, _)| x).collect();
        values.extend(self.vlines.iter().map(|(x, _)| *x));
        values.extend(self.bands.iter().flat_map(|(a, b, _)| [*a, *b]));
        values.retain(|v| usable(self.x_scale, *v));
        values
    }

    /// Every `y` worth including in an automatic y range.
    fn y_values(&self) -> Vec<f64> {
        let mut values: Vec<f64> = self.drawable_points().map(|(_, y)| y).collect();
        values.extend(self.hlines.iter().map(|(y, _)| *y));
        values.retain(|v| usable(self.y_scale, *v));
        values
    }

    fn drawable_points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|(x, y)| usable(self.x_scale, *x) && usable(self.y_scale, *y))
    }

    fn layout(&self) -> Layout {
        let width = f64::from(self.width.clamp(160, 16_384));
        let height = f64::from(self.height.clamp(120, 16_384));

        let legend: Vec<usize> = (0..self.series.len()).filter(|&i| !self.series[i].name.trim().is_empty()).collect();
        let legend_chars = legend.iter().map(|&i| self.series[i].name.trim().chars().count()).max().unwrap_or(0);
        let legend_width = if legend.is_empty() {
            0.0
        } else {
            (LEGEND_SAMPLE + 6.0 + text_width(legend_chars, FONT) + 8.0).min(width * 0.35)
        };

        let top = if self.title.trim().is_empty() { 14.0 } else { 40.0 };
        let bottom = 28.0 + if self.x_label.trim().is_empty() { 0.0 } else { 20.0 };
        let plot_height = (height - top - bottom).max(20.0);
        let y_intervals = intervals_for(plot_height, 45.0);
        let (y, y_step) = resolve_range(self.y_scale, self.y_range, &self.y_values(), y_intervals);
        let y_ticks = match y_step {
            Some(step) => step_ticks(y.0, y.1, step),
            None => ticks(self.y_scale, y.0, y.1, y_intervals),
        };
        let y_labels = format_labels(&y_ticks);
        let y_label_chars = y_labels.iter().map(|l| l.chars().count()).max().unwrap_or(1);

        let y_label_space = if self.y_label.trim().is_empty() { 0.0 } else { 22.0 };
        let left = 20.0 + y_label_space + text_width(y_label_chars, TICK_FONT);
        let rough_width = (width - left - legend_width - 30.0).max(20.0);
        let x_intervals = intervals_for(rough_width, 80.0);
        let (x, x_step) = resolve_range(self.x_scale, self.x_range, &self.x_values(), x_intervals);
        let x_ticks = match x_step {
            Some(step) => step_ticks(x.0, x.1, step),
            None => ticks(self.x_scale, x.0, x.1, x_intervals),
        };
        let x_labels = format_labels(&x_ticks);
        let last_label = x_labels.last().map_or(0, |l| l.chars().count());
        let right_overhang = (text_width(last_label, TICK_FONT) / 2.0).max(6.0);
        let right = 10.0 + if legend.is_empty() { right_overhang } else { legend_width + 16.0 };
        let plot_width = (width - left - right).max(20.0);

        let plot = Rect { x0: left, y0: top, x1: left + plot_width, y1: top + plot_height };
        let x_axis = Axis::new(self.x_scale, x, plot.x0, plot.x1);
        let y_axis = Axis::new(self.y_scale, y, plot.y1, plot.y0);
        Layout { width, height, plot, x: x_axis, y: y_axis, x_ticks, x_labels, y_ticks, y_labels, legend, legend_width }
    }

    fn render(&self, l: &Layout, out: &mut String) {
        let (w, h) = (num(l.width), num(l.height));
        let title = escape(self.title.trim());
        let clip = format!("vigil-clip-{:016x}", vigil_detector::fnv::fnv1a(format!("{self:?}").as_bytes()));
        let p = l.plot;
        let _ = writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="{FONT}" role="img" aria-label="{title}">"#
        );
        let _ = writeln!(out, "<title>{title}</title>");
        let _ = writeln!(
            out,
            r#"<defs><clipPath id="{clip}"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath></defs>"#,
            num(p.x0 - CLIP_SLACK - MARKER_SIZE * 1.5),
            num(p.y0 - CLIP_SLACK - MARKER_SIZE * 1.5),
            num(p.width() + 2.0 * (CLIP_SLACK + MARKER_SIZE * 1.5)),
            num(p.height() + 2.0 * (CLIP_SLACK + MARKER_SIZE * 1.5))
        );
        let _ = writeln!(out, r##"<rect width="{w}" height="{h}" fill="#ffffff"/>"##);
        if !title.is_empty() {
            let fit = ((l.width - 20.0) / (TITLE_FONT * 0.62)).max(4.0) as usize;
            let _ = writeln!(
                out,
                r#"<text x="{}" y="24" text-anchor="middle" font-size="{TITLE_FONT}" font-weight="bold">{}</text>"#,
                num(l.width / 2.0),
                escape(&truncate(self.title.trim(), fit))
            );
        }
        self.render_bands(l, out);
        render_grid(l, out);
        render_axes(self, l, out);
        self.render_series(l, &clip, out);
        self.render_reference_lines(l, out);
        self.render_legend(l, out);
        out.push_str("</svg>\n");
    }

    fn render_bands(&self, l: &Layout, out: &mut String) {
        let p = l.plot;
        for (i, (a, b, label)) in self.bands.iter().enumerate() {
            let (Some(a), Some(b)) = (l.x.map(*a), l.x.map(*b)) else { continue };
            let (x0, x1) = (a.min(b).max(p.x0), a.max(b).min(p.x1));
            if x1 <= x0 {
                continue;
            }
            let _ = writeln!(
                out,
                r##"<rect x="{}" y="{}" width="{}" height="{}" fill="#8c8c8c" fill-opacity="0.14"/>"##,
                num(x0),
                num(p.y0),
                num(x1 - x0),
                num(p.height())
            );
            let label = escape(label.trim());
            if !label.is_empty() {
                let y = p.y1 - 6.0 - 13.0 * (i % 2) as f64;
                let _ = writeln!(
                    out,
                    r##"<text x="{}" y="{}" font-size="{TICK_FONT}" fill="#555555" {HALO}>{label}</text>"##,
                    num(x0 + 4.0),
                    num(y)
                );
            }
        }
    }

    fn render_series(&self, l: &Layout, clip: &str, out: &mut String) {
        let mut any = false;
        let _ = writeln!(out, r#"<g clip-path="url(#{clip})">"#);
        let bounds = l.plot.expand(CLIP_SLACK);
        for (i, series) in self.series.iter().enumerate() {
            let color = series_color(series, i);
            let mapped: Vec<Option<(f64, f64)>> =
                series.points.iter().map(|&(x, y)| Some((l.x.map(x)?, l.y.map(y)?))).collect();
            any |= mapped.iter().any(Option::is_some);
            if series.style.has_line() {
                let path = if series.style == Style::Step { step_points(&mapped) } else { mapped.clone() };
                let d = path_data(&line_runs(&path, bounds));
                if !d.is_empty() {
                    let dash = if series.dashed { r#" stroke-dasharray="6 4""# } else { "" };
                    let _ = writeln!(
                        out,
                        r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="1.8" stroke-linejoin="round" stroke-linecap="round"{dash}/>"#
                    );
                }
                // A point with no drawable neighbour would otherwise be invisible.
                let lonely: Vec<(f64, f64)> = (0..mapped.len())
                    .filter(|&k| {
                        let before = k > 0 && mapped[k - 1].is_some();
                        let after = k + 1 < mapped.len() && mapped[k + 1].is_some();
                        !before && !after
                    })
                    .filter_map(|k| mapped[k])
                    .filter(|&(x, y)| bounds.contains(x, y))
                    .collect();
                if !series.style.has_markers() && !lonely.is_empty() {
                    let d: String = lonely.iter().map(|&(x, y)| marker_path(0, x, y, 2.2)).collect();
                    let _ = writeln!(out, r#"<path d="{d}" fill="{color}"/>"#);
                }
            }
            if series.style.has_markers() {
                let d: String = mapped
                    .iter()
                    .flatten()
                    .filter(|&&(x, y)| bounds.contains(x, y))
                    .map(|&(x, y)| marker_path(i, x, y, MARKER_SIZE))
                    .collect();
                if !d.is_empty() {
                    let _ = writeln!(out, r##"<path d="{d}" fill="{color}" stroke="#ffffff" stroke-width="0.6"/>"##);
                }
            }
        }
        out.push_str("</g>\n");
        if !any {
            let _ = writeln!(
                out,
                r##"<text x="{}" y="{}" text-anchor="middle" fill="#888888">no data</text>"##,
                num((l.plot.x0 + l.plot.x1) / 2.0),
                num((l.plot.y0 + l.plot.y1) / 2.0)
            );
        }
    }

    fn render_reference_lines(&self, l: &Layout, out: &mut String) {
        let p = l.plot;
        for (y, label) in &self.hlines {
            let Some(py) = l.y.map(*y).filter(|py| (p.y0 - 0.5..=p.y1 + 0.5).contains(py)) else { continue };
            let _ = writeln!(
                out,
                r##"<line x1="{}" y1="{py}" x2="{}" y2="{py}" stroke="#333333" stroke-width="1.2" stroke-dasharray="7 4"/>"##,
                num(p.x0),
                num(p.x1),
                py = num(py)
            );
            let label = escape(label.trim());
            if !label.is_empty() {
                let ty = if py - p.y0 < 16.0 { py + 14.0 } else { py - 5.0 };
                let _ = writeln!(
                    out,
                    r##"<text x="{}" y="{}" text-anchor="end" fill="#333333" {HALO}>{label}</text>"##,
                    num(p.x1 - 5.0),
                    num(ty)
                );
            }
        }
        for (i, (x, label)) in self.vlines.iter().enumerate() {
            let Some(px) = l.x.map(*x).filter(|px| (p.x0 - 0.5..=p.x1 + 0.5).contains(px)) else { continue };
            let _ = writeln!(
                out,
                r##"<line x1="{px}" y1="{}" x2="{px}" y2="{}" stroke="#333333" stroke-width="1.2" stroke-dasharray="3 3"/>"##,
                num(p.y0),
                num(p.y1),
                px = num(px)
            );
            let text = label.trim();
            if !text.is_empty() {
                let w = text_width(text.chars().count(), FONT);
                let right = px + 4.0 + w <= p.x1 || (px - 4.0 - w < p.x0 && p.x1 - px >= px - p.x0);
                let (tx, anchor) = if right { (px + 4.0, "start") } else { (px - 4.0, "end") };
                let ty = p.y0 + 14.0 + 14.0 * (i % 3) as f64;
                let _ = writeln!(
                    out,
                    r##"<text x="{}" y="{}" text-anchor="{anchor}" fill="#333333" {HALO}>{}</text>"##,
                    num(tx),
                    num(ty),
                    escape(text)
                );
            }
        }
    }

    fn render_legend(&self, l: &Layout, out: &mut String) {
        if l.legend.is_empty() {
            return;
        }
        let x = l.plot.x1 + 16.0;
        let row = 18.0;
        let capacity = ((l.plot.height() / row).floor() as usize).max(1);
        let shown = if l.legend.len() > capacity { capacity.saturating_sub(1) } else { l.legend.len() };
        let max_chars = ((l.legend_width - LEGEND_SAMPLE - 6.0) / (FONT * CHAR_WIDTH)).floor().max(3.0) as usize;
        for (row_index, &i) in l.legend.iter().take(shown).enumerate() {
            let series = &self.series[i];
            let color = series_color(series, i);
            let y = l.plot.y0 + 8.0 + row * row_index as f64;
            if series.style.has_line() {
                let dash = if series.dashed { r#" stroke-dasharray="6 4""# } else { "" };
                let _ = writeln!(
                    out,
                    r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{color}" stroke-width="1.8"{dash}/>"#,
                    num(x),
                    num(x + LEGEND_SAMPLE),
                    y = num(y)
                );
            }
            if series.style.has_markers() {
                let _ = writeln!(
                    out,
                    r##"<path d="{}" fill="{color}" stroke="#ffffff" stroke-width="0.6"/>"##,
                    marker_path(i, x + LEGEND_SAMPLE / 2.0, y, MARKER_SIZE)
                );
            }
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}">{}</text>"#,
                num(x + LEGEND_SAMPLE + 6.0),
                num(y + 4.0),
                escape(&truncate(series.name.trim(), max_chars))
            );
        }
        if shown < l.legend.len() {
            let y = l.plot.y0 + 8.0 + row * shown as f64;
            let _ = writeln!(
                out,
                r##"<text x="{}" y="{}" fill="#555555">… {} more</text>"##,
                num(x),
                num(y + 4.0),
                l.legend.len() - shown
            );
        }
    }
}

/// Tick positions for an axis from `low` to `high`, aiming at no more than
/// about `intervals` intervals.
///
/// Linear axes get "nice" steps of 1, 2 or 5 × 10^k, with ticks at the
/// multiples of the step inside the range. Log axes spanning at most two
/// decades get ticks at 1, 2 and 5 × 10^k, or at 1 and 3 × 10^k when that is
/// too many; wider ones get one tick per decade (every 2nd, 3rd, 5th, ...
/// decade when there are many). When none of these gives three to
/// `intervals + 2` ticks, log axes fall back to linear ticks.
///
/// Returns an empty vector for a range the scale cannot show (non-finite
/// bounds, or `low <= 0` on a log axis). Bounds given in the wrong order are
/// swapped.
///
/// ```
/// use vigil_lab::report::svg::{Scale, ticks};
///
/// assert_eq!(ticks(Scale::Linear, 0.0, 1.0, 5), [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
/// assert_eq!(ticks(Scale::Log10, 1.0, 1000.0, 5), [1.0, 10.0, 100.0, 1000.0]);
/// ```
pub fn ticks(scale: Scale, low: f64, high: f64, intervals: usize) -> Vec<f64> {
    let (low, high) = if low <= high { (low, high) } else { (high, low) };
    if !(low.is_finite() && high.is_finite()) {
        return Vec::new();
    }
    let intervals = intervals.clamp(1, 100);
    match scale {
        Scale::Linear => linear_ticks(low, high, intervals),
        Scale::Log10 if low > 0.0 => log_ticks(low, high, intervals),
        Scale::Log10 => Vec::new(),
    }
}

/// Formats a tick value compactly.
///
/// Values whose magnitude is in `[1e-4, 1e6)` are written in plain decimal
/// notation, others in scientific notation (`1e-5`, `2.5e7`), in both cases
/// rounded to 10 significant digits with trailing zeros removed, so
/// floating-point noise such as `0.30000000000000004` prints as `0.3`. Zero
/// (including `-0`) is `0`; non-finite values are `NaN`, `∞` and `-∞`.
///
/// ```
/// use vigil_lab::report::svg::format_tick;
///
/// assert_eq!(format_tick(0.1 + 0.2), "0.3");
/// assert_eq!(format_tick(1e-5), "1e-5");
/// assert_eq!(format_tick(250.0), "250");
/// ```
pub fn format_tick(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_string()
    } else if value.is_infinite() {
        if value > 0.0 { "∞" } else { "-∞" }.to_string()
    } else if value == 0.0 {
        "0".to_string()
    } else if plain_notation(value) {
        let magnitude = value.abs().log10().floor() as i32;
        let decimals = (9 - magnitude).clamp(0, 20) as usize;
        trim_fraction(&format!("{value:.decimals$}"))
    } else {
        scientific(value)
    }
}

// ---------------------------------------------------------------------------
// Layout and geometry.

const FONT: f64 = 12.0;
const TICK_FONT: f64 = 11.0;
const TITLE_FONT: f64 = 15.0;
/// Average glyph width as a fraction of the font size (sans-serif, digits).
const CHAR_WIDTH: f64 = 0.6;
/// Half-size of a marker in pixels.
const MARKER_SIZE: f64 = 3.2;
/// Length of the line sample in the legend.
const LEGEND_SAMPLE: f64 = 24.0;
/// How far beyond the plot area lines may reach, so that a line drawn on the
/// frame stays whole. Lines are clipped geometrically to this; the clip path
/// is wider by a marker, so that markers centred on the frame stay whole.
const CLIP_SLACK: f64 = 1.0;
/// Largest magnitude used when choosing automatic ranges.
const MAX_ABS: f64 = 1e300;
/// How far outside the plot area (in plot sizes) positions are clamped.
const FAR: f64 = 1e4;
/// A white outline that keeps labels readable over lines.
const HALO: &str = r##"stroke="#ffffff" stroke-width="3" stroke-linejoin="round" paint-order="stroke""##;

struct Layout {
    width: f64,
    height: f64,
    plot: Rect,
    x: Axis,
    y: Axis,
    x_ticks: Vec<f64>,
    x_labels: Vec<String>,
    y_ticks: Vec<f64>,
    y_labels: Vec<String>,
    /// Indices of the series listed in the legend.
    legend: Vec<usize>,
    legend_width: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Rect {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl Rect {
    fn width(self) -> f64 {
        self.x1 - self.x0
    }

    fn height(self) -> f64 {
        self.y1 - self.y0
    }

    fn expand(self, by: f64) -> Rect {
        Rect { x0: self.x0 - by, y0: self.y0 - by, x1: self.x1 + by, y1: self.y1 + by }
    }

    fn contains(self, x: f64, y: f64) -> bool {
        (self.x0..=self.x1).contains(&x) && (self.y0..=self.y1).contains(&y)
    }
}

/// A resolved axis: data range and the pixel positions of its ends.
#[derive(Clone, Copy, Debug)]
struct Axis {
    scale: Scale,
    low: f64,
    high: f64,
    from: f64,
    to: f64,
}

impl Axis {
    fn new(scale: Scale, (low, high): (f64, f64), from: f64, to: f64) -> Axis {
        Axis { scale, low, high, from, to }
    }

    /// The pixel position of `v`, or `None` if the scale cannot show it.
    /// Positions far outside the plot are clamped (preserving direction well
    /// enough for clipping).
    fn map(&self, v: f64) -> Option<f64> {
        let (t, lo, hi) =
            (transform(self.scale, v)?, transform(self.scale, self.low)?, transform(self.scale, self.high)?);
        let f = ((t - lo) / (hi - lo)).clamp(-FAR, FAR);
        if f.is_nan() { None } else { Some(self.from + f * (self.to - self.from)) }
    }
}

fn transform(scale: Scale, v: f64) -> Option<f64> {
    match scale {
        Scale::Linear if v.is_finite() => Some(v),
        Scale::Log10 if v.is_finite() && v > 0.0 => Some(v.log10()),
        _ => None,
    }
}

/// Whether `v` can be drawn on `scale` and is sane enough to shape a range.
fn usable(scale: Scale, v: f64) -> bool {
    transform(scale, v).is_some() && v.abs() <= MAX_ABS
}

/// How many tick intervals fit in `pixels` with about `spacing` pixels each.
fn intervals_for(pixels: f64, spacing: f64) -> usize {
    (pixels / spacing).floor().clamp(2.0, 10.0) as usize
}

fn text_width(chars: usize, font: f64) -> f64 {
    chars as f64 * font * CHAR_WIDTH
}

fn series_color(series: &Series, index: usize) -> String {
    match &series.color {
        Some(color) if !color.trim().is_empty() => escape(color.trim()),
        _ => PALETTE[index % PALETTE.len()].to_string(),
    }
}

/// The range shown on an axis: the explicit one if usable, else one derived
/// from `values`. Automatic linear ranges come with the tick step their
/// bounds are aligned to.
fn resolve_range(
    scale: Scale,
    explicit: Option<(f64, f64)>,
    values: &[f64],
    intervals: usize,
) -> ((f64, f64), Option<Step>) {
    if let Some((a, b)) = explicit {
        let (low, high) = if a <= b { (a, b) } else { (b, a) };
        if usable(scale, low) && usable(scale, high) {
            return match scale {
                Scale::Linear if too_narrow(low, high) => auto_linear(low, high, intervals),
                Scale::Log10 if too_narrow(low.log10(), high.log10()) => (auto_log(low, high), None),
                _ => ((low, high), None),
            };
        }
    }
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match scale {
        Scale::Linear if values.is_empty() => auto_linear(0.0, 1.0, intervals),
        Scale::Log10 if values.is_empty() => ((1.0, 10.0), None),
        Scale::Linear => auto_linear(low, high, intervals),
        Scale::Log10 => (auto_log(low, high), None),
    }
}

/// Whether `[low, high]` is too narrow to draw (empty or below float noise).
fn too_narrow(low: f64, high: f64) -> bool {
    let span = high - low;
    !(span > 1e-200 && span > low.abs().max(high.abs()) * 1e-9)
}

/// A linear range covering `[low, high]`, rounded outwards to multiples of
/// a nice tick step, and that step. Of the step for `intervals` and the next
/// finer one, the finer wins when it gives a tighter range with at most two
/// intervals more. A range too narrow to draw is first widened around its
/// center, without crossing zero when the data does not.
fn auto_linear(low: f64, high: f64, intervals: usize) -> ((f64, f64), Option<Step>) {
    let (mut lo, mut hi) = (low, high);
    if too_narrow(low, high) {
        let center = (low + high) / 2.0;
        let half = if center == 0.0 { 1.0 } else { center.abs() * 0.5 };
        (lo, hi) = (center - half, center + half);
        if low >= 0.0 && lo < 0.0 {
            lo = 0.0;
        } else if high <= 0.0 && hi > 0.0 {
            hi = 0.0;
        }
    }
    let align = |step: Step| {
        let size = step.value();
        let (a, b) = (step.at((lo / size + 1e-9).floor()), step.at((hi / size - 1e-9).ceil()));
        let a = if a == 0.0 { 0.0 } else { a };
        (a.is_finite() && b.is_finite() && a < b).then_some((a, b, ((b - a) / size).round()))
    };
    let coarse = Step::for_span(hi - lo, intervals);
    let fine = coarse.finer();
    match (align(coarse), align(fine)) {
        (Some((a, b, _)), Some((c, d, n))) if d - c < b - a && n <= (intervals + 2) as f64 => ((c, d), Some(fine)),
        (Some((a, b, _)), _) => ((a, b), Some(coarse)),
        _ => ((lo, hi), None),
    }
}

/// A log range covering `[low, high]`, rounded outwards to whole decades
/// (at least one decade wide).
fn auto_log(low: f64, high: f64) -> (f64, f64) {
    let mut a = (low.log10() + 1e-9).floor().clamp(-300.0, 300.0) as i32;
    let mut b = (high.log10() - 1e-9).ceil().clamp(-300.0, 300.0) as i32;
    if b <= a {
        a -= 1;
        b = a + 2;
    }
    (decade(1, a), decade(1, b))
}

/// `mult × 10^exp`, correctly rounded.
fn decade(mult: u32, exp: i32) -> f64 {
    format!("{mult}e{exp}").parse().unwrap_or(f64::NAN)
}

/// A tick step `mult × 10^exp` with `mult` in {1, 2, 5}.
#[derive(Clone, Copy, Debug)]
struct Step {
    mult: f64,
    exp: i32,
}

impl Step {
    /// The smallest nice step that splits `span` into at most `intervals`.
    fn for_span(span: f64, intervals: usize) -> Step {
        let raw = span / intervals.max(1) as f64;
        if !(raw.is_finite() && raw > 0.0) {
            return Step { mult: 1.0, exp: 0 };
        }
        let exp = raw.log10().floor().clamp(-320.0, 320.0) as i32;
        let fraction = raw / decade(1, exp);
        match [1.0, 2.0, 5.0].into_iter().find(|m| m * (1.0 + 1e-9) >= fraction) {
            Some(mult) => Step { mult, exp },
            None => Step { mult: 1.0, exp: exp + 1 },
        }
    }

    /// The next smaller nice step.
    fn finer(self) -> Step {
        match self.mult {
            m if m >= 5.0 => Step { mult: 2.0, exp: self.exp },
            m if m >= 2.0 => Step { mult: 1.0, exp: self.exp },
            _ => Step { mult: 5.0, exp: self.exp.saturating_sub(1) },
        }
    }

    fn value(self) -> f64 {
        self.at(1.0)
    }

    /// `k` steps, computed so that e.g. 3 × 0.2 is exactly `0.6`.
    fn at(self, k: f64) -> f64 {
        if self.exp >= 0 { k * self.mult * decade(1, self.exp) } else { k * self.mult / decade(1, -self.exp) }
    }
}

fn linear_ticks(low: f64, high: f64, intervals: usize) -> Vec<f64> {
    if high <= low {
        return vec![low];
    }
    step_ticks(low, high, Step::for_span(high - low, intervals))
}

/// The multiples of `step` in `[low, high]`.
fn step_ticks(low: f64, high: f64, step: Step) -> Vec<f64> {
    let size = step.value();
    let (k0, k1) = ((low / size - 1e-9).ceil(), (high / size + 1e-9).floor());
    if !(k0.is_finite() && k1.is_finite()) || k0.abs() > 1e15 || k1.abs() > 1e15 || k1 - k0 > 1000.0 {
        return vec![low, high];
    }
    let mut out: Vec<f64> = Vec::new();
    let mut k = k0;
    while k <= k1 {
        let v = step.at(k);
        let v = if v == 0.0 { 0.0 } else { v };
        if out.last() != Some(&v) {
            out.push(v);
        }
        k += 1.0;
    }
    out
}

fn log_ticks(low: f64, high: f64, intervals: usize) -> Vec<f64> {
    let (a, b) = (low.log10(), high.log10());
    let inside = |v: f64| v >= low * (1.0 - 1e-9) && v <= high * (1.0 + 1e-9);
    let d0 = (a - 1e-9).ceil().clamp(-400.0, 400.0) as i32;
    let d1 = (b + 1e-9).floor().clamp(-400.0, 400.0) as i32;
    let mut candidates: Vec<Vec<f64>> = Vec::new();
    if b - a <= 2.0 + 1e-9 {
        for mantissas in [&[1, 2, 5][..], &[1, 3]] {
            let ticks = ((d0 - 1)..=d1).flat_map(|d| mantissas.iter().map(move |&m| decade(m, d)));
            candidates.push(ticks.filter(|&v| inside(v)).collect());
        }
    }
    let decades = (d1 - d0 + 1).max(1) as usize;
    let stride =
        [1, 2, 3, 5, 10, 20, 50, 100].into_iter().find(|&s| decades.div_ceil(s) <= intervals + 1).unwrap_or(200);
    candidates.push(
        (d0..=d1).filter(|d| d.rem_euclid(stride as i32) == 0).map(|d| decade(1, d)).filter(|&v| inside(v)).collect(),
    );
    if let Some(found) = candidates.iter().find(|c| (3..=intervals + 2).contains(&c.len())) {
        return found.clone();
    }
    let linear: Vec<f64> = linear_ticks(low, high, intervals).into_iter().filter(|&v| v > 0.0).collect();
    if linear.len() >= 2 { linear } else { candidates.into_iter().max_by_key(Vec::len).unwrap_or_default() }
}

/// Unlabelled minor grid positions of a log axis (2..9 × 10^k), when it
/// spans few enough decades for them to be useful.
fn log_minor_ticks(low: f64, high: f64, major: &[f64]) -> Vec<f64> {
    let (a, b) = (low.log10(), high.log10());
    if !(a.is_finite() && b.is_finite()) || b - a > 6.0 {
        return Vec::new();
    }
    let (d0, d1) = (a.floor() as i32, b.ceil() as i32);
    (d0..=d1)
        .flat_map(|d| (2..=9).map(move |m| decade(m, d)))
        .filter(|&v| v > low && v < high && !major.iter().any(|&t| (t - v).abs() <= v * 1e-9))
        .collect()
}

/// Labels for one axis: scientific for all when any value needs it, so that
/// an axis does not mix `1e-5` with `0.001`.
fn format_labels(values: &[f64]) -> Vec<String> {
    let all_plain = values.iter().all(|&v| v == 0.0 || plain_notation(v));
    values
        .iter()
        .map(|&v| if all_plain || v == 0.0 || !v.is_finite() { format_tick(v) } else { scientific(v) })
        .collect()
}

fn plain_notation(value: f64) -> bool {
    (1e-4..1e6).contains(&value.abs())
}

fn scientific(value: f64) -> String {
    let text = format!("{value:.9e}");
    match text.split_once('e') {
        Some((mantissa, exp)) => format!("{}e{exp}", trim_fraction(mantissa)),
        None => text,
    }
}

fn trim_fraction(text: &str) -> String {
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text.to_string() }
}

/// A pixel coordinate with at most two decimals.
fn num(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let text = trim_fraction(&format!("{v:.2}"));
    if text == "-0" { "0".to_string() } else { text }
}

fn render_grid(l: &Layout, out: &mut String) {
    let p = l.plot;
    let mut minor = String::new();
    let mut major = String::new();
    if l.x.scale == Scale::Log10 {
        for v in log_minor_ticks(l.x.low, l.x.high, &l.x_ticks) {
            if let Some(x) = l.x.map(v) {
                let _ = write!(minor, "M{},{}V{}", num(x), num(p.y0), num(p.y1));
            }
        }
    }
    if l.y.scale == Scale::Log10 {
        for v in log_minor_ticks(l.y.low, l.y.high, &l.y_ticks) {
            if let Some(y) = l.y.map(v) {
                let _ = write!(minor, "M{},{}H{}", num(p.x0), num(y), num(p.x1));
            }
        }
    }
    for x in l.x_ticks.iter().filter_map(|&v| l.x.map(v)) {
        let _ = write!(major, "M{},{}V{}", num(x), num(p.y0), num(p.y1));
    }
    for y in l.y_ticks.iter().filter_map(|&v| l.y.map(v)) {
        let _ = write!(major, "M{},{}H{}", num(p.x0), num(y), num(p.x1));
    }
    if !minor.is_empty() {
        let _ = writeln!(out, r##"<path d="{minor}" stroke="#f0f0f0" stroke-width="1"/>"##);
    }
    if !major.is_empty() {
        let _ = writeln!(out, r##"<path d="{major}" stroke="#dddddd" stroke-width="1"/>"##);
    }
}

fn render_axes(chart: &Chart, l: &Layout, out: &mut String) {
    let p = l.plot;
    let _ = writeln!(
        out,
        r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#666666" stroke-width="1"/>"##,
        num(p.x0),
        num(p.y0),
        num(p.width()),
        num(p.height())
    );
    let mut marks = String::new();
    let mut labels = String::new();
    for (v, label) in l.x_ticks.iter().zip(&l.x_labels) {
        let Some(x) = l.x.map(*v) else { continue };
        let _ = write!(marks, "M{},{}v5", num(x), num(p.y1));
        let _ = writeln!(
            labels,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            num(x),
            num(p.y1 + 18.0),
            escape(label)
        );
    }
    for (v, label) in l.y_ticks.iter().zip(&l.y_labels) {
        let Some(y) = l.y.map(*v) else { continue };
        let _ = write!(marks, "M{},{}h-5", num(p.x0), num(y));
        let _ = writeln!(
            labels,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            num(p.x0 - 8.0),
            num(y + 4.0),
            escape(label)
        );
    }
    if !marks.is_empty() {
        let _ = writeln!(out, r##"<path d="{marks}" stroke="#666666" stroke-width="1"/>"##);
    }
    if !labels.is_empty() {
        let _ = writeln!(out, r##"<g font-size="{TICK_FONT}" fill="#333333">"##);
        out.push_str(&labels);
        out.push_str("</g>\n");
    }
    let x_label = escape(chart.x_label.trim());
    if !x_label.is_empty() {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{x_label}</text>"#,
            num((p.x0 + p.x1) / 2.0),
            num(p.y1 + 40.0)
        );
    }
    let y_label = escape(chart.y_label.trim());
    if !y_label.is_empty() {
        let (x, y) = (num(16.0), num((p.y0 + p.y1) / 2.0));
        let _ = writeln!(
            out,
            r#"<text x="{x}" y="{y}" text-anchor="middle" transform="rotate(-90 {x} {y})">{y_label}</text>"#
        );
    }
}

/// Expands a mapped series into the corners of its step function.
fn step_points(points: &[Option<(f64, f64)>]) -> Vec<Option<(f64, f64)>> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (k, point) in points.iter().enumerate() {
        if let (Some((x, _)), Some(Some((_, y_prev)))) = (point, k.checked_sub(1).map(|j| points[j])) {
            out.push(Some((*x, y_prev)));
        }
        out.push(*point);
    }
    out
}

/// Liang–Barsky: the parameter interval of segment `a`–`b` inside `r`.
fn clip_segment(r: Rect, a: (f64, f64), b: (f64, f64)) -> Option<(f64, f64)> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0_f64, 1.0_f64);
    for (p, q) in [(-dx, a.0 - r.x0), (dx, r.x1 - a.0), (-dy, a.1 - r.y0), (dy, r.y1 - a.1)] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
            if t0 > t1 {
                return None;
            }
        }
    }
    Some((t0, t1))
}

/// The visible pieces of a broken polyline (`None` breaks it) inside `r`.
fn line_runs(points: &[Option<(f64, f64)>], r: Rect) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut open = false;
    for pair in points.windows(2) {
        let (Some(a), Some(b)) = (pair[0], pair[1]) else {
            open = false;
            continue;
        };
        let Some((t0, t1)) = clip_segment(r, a, b) else {
            open = false;
            continue;
        };
        let at = |t: f64| (a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1));
        let end = if t1 >= 1.0 { b } else { at(t1) };
        match runs.last_mut() {
            Some(run) if open && t0 <= 0.0 => run.push(end),
            _ => runs.push(vec![if t0 <= 0.0 { a } else { at(t0) }, end]),
        }
        open = t1 >= 1.0;
    }
    runs
}

/// SVG path data for polyline runs, dropping repeated coordinates.
fn path_data(runs: &[Vec<(f64, f64)>]) -> String {
    let mut d = String::new();
    for run in runs {
        let mut coords: Vec<String> = run.iter().map(|&(x, y)| format!("{},{}", num(x), num(y))).collect();
        coords.dedup();
        if coords.len() < 2 {
            continue;
        }
        let _ = write!(d, "M{}L{}", coords[0], coords[1..].join(" "));
    }
    d
}

/// Path data for one marker: circle, square, triangle or diamond by `shape`.
fn marker_path(shape: usize, x: f64, y: f64, r: f64) -> String {
    match shape % 4 {
        0 => format!("M{},{}a{r},{r} 0 1,0 {},0a{r},{r} 0 1,0 -{},0", num(x - r), num(y), num(2.0 * r), num(2.0 * r)),
        1 => {
            let s = r * 0.9;
            format!("M{},{}h{d}v{d}h-{d}z", num(x - s), num(y - s), d = num(2.0 * s))
        }
        2 => {
            let s = r * 1.15;
            format!(
                "M{},{}L{},{} {},{}z",
                num(x),
                num(y - s),
                num(x + s),
                num(y + s * 0.75),
                num(x - s),
                num(y + s * 0.75)
            )
        }
        _ => {
            let s = r * 1.2;
            format!(
                "M{},{}L{},{} {},{} {},{}z",
                num(x),
                num(y - s),
                num(x + s),
                num(y),
                num(x),
                num(y + s),
                num(x - s),
                num(y)
            )
        }
    }
}

/// At most `max` characters of `text`, ending in `…` when shortened.
fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut short: String = text.chars().take(max.saturating_sub(1)).collect();
        short.push('…');
        short
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny XML well-formedness checker: balanced elements, quoted and
    /// unique attributes, entities only from the known set, a single root.
    fn check_well_formed(doc: &str) -> Result<(), String> {
        let mut stack: Vec<String> = Vec::new();
        let mut roots = 0;
        let mut rest = doc;
        while !rest.is_empty() {
            let Some(open) = rest.find('<') else {
                check_text(rest)?;
                break;
            };
            check_text(&rest[..open])?;
            if stack.is_empty() && !rest[..open].trim().is_empty() {
                return Err(format!("text outside the root: {:?}", &rest[..open]));
            }
            rest = &rest[open..];
            if let Some(after) = rest.strip_prefix("</") {
                let end = after.find('>').ok_or("unterminated end tag")?;
                let name = after[..end].trim();
                match stack.pop() {
                    Some(top) if top == name => {}
                    other => return Err(format!("</{name}> closes {other:?}")),
                }
                rest = &after[end + 1..];
                continue;
            }
            let after = &rest[1..];
            let name_len = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == ':')).unwrap_or(0);
            if name_len == 0 {
                return Err(format!("bad tag at {:?}", &rest[..rest.len().min(20)]));
            }
            let name = &after[..name_len];
            let mut attrs = &after[name_len..];
            let mut seen: Vec<&str> = Vec::new();
            let self_closing;
            loop {
                attrs = attrs.trim_start();
                if let Some(r) = attrs.strip_prefix("/>") {
                    self_closing = true;
                    attrs = r;
                    break;
                }
                if let Some(r) = attrs.strip_prefix('>') {
                    self_closing = false;
                    attrs = r;
                    break;
                }
                let n = attrs.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == ':')).unwrap_or(0);
                if n == 0 {
                    return Err(format!("bad attribute in <{name}>: {:?}", &attrs[..attrs.len().min(20)]));
                }
                let attr = &attrs[..n];
                if seen.contains(&attr) {
                    return Err(format!("duplicate attribute {attr} in <{name}>"));
                }
                seen.push(attr);
                let value = attrs[n..].strip_prefix("=\"").ok_or_else(|| format!("unquoted attribute {attr}"))?;
                let end = value.find('"').ok_or("unterminated attribute")?;
                if value[..end].contains('<') {
                    return Err(format!("'<' in attribute {attr}"));
                }
                check_text(&value[..end])?;
                attrs = &value[end + 1..];
            }
            if stack.is_empty() {
                roots += 1;
            }
            if !self_closing {
                stack.push(name.to_string());
            }
            rest = attrs;
        }
        if !stack.is_empty() {
            return Err(format!("unclosed elements {stack:?}"));
        }
        if roots != 1 {
            return Err(format!("{roots} root elements"));
        }
        Ok(())
    }

    fn check_text(text: &str) -> Result<(), String> {
        if text.contains('>') {
            return Err(format!("raw '>' in {text:?}"));
        }
        if text.chars().any(|c| c < ' ' && !matches!(c, '\t' | '\n' | '\r')) {
            return Err(format!("control character in {text:?}"));
        }
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            if !["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].iter().any(|e| entity.starts_with(e)) {
                return Err(format!("bad entity at {:?}", &entity[..entity.len().min(10)]));
            }
        }
        Ok(())
    }

    fn assert_valid(svg: &str) {
        if let Err(e) = check_well_formed(svg) {
            panic!("not well-formed: {e}\n{svg}");
        }
        assert!(svg.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" width=""#), "{svg}");
        assert!(svg.contains(" viewBox=\"0 0 "));
    }

    /// All numbers in geometry attributes, which must be finite and short.
    fn geometry_numbers(svg: &str) -> Vec<String> {
        let mut numbers = Vec::new();
        for attr in ["d", "x", "y", "x1", "x2", "y1", "y2", "width", "height"] {
            let key = format!(" {attr}=\"");
            for (i, _) in svg.match_indices(&key) {
                let value = &svg[i + key.len()..];
                let value = &value[..value.find('"').unwrap()];
                let mut current = String::new();
                for c in value.chars().chain([' ']) {
                    if c.is_ascii_digit() || c == '.' || (c == '-' && current.is_empty()) {
                        current.push(c);
                    } else if !current.is_empty() {
                        numbers.push(std::mem::take(&mut current));
                    }
                }
            }
        }
        numbers
    }

    fn sample_chart() -> Chart {
        let phi: Vec<(f64, f64)> = (0..=100).map(|i| (f64::from(i) * 0.1, (f64::from(i) * 0.09).powi(2))).collect();
        Chart::new("φ around a regime change", "time (s)", "φ")
            .with_series(Series::new("normal", phi.clone()))
            .with_series(Series::new("exponential", phi.iter().map(|&(x, y)| (x, y * 0.5))).with_dashed(true))
            .with_series(Series::new("alarms", [(1.0, 2.0), (3.0, 4.0)]).with_style(Style::Points))
            .with_series(Series::new("steps", [(0.0, 1.0), (5.0, 3.0), (8.0, 6.0)]).with_style(Style::Step))
            .with_series(Series::new("", [(2.0, 70.0), (4.0, 40.0)]).with_style(Style::LinePoints))
            .with_hline(8.0, "threshold 8")
            .with_vline(5.0, "regime change")
            .with_band(5.0, 7.5, "congested")
    }

    #[test]
    fn sample_chart_is_well_formed() {
        let svg = sample_chart().to_svg();
        assert_valid(&svg);
        for needle in ["threshold 8", "regime change", "congested", "normal", "exponential", "stroke-dasharray=\"6 4\""]
        {
            assert!(svg.contains(needle), "missing {needle}");
        }
        assert!(svg.contains("font-family=\"sans-serif\""));
        assert!(!svg.contains("<script"));
        assert!(!svg.contains("http://") || svg.matches("http://").count() == 1, "only the xmlns URL");
    }

    #[test]
    fn coordinates_have_at_most_two_decimals() {
        let svg = sample_chart().with_x_scale(Scale::Log10).to_svg();
        let numbers = geometry_numbers(&svg);
        assert!(numbers.len() > 100);
        for n in numbers {
            let decimals = n.split_once('.').map_or(0, |(_, f)| f.len());
            assert!(decimals <= 2, "{n}");
            assert!(n.parse::<f64>().is_ok_and(f64::is_finite), "{n}");
        }
    }

    #[test]
    fn clip_path_is_defined_and_used() {
        let svg = sample_chart().to_svg();
        let start = svg.find("<clipPath id=\"").unwrap() + "<clipPath id=\"".len();
        let id = &svg[start..start + svg[start..].find('"').unwrap()];
        assert!(id.starts_with("vigil-clip-"));
        assert!(svg.contains(&format!("clip-path=\"url(#{id})\"")));
        let other = sample_chart().with_size(500, 300).to_svg();
        assert!(!other.contains(id), "different charts get different ids");
    }

    #[test]
    fn text_is_escaped() {
        let hostile = r#"<b>"Tom" & 'Jerry'</b>"#;
        let chart = Chart::new(hostile, hostile, hostile)
            .with_series(Series::new(hostile, [(1.0, 1.0), (2.0, 2.0)]).with_color(r#"red" onload="x"#))
            .with_hline(1.5, hostile)
            .with_vline(1.5, hostile)
            .with_band(1.2, 1.8, hostile);
        let svg = chart.to_svg();
        assert_valid(&svg);
        assert!(!svg.contains("<b>"));
        assert!(!svg.contains("onload=\""));
        assert!(svg.contains("&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;"));
        assert_eq!(escape("a\u{0}b\u{1b}c\td"), "a\u{fffd}b\u{fffd}c\td");
    }

    #[test]
    fn linear_ticks_are_nice() {
        assert_eq!(ticks(Scale::Linear, 0.0, 1.0, 5), [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(ticks(Scale::Linear, 0.0, 100.0, 5), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(ticks(Scale::Linear, -3.0, 7.0, 5), [-2.0, 0.0, 2.0, 4.0, 6.0]);
        assert_eq!(ticks(Scale::Linear, 0.0, 0.3, 3), [0.0, 0.1, 0.2, 0.3]);
        assert_eq!(ticks(Scale::Linear, 1.0, 0.0, 2), [0.0, 0.5, 1.0], "swapped bounds");
        assert_eq!(ticks(Scale::Linear, 0.0, 3e-5, 3), [0.0, 1e-5, 2e-5, 3e-5]);
        assert_eq!(ticks(Scale::Linear, 0.0, 2.5e6, 5), [0.0, 5e5, 1e6, 1.5e6, 2e6, 2.5e6]);
        assert_eq!(ticks(Scale::Linear, 5.0, 5.0, 5), [5.0]);
        assert!(ticks(Scale::Linear, f64::NAN, 1.0, 5).is_empty());
    }

    #[test]
    fn log_ticks_use_decades() {
        assert_eq!(ticks(Scale::Log10, 1.0, 1000.0, 5), [1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(ticks(Scale::Log10, 1.0, 100.0, 5), [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
        assert_eq!(ticks(Scale::Log10, 1e-6, 1.0, 3), [1e-6, 1e-4, 1e-2, 1.0]);
        assert_eq!(ticks(Scale::Log10, 3.0, 70.0, 5), [5.0, 10.0, 20.0, 50.0]);
        assert_eq!(ticks(Scale::Log10, 2.0, 8.0, 3), [2.0, 4.0, 6.0, 8.0], "falls back to linear");
        assert_eq!(ticks(Scale::Log10, 1.0, 100.0, 2), [1.0, 10.0, 100.0], "too crowded for 2 and 5");
        assert_eq!(ticks(Scale::Log10, 2.0, 80.0, 2), [3.0, 10.0, 30.0]);
        assert_eq!(ticks(Scale::Log10, 1e-300, 1e300, 5), [1e-200, 1.0, 1e200]);
        assert!(ticks(Scale::Log10, 0.0, 10.0, 5).is_empty());
        assert!(ticks(Scale::Log10, -5.0, 10.0, 5).is_empty());
    }

    #[test]
    fn tick_labels_are_compact() {
        assert_eq!(format_tick(0.1 + 0.2), "0.3");
        assert_eq!(format_tick(0.6000000000000001), "0.6");
        assert_eq!(format_tick(-0.0), "0");
        assert_eq!(format_tick(1.0), "1");
        assert_eq!(format_tick(-2.5), "-2.5");
        assert_eq!(format_tick(1234.5), "1234.5");
        assert_eq!(format_tick(0.0001), "0.0001");
        assert_eq!(format_tick(1e-5), "1e-5");
        assert_eq!(format_tick(2.5e7), "2.5e7");
        assert_eq!(format_tick(1e6), "1e6");
        assert_eq!(format_tick(999_999.0), "999999");
        assert_eq!(format_tick(f64::NAN), "NaN");
        assert_eq!(format_labels(&[1e-5, 1e-4, 1e-3, 0.01]), ["1e-5", "1e-4", "1e-3", "1e-2"]);
        assert_eq!(format_labels(&[0.0, 0.5, 1.0]), ["0", "0.5", "1"]);
        assert_eq!(format_labels(&[0.0, 1e6, 2e6]), ["0", "1e6", "2e6"]);
    }

    #[test]
    fn automatic_ranges_are_tick_aligned() {
        let chart = Chart::new("", "", "").with_series(Series::new("a", [(0.0, 0.0), (9.7, 0.93)]));
        let l = chart.layout();
        assert_eq!((l.x.low, l.x.high), (0.0, 10.0));
        assert_eq!((l.y.low, l.y.high), (0.0, 1.0));
        assert_eq!(l.y_ticks.first(), Some(&0.0));
        assert_eq!(l.y_ticks.last(), Some(&1.0));
        let negative = Chart::new("", "", "").with_series(Series::new("a", [(-7.0, -3.1), (-1.0, -0.6)]));
        let l = negative.layout();
        assert_eq!((l.x.low, l.x.high), (-7.0, -1.0));
        assert_eq!((l.y.low, l.y.high), (-3.5, -0.5));
        assert_eq!(l.y_ticks, [-3.5, -3.0, -2.5, -2.0, -1.5, -1.0, -0.5]);
        let odd = Chart::new("", "", "").with_series(Series::new("a", [(0.13, 17.0), (19.95, 1234.0)]));
        let l = odd.layout();
        assert_eq!((l.x.low, l.x.high), (0.0, 20.0));
        assert_eq!((l.y.low, l.y.high), (0.0, 1400.0));
        // A finer step wins when it fits the data more tightly.
        let tight = Chart::new("", "", "").with_series(Series::new("a", [(0.0, 0.0), (16.0, 200.0)]));
        let l = tight.layout();
        assert_eq!((l.x.low, l.x.high), (0.0, 16.0));
        assert_eq!(l.x_ticks, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0]);
        assert_eq!((l.y.low, l.y.high), (0.0, 200.0));
        let log = Chart::new("", "", "")
            .with_x_scale(Scale::Log10)
            .with_series(Series::new("a", [(1.0, 1.0), (1000.0, 2.0)]));
        let l = log.layout();
        assert_eq!((l.x.low, l.x.high), (1.0, 1000.0));
        assert_eq!(l.x_ticks, [1.0, 10.0, 100.0, 1000.0]);
    }

    #[test]
    fn thresholds_are_included_in_automatic_ranges() {
        let chart = Chart::new("", "", "").with_series(Series::new("a", [(0.0, 1.0), (1.0, 3.0)])).with_hline(8.0, "t");
        let l = chart.layout();
        assert!(l.y.high >= 8.0);
        assert!(chart.to_svg().contains(">t</text>"));
    }

    #[test]
    fn log_axes_skip_non_positive_values() {
        let points = [(0.0, 5.0), (-1.0, 3.0), (1.0, 10.0), (10.0, 100.0), (5.0, 0.0), (7.0, -2.0)];
        let chart = Chart::new("", "", "")
            .with_x_scale(Scale::Log10)
            .with_y_scale(Scale::Log10)
            .with_series(Series::new("a", points).with_style(Style::LinePoints));
        let l = chart.layout();
        assert_eq!((l.x.low, l.x.high), (1.0, 10.0));
        assert_eq!((l.y.low, l.y.high), (10.0, 100.0));
        let svg = chart.to_svg();
        assert_valid(&svg);
        assert!(!svg.contains("no data"));
        // Only the two positive points become markers (two circles, two arcs each).
        let markers = svg.lines().find(|line| line.contains("stroke-width=\"0.6\"")).unwrap();
        assert_eq!(markers.matches("a3.2,3.2").count(), 4, "{markers}");
        // An explicit log range including zero is unusable and ignored.
        let l = chart.clone().with_x_range(0.0, 100.0).layout();
        assert_eq!((l.x.low, l.x.high), (1.0, 10.0));
    }

    #[test]
    fn degenerate_data_gets_a_sensible_range() {
        let empty = Chart::new("empty", "x", "y");
        let svg = empty.to_svg();
        assert_valid(&svg);
        assert!(svg.contains("no data"));
        let l = empty.layout();
        assert_eq!((l.x.low, l.x.high, l.y.low, l.y.high), (0.0, 1.0, 0.0, 1.0));

        let single = Chart::new("", "", "").with_series(Series::new("one", [(3.0, 42.0)]));
        let l = single.layout();
        assert!(l.x.low < 3.0 && 3.0 < l.x.high);
        assert!(l.y.low < 42.0 && 42.0 < l.y.high);
        let svg = single.to_svg();
        assert_valid(&svg);
        assert!(svg.contains("a2.2,2.2 0 1,0"), "an isolated point on a line series is drawn as a dot");

        let flat = Chart::new("", "", "").with_series(Series::new("zero", [(0.0, 0.0), (1.0, 0.0), (2.0, 0.0)]));
        let l = flat.layout();
        assert_eq!((l.y.low, l.y.high), (0.0, 1.0));

        let log_single =
            Chart::new("", "", "").with_y_scale(Scale::Log10).with_series(Series::new("one", [(0.0, 100.0)]));
        let l = log_single.layout();
        assert!(l.y.low < 100.0 && 100.0 < l.y.high);
        assert_valid(&log_single.to_svg());
    }

    #[test]
    fn explicit_ranges_clip_the_data() {
        let chart = Chart::new("", "", "")
            .with_x_range(0.0, 10.0)
            .with_y_range(0.0, 1.0)
            .with_series(Series::new("a", [(-100.0, 0.5), (5.0, 0.5), (1e9, 1e9), (f64::MAX, 0.2)]));
        let l = chart.layout();
        assert_eq!((l.x.low, l.x.high), (0.0, 10.0));
        let svg = chart.to_svg();
        assert_valid(&svg);
        let bounds = l.plot.expand(CLIP_SLACK + 0.01);
        let line =
            svg.lines().find(|line| line.starts_with("<path d=\"M") && line.contains("stroke-width=\"1.8\"")).unwrap();
        let d = &line["<path d=\"".len()..line[9..].find('"').unwrap() + 9];
        for pair in d.split(['M', 'L', ' ']).filter(|s| !s.is_empty()) {
            let (x, y) = pair.split_once(',').unwrap();
            let (x, y) = (x.parse::<f64>().unwrap(), y.parse::<f64>().unwrap());
            assert!(bounds.contains(x, y), "({x}, {y}) outside {bounds:?}");
        }
    }

    #[test]
    fn clipping_keeps_runs_connected() {
        let r = Rect { x0: 0.0, y0: 0.0, x1: 10.0, y1: 10.0 };
        let points = [Some((-5.0, 5.0)), Some((5.0, 5.0)), Some((6.0, 6.0)), Some((20.0, 6.0)), None, Some((1.0, 1.0))];
        assert_eq!(line_runs(&points, r), vec![vec![(0.0, 5.0), (5.0, 5.0), (6.0, 6.0), (10.0, 6.0)]]);
        assert_eq!(clip_segment(r, (-1.0, -1.0), (-2.0, 20.0)), None);
    }

    #[test]
    fn step_series_go_horizontal_then_vertical() {
        let points = [Some((0.0, 0.0)), Some((1.0, 2.0)), None, Some((3.0, 3.0)), Some((4.0, 1.0))];
        assert_eq!(
            step_points(&points),
            [
                Some((0.0, 0.0)),
                Some((1.0, 0.0)),
                Some((1.0, 2.0)),
                None,
                Some((3.0, 3.0)),
                Some((4.0, 3.0)),
                Some((4.0, 1.0))
            ]
        );
    }

    #[test]
    fn palette_is_assigned_in_series_order() {
        let chart = Chart::new("", "", "")
            .with_series(Series::new("a", [(0.0, 0.0), (1.0, 1.0)]))
            .with_series(Series::new("b", [(0.0, 1.0), (1.0, 0.0)]).with_color("#123456"))
            .with_series(Series::new("c", [(0.0, 0.5), (1.0, 0.5)]));
        let svg = chart.to_svg();
        assert!(svg.contains(&format!("stroke=\"{}\"", PALETTE[0])));
        assert!(svg.contains("stroke=\"#123456\""));
        assert!(svg.contains(&format!("stroke=\"{}\"", PALETTE[2])));
        assert!(!svg.contains(&format!("stroke=\"{}\"", PALETTE[1])));
    }

    #[test]
    fn output_is_deterministic() {
        let a = sample_chart().to_svg();
        let b = sample_chart().to_svg();
        assert_eq!(a, b);
        assert_eq!(a, sample_chart().clone().to_svg());
    }

    #[test]
    fn many_legend_entries_are_summarised() {
        let mut chart = Chart::new("", "", "").with_size(400, 160);
        for i in 0..30 {
            chart.series.push(Series::new(format!("series number {i} with a long name"), [(0.0, f64::from(i))]));
        }
        let svg = chart.to_svg();
        assert_valid(&svg);
        assert!(svg.contains(" more</text>"));
        assert!(svg.contains('…'));
    }

    /// A deterministic source of arbitrary `f64` bit patterns.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            self.0 ^ (self.0 >> 29)
        }

        fn float(&mut self) -> f64 {
            const SPECIAL: [f64; 12] = [
                0.0,
                -0.0,
                1.0,
                -1.0,
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::MAX,
                f64::MIN,
                f64::MIN_POSITIVE,
                5e-324,
                1e300,
            ];
            match self.next() % 4 {
                0 => SPECIAL[(self.next() % SPECIAL.len() as u64) as usize],
                1 => f64::from_bits(self.next()),
                _ => (self.next() % 2001) as f64 / 100.0 - 10.0,
            }
        }
    }

    #[test]
    fn pathological_input_never_panics() {
        let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::MAX, f64::MIN, 5e-324, -0.0, 0.0, 1e-300];
        let point_sets: Vec<Vec<(f64, f64)>> = vec![
            vec![],
            vec![(f64::NAN, f64::NAN)],
            vec![(1.0, 1.0)],
            vec![(0.0, 0.0); 5],
            specials.iter().flat_map(|&a| specials.iter().map(move |&b| (a, b))).collect(),
            vec![(f64::MAX, f64::MAX), (f64::MIN, f64::MIN)],
            vec![(1.0, 5e-324), (1.0 + f64::EPSILON, 5e-324)],
            vec![(1e300, -1e300), (-1e300, 1e300)],
        ];
        let ranges =
            [None, Some((f64::NAN, 1.0)), Some((5.0, 5.0)), Some((f64::INFINITY, f64::NEG_INFINITY)), Some((1.0, 0.0))];
        let ranges = ranges.into_iter().chain([Some((-1.0, 10.0)), Some((1e-300, 1e300)), Some((1.0, 1.0 + 1e-15))]);
        let ranges: Vec<_> = ranges.collect();
        for x_scale in [Scale::Linear, Scale::Log10] {
            for y_scale in [Scale::Linear, Scale::Log10] {
                for points in &point_sets {
                    for &range in &ranges {
                        for style in [Style::Line, Style::Points, Style::LinePoints, Style::Step] {
                            let mut chart = Chart::new("t", "x", "y")
                                .with_x_scale(x_scale)
                                .with_y_scale(y_scale)
                                .with_series(Series::new("s", points.clone()).with_style(style))
                                .with_hline(f64::NAN, "nan")
                                .with_vline(f64::INFINITY, "inf")
                                .with_band(f64::NEG_INFINITY, f64::NAN, "band")
                                .with_band(3.0, -3.0, "reversed");
                            chart.x_range = range;
                            chart.y_range = range;
                            let svg = chart.to_svg();
                            assert_valid(&svg);
                            for n in geometry_numbers(&svg) {
                                assert!(n.parse::<f64>().is_ok_and(f64::is_finite), "{n}");
                            }
                        }
                    }
                }
            }
        }
        for size in [(0, 0), (1, u32::MAX), (u32::MAX, 1)] {
            let svg = sample_chart().with_size(size.0, size.1).to_svg();
            assert_valid(&svg);
        }
    }

    #[test]
    fn random_input_never_panics() {
        let mut rng = Lcg(0x5eed);
        for round in 0..300 {
            let mut chart = Chart::new("random", "x", "y");
            chart.x_scale = if rng.next().is_multiple_of(2) { Scale::Linear } else { Scale::Log10 };
            chart.y_scale = if rng.next().is_multiple_of(2) { Scale::Linear } else { Scale::Log10 };
            if rng.next().is_multiple_of(3) {
                chart.x_range = Some((rng.float(), rng.float()));
            }
            if rng.next().is_multiple_of(3) {
                chart.y_range = Some((rng.float(), rng.float()));
            }
            for s in 0..(rng.next() % 4) {
                let n = rng.next() % 40;
                let points: Vec<(f64, f64)> = (0..n).map(|_| (rng.float(), rng.float())).collect();
                let style = [Style::Line, Style::Points, Style::LinePoints, Style::Step][(rng.next() % 4) as usize];
                chart.series.push(Series::new(format!("s{s}"), points).with_style(style));
            }
            chart.hlines.push((rng.float(), "h".into()));
            chart.vlines.push((rng.float(), "v".into()));
            chart.bands.push((rng.float(), rng.float(), "b".into()));
            chart.width = (rng.next() % 2000) as u32;
            chart.height = (rng.next() % 2000) as u32;
            let svg = chart.to_svg();
            if let Err(e) = check_well_formed(&svg) {
                panic!("round {round}: {e}");
            }
            for n in geometry_numbers(&svg) {
                assert!(n.parse::<f64>().is_ok_and(f64::is_finite), "round {round}: {n}");
                assert!(n.len() < 16, "round {round}: {n}");
            }
        }
    }

    #[test]
    fn well_formedness_checker_rejects_bad_documents() {
        assert!(check_well_formed("<a><b/></a>").is_ok());
        assert!(check_well_formed("<a><b></a>").is_err());
        assert!(check_well_formed("<a x=1/>").is_err());
        assert!(check_well_formed("<a x=\"1\" x=\"2\"/>").is_err());
        assert!(check_well_formed("<a>&</a>").is_err());
        assert!(check_well_formed("<a>1 > 0</a>").is_err());
        assert!(check_well_formed("<a/><b/>").is_err());
    }
}

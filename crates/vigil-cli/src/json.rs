//! The `--json` documents, as output types of their own.
//!
//! Scripts read these documents, so their shape is a contract: each type here
//! names its fields explicitly and is filled from the library's types field
//! by field. Renaming a field inside a library cannot change a document; it
//! fails to compile here instead. Every document carries `format_version`
//! (raised when a field changes meaning or goes away; new fields do not raise
//! it) and `command`, the command that printed it.
//!
//! Two inputs are echoed as they are read, because their format is already a
//! contract of its own: a simulator scenario (`vigil sim run`'s `scenario`,
//! the TOML scenario format) and a delay distribution (`vigil lab
//! configure`'s `delay`, the same format as in lab scenarios).
//!
//! Numbers that are not finite (a mean over nothing, a recurrence time with
//! no mistakes) are `null`.

use std::collections::BTreeMap;
use std::io::Write;

use crate::demo::Demo;
use anyhow::Result;
use serde::Serialize;
use vigil_lab::chen::NfdsPrediction;
use vigil_lab::qos::{Qos, Summary};
use vigil_lab::report::document::Block;
use vigil_lab::report::table::Table;
use vigil_lab::sweep::Point;
use vigil_sim::frontier::{Frontier, Setting};
use vigil_sim::{CrashReport, FaultWindow, Report, Stretch, Totals, Violations};

/// The version of every document's format.
pub(crate) const FORMAT_VERSION: u32 = 1;

#[derive(Serialize)]
struct Document<'a, T: Serialize> {
    format_version: u32,
    command: &'a str,
    #[serde(flatten)]
    body: &'a T,
}

/// The document for `command` (`"lab run"`), pretty-printed.
pub(crate) fn to_string(command: &str, body: &impl Serialize) -> Result<String> {
    Ok(terminal_safe(&serde_json::to_string_pretty(&Document { format_version: FORMAT_VERSION, command, body })?))
}

/// JSON text with the characters a terminal would act on written as
/// `\uXXXX` escapes: the same JSON value, safe to print. JSON escapes C0
/// controls inside strings already, and nothing but whitespace lies
/// outside them, so what is left to escape (DEL, C1 controls, the
/// invisible characters that reorder text; see [`vigil_lab::text`]) is
/// always inside a string.
pub(crate) fn terminal_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if vigil_lab::text::is_unsafe(c) && !matches!(c, '\n' | '\t' | '\r' | ' ') {
            // Every such character is in the basic plane: one escape.
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Prints the document for `command` on `out`.
pub(crate) fn print(out: &mut dyn Write, command: &str, body: &impl Serialize) -> Result<()> {
    writeln!(out, "{}", to_string(command, body)?)?;
    Ok(())
}

/// A number, or `null` when it is not finite.
fn num(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

// ---------------------------------------------------------------------------
// The lab
// ---------------------------------------------------------------------------

/// Mean, median, 99th percentile and maximum, in ms.
#[derive(Serialize)]
pub(crate) struct SummaryOut {
    count: usize,
    mean: Option<f64>,
    p50: Option<f64>,
    p99: Option<f64>,
    max: Option<f64>,
}

impl From<&Summary> for SummaryOut {
    fn from(s: &Summary) -> Self {
        SummaryOut { count: s.count, mean: num(s.mean), p50: num(s.p50), p99: num(s.p99), max: num(s.max) }
    }
}

/// One detector setting's quality of service.
#[derive(Serialize)]
pub(crate) struct QosOut {
    traces: usize,
    alive_hours: Option<f64>,
    mistakes: u64,
    sampled_mistakes: u64,
    traces_with_mistake: usize,
    mistake_rate_per_hour: Option<f64>,
    mistake_duration_ms: SummaryOut,
    mean_recurrence_ms: Option<f64>,
    recurrence_ms: SummaryOut,
    good_period_ms: SummaryOut,
    query_accuracy: Option<f64>,
    crashed: usize,
    undetected: usize,
    detection_ms: SummaryOut,
    detection_from_due_ms: SummaryOut,
    mistake_beats: Vec<(u64, u64)>,
}

impl From<&Qos> for QosOut {
    fn from(q: &Qos) -> Self {
        QosOut {
            traces: q.traces,
            alive_hours: num(q.alive_hours),
            mistakes: q.mistakes,
            sampled_mistakes: q.sampled_mistakes,
            traces_with_mistake: q.traces_with_mistake,
            mistake_rate_per_hour: num(q.mistake_rate_per_hour),
            mistake_duration_ms: (&q.mistake_duration_ms).into(),
            mean_recurrence_ms: num(q.mean_recurrence_ms),
            recurrence_ms: (&q.recurrence_ms).into(),
            good_period_ms: (&q.good_period_ms).into(),
            query_accuracy: num(q.query_accuracy),
            crashed: q.crashed,
            undetected: q.undetected,
            detection_ms: (&q.detection_ms).into(),
            detection_from_due_ms: (&q.detection_from_due_ms).into(),
            mistake_beats: q.mistake_beats.clone(),
        }
    }
}

/// One detector's result (`lab run`, `lab replay`).
#[derive(Serialize)]
pub(crate) struct DetectorResult {
    pub(crate) detector: String,
    pub(crate) qos: QosOut,
    /// `lab replay` on a trace without a crash: the time to suspect after a
    /// heartbeat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) time_to_suspect_ms: Option<SummaryOut>,
}

/// `vigil lab run`.
#[derive(Serialize)]
pub(crate) struct LabRun<'a> {
    pub(crate) scenario: &'a str,
    pub(crate) seed: u64,
    pub(crate) traces: usize,
    pub(crate) results: Vec<DetectorResult>,
}

/// `vigil lab replay`.
#[derive(Serialize)]
pub(crate) struct LabReplay {
    pub(crate) trace: String,
    pub(crate) results: Vec<DetectorResult>,
}

/// One setting of a sweep.
#[derive(Serialize)]
pub(crate) struct PointOut {
    family: String,
    spec: String,
    value: String,
    detection_ms: Option<f64>,
    mistakes_per_hour: Option<f64>,
    qos: QosOut,
}

impl From<&Point> for PointOut {
    fn from(p: &Point) -> Self {
        PointOut {
            family: p.family.clone(),
            spec: p.spec.clone(),
            value: p.value.clone(),
            detection_ms: num(p.detection_ms),
            mistakes_per_hour: num(p.mistakes_per_hour),
            qos: (&p.qos).into(),
        }
    }
}

/// `vigil lab sweep`.
#[derive(Serialize)]
pub(crate) struct LabSweep {
    pub(crate) source: String,
    pub(crate) seed: u64,
    pub(crate) traces: usize,
    pub(crate) points: Vec<PointOut>,
    /// Indices into `points` of the Pareto frontier.
    pub(crate) frontier: Vec<usize>,
    pub(crate) plot: String,
}

/// `vigil lab recommend`.
#[derive(Serialize)]
pub(crate) struct LabRecommend {
    pub(crate) source: String,
    pub(crate) seed: u64,
    pub(crate) max_mistakes_per_hour: f64,
    pub(crate) observed_hours: Option<f64>,
    pub(crate) recommendation: PointOut,
    pub(crate) best_per_family: Vec<PointOut>,
}

/// Chen et al.'s QoS requirements, in ms.
#[derive(Serialize)]
pub(crate) struct RequirementsOut {
    pub(crate) max_detection_ms: f64,
    pub(crate) min_recurrence_ms: f64,
    pub(crate) max_mistake_duration_ms: f64,
}

/// NFD-S's predicted quality of service.
#[derive(Serialize)]
pub(crate) struct PredictionOut {
    p_s: Option<f64>,
    mistake_rate_per_hour: Option<f64>,
    mean_recurrence_ms: Option<f64>,
    mean_mistake_duration_ms: Option<f64>,
    query_accuracy: Option<f64>,
    max_detection_ms: Option<f64>,
}

impl From<&NfdsPrediction> for PredictionOut {
    fn from(p: &NfdsPrediction) -> Self {
        PredictionOut {
            p_s: num(p.p_s),
            mistake_rate_per_hour: num(p.mistake_rate_per_hour),
            mean_recurrence_ms: num(p.mean_recurrence_ms),
            mean_mistake_duration_ms: num(p.mean_mistake_duration_ms),
            query_accuracy: num(p.query_accuracy),
            max_detection_ms: num(p.max_detection_ms),
        }
    }
}

/// `vigil lab configure`.
#[derive(Serialize)]
pub(crate) struct LabConfigure<'a, D: Serialize> {
    pub(crate) requirements: RequirementsOut,
    pub(crate) loss: f64,
    /// The delay distribution, in the scenario format.
    pub(crate) delay: &'a D,
    pub(crate) eta_ms: f64,
    pub(crate) delta_ms: f64,
    pub(crate) prediction: PredictionOut,
    /// The simulation's measured QoS, with `--simulate`.
    pub(crate) simulated: Option<QosOut>,
    pub(crate) seed: u64,
}

/// A table of the demo.
#[derive(Serialize)]
struct TableOut {
    id: String,
    title: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl From<&Table> for TableOut {
    fn from(t: &Table) -> Self {
        TableOut { id: t.id.clone(), title: t.title.clone(), header: t.header.clone(), rows: t.rows.clone() }
    }
}

/// A figure of the demo: its file and caption (the SVG is the file).
#[derive(Serialize)]
struct FigureOut {
    file: String,
    caption: String,
}

/// One piece of the demo, in reading order.
#[derive(Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
enum BlockOut {
    Heading(String),
    Text(String),
    Table(TableOut),
    Figure(FigureOut),
}

/// `vigil lab demo` (and its `demo.json`).
#[derive(Serialize)]
pub(crate) struct LabDemo {
    seed: u64,
    traces: usize,
    blocks: Vec<BlockOut>,
}

impl From<&Demo> for LabDemo {
    fn from(d: &Demo) -> Self {
        let blocks = d
            .blocks
            .iter()
            .map(|b| match b {
                Block::Heading(h) => BlockOut::Heading(h.clone()),
                Block::Text(t) => BlockOut::Text(t.clone()),
                Block::Table(t) => BlockOut::Table(t.into()),
                Block::Figure(f) => BlockOut::Figure(FigureOut { file: f.file.clone(), caption: f.caption.clone() }),
            })
            .collect();
        LabDemo { seed: d.seed, traces: d.traces, blocks }
    }
}

// ---------------------------------------------------------------------------
// The simulator
// ---------------------------------------------------------------------------

/// Running totals over a stretch of a run.
#[derive(Serialize)]
struct TotalsOut {
    messages: u64,
    bytes: u64,
    datagrams: u64,
    datagram_bytes: u64,
    probes: u64,
    accusations: u64,
    false_suspicions: u64,
    false_deaths: u64,
}

impl From<&Totals> for TotalsOut {
    fn from(t: &Totals) -> Self {
        TotalsOut {
            messages: t.messages,
            bytes: t.bytes,
            datagrams: t.datagrams,
            datagram_bytes: t.datagram_bytes,
            probes: t.probes,
            accusations: t.accusations,
            false_suspicions: t.false_suspicions,
            false_deaths: t.false_deaths,
        }
    }
}

/// Figures over one stretch of a run.
#[derive(Serialize)]
struct StretchOut {
    from_ms: Option<f64>,
    to_ms: Option<f64>,
    totals: TotalsOut,
    messages_per_member_second: Option<f64>,
    bytes_per_member_second: Option<f64>,
    datagrams_per_member_second: Option<f64>,
    datagram_bytes_per_member_second: Option<f64>,
}

impl From<&Stretch> for StretchOut {
    fn from(s: &Stretch) -> Self {
        StretchOut {
            from_ms: num(s.from_ms),
            to_ms: num(s.to_ms),
            totals: (&s.totals).into(),
            messages_per_member_second: num(s.messages_per_member_second),
            bytes_per_member_second: num(s.bytes_per_member_second),
            datagrams_per_member_second: num(s.datagrams_per_member_second),
            datagram_bytes_per_member_second: num(s.datagram_bytes_per_member_second),
        }
    }
}

/// A fault with a duration: during it and after it.
#[derive(Serialize)]
struct FaultWindowOut {
    fault: usize,
    kind: String,
    during: StretchOut,
    after: StretchOut,
}

impl From<&FaultWindow> for FaultWindowOut {
    fn from(w: &FaultWindow) -> Self {
        FaultWindowOut {
            fault: w.fault,
            kind: w.kind.to_string(),
            during: (&w.during).into(),
            after: (&w.after).into(),
        }
    }
}

/// How one crash was detected and what it cost.
#[derive(Serialize)]
struct CrashOut {
    node: usize,
    generation: u64,
    at_ms: Option<f64>,
    survivors: usize,
    detected_by: usize,
    first_ms: Option<f64>,
    median_ms: Option<f64>,
    max_ms: Option<f64>,
    extra_messages_per_member: Option<f64>,
    extra_bytes_per_member: Option<f64>,
}

impl From<&CrashReport> for CrashOut {
    fn from(c: &CrashReport) -> Self {
        CrashOut {
            node: c.node,
            generation: c.generation,
            at_ms: num(c.at_ms),
            survivors: c.survivors,
            detected_by: c.detected_by,
            first_ms: num(c.first_ms),
            median_ms: num(c.median_ms),
            max_ms: num(c.max_ms),
            extra_messages_per_member: c.extra_messages_per_member.and_then(num),
            extra_bytes_per_member: c.extra_bytes_per_member.and_then(num),
        }
    }
}

/// One violated invariant.
#[derive(Serialize)]
struct ViolationOut {
    at_ms: Option<f64>,
    checker: String,
    detail: String,
}

/// The violations of a run: the first ones in full, and the count.
#[derive(Serialize)]
struct ViolationsOut {
    first: Vec<ViolationOut>,
    total: u64,
}

impl From<&Violations> for ViolationsOut {
    fn from(v: &Violations) -> Self {
        ViolationsOut {
            first: v
                .first
                .iter()
                .map(|x| ViolationOut { at_ms: num(x.at_ms), checker: x.checker.to_string(), detail: x.detail.clone() })
                .collect(),
            total: v.total,
        }
    }
}

/// How the cluster came back together after a partition.
#[derive(Serialize)]
struct HealOut {
    fault: usize,
    healed_at_ms: Option<f64>,
    lasted_ms: Option<f64>,
    converged_after_ms: Option<f64>,
    surviving_sides: usize,
    self_downed: [usize; 2],
}

/// What the nodes' seals did.
#[derive(Serialize)]
struct SealOut {
    sealed: u64,
    opened: u64,
    plaintext_accepted: u64,
    rejected: BTreeMap<String, u64>,
    replays_injected: u64,
    key_steps_failed: u64,
}

/// What a simulated run measured.
#[derive(Serialize)]
pub(crate) struct ReportOut {
    scenario: String,
    nodes: usize,
    seed: u64,
    virtual_secs: Option<f64>,
    crashes: Vec<CrashOut>,
    totals: TotalsOut,
    false_suspicions: u64,
    false_deaths: u64,
    false_deaths_outside_envelope: u64,
    downed_deaths: u64,
    false_deaths_of: BTreeMap<String, u64>,
    refuted: u64,
    path_problems: u64,
    false_suspicions_per_member_hour: Option<f64>,
    false_deaths_per_member_hour: Option<f64>,
    messages_per_member_second: Option<f64>,
    bytes_per_member_second: Option<f64>,
    messages_by_kind: BTreeMap<String, u64>,
    steady: StretchOut,
    fault_windows: Vec<FaultWindowOut>,
    heals: Vec<HealOut>,
    violations: ViolationsOut,
    converged_ms: Option<f64>,
    ineffective_faults: Vec<usize>,
    sealing: SealOut,
    final_disagreements: u64,
    log_hash: u64,
}

impl From<&Report> for ReportOut {
    fn from(r: &Report) -> Self {
        ReportOut {
            scenario: r.scenario.clone(),
            nodes: r.nodes,
            seed: r.seed,
            virtual_secs: num(r.virtual_secs),
            crashes: r.crashes.iter().map(Into::into).collect(),
            totals: (&r.totals).into(),
            false_suspicions: r.false_suspicions,
            false_deaths: r.false_deaths,
            false_deaths_outside_envelope: r.false_deaths_outside_envelope,
            downed_deaths: r.downed_deaths,
            false_deaths_of: r.false_deaths_of.clone(),
            refuted: r.refuted,
            path_problems: r.path_problems,
            false_suspicions_per_member_hour: num(r.false_suspicions_per_member_hour),
            false_deaths_per_member_hour: num(r.false_deaths_per_member_hour),
            messages_per_member_second: num(r.messages_per_member_second),
            bytes_per_member_second: num(r.bytes_per_member_second),
            messages_by_kind: r.messages_by_kind.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            steady: (&r.steady).into(),
            fault_windows: r.fault_windows.iter().map(Into::into).collect(),
            heals: r
                .heals
                .iter()
                .map(|h| HealOut {
                    fault: h.fault,
                    healed_at_ms: num(h.healed_at_ms),
                    lasted_ms: num(h.lasted_ms),
                    converged_after_ms: h.converged_after_ms.and_then(num),
                    surviving_sides: h.surviving_sides,
                    self_downed: h.self_downed,
                })
                .collect(),
            violations: (&r.violations).into(),
            converged_ms: r.converged_ms.and_then(num),
            ineffective_faults: r.ineffective_faults.clone(),
            sealing: SealOut {
                sealed: r.sealing.sealed,
                opened: r.sealing.opened,
                plaintext_accepted: r.sealing.plaintext_accepted,
                rejected: r.sealing.rejected.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                replays_injected: r.sealing.replays_injected,
                key_steps_failed: r.sealing.key_steps_failed,
            },
            final_disagreements: r.final_disagreements,
            log_hash: r.log_hash,
        }
    }
}

/// `vigil sim run`.
#[derive(Serialize)]
pub(crate) struct SimRun<'a, S: Serialize> {
    /// The scenario, in the TOML scenario format.
    pub(crate) scenario: &'a S,
    pub(crate) report: ReportOut,
}

/// One size of `vigil sim scale`.
#[derive(Serialize)]
pub(crate) struct ScaleRun {
    pub(crate) nodes: usize,
    pub(crate) wall_secs: f64,
    pub(crate) report: ReportOut,
}

/// `vigil sim scale`.
#[derive(Serialize)]
pub(crate) struct SimScale {
    pub(crate) seed: u64,
    pub(crate) runs: Vec<ScaleRun>,
    pub(crate) plot: String,
}

/// A duration as it has always been printed: whole seconds and nanoseconds.
#[derive(Serialize)]
struct DurationOut {
    secs: u64,
    nanos: u32,
}

impl From<std::time::Duration> for DurationOut {
    fn from(d: std::time::Duration) -> Self {
        DurationOut { secs: d.as_secs(), nanos: d.subsec_nanos() }
    }
}

/// A protocol setting of the frontier sweep.
#[derive(Serialize)]
#[serde(tag = "protocol", rename_all = "kebab-case")]
enum SettingOut {
    Phi { heartbeat: DurationOut, observers: usize, suspect_level: f64 },
    Classic { probe_interval: DurationOut, suspicion_mult: u32 },
}

/// One setting's measurements.
#[derive(Serialize)]
struct FrontierPointOut {
    setting: SettingOut,
    label: String,
    messages_per_member_second: Option<f64>,
    bytes_per_member_second: Option<f64>,
    detection_median_ms: Option<f64>,
    detection_max_ms: Option<f64>,
    detected_by_all: bool,
    loss_false_suspicions: u64,
    loss_accusations: u64,
    loss_false_deaths: u64,
}

/// The frontier sweep's result.
#[derive(Serialize)]
pub(crate) struct FrontierOut {
    nodes: usize,
    seed: u64,
    points: Vec<FrontierPointOut>,
    answers: Vec<(usize, Option<usize>)>,
}

impl From<&Frontier> for FrontierOut {
    fn from(f: &Frontier) -> Self {
        let points = f
            .points
            .iter()
            .map(|p| FrontierPointOut {
                setting: match p.setting {
                    Setting::Phi(s) => SettingOut::Phi {
                        heartbeat: s.heartbeat.into(),
                        observers: s.observers,
                        suspect_level: s.suspect_level,
                    },
                    Setting::Classic(s) => SettingOut::Classic {
                        probe_interval: s.probe_interval.into(),
                        suspicion_mult: s.suspicion_mult,
                    },
                },
                label: p.label.clone(),
                messages_per_member_second: num(p.messages_per_member_second),
                bytes_per_member_second: num(p.bytes_per_member_second),
                detection_median_ms: num(p.detection_median_ms),
                detection_max_ms: num(p.detection_max_ms),
                detected_by_all: p.detected_by_all,
                loss_false_suspicions: p.loss_false_suspicions,
                loss_accusations: p.loss_accusations,
                loss_false_deaths: p.loss_false_deaths,
            })
            .collect();
        FrontierOut { nodes: f.nodes, seed: f.seed, points, answers: f.answers.clone() }
    }
}

/// `vigil sim frontier`.
#[derive(Serialize)]
pub(crate) struct SimFrontier {
    pub(crate) frontier: FrontierOut,
    pub(crate) plot: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_safe_json_is_the_same_value_with_nothing_a_terminal_acts_on() {
        let v = serde_json::json!({"name": "h\u{1b}[2J\u{9b}\u{7f}\u{202e}\u{feff}x", "n": [1, 2.5], "ok": "東京 φ"});
        for text in [serde_json::to_string(&v).unwrap(), serde_json::to_string_pretty(&v).unwrap()] {
            let safe = terminal_safe(&text);
            assert!(!safe.chars().any(|c| vigil_lab::text::is_unsafe(c) && c != '\n'), "{safe:?}");
            assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), v);
            assert!(safe.contains("\\u009b") && safe.contains("\\u202e") && safe.contains("東京 φ"), "{safe}");
        }
    }
}

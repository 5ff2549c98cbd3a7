//! The agent's metrics in OpenMetrics text (`GET /metrics`).
//!
//! Three sources feed them:
//!
//! - the member's counters and state, read from a [`Snapshot`] when the
//!   metrics are scraped ([`Metrics::refresh`]): members by status,
//!   messages and bytes, rejected packets by reason, local health, queue
//!   depths, φ now;
//! - its events, as they happen ([`Metrics::observe`]): suspicions and what
//!   became of them, flaps, deaths, leaves, path problems, detection latency
//!   and φ at each verdict;
//! - a sampler, once a second ([`Metrics::sample`] and
//!   [`Metrics::intervals`]): the distribution of φ over time and of the
//!   heartbeat inter-arrival times, per watched member.
//!
//! Every family whose labels are known in advance has all of them from the
//! start, at zero (`increase()` and `rate()` see a counter's first
//! increment only if the series existed before it): members by status,
//! queues, rejections by reason, ejections by reason, decisions, sinks.
//! Only the per-member families wait for their members, and the lease's
//! (`vigil_lease_usable`, `vigil_lease_checks_total`,
//! `vigil_lease_checks_failed_total`, `vigil_lease_renewals_total`) are served only by an agent that
//! checks a lease (`--downing lease-majority`), from its first scrape.
//! Beside them:
//! `vigil_build_info`, `vigil_ready`, and the standard `process_*` metrics
//! read from `/proc` at each scrape ([`crate::process`]).

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use vigil_detector::outlier::EjectReason;
use vigil_membership::Status;
use vigil_membership::downing::Decision;
use vigil_membership::seal::OpenError;
use vigil_net::Snapshot;

use crate::defaults::FLAP_WINDOW;
use crate::process::Process;
use crate::record::{Sink, What};

/// Buckets for φ: fine below the usual thresholds (1 to 12), where the
/// peaks that never cross are the evidence for tuning.
const PHI_BUCKETS: [f64; 13] = [0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0];
/// Buckets for heartbeat intervals, in seconds: around the LAN preset's
/// 1.05 s, and out to long silences.
const INTERVAL_BUCKETS: [f64; 14] = [0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0];
/// Buckets for detection latency, in seconds.
const LATENCY_BUCKETS: [f64; 12] = [0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 30.0, 60.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MemberLabel {
    member: String,
}

/// `sent` or `received`.
type Direction = &'static str;
const SENT: Direction = "sent";
const RECEIVED: Direction = "received";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MessageLabel {
    kind: String,
    direction: Direction,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabel {
    queue: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerdictLabel {
    verdict: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabel {
    decision: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SideLabel {
    side: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EjectLabel {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SinkLabel {
    sink: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EnvelopeLabel {
    envelope: &'static str,
}

type FloatGauge = Gauge<f64, AtomicU64>;
type FloatCounter = Counter<f64, AtomicU64>;

/// The statuses, as `members{status}` names them, in [`status_index`]'s
/// order.
const STATUSES: [&str; 4] = ["alive", "suspect", "dead", "left"];
/// The queues of `queue_depth{queue}`.
const QUEUES: [&str; 4] = ["broadcasts", "suspicions", "probes", "relays"];

/// The standard process metrics (no `vigil_` prefix: dashboards and alerts
/// written for any exporter's process find them under these names).
#[derive(Default)]
struct ProcessMetrics {
    cpu_seconds: FloatCounter,
    resident_bytes: Gauge,
    virtual_bytes: Gauge,
    threads: Gauge,
    open_fds: Gauge,
    max_fds: Gauge,
    start_time: FloatGauge,
}

impl ProcessMetrics {
    fn register(&self, r: &mut Registry) {
        r.register_with_unit("process_cpu", "User and system CPU time spent", Unit::Seconds, self.cpu_seconds.clone());
        r.register_with_unit(
            "process_resident_memory",
            "Resident memory size",
            Unit::Bytes,
            self.resident_bytes.clone(),
        );
        r.register_with_unit("process_virtual_memory", "Virtual memory size", Unit::Bytes, self.virtual_bytes.clone());
        r.register("process_threads", "Threads of the process", self.threads.clone());
        r.register("process_open_fds", "Open file descriptors", self.open_fds.clone());
        r.register("process_max_fds", "The soft limit on open file descriptors", self.max_fds.clone());
        r.register_with_unit(
            "process_start_time",
            "Start time of the process since the Unix epoch",
            Unit::Seconds,
            self.start_time.clone(),
        );
    }

    fn set(&self, p: &Process) {
        let now = self.cpu_seconds.get();
        if p.cpu_seconds > now {
            self.cpu_seconds.inc_by(p.cpu_seconds - now);
        }
        let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.resident_bytes.set(int(p.resident_bytes));
        self.virtual_bytes.set(int(p.virtual_bytes));
        self.threads.set(int(p.threads));
        if let Some(n) = p.open_fds {
            self.open_fds.set(int(n));
        }
        if let Some(n) = p.max_fds {
            self.max_fds.set(int(n));
        }
        if let Some(t) = p.start_time_seconds() {
            self.start_time.set(t);
        }
    }
}

/// Makes a histogram with fixed buckets, for a family.
type HistogramMaker = fn() -> Histogram;

fn phi_histogram() -> Histogram {
    Histogram::new(PHI_BUCKETS.iter().copied())
}

fn interval_histogram() -> Histogram {
    Histogram::new(INTERVAL_BUCKETS.iter().copied())
}

/// Sets a counter to a cumulative total read from the member (counters
/// only grow; a smaller total is ignored).
fn advance(counter: &Counter, total: u64) {
    let now = counter.get();
    if total > now {
        counter.inc_by(total - now);
    }
}

/// The metrics of one agent. See the module documentation.
pub struct Metrics {
    registry: Registry,
    members: Family<StatusLabel, Gauge>,
    phi: Family<MemberLabel, FloatGauge>,
    phi_max: Family<MemberLabel, FloatGauge>,
    phi_observed: Family<MemberLabel, Histogram, HistogramMaker>,
    intervals: Family<MemberLabel, Histogram, HistogramMaker>,
    awareness: Gauge,
    awareness_max: Gauge,
    queues: Family<QueueLabel, Gauge>,
    messages: Family<MessageLabel, Counter>,
    bytes: Family<MessageLabel, Counter>,
    rejected: Family<ReasonLabel, Counter>,
    suspicions: Counter,
    suspicions_raised: Counter,
    deaths_declared: Counter,
    confirmed: Counter,
    refuted: Counter,
    flaps: Counter,
    deaths: Counter,
    leaves: Counter,
    path_problems: Counter,
    self_refutations: Counter,
    stalls: Counter,
    false_positive_ratio: FloatGauge,
    detection_latency: Histogram,
    ejections: Family<EjectLabel, Counter>,
    returns: Counter,
    shared_ejections: Family<EjectLabel, Counter>,
    ejected: Gauge,
    reaped: Counter,
    events: Counter,
    events_dropped: Family<SinkLabel, Counter>,
    introductions: Family<OutcomeLabel, Counter>,
    view_digests: Family<OutcomeLabel, Counter>,
    strangers: Counter,
    reconnects: Counter,
    past_calls: Counter,
    downed_told: Counter,
    held_told: Counter,
    catch_ups: Counter,
    views_paged: Counter,
    sealed_opened: Family<EnvelopeLabel, Counter>,
    phi_at_verdict: Family<VerdictLabel, Histogram, HistogramMaker>,
    unreachable: Counter,
    name_conflicts: Counter,
    downs_spared: Counter,
    downs_withdrawn: Counter,
    downing_decisions_deferred: Counter,
    decisions_abandoned: Counter,
    stranger_rumours: Counter,
    rumour_checks: Family<OutcomeLabel, Counter>,
    reachability_rows: Family<OutcomeLabel, Counter>,
    addresses_moved: Counter,
    decisions: Family<DecisionLabel, Counter>,
    downed: Family<SideLabel, Counter>,
    lease_usable: Family<NoLabels, Gauge>,
    lease_checks: Family<NoLabels, Counter>,
    lease_checks_failed: Family<NoLabels, Counter>,
    lease_renewals: Family<OutcomeLabel, Counter>,
    ready: Gauge,
    process: ProcessMetrics,
}

/// The label set of a series that exists only on some agents (with a lease
/// to check): none, written without braces.
type NoLabels = Vec<(&'static str, &'static str)>;

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// The metrics of an agent that has seen nothing yet.
    pub fn new() -> Metrics {
        let mut m = Metrics {
            registry: Registry::default(),
            members: Family::default(),
            phi: Family::default(),
            phi_max: Family::default(),
            phi_observed: Family::new_with_constructor(phi_histogram as HistogramMaker),
            intervals: Family::new_with_constructor(interval_histogram as HistogramMaker),
            awareness: Gauge::default(),
            awareness_max: Gauge::default(),
            queues: Family::default(),
            messages: Family::default(),
            bytes: Family::default(),
            rejected: Family::default(),
            suspicions: Counter::default(),
            suspicions_raised: Counter::default(),
            deaths_declared: Counter::default(),
            confirmed: Counter::default(),
            refuted: Counter::default(),
            flaps: Counter::default(),
            deaths: Counter::default(),
            leaves: Counter::default(),
            path_problems: Counter::default(),
            self_refutations: Counter::default(),
            stalls: Counter::default(),
            false_positive_ratio: FloatGauge::default(),
            detection_latency: Histogram::new(LATENCY_BUCKETS.iter().copied()),
            ejections: Family::default(),
            returns: Counter::default(),
            shared_ejections: Family::default(),
            ejected: Gauge::default(),
            reaped: Counter::default(),
            events: Counter::default(),
            events_dropped: Family::default(),
            introductions: Family::default(),
            view_digests: Family::default(),
            strangers: Counter::default(),
            reconnects: Counter::default(),
            past_calls: Counter::default(),
            downed_told: Counter::default(),
            held_told: Counter::default(),
            catch_ups: Counter::default(),
            views_paged: Counter::default(),
            sealed_opened: Family::default(),
            phi_at_verdict: Family::new_with_constructor(phi_histogram as HistogramMaker),
            unreachable: Counter::default(),
            name_conflicts: Counter::default(),
            downs_spared: Counter::default(),
            downs_withdrawn: Counter::default(),
            downing_decisions_deferred: Counter::default(),
            decisions_abandoned: Counter::default(),
            stranger_rumours: Counter::default(),
            rumour_checks: Family::default(),
            reachability_rows: Family::default(),
            addresses_moved: Counter::default(),
            decisions: Family::default(),
            downed: Family::default(),
            lease_usable: Family::default(),
            lease_checks: Family::default(),
            lease_checks_failed: Family::default(),
            lease_renewals: Family::default(),
            ready: Gauge::default(),
            process: ProcessMetrics::default(),
        };
        m.create_known_labels();
        let root = &mut m.registry;
        if cfg!(target_os = "linux") {
            m.process.register(root);
        }
        let r = root.sub_registry_with_prefix("vigil");
        // A gauge at 1 rather than OpenMetrics' info type: the classic text
        // parsers (promtool check metrics among them) know no info type.
        let build: Family<Vec<(&'static str, &'static str)>, Gauge> = Family::default();
        build
            .get_or_create(&vec![
                ("version", crate::build::VERSION),
                ("revision", crate::build::REVISION),
                ("build_date", crate::build::DATE),
            ])
            .set(1);
        r.register("build_info", "The version, source revision and build date of this agent (always 1)", build);
        r.register(
            "ready",
            "1 when this member is ready (joined: GET /v1/health/ready answers 200), 0 otherwise",
            m.ready.clone(),
        );
        r.register("members", "Members this one knows, by the status it believes", m.members.clone());
        r.register("phi", "Suspicion level of each watched member now", m.phi.clone());
        r.register("phi_max", "Highest level sampled for each watched member since it was watched", m.phi_max.clone());
        r.register(
            "phi_observed",
            "Suspicion level of each watched member, sampled once a second: the peaks that never cross are the tuning evidence",
            m.phi_observed.clone(),
        );
        // Histograms carry the unit in their names only: some parsers refuse
        // a UNIT line on a histogram.
        r.register(
            "heartbeat_interval_seconds",
            "Time between consecutive heartbeats from each watched member",
            m.intervals.clone(),
        );
        r.register("awareness", "Local health score (Lifeguard): 0 is healthy", m.awareness.clone());
        r.register("awareness_max", "Highest local health score", m.awareness_max.clone());
        r.register("queue_depth", "Work waiting, by queue", m.queues.clone());
        r.register("messages", "Protocol messages, by kind and direction", m.messages.clone());
        r.register_with_unit(
            "protocol",
            "Protocol bytes (before sealing), by the kind of message that carried them and direction",
            Unit::Bytes,
            m.bytes.clone(),
        );
        r.register("rejected_packets", "Packets and frames refused, by reason", m.rejected.clone());
        r.register("suspicions", "Suspicions raised against members", m.suspicions.clone());
        r.register("suspicions_confirmed", "Suspicions that ended in a death", m.confirmed.clone());
        r.register(
            "suspicions_raised",
            "Suspicions this member raised itself, as the accuser, from its protocol counters",
            m.suspicions_raised.clone(),
        );
        r.register(
            "deaths_declared",
            "Deaths this member declared itself, from its protocol counters",
            m.deaths_declared.clone(),
        );
        r.register("refutations", "Suspicions refuted by the suspect", m.refuted.clone());
        r.register(
            "unreachable",
            "Members found unreachable (a suspicion ran out, not refuted) while a downing strategy decides",
            m.unreachable.clone(),
        );
        r.register(
            "name_conflicts",
            "Processes refused a name because another process holds it and answers (this agent's own refusal included)",
            m.name_conflicts.clone(),
        );
        r.register(
            "stranger_rumours_ignored",
            "Rumours from strangers about known members (or this member), which change nothing",
            m.stranger_rumours.clone(),
        );
        r.register(
            "rumour_checks",
            "Rumours checked with the member they are about before being taken (a death or leave while a strategy decides, a move, a newer process of a live member's name), by outcome: started; confirmed (taken: the member did not answer); refuted (dropped: it answered); refused (a check of it already under way); deferred (a newer process of the name at another address, the old one silent: taken once a decision downs the old one)",
            m.rumour_checks.clone(),
        );
        r.register(
            "reachability_rows",
            "Reachability rows (pages) while a downing strategy decides, by outcome: sent; received (from the member itself, at its address); refused (not first-hand)",
            m.reachability_rows.clone(),
        );
        r.register(
            "addresses_moved",
            "Members found at a new address, having answered there as themselves",
            m.addresses_moved.clone(),
        );
        r.register(
            "downing_decisions",
            "Decisions of the downing strategy, by what was decided (down-unreachable: this side survived)",
            m.decisions.clone(),
        );
        r.register(
            "downed",
            "Members downed by a decision: this member itself (side=self) or others (side=other)",
            m.downed.clone(),
        );
        r.register(
            "downs_spared",
            "Members a decision named that this member did not down when the removal margin ended: they answered again (a calm decision), or only this member found them flapping (a decision taken because the picture would not hold still)",
            m.downs_spared.clone(),
        );
        r.register(
            "downs_withdrawn",
            "Members this member downed, alone, and took back: no other member held them dead, and, asked at their address two windows later, they answered as the process downed (they reached the rest of the side, and one member's word downs nobody)",
            m.downs_withdrawn.clone(),
        );
        r.register(
            "downing_decisions_deferred",
            "Decisions that would have downed members, put off because this member had stalled long and its detectors had not looked again since (the members it had not heard still looked reachable), or because, back after downing itself, it had heard nothing yet of members it knew then: the strategy decides again once the picture holds still",
            m.downing_decisions_deferred.clone(),
        );
        r.register(
            "downing_abandoned",
            "Decisions dropped when the removal margin ended because the side they were taken for no longer holds (this member lost members of it since): the strategy decides again once the picture holds still",
            m.decisions_abandoned.clone(),
        );
        r.register(
            "lease_usable",
            "With lease-majority: 1 when the last check found the lease could be asked, 0 when this side would down itself at its next decision",
            m.lease_usable.clone(),
        );
        r.register("lease_checks", "With lease-majority: checks of the lease", m.lease_checks.clone());
        r.register(
            "lease_checks_failed",
            "With lease-majority: checks that found the lease could not be asked",
            m.lease_checks_failed.clone(),
        );
        r.register(
            "lease_renewals",
            "With lease-majority: renewals of the lease this member's side took, by outcome: renewed, or failed (the lease could not be asked, or another side had taken it: then this member downs itself)",
            m.lease_renewals.clone(),
        );
        r.register("flaps", "Suspicions refuted within 10 s", m.flaps.clone());
        r.register("deaths", "Members declared dead", m.deaths.clone());
        r.register("leaves", "Members that left", m.leaves.clone());
        r.register("path_problems", "Silent members that answered a probe", m.path_problems.clone());
        r.register("self_refutations", "Accusations of this member that it refuted", m.self_refutations.clone());
        r.register("local_stalls", "Times this member itself stalled", m.stalls.clone());
        r.register(
            "suspicion_false_positive_ratio",
            "Refuted suspicions over settled ones (refuted plus confirmed), since start",
            m.false_positive_ratio.clone(),
        );
        r.register(
            "detection_latency_seconds",
            "From the last heartbeat this member received from a watched member to its death verdict",
            m.detection_latency.clone(),
        );
        r.register("phi_at_verdict", "Level at each verdict, by verdict", m.phi_at_verdict.clone());
        r.register("ejections", "Members ejected by outlier detection, by reason", m.ejections.clone());
        r.register("returns", "Ejected members back in service", m.returns.clone());
        r.register(
            "outliers_shared",
            "Ejections other members shared (gray-failure evidence), by reason",
            m.shared_ejections.clone(),
        );
        r.register("members_ejected", "Members ejected by outlier detection now", m.ejected.clone());
        r.register("reaped", "Tombstones reaped (dead or left members forgotten)", m.reaped.clone());
        r.register("events", "Events this agent passed on (JSON lines, the history and /v1/events)", m.events.clone());
        r.register(
            "events_dropped",
            "Events this agent could not pass on, by where: stdout (a reader too slow) or stream (the agent itself too slow)",
            m.events_dropped.clone(),
        );
        r.register(
            "introductions",
            "Members proposed by strangers, by outcome: proposed (pinged), admitted, expired, refused",
            m.introductions.clone(),
        );
        r.register(
            "view_digests",
            "Digests of views that start push-pulls, by outcome: sent; received and matched (nothing exchanged); received and differed (views exchanged)",
            m.view_digests.clone(),
        );
        r.register(
            "stranger_packets",
            "Packets whose source is not the known address of the member they claim to come from",
            m.strangers.clone(),
        );
        r.register("reconnects", "Attempts to reconnect to members believed dead", m.reconnects.clone());
        r.register(
            "past_calls",
            "Calls, back after a downing, to members known then and not heard alive since",
            m.past_calls.clone(),
        );
        r.register(
            "downed_told",
            "Times this member told a member its decision downed, still speaking as that process, that it holds it dead",
            m.downed_told.clone(),
        );
        r.register(
            "held_told",
            "Members told, first-hand, that this member holds dead or gone members their rows say they cannot reach",
            m.held_told.clone(),
        );
        r.register(
            "push_pulls_brought_forward",
            "Push-pulls brought forward because this member learned its view lacked members",
            m.catch_ups.clone(),
        );
        r.register(
            "views_paged",
            "Views sent as several push-pulls, being larger than a page (60 KiB by default)",
            m.views_paged.clone(),
        );
        r.register(
            "sealed_opened",
            "Sealed packets and frames opened, by envelope version: while version 2 grows, some member still seals with it",
            m.sealed_opened.clone(),
        );
        m
    }

    /// Creates every series whose labels are known before anything
    /// happens, at zero.
    fn create_known_labels(&self) {
        for status in STATUSES {
            let _ = self.members.get_or_create(&StatusLabel { status });
        }
        for queue in QUEUES {
            let _ = self.queues.get_or_create(&QueueLabel { queue });
        }
        for reason in EjectReason::ALL {
            let _ = self.ejections.get_or_create(&EjectLabel { reason: reason.name().to_owned() });
            let _ = self.shared_ejections.get_or_create(&EjectLabel { reason: reason.name().to_owned() });
        }
        for sink in [Sink::Stdout, Sink::Stream, Sink::History] {
            let _ = self.events_dropped.get_or_create(&SinkLabel { sink: sink.name() });
        }
        for decision in Decision::NAMES {
            let _ = self.decisions.get_or_create(&DecisionLabel { decision: decision.to_owned() });
        }
        for side in ["self", "other"] {
            let _ = self.downed.get_or_create(&SideLabel { side });
        }
        let _ = self.phi_at_verdict.get_or_create(&VerdictLabel { verdict: "suspected".into() });
        for reason in REJECTIONS.into_iter().chain(OpenError::REASONS) {
            let _ = self.rejected.get_or_create(&ReasonLabel { reason });
        }
        for envelope in ["2", "3"] {
            let _ = self.sealed_opened.get_or_create(&EnvelopeLabel { envelope });
        }
    }

    /// Whether the member is ready now (see `/v1/health/ready`).
    pub fn set_ready(&self, ready: bool) {
        self.ready.set(i64::from(ready));
    }

    /// The process's CPU, memory, threads and descriptors now.
    pub fn set_process(&self, p: &Process) {
        self.process.set(p);
    }

    /// The metrics as OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// The member's state and counters now.
    pub fn refresh(&self, s: &Snapshot) {
        let mut by_status = [0i64; 4];
        for m in &s.node.members {
            by_status[status_index(m.status)] += 1;
        }
        for (i, name) in STATUSES.into_iter().enumerate() {
            self.members.get_or_create(&StatusLabel { status: name }).set(by_status[i]);
        }
        // φ now, for the members watched now only.
        self.phi.clear();
        for w in &s.node.watched {
            self.phi.get_or_create(&MemberLabel { member: w.name.clone() }).set(w.level);
        }
        self.awareness.set(i64::from(s.node.awareness));
        self.awareness_max.set(i64::from(s.node.max_awareness));
        for (queue, n) in QUEUES.into_iter().zip([
            s.node.queued_broadcasts,
            s.node.suspicions,
            s.node.probes_in_flight,
            s.node.relays_in_flight,
        ]) {
            self.queues.get_or_create(&QueueLabel { queue }).set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        let node = &s.node.stats;
        for (family, direction, counts) in [
            (&self.messages, SENT, &node.sent),
            (&self.messages, RECEIVED, &node.received),
            (&self.bytes, SENT, &node.bytes_sent_by_kind),
            (&self.bytes, RECEIVED, &node.bytes_received_by_kind),
        ] {
            for (kind, n) in counts.iter() {
                advance(&family.get_or_create(&MessageLabel { kind: kind.to_string(), direction }), n);
            }
        }
        for (reason, n) in rejection_counts(s) {
            advance(&self.rejected.get_or_create(&ReasonLabel { reason }), n);
        }
        self.ejected.set(s.node.outliers.values().filter(|r| r.ejected.is_some()).count() as i64);
        // Only an agent that checks a lease has these series.
        if let Some(lease) = &s.lease {
            if let Some(usable) = lease.usable() {
                self.lease_usable.get_or_create(&Vec::new()).set(i64::from(usable));
            }
            advance(&self.lease_checks.get_or_create(&Vec::new()), lease.checks);
            advance(&self.lease_checks_failed.get_or_create(&Vec::new()), lease.checks_failed);
            for (outcome, n) in [("renewed", node.lease_renewals), ("failed", node.lease_renewals_failed)] {
                advance(&self.lease_renewals.get_or_create(&OutcomeLabel { outcome }), n);
            }
        }
        for (outcome, n) in [
            ("proposed", node.introductions_proposed),
            ("admitted", node.introductions_admitted),
            ("expired", node.introductions_expired),
            ("refused", node.introductions_refused),
        ] {
            advance(&self.introductions.get_or_create(&OutcomeLabel { outcome }), n);
        }
        for (outcome, n) in
            [("sent", node.digests_sent), ("matched", node.digests_matched), ("differed", node.digests_differed)]
        {
            advance(&self.view_digests.get_or_create(&OutcomeLabel { outcome }), n);
        }
        advance(&self.strangers, node.from_strangers);
        advance(&self.name_conflicts, node.name_conflicts);
        advance(&self.downs_spared, node.downs_spared);
        advance(&self.downs_withdrawn, node.downs_withdrawn);
        advance(
            &self.downing_decisions_deferred,
            node.decisions_deferred_after_stall + node.decisions_deferred_incomplete,
        );
        advance(&self.decisions_abandoned, node.decisions_abandoned);
        advance(&self.stranger_rumours, node.stranger_rumours_ignored);
        advance(&self.addresses_moved, node.addresses_moved);
        for (outcome, n) in [
            ("started", node.checks_started),
            ("confirmed", node.checks_confirmed),
            ("refuted", node.checks_refuted),
            ("refused", node.checks_refused),
            ("deferred", node.newcomers_deferred),
        ] {
            advance(&self.rumour_checks.get_or_create(&OutcomeLabel { outcome }), n);
        }
        for (outcome, n) in [("sent", node.rows_sent), ("received", node.rows_received), ("refused", node.rows_refused)]
        {
            advance(&self.reachability_rows.get_or_create(&OutcomeLabel { outcome }), n);
        }
        advance(&self.suspicions_raised, node.suspicions_started);
        advance(&self.deaths_declared, node.deaths_declared);
        advance(&self.reconnects, node.reconnects);
        advance(&self.past_calls, node.past_calls);
        advance(&self.downed_told, node.downed_told);
        advance(&self.held_told, node.held_told);
        advance(&self.catch_ups, node.push_pulls_brought_forward);
        advance(&self.views_paged, node.views_paged);
        let seal = &s.seal;
        for (envelope, n) in [("2", seal.opened_v2), ("3", seal.opened.saturating_sub(seal.opened_v2))] {
            advance(&self.sealed_opened.get_or_create(&EnvelopeLabel { envelope }), n);
        }
        let settled = self.refuted.get() + self.confirmed.get();
        if settled > 0 {
            self.false_positive_ratio.set(self.refuted.get() as f64 / settled as f64);
        }
    }

    /// An event record of the member `node` that this agent passed on. What it needs, the records
    /// carry (how long a suspicion lasted, how long a dead member had been
    /// silent): no state of its own is kept.
    pub fn observe(&mut self, node: &str, e: &What) {
        match e {
            What::Suspected { phi, .. } => {
                self.suspicions.inc();
                if let Some(l) = phi {
                    self.phi_at_verdict.get_or_create(&VerdictLabel { verdict: "suspected".into() }).observe(*l);
                }
            }
            What::Refuted { suspected_ms, .. } => {
                self.refuted.inc();
                if *suspected_ms <= FLAP_WINDOW.as_secs_f64() * 1e3 {
                    self.flaps.inc();
                }
            }
            What::Dead { suspected_ms, silent_ms, .. } => {
                self.deaths.inc();
                if suspected_ms.is_some() {
                    self.confirmed.inc();
                }
                if let Some(silent) = silent_ms {
                    self.detection_latency.observe(silent / 1e3);
                }
            }
            What::Left { .. } => {
                self.leaves.inc();
            }
            What::PathProblem { .. } => {
                self.path_problems.inc();
            }
            What::SelfRefuted { .. } => {
                self.self_refutations.inc();
            }
            What::LocalStall { .. } => {
                self.stalls.inc();
            }
            What::Ejected { reason, .. } => {
                self.ejections.get_or_create(&EjectLabel { reason: reason.clone() }).inc();
            }
            What::Returned { .. } => {
                self.returns.inc();
            }
            What::OutlierShared { reason, .. } => {
                self.shared_ejections.get_or_create(&EjectLabel { reason: reason.clone() }).inc();
            }
            What::OutlierWithdrawn { .. } => {}
            What::Reaped { .. } => {
                self.reaped.inc();
            }
            What::Policy { policy, fired: true, withheld: false, phi: Some(l), .. } => {
                self.phi_at_verdict.get_or_create(&VerdictLabel { verdict: format!("policy:{policy}") }).observe(*l);
            }
            What::Unreachable { .. } => {
                self.unreachable.inc();
            }
            What::Decided { decision, .. } => {
                self.decisions.get_or_create(&DecisionLabel { decision: decision.clone() }).inc();
            }
            What::Downed { member, .. } => {
                let side = if member == node { "self" } else { "other" };
                self.downed.get_or_create(&SideLabel { side }).inc();
            }
            What::Up { .. }
            | What::Withdrawn { .. }
            | What::Tags { .. }
            | What::Policy { .. }
            | What::Renewed { .. }
            | What::Reachable { .. }
            | What::NameConflict { .. }
            | What::Missed { .. } => {}
        }
    }

    /// One event passed on.
    pub fn event(&self) {
        self.events.inc();
    }

    /// `n` events this agent could not pass on through `sink` (`stdout`, or
    /// `stream`: the agent's own reading of the member's events).
    pub fn dropped(&self, sink: Sink, n: u64) {
        self.events_dropped.get_or_create(&SinkLabel { sink: sink.name() }).inc_by(n);
    }

    /// A once-a-second sample of the watched members' levels.
    pub fn sample(&mut self, s: &Snapshot) {
        for w in &s.node.watched {
            let label = MemberLabel { member: w.name.clone() };
            if w.heard {
                self.phi_observed.get_or_create(&label).observe(w.level);
                let max = self.phi_max.get_or_create(&label);
                if w.level > max.get() {
                    max.set(w.level);
                }
            }
        }
    }

    /// Heartbeat intervals of `member` that arrived since the last sample.
    pub fn intervals(&self, member: &str, intervals: impl IntoIterator<Item = Duration>) {
        let h = self.intervals.get_or_create(&MemberLabel { member: member.to_owned() });
        for d in intervals {
            h.observe(d.as_secs_f64());
        }
    }
}

/// Why the protocol and the runtime refuse packets and frames, in
/// [`rejection_counts`]' order (the seal's reasons follow).
const REJECTIONS: [&str; 9] = [
    "malformed",
    "wrong-cluster",
    "from-self",
    "wrong-transport",
    "frame-dropped",
    "frame-malformed",
    "frame-over-budget",
    "connection-refused",
    "connection-evicted",
];

/// Packets and frames refused, by reason, as the member counts them.
fn rejection_counts(s: &Snapshot) -> impl Iterator<Item = (&'static str, u64)> + '_ {
    let (node, net) = (&s.node.stats, &s.net);
    let counts = [
        node.rejected_malformed,
        node.rejected_cluster,
        node.rejected_self,
        node.rejected_transport,
        net.frames_dropped,
        net.frames_malformed,
        net.frames_over_budget,
        net.connections_refused,
        net.connections_evicted,
    ];
    REJECTIONS.into_iter().zip(counts).chain(OpenError::REASONS.iter().copied().zip(s.seal.rejected.iter().copied()))
}

fn status_index(s: Status) -> usize {
    match s {
        Status::Alive => 0,
        Status::Suspect => 1,
        Status::Dead => 2,
        Status::Left => 3,
    }
}

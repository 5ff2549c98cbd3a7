//! The API's request and response bodies: the contract scripts, the
//! dashboard and the command-line clients read. Each is a type here, with
//! its fields named explicitly (a renamed library field cannot change a
//! document), and the OpenAPI description is generated from these types
//! ([`super::openapi`]). The conversions from the member's
//! [`Snapshot`] are beside the types they build.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use vigil_detector::outlier::HostReport;
use vigil_net::{KeyInfo, MemberView, PolicyState, Signal, Snapshot, Status, Tags, Verdict, WatchReport};

use crate::record::PolicySignal;

/// Milliseconds, as a float with microsecond resolution.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_micros() as f64 / 1e3
}

fn tags(tags: &Tags) -> BTreeMap<String, String> {
    tags.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
}

/// An error, as every one is answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// What went wrong, for a person; input is quoted, at most 40
    /// characters of it.
    pub error: String,
}

/// What a member believes of another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusName {
    /// Alive.
    Alive,
    /// Suspected.
    Suspect,
    /// Declared dead.
    Dead,
    /// Left.
    Left,
}

impl From<Status> for StatusName {
    fn from(s: Status) -> StatusName {
        match s {
            Status::Alive => StatusName::Alive,
            Status::Suspect => StatusName::Suspect,
            Status::Dead => StatusName::Dead,
            Status::Left => StatusName::Left,
        }
    }
}

impl StatusName {
    /// The name, as in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            StatusName::Alive => "alive",
            StatusName::Suspect => "suspect",
            StatusName::Dead => "dead",
            StatusName::Left => "left",
        }
    }
}

/// Where a policy stands for a watched member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PolicyStanding {
    /// Below its threshold.
    Trusted,
    /// At or above its threshold, waiting out its dwell.
    Crossed,
    /// Fired.
    Fired,
    /// Would have fired; the brake withholds it.
    Withheld,
}

impl From<PolicyState> for PolicyStanding {
    fn from(s: PolicyState) -> PolicyStanding {
        match s {
            PolicyState::Trusted => PolicyStanding::Trusted,
            PolicyState::Crossed { .. } => PolicyStanding::Crossed,
            PolicyState::Suspected { .. } => PolicyStanding::Fired,
            PolicyState::Withheld { .. } => PolicyStanding::Withheld,
        }
    }
}

/// One policy on a watched member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyView {
    /// The policy's name (`probe` is the protocol's own).
    pub name: String,
    /// Its φ threshold; `null` for a policy that listens to ejection only.
    pub threshold: Option<f64>,
    /// Which signal fired it (or would have, when withheld); `null` while
    /// it has not.
    pub signal: Option<PolicySignal>,
    /// Where it stands.
    pub state: PolicyStanding,
    /// How long silence would take to reach the threshold, milliseconds: 0
    /// once it has, `null` when it never would.
    pub time_to_threshold_ms: Option<f64>,
}

/// What this member's detector knows of a member it watches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Watched {
    /// The detector's model (`akka`, `normal`, ...).
    pub model: String,
    /// Whether a heartbeat has arrived.
    pub heard: bool,
    /// The level now; `null` before the first heartbeat, and when it is
    /// beyond what a float holds (see `phi_capped`).
    pub phi: Option<f64>,
    /// Whether the level is beyond what a float holds.
    pub phi_capped: bool,
    /// Heartbeats taken.
    pub heartbeats: u64,
    /// Mean interval between heartbeats over the window, milliseconds.
    pub mean_interval_ms: Option<f64>,
    /// Standard deviation of the intervals, milliseconds.
    pub std_dev_ms: Option<f64>,
    /// Time since the last heartbeat, milliseconds.
    pub silent_ms: Option<f64>,
    /// Watched because the ring says so.
    pub on_ring: bool,
    /// Watched because the application asked (`--watch`).
    pub by_app: bool,
    /// Each policy, the protocol's `probe` first.
    pub policies: Vec<PolicyView>,
}

impl From<&WatchReport> for Watched {
    fn from(w: &WatchReport) -> Watched {
        Watched {
            model: w.model.name().to_owned(),
            heard: w.heard,
            phi: Some(w.level).filter(|l| w.heard && l.is_finite()),
            phi_capped: w.heard && !w.level.is_finite(),
            heartbeats: w.heartbeats,
            mean_interval_ms: w.mean.map(ms),
            std_dev_ms: w.std_dev.map(ms),
            silent_ms: w.silent_for.map(ms),
            on_ring: w.on_ring,
            by_app: w.by_app,
            policies: w
                .policies
                .iter()
                .map(|p| PolicyView {
                    name: p.name.clone(),
                    threshold: p.threshold,
                    signal: match p.verdict {
                        Verdict::Clear => None,
                        Verdict::Fired(s) | Verdict::Withheld(s) => Some(match s {
                            Signal::Phi { .. } => PolicySignal::Phi,
                            Signal::Ejected { .. } => PolicySignal::Ejection,
                        }),
                    },
                    state: p.state.into(),
                    time_to_threshold_ms: p.time_to_threshold.map(ms),
                })
                .collect(),
        }
    }
}

/// Outlier detection's view of a member, from the outcomes of requests to
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Outlier {
    /// Whether it is ejected now.
    pub ejected: bool,
    /// Why, when it is.
    pub reason: Option<String>,
    /// How long until it may return, milliseconds, when ejected.
    pub returns_in_ms: Option<f64>,
    /// Ejections over its life.
    pub ejections: u64,
    /// The ejection multiplier (each ejection lasts longer).
    pub multiplier: u32,
    /// Server errors in a row now.
    pub consecutive_errors: u32,
    /// The last complete interval's success rate, percent.
    pub success_rate: Option<f64>,
    /// The last complete interval's requests.
    pub requests: u64,
    /// The last complete interval's geometric mean latency, milliseconds.
    pub latency_ms: Option<f64>,
}

impl Outlier {
    fn of(r: &HostReport, s: &Snapshot) -> Outlier {
        Outlier {
            ejected: r.ejected.is_some(),
            reason: r.ejected.map(|(reason, _)| reason.name().to_owned()),
            returns_in_ms: r.ejected.map(|(_, until)| ms(until.saturating_duration_since(s.node.now))),
            ejections: r.ejections,
            multiplier: r.multiplier,
            consecutive_errors: r.consecutive.0,
            success_rate: r.success_rate.map(|(rate, _)| rate),
            requests: r.success_rate.map_or(0, |(_, n)| n),
            latency_ms: r.latency_ms.map(|(l, _)| l),
        }
    }
}

/// One member as this one sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Member {
    /// Its name.
    pub name: String,
    /// Its generation (a restart takes a higher one).
    pub generation: u64,
    /// Its incarnation within the generation.
    pub incarnation: u64,
    /// What this member believes.
    pub status: StatusName,
    /// Where it is reached.
    pub address: String,
    /// How long it has had this status here, milliseconds.
    pub status_for_ms: f64,
    /// Its tags, as far as this member has heard.
    pub tags: BTreeMap<String, String>,
    /// The detector's state, when this member watches it.
    pub watched: Option<Watched>,
    /// Outlier detection's view, once outcomes were recorded.
    pub outlier: Option<Outlier>,
    /// The members that find it unreachable (its suspicion ran out without
    /// a refutation), while a downing strategy decides; empty otherwise.
    pub unreachable_by: Vec<String>,
    /// The members whose outlier detection ejected it and said so (shared
    /// gray-failure evidence; see `--gray-evidence`).
    pub ejected_by: Vec<EjectedBy>,
}

/// One shared outlier verdict about a member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EjectedBy {
    /// The member that ejected it.
    pub by: String,
    /// Why (`consecutive-5xx`, `latency`, ...).
    pub reason: String,
}

impl Member {
    /// `m` as the snapshot's member sees it.
    pub fn of(m: &MemberView, s: &Snapshot) -> Member {
        let watched = s.node.watch(&m.id.name).filter(|w| w.generation == m.id.generation);
        Member {
            name: m.id.name.clone(),
            generation: m.id.generation,
            incarnation: m.incarnation,
            status: m.status.into(),
            address: m.addr.to_string(),
            status_for_ms: ms(s.node.now.saturating_duration_since(m.since)),
            tags: tags(&m.tags),
            watched: watched.map(Watched::from),
            outlier: s.node.outliers.get(&m.id.name).map(|r| Outlier::of(r, s)),
            unreachable_by: s
                .node
                .downing
                .as_ref()
                .map(|d| {
                    d.records.iter().filter(|(_, subject)| *subject == m.id.name).map(|(o, _)| o.clone()).collect()
                })
                .unwrap_or_default(),
            ejected_by: s
                .node
                .gray
                .iter()
                .filter(|r| r.subject == m.id.name && r.generation == m.id.generation)
                .map(|r| EjectedBy { by: r.by.clone(), reason: r.reason.clone() })
                .collect(),
        }
    }
}

/// Who survives a partition, as this member's downing strategy sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DowningView {
    /// The strategy, in its text form (`keep-majority`, ...).
    pub strategy: String,
    /// The reachability table: observer → subject, the observer finds the
    /// subject unreachable.
    pub unreachable: Vec<Reachability>,
    /// In how long a decision may be taken, milliseconds, once the picture
    /// holds still that long; `null` while nothing is unreachable.
    pub decide_in_ms: Option<f64>,
    /// A decision taken and not yet carried out.
    pub pending: Option<PendingDecision>,
}

/// One record of the reachability table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reachability {
    /// The member that finds the other unreachable.
    pub observer: String,
    /// The member found unreachable.
    pub subject: String,
}

/// A decision waiting for its margin (or for the lease).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PendingDecision {
    /// `down-unreachable` (this side survives, and downs the members its
    /// row names) or `ask-lease` (the lease decides).
    pub decision: String,
    /// The members it downs.
    pub down: Vec<String>,
    /// Why.
    pub reason: String,
    /// In how long it is carried out (or the lease asked), milliseconds.
    pub in_ms: f64,
    /// Whether the lease was asked and its answer is awaited.
    pub lease_asked: bool,
}

impl DowningView {
    /// The snapshot's downing provider, when a strategy decides.
    pub fn of(s: &Snapshot) -> Option<DowningView> {
        let d = s.node.downing.as_ref()?;
        let now = s.node.now;
        Some(DowningView {
            strategy: d.strategy.clone(),
            unreachable: d
                .records
                .iter()
                .map(|(o, subject)| Reachability { observer: o.clone(), subject: subject.clone() })
                .collect(),
            decide_in_ms: d.decide_at.map(|t| ms(t.saturating_duration_since(now))),
            pending: d.pending.as_ref().map(|p| PendingDecision {
                decision: p.decision.to_string(),
                down: p.down.clone(),
                reason: p.reason.clone(),
                in_ms: ms(p.at.saturating_duration_since(now)),
                lease_asked: p.lease_asked,
            }),
        })
    }
}

/// Every member this one knows, tombstones included, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Members {
    /// This member's name.
    pub node: String,
    /// When this was taken, milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// The members, by name.
    pub members: Vec<Member>,
    /// Who survives a partition, as this member's strategy sees it;
    /// `null` with the `auto` strategy.
    pub downing: Option<DowningView>,
}

impl From<&Snapshot> for Members {
    fn from(s: &Snapshot) -> Members {
        Members {
            node: s.node.id.name.clone(),
            unix_ms: s.unix_ms,
            members: s.node.members.iter().map(|m| Member::of(m, s)).collect(),
            downing: DowningView::of(s),
        }
    }
}

/// Members by status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Counts {
    /// Alive.
    pub alive: usize,
    /// Suspected.
    pub suspect: usize,
    /// Dead (tombstones not yet reaped).
    pub dead: usize,
    /// Left (tombstones not yet reaped).
    pub left: usize,
}

/// Work waiting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Queues {
    /// Rumours waiting to be piggybacked.
    pub broadcasts: usize,
    /// Suspicions open.
    pub suspicions: usize,
    /// Probes in flight.
    pub probes: usize,
    /// Indirect probes relayed for others, in flight.
    pub relays: usize,
}

/// This member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SelfView {
    /// Its name.
    pub name: String,
    /// Its generation.
    pub generation: u64,
    /// Its incarnation.
    pub incarnation: u64,
    /// Where others reach it.
    pub address: String,
    /// Its tags.
    pub tags: BTreeMap<String, String>,
    /// Whether its packets are sealed.
    pub sealed: bool,
    /// How long it has run, milliseconds.
    pub uptime_ms: f64,
    /// Lifeguard's local health score (0 is healthy).
    pub awareness: u32,
    /// The highest score it can reach.
    pub max_awareness: u32,
    /// The members it knows, by status.
    pub members: Counts,
    /// The members it watches.
    pub watching: Vec<String>,
    /// Work waiting.
    pub queues: Queues,
    /// Heartbeats kept per watched member (0: recording is off).
    pub recorded_arrivals: usize,
    /// Whether it is ready: joined (see `/v1/health/ready`).
    pub ready: bool,
    /// Why not, if it is not.
    pub not_ready: Vec<String>,
    /// Whether its view has converged: nobody suspected, every watched
    /// member heard (`/v1/health/ready?converged=true`).
    pub converged: bool,
    /// Why not, if it has not.
    pub not_converged: Vec<String>,
    /// The agent's version.
    pub version: String,
    /// The version of the event records' format.
    pub event_format: u32,
    /// The detector's model, as the protocol runs it.
    pub detector: String,
    /// The protocol's suspect level (the `probe` policy's threshold).
    pub suspect_level: f64,
    /// Whether this is `vigil cluster` (faults can be injected).
    pub fleet: bool,
    /// Who survives a partition: the strategy, the reachability table and
    /// the pending decision; `null` with the `auto` strategy.
    pub downing: Option<DowningView>,
    /// Times this member downed itself since it started (its side lost a
    /// partition): each time it took a new generation.
    pub self_downs: u64,
}

/// Why the member is not ready, if it is not: it has not joined (it was
/// given members to join through and knows no live one).
///
/// What other members do is not part of it: a suspected member makes every
/// agent's view unconverged at once, and a readiness that followed it would
/// take every replica out of service together (a Kubernetes Service's
/// endpoints, a load balancer's pool) because one member was slow. That is
/// [`not_converged`], asked for with `/v1/health/ready?converged=true`.
pub fn not_ready(s: &Snapshot, expects_peers: bool) -> Vec<String> {
    let mut why = Vec::new();
    if expects_peers && s.node.count(Status::Alive) == 0 {
        why.push("not joined: no live member known yet".to_owned());
    }
    why
}

/// Why the member's view has not converged, if it has not: a member is
/// suspected, or a watched one not heard yet.
pub fn not_converged(s: &Snapshot) -> Vec<String> {
    let mut why = Vec::new();
    for m in s.node.members.iter().filter(|m| m.status == Status::Suspect) {
        why.push(format!("not converged: {} is suspected", m.id.name));
    }
    for w in s.node.watched.iter().filter(|w| !w.heard) {
        why.push(format!("not converged: no heartbeat from {} yet", w.name));
    }
    why
}

/// Liveness: the agent answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Live {
    /// `live`.
    pub status: String,
}

/// Readiness: joined and converged, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Ready {
    /// `ready`, or `not ready`.
    pub status: String,
    /// Why not (absent when ready).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// φ of each watched member, sampled once a second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhiHistory {
    /// The sampling interval, milliseconds.
    pub interval_ms: u64,
    /// Per member, `[unix_ms, φ]` pairs, oldest first; φ is `null` before
    /// the first heartbeat and when it is beyond what a float holds.
    pub members: BTreeMap<String, Vec<(u64, Option<f64>)>>,
}

/// One watched member's recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TraceInfo {
    /// The member.
    pub name: String,
    /// Its generation (a new one starts a new recording).
    pub generation: u64,
    /// Arrivals recorded.
    pub arrivals: usize,
    /// Arrivals dropped to stay within the bound.
    pub dropped: u64,
    /// How long it has been recording, milliseconds.
    pub recording_for_ms: f64,
    /// Where to download it.
    pub url: String,
}

/// The recordings of watched members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Traces {
    /// Arrivals kept per watched member (0: recording is off).
    pub recorded_arrivals: usize,
    /// The recordings.
    pub members: Vec<TraceInfo>,
}

/// One key, by id (never the key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KeyView {
    /// Its id: 8 hex digits derived from the key.
    pub id: String,
    /// Whether it seals what this member sends.
    pub primary: bool,
    /// Packets sealed with it.
    pub sealed: u64,
    /// Packets it opened.
    pub opened: u64,
}

impl From<&KeyInfo> for KeyView {
    fn from(k: &KeyInfo) -> KeyView {
        KeyView { id: k.id.to_string(), primary: k.primary, sealed: k.sealed, opened: k.opened }
    }
}

/// The keyring.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Keys {
    /// The keys (empty for a member without keys).
    pub keys: Vec<KeyView>,
}

/// A key to install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// The key: 64 hex digits, or 44 characters of base64.
    pub key: String,
}

/// A key installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KeyInstalled {
    /// Its id.
    pub id: String,
}

/// The key now primary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KeyUsed {
    /// Its id.
    pub primary: String,
}

/// A key removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KeyRemoved {
    /// Its id.
    pub removed: String,
}

/// How a request ended: an HTTP status (100 to 599) as a number or text, or
/// `timeout`, `connect-failed`, `connected`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OutcomeText {
    /// An HTTP status.
    Status(u16),
    /// A status as text, or `timeout`, `connect-failed`, `connected`.
    Text(String),
}

/// The outcome of one of the application's requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeIn {
    /// The member the request went to.
    pub member: String,
    /// How it ended.
    pub outcome: OutcomeText,
    /// How long it took, milliseconds (0 to a day).
    #[serde(default)]
    pub latency_ms: Option<f64>,
}

/// Outcomes of the application's requests, for outlier detection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomesIn {
    /// At most 10,000 per batch; every one is checked before any is taken.
    pub outcomes: Vec<OutcomeIn>,
}

/// What was taken of a batch of outcomes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Accepted {
    /// Outcomes taken.
    pub accepted: usize,
    /// Members not known to be alive (their outcomes were not taken), at
    /// most 20, quoted.
    pub unknown_members: Vec<String>,
}

/// A graded policy's new settings, in `--policy`'s grammar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyTune {
    /// `NAME=THRESHOLD[,dwell=D][,rearm=L][,recovery=N][,ejection][,destructive]`: the
    /// name of a policy the agent runs; what it listens to (ejection) and
    /// `destructive` as they were.
    pub policy: String,
}

/// A key operation for every member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterKeyOp {
    /// `list`, `install` (with `key`), `use` or `remove` (with `id`).
    pub op: String,
    /// The key to install: 64 hex digits, or 44 characters of base64.
    #[serde(default)]
    pub key: Option<String>,
    /// The key id to use or remove (8 hex digits).
    #[serde(default)]
    pub id: Option<String>,
}

/// What every member answered to a key operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterKeys {
    /// Members that refused or did not answer.
    pub failed: usize,
    /// Each member asked (this one included), by name.
    pub members: Vec<MemberKeyResult>,
}

/// One member's answer to a key operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemberKeyResult {
    /// The member.
    pub name: String,
    /// Where it was asked.
    pub address: String,
    /// Its keys after the operation (id, whether it seals), when it obeyed.
    pub keys: Option<Vec<ClusterKey>>,
    /// Why not: it refused, or did not answer.
    pub error: Option<String>,
}

/// A key as a member reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterKey {
    /// 8 hex digits.
    pub id: String,
    /// Whether it seals what that member sends.
    pub primary: bool,
}

/// Members to join through, on a running member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JoinRequest {
    /// Seeds in `--join`'s forms: `IP:PORT`, `HOST:PORT`,
    /// `dns+HOST:PORT`, `dnssrv+NAME`; 1 to 64 of them.
    pub seeds: Vec<String>,
}

/// What came of each seed of a join.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Joined {
    /// Seeds whose addresses answered (a member at that address is alive in
    /// this member's view).
    pub joined: usize,
    /// Each seed in the order given.
    pub seeds: Vec<SeedResult>,
}

/// One seed of a join.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SeedResult {
    /// The seed as given.
    pub seed: String,
    /// The addresses it resolved to.
    pub addresses: Vec<String>,
    /// The members found alive at those addresses within the wait.
    pub members: Vec<String>,
    /// Why it gave no member: it did not resolve, or nobody answered in
    /// time.
    pub error: Option<String>,
}

/// A change of this member's tags: keys set, then keys deleted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TagChange {
    /// Tags to set (added or replaced).
    #[serde(default)]
    pub set: BTreeMap<String, String>,
    /// Keys to remove.
    #[serde(default)]
    pub delete: Vec<String>,
}

/// This member's tags after a change, as announced to the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TagsNow {
    /// Every tag.
    pub tags: BTreeMap<String, String>,
}

/// A member believed dead, to force out of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForceLeave {
    /// The member's name.
    pub member: String,
    /// Forget it here at once too (the others forget it at their tombstone
    /// timeout).
    #[serde(default)]
    pub prune: bool,
}

/// A member forced out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ForcedOut {
    /// The member's name.
    pub member: String,
    /// `left`, or `pruned`.
    pub status: String,
}

/// The member is leaving.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Leaving {
    /// `leaving`.
    pub status: String,
}

/// One member of `vigil cluster`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FleetMember {
    /// Its name.
    pub name: String,
    /// Where it is reached, while it runs.
    pub address: Option<String>,
    /// Whether it runs.
    pub running: bool,
    /// Whether it is cut off from every other member.
    pub partitioned: bool,
    /// Whether it serves this API (faults go to the others).
    pub observer: bool,
}

/// The members of `vigil cluster`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Fleet {
    /// The members.
    pub members: Vec<FleetMember>,
}

/// A fault injected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Done {
    /// What was done, for a person.
    pub done: String,
}

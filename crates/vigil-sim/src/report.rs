//! What a run measured.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::checkers::Violations;
use crate::record::Record;

/// Running totals over the whole cluster, crashed nodes included. The
/// simulator takes snapshots of them at the instants a report needs
/// (fault boundaries, around crashes), so any window's figures are a
/// difference of two snapshots.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Scenario, Sim};
///
/// let mut s = Scenario::new("steady", 5);
/// s.duration = Duration::from_secs(20);
/// let report = Sim::new(&s)?.run(&mut |_| {});
/// assert!(report.totals.messages > 0 && report.totals.bytes > report.totals.messages);
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Datagrams and stream messages sent.
    pub messages: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Datagrams sent (stream messages are push-pull exchanges and stream
    /// pings with their answers).
    pub datagrams: u64,
    /// Bytes of those datagrams.
    pub datagram_bytes: u64,
    /// Probes started.
    pub probes: u64,
    /// Suspicions started (accusations, each counted once, by its accuser).
    pub accusations: u64,
    /// Suspected events about members that had not crashed, at every node.
    pub false_suspicions: u64,
    /// Dead events about members that had not crashed, at every node.
    pub false_deaths: u64,
}

impl Totals {
    /// `self − earlier`, field by field.
    ///
    /// # Example
    ///
    /// ```
    /// use vigil_sim::Totals;
    ///
    /// let earlier = Totals { messages: 10, bytes: 400, ..Totals::default() };
    /// let later = Totals { messages: 25, bytes: 1000, ..Totals::default() };
    /// assert_eq!(later.since(&earlier).messages, 15);
    /// assert_eq!(later.since(&earlier).bytes, 600);
    /// ```
    pub fn since(&self, earlier: &Totals) -> Totals {
        Totals {
            messages: self.messages.saturating_sub(earlier.messages),
            bytes: self.bytes.saturating_sub(earlier.bytes),
            datagrams: self.datagrams.saturating_sub(earlier.datagrams),
            datagram_bytes: self.datagram_bytes.saturating_sub(earlier.datagram_bytes),
            probes: self.probes.saturating_sub(earlier.probes),
            accusations: self.accusations.saturating_sub(earlier.accusations),
            false_suspicions: self.false_suspicions.saturating_sub(earlier.false_suspicions),
            false_deaths: self.false_deaths.saturating_sub(earlier.false_deaths),
        }
    }
}

/// Figures over one stretch of a run.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Fault, Scenario, Sim, Timed};
///
/// let mut s = Scenario::new("a crash", 5);
/// s.duration = Duration::from_secs(30);
/// s.faults.push(Timed::new(Duration::from_secs(10), Fault::Crash { node: 4 }));
/// let report = Sim::new(&s)?.run(&mut |_| {});
/// // The steady stretch runs until the first fault.
/// assert_eq!((report.steady.from_ms, report.steady.to_ms), (0.0, 10_000.0));
/// assert!(report.steady.messages_per_member_second > 0.0);
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stretch {
    /// Start, ms since the start of the run.
    pub from_ms: f64,
    /// End, ms since the start of the run.
    pub to_ms: f64,
    /// What happened in it.
    pub totals: Totals,
    /// Messages per member-second (members running at its start).
    pub messages_per_member_second: f64,
    /// Bytes per member-second.
    pub bytes_per_member_second: f64,
    /// Datagrams per member-second.
    pub datagrams_per_member_second: f64,
    /// Datagram bytes per member-second.
    pub datagram_bytes_per_member_second: f64,
}

/// A fault with a duration: figures while it lasted and after it.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Fault, Scenario, Sim, Timed};
///
/// let mut s = Scenario::new("lossy", 5);
/// s.duration = Duration::from_secs(30);
/// s.faults.push(Timed::new(Duration::from_secs(5), Fault::Loss { p: 0.2 }).lasting(Duration::from_secs(10)));
/// let report = Sim::new(&s)?.run(&mut |_| {});
/// let w = &report.fault_windows[0];
/// assert_eq!((w.kind, w.during.to_ms, w.after.from_ms), ("loss", 15_000.0, 15_000.0));
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultWindow {
    /// Index into the scenario's faults.
    pub fault: usize,
    /// Its kind.
    pub kind: &'static str,
    /// While it lasted.
    pub during: Stretch,
    /// From its end to the end of the run (empty if it outlasted the run).
    pub after: Stretch,
}

/// How the cluster came back together after a partition ended.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Fault, Scenario, Sim, Timed};
///
/// let mut s = Scenario::new("split", 6);
/// s.duration = Duration::from_secs(60);
/// s.check_liveness = false;
/// s.faults.push(Timed::new(Duration::from_secs(5), Fault::Partition { split: 3 }).lasting(Duration::from_secs(10)));
/// let report = Sim::new(&s)?.run(&mut |_| {});
/// let heal = &report.heals[0];
/// assert_eq!((heal.healed_at_ms, heal.lasted_ms), (15_000.0, 10_000.0));
/// assert!(heal.converged_after_ms.is_some());
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealReport {
    /// Index into the scenario's faults.
    pub fault: usize,
    /// When the partition ended, ms since the start.
    pub healed_at_ms: f64,
    /// How long it had lasted, ms.
    pub lasted_ms: f64,
    /// From its end to the first moment every live node saw every other
    /// live node alive, ms; `None` if that did not happen within the heal
    /// bound (a violation), before the end of the run, or while another
    /// partition was in force.
    pub converged_after_ms: Option<f64>,
    /// Sides (0, 1 or 2) on which some member downed, or declared dead,
    /// members of the other side while the partition lasted: with `auto`
    /// both sides carry on as the cluster; a downing strategy leaves at
    /// most one.
    pub surviving_sides: usize,
    /// Members of the first side (below the split) and of the second that
    /// downed themselves while the partition lasted.
    pub self_downed: [usize; 2],
}

/// How one crash was detected, and what it cost.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Fault, Scenario, Sim, Timed};
///
/// let mut s = Scenario::new("a crash", 8);
/// s.duration = Duration::from_secs(40);
/// s.faults.push(Timed::new(Duration::from_secs(10), Fault::Crash { node: 2 }));
/// let report = Sim::new(&s)?.run(&mut |_| {});
/// let crash = &report.crashes[0];
/// assert_eq!((crash.node, crash.survivors, crash.detected_by), (2, 7, 7));
/// assert!(crash.first_ms <= crash.median_ms && crash.median_ms <= crash.max_ms);
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrashReport {
    /// The crashed node.
    pub node: usize,
    /// Its generation when it crashed.
    pub generation: u64,
    /// When, ms since the start.
    pub at_ms: f64,
    /// Nodes that ran from the crash until the detection bound (or the end
    /// of the run).
    pub survivors: usize,
    /// Survivors that declared it dead.
    pub detected_by: usize,
    /// First declaration, ms after the crash (NaN if none).
    pub first_ms: f64,
    /// Median over the survivors that declared it, ms after the crash.
    pub median_ms: f64,
    /// Last survivor (full dissemination), ms after the crash.
    pub max_ms: f64,
    /// Every survivor's detection time, ms after the crash, in order (not
    /// serialised: a report of a large cluster would hold thousands).
    #[serde(skip)]
    pub detection_times_ms: Vec<f64>,
    /// Datagrams each running member sent in the 30 s after the crash
    /// beyond its steady rate (measured over the 30 s before), as
    /// memberlist's "extra packets per member" are measured; `None` when
    /// there is no time before the crash to measure the steady rate on. The
    /// periodic push-pull exchanges (stream messages) are left out: they do
    /// not depend on the crash.
    pub extra_messages_per_member: Option<f64>,
    /// The same in bytes.
    pub extra_bytes_per_member: Option<f64>,
}

/// What the nodes' seals did, summed over the nodes.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Scenario, Sealing, Sim};
///
/// let mut s = Scenario::new("sealed", 5);
/// s.duration = Duration::from_secs(20);
/// s.sealing = Sealing::Sealed;
/// let report = Sim::new(&s)?.run(&mut |_| {});
/// assert!(report.sealing.sealed > 0);
/// assert_eq!(report.sealing.plaintext_accepted, 0);
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SealReport {
    /// Packets sealed.
    pub sealed: u64,
    /// Sealed packets opened.
    pub opened: u64,
    /// Plaintext packets accepted.
    pub plaintext_accepted: u64,
    /// Packets refused, by reason (`replayed`, `forged`, `unknown-key`, ...).
    pub rejected: BTreeMap<&'static str, u64>,
    /// Copies of datagrams an attacker sent again ([`crate::Fault::Replay`]).
    pub replays_injected: u64,
    /// Of those, copies that reached no running node (their receiver was
    /// down or paused when they arrived).
    pub replays_undelivered: u64,
    /// Key-rotation steps that found nothing to do.
    pub key_steps_failed: u64,
}

/// What a run measured.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Scenario, Sim};
///
/// let mut s = Scenario::new("twice", 5);
/// s.duration = Duration::from_secs(20);
/// let first = Sim::new(&s)?.run(&mut |_| {});
/// let second = Sim::new(&s)?.run(&mut |_| {});
/// // The same seed gives the same run, record for record.
/// assert_eq!(first.log_hash, second.log_hash);
/// assert_eq!((first.nodes, first.false_deaths), (5, 0));
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Scenario name.
    pub scenario: String,
    /// Nodes.
    pub nodes: usize,
    /// Seed.
    pub seed: u64,
    /// Virtual seconds simulated.
    pub virtual_secs: f64,
    /// Per crash, in the order they happened.
    pub crashes: Vec<CrashReport>,
    /// Over the whole run.
    pub totals: Totals,
    /// Suspected events about members that had not crashed (each node that
    /// hears of a suspicion counts it).
    pub false_suspicions: u64,
    /// Dead events about members that had not crashed (counted once per
    /// declaring node).
    pub false_deaths: u64,
    /// Of those, deaths declared while the victim was outside the liveness
    /// envelope (a partition, heavy loss, a pause): expected, not
    /// violations.
    pub false_deaths_outside_envelope: u64,
    /// False deaths by the member declared dead.
    pub false_deaths_of: BTreeMap<String, u64>,
    /// Deaths of members a downing decision downed (the losing side of a
    /// partition, a member that flapped or crashed), as nodes learned them: the
    /// price of the decision, not counted as false deaths.
    pub downed_deaths: u64,
    /// Suspicions refuted.
    pub refuted: u64,
    /// Path problems reported (a silent member answered a probe).
    pub path_problems: u64,
    /// False suspicions per member-hour.
    pub false_suspicions_per_member_hour: f64,
    /// False deaths per member-hour.
    pub false_deaths_per_member_hour: f64,
    /// Datagrams and stream messages sent per member per second.
    pub messages_per_member_second: f64,
    /// Bytes sent per member per second.
    pub bytes_per_member_second: f64,
    /// Messages sent, by kind.
    pub messages_by_kind: BTreeMap<&'static str, u64>,
    /// The run before its first fault (or all of it without faults): the
    /// steady load.
    pub steady: Stretch,
    /// Per fault with a duration.
    pub fault_windows: Vec<FaultWindow>,
    /// Per partition that ended during the run.
    pub heals: Vec<HealReport>,
    /// Checker violations (empty when everything held).
    pub violations: Violations,
    /// When every live node first saw every other live node alive, ms after
    /// the start (only with `converge_after`).
    pub converged_ms: Option<f64>,
    /// Faults that changed nothing when their time came (indices into the
    /// scenario's faults): a crash of a node already down, a restart of a
    /// node that is up, a pause or slowdown of a node that is down.
    pub ineffective_faults: Vec<usize>,
    /// What the nodes' seals did (all zero but `plaintext_accepted` and
    /// replays when the cluster does not seal).
    pub sealing: SealReport,
    /// Pairs (observer, member) of live nodes where the observer does not
    /// see the member alive, at the end of the run.
    pub final_disagreements: u64,
    /// Forged datagrams the adversary sent ([`crate::Fault::Forge`]), one
    /// per receiver.
    pub forged: u64,
    /// A hash of the run's records (equal for equal seeds).
    pub log_hash: u64,
    /// The records, in time order, when kept ([`crate::Sim::keep_records`]).
    #[serde(skip)]
    pub records: Vec<Record>,
}

impl Report {
    /// Membership events of the run, with the node that reported each (only
    /// when records were kept).
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_membership::Event;
    /// use vigil_sim::{Fault, Scenario, Sim, Timed};
    ///
    /// let mut s = Scenario::new("a crash", 5);
    /// s.duration = Duration::from_secs(30);
    /// s.faults.push(Timed::new(Duration::from_secs(5), Fault::Crash { node: 4 }));
    /// let report = Sim::new(&s)?.keep_records(true).run(&mut |_| {});
    /// let deaths = report.events().filter(|(_, _, e)| matches!(e, Event::Dead { .. })).count();
    /// assert_eq!(deaths, 4);
    /// # Ok::<(), vigil_sim::SimError>(())
    /// ```
    pub fn events(&self) -> impl Iterator<Item = (f64, usize, &vigil_membership::Event)> {
        self.records.iter().filter_map(|r| r.event().map(|(node, e)| (r.at_ms(), node, e)))
    }
}

/// The median of sorted values (the lower middle), NaN if empty.
pub(crate) fn median(sorted: &[f64]) -> f64 {
    if sorted.is_empty() { f64::NAN } else { sorted[(sorted.len() - 1) / 2] }
}

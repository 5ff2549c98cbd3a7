//! The recorder: everything the report is made of, as it happens. It keeps
//! the log of records, the traffic totals and their snapshots, the crashes
//! and who declared them dead, the false suspicions and deaths, and the
//! heals; it feeds the checkers and, at the end, writes the report.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use vigil_detector::Instant;
use vigil_membership::Event;

use crate::checkers::{self, Violations};
use crate::clock::{START, ms, since_start};
use crate::fault::{Action, Fault};
use crate::job::Job;
use crate::links::Links;
use crate::machines::Machines;
use crate::record::{Log, Record, What};
use crate::report::{CrashReport, FaultWindow, HealReport, Report, SealReport, Stretch, Totals, median};
use crate::scenario::Scenario;

/// The window before and after a crash over which its extra traffic is
/// measured (memberlist's measurement: 30 s).
const TRAFFIC_WINDOW: Duration = Duration::from_secs(30);

/// How often convergence is checked while it is awaited.
const CHECK_EVERY: Duration = Duration::from_millis(500);

/// A crash that was applied.
#[derive(Debug, Clone)]
struct Crash {
    node: usize,
    generation: u64,
    at: Instant,
}

/// A process: a machine and the generation it runs.
type Process = (usize, u64);

/// A partition in force, and what each side did.
#[derive(Debug, Clone)]
struct Sides {
    fault: usize,
    split: usize,
    /// When the partition started.
    since: Instant,
    /// Members of each side that downed (or, with `auto`, declared dead)
    /// members of the other side.
    winners: [BTreeSet<usize>; 2],
    /// Members of each side that downed themselves.
    self_downed: [BTreeSet<usize>; 2],
}

impl Sides {
    fn side(&self, i: usize) -> usize {
        usize::from(i >= self.split)
    }
}

/// What a run measured so far.
#[derive(Debug)]
pub(crate) struct Recorder {
    log: Log,
    totals: Totals,
    snapshots: BTreeMap<Instant, Totals>,
    by_kind: BTreeMap<&'static str, u64>,
    /// Deaths seen: (dead name, generation) → declarer → time.
    deaths: HashMap<(String, u64), BTreeMap<usize, Instant>>,
    crashes: Vec<Crash>,
    violations: Violations,
    refuted: u64,
    path_problems: u64,
    false_deaths_outside: u64,
    false_deaths_of: BTreeMap<String, u64>,
    converged_ms: Option<f64>,
    /// Partitions that ended, and how they converged.
    heals: Vec<HealReport>,
    ineffective_faults: Vec<usize>,
    /// Whether the liveness checker applies.
    check_liveness: bool,
    /// The most loss inside the liveness envelope.
    max_loss: f64,
    /// How long a disturbance keeps a member outside the envelope.
    grace: Duration,
    /// How soon a healed partition must converge.
    heal_bound: Duration,
    /// The downing strategy's `stable_after`, when one decides.
    stable_after: Option<Duration>,
    /// Partitions in force.
    sides: Vec<Sides>,
    /// Each node's last visible membership change.
    last_change: HashMap<usize, Instant>,
    /// When each node last decided to down others: the decision its next
    /// downings carry out.
    last_decided: HashMap<usize, Instant>,
    /// Members each machine declared dead (machine, name, generation).
    held_dead: std::collections::HashSet<(usize, String, u64)>,
    /// Members (name, generation) some decision downed.
    downed_ids: BTreeSet<(String, u64)>,
    /// Deaths of members a decision downed, as nodes learned them.
    downed_deaths: u64,
    /// The downing strategy, when one decides.
    strategy: Option<vigil_membership::downing::Strategy>,
    /// The removal margin, when a strategy decides.
    removal_margin: Duration,
    /// Machines that forge as holders of the key: not correct members.
    insiders: BTreeSet<usize>,
    /// The lease has been usable since then (`None` while it is down).
    lease_up_since: Option<Instant>,
    /// Forged datagrams sent.
    forged: u64,
    /// Members others downed: machine, generation → when the member first
    /// acted as one after that (its bound runs from then), if it did yet,
    /// and the members (machine, generation) that downed it.
    downed_by_others: BTreeMap<Process, (Option<Instant>, Vec<Process>)>,
    /// Members that downed themselves: machine, generation, when.
    self_downs: BTreeMap<(usize, u64), Instant>,
    /// How long after the last fault the cluster must be one again.
    outage_bound: Duration,
    /// When the last fault ends.
    faults_end: Instant,
    /// Machines (not impostors), in a generation, whose node stopped because another live
    /// process of its name answered where the others hold it: the agent
    /// exits 2 for the operator there, by design, so it is not a member
    /// the cluster must take back.
    stopped_by_conflict: BTreeSet<(usize, u64)>,
}

impl Recorder {
    /// A recorder for a run of `scenario` that hashes its records.
    pub(crate) fn new(scenario: &Scenario) -> Recorder {
        Recorder {
            log: Log::new(false),
            totals: Totals::default(),
            snapshots: BTreeMap::new(),
            by_kind: BTreeMap::new(),
            deaths: HashMap::new(),
            crashes: Vec::new(),
            violations: Violations::default(),
            refuted: 0,
            path_problems: 0,
            false_deaths_outside: 0,
            false_deaths_of: BTreeMap::new(),
            converged_ms: None,
            heals: Vec::new(),
            ineffective_faults: Vec::new(),
            check_liveness: scenario.check_liveness,
            max_loss: scenario.envelope.max_loss,
            grace: scenario.envelope.grace,
            heal_bound: scenario.heal_bound,
            stable_after: scenario
                .downing
                .as_ref()
                .and_then(|d| d.settings().ok())
                .filter(|d| d.decides())
                .map(|d| d.stable_after),
            sides: Vec::new(),
            last_change: HashMap::new(),
            last_decided: HashMap::new(),
            held_dead: std::collections::HashSet::new(),
            downed_ids: BTreeSet::new(),
            downed_deaths: 0,
            strategy: scenario
                .downing
                .as_ref()
                .and_then(|d| d.settings().ok())
                .filter(|d| d.decides())
                .map(|d| d.strategy),
            removal_margin: scenario
                .downing
                .as_ref()
                .and_then(|d| d.settings().ok())
                .map_or(Duration::ZERO, |d| d.down_removal_margin),
            insiders: scenario
                .faults
                .iter()
                .filter_map(|f| match f.action {
                    Action::Fault(Fault::Forge { by: crate::fault::Forger::Insider { node }, .. }) => Some(node),
                    _ => None,
                })
                .collect(),
            lease_up_since: Some(START),
            forged: 0,
            downed_by_others: BTreeMap::new(),
            self_downs: BTreeMap::new(),
            outage_bound: scenario.outage_bound,
            faults_end: scenario
                .faults
                .iter()
                .map(|f| START.saturating_add(f.at).saturating_add(f.duration.unwrap_or_default()))
                .max()
                .unwrap_or(START),
            stopped_by_conflict: BTreeSet::new(),
        }
    }

    /// Machine `i` acts as a member in `generation` now (`None`: it does
    /// not: down, left, or downed and waiting to rejoin): a member others
    /// downed that acts again starts the bound of its own downing.
    pub(crate) fn acting(&mut self, i: usize, generation: Option<u64>, now: Instant) {
        let Some(g) = generation else { return };
        if let Some((since, _)) = self.downed_by_others.get_mut(&(i, g))
            && since.is_none()
        {
            *since = Some(now);
        }
    }

    /// The lease became impossible to ask.
    pub(crate) fn lease_down(&mut self, _now: Instant) {
        self.lease_up_since = None;
    }

    /// The lease can be asked again.
    pub(crate) fn lease_up(&mut self, now: Instant) {
        self.lease_up_since = Some(now);
    }

    /// `n` forged datagrams went out.
    pub(crate) fn forged(&mut self, n: usize) {
        self.forged += n as u64;
    }

    /// Whether the faulty members (those not running, those forging as
    /// holders of the key, and those a fault disturbs) are within the
    /// strategy's tolerance at `now`:
    /// the strategy keeps the correct members, as one side, against them;
    /// with `lease-majority`, the lease can be asked and could for the
    /// grace period; never for a strategy that stops the cluster by design.
    fn within_tolerance(&self, now: Instant, machines: &Machines, grace: Duration) -> bool {
        use vigil_membership::downing::{Candidate, Picture, Strategy, keeps};
        let Some(strategy) = &self.strategy else { return false };
        if matches!(strategy, Strategy::DownAll) {
            return false;
        }
        // Under lease-majority whoever takes the lease decides: the promise
        // holds while the lease can be asked and the only faults are
        // crashes and forgeries (a member that flaps can take the lease).
        if matches!(strategy, Strategy::LeaseMajority { .. })
            && (self.lease_up_since.is_none_or(|since| now < since.saturating_add(grace))
                || machines.running().any(|(i, _)| !machines.calm(i, now)))
        {
            return false;
        }
        let mut members = BTreeMap::new();
        let mut correct: Vec<String> = Vec::new();
        for i in (0..machines.len()).filter(|&i| !machines.is_impostor(i)) {
            let name = machines.name(i).to_owned();
            let age = machines.generation(i);
            members.insert(
                name.clone(),
                Candidate { name: name.clone(), addr: machines.addr(i), age, tags: Default::default() },
            );
            // Faulty: down, forging, or disturbed (paused, slow, flapping,
            // failing its peers' requests) or within the grace after.
            if machines.running_generation(i).is_some() && !self.insiders.contains(&i) && machines.calm(i, now) {
                correct.push(name);
            }
        }
        let picture = Picture { me: String::new(), members, records: BTreeSet::new() };
        let side: Vec<&str> = correct.iter().map(String::as_str).collect();
        keeps(strategy, &picture, &side)
    }

    /// Whether what happens to machine `j`'s generation `generation` now
    /// would be collateral: it runs that generation inside the liveness
    /// envelope, forges nothing, and the faulty members are within the
    /// strategy's tolerance.
    fn correct(
        &self,
        j: usize,
        generation: u64,
        now: Instant,
        machines: &Machines,
        links: &Links,
        grace: Duration,
    ) -> bool {
        self.check_liveness
            && !self.insiders.contains(&j)
            && !machines.is_impostor(j)
            && machines.running_generation(j) == Some(generation)
            && machines.calm(j, now)
            && links.calm_for(j, now, self.max_loss)
            && self.within_tolerance(now, machines, grace)
    }

    /// Partition `k` (machines below `split` against the rest) started.
    pub(crate) fn partitioned(&mut self, k: usize, split: usize, now: Instant) {
        self.sides.push(Sides {
            fault: k,
            split,
            since: now,
            winners: Default::default(),
            self_downed: Default::default(),
        });
    }

    /// What machine `i`'s event says of the sides of the partitions in
    /// force, and of its picture's calm.
    fn watch_sides(&mut self, i: usize, event: &Event, now: Instant, machines: &Machines) {
        let me = machines.name(i);
        match event {
            // What changes a member's picture that it tells: its own row
            // (unreachable, reachable) and the membership.
            // A member it holds dead that is then forced out (left) was
            // out of its picture already.
            Event::Left { id } if self.held_dead.remove(&(i, id.name.clone(), id.generation)) => {}
            Event::Dead { id, .. } => {
                self.held_dead.insert((i, id.name.clone(), id.generation));
                self.last_change.insert(i, now);
            }
            Event::Up { .. } | Event::Unreachable { .. } | Event::Reachable { .. } | Event::Left { .. } => {
                self.last_change.insert(i, now);
            }
            Event::Decided { unstable, down, decision, .. } => {
                if !down.is_empty() && *decision != vigil_membership::downing::Decision::DownReachable {
                    self.last_decided.insert(i, now);
                }
                if let Some(stable_after) = self.stable_after
                    && !unstable
                {
                    let calm = self.last_change.get(&i).map_or(Duration::MAX, |t| now.saturating_duration_since(*t));
                    let calm_ms = calm.as_secs_f64() * 1e3;
                    self.violations.add(
                        ms(now),
                        checkers::DECISIONS_WAIT_FOR_STABILITY,
                        checkers::decision_waits_for_stability(me, calm_ms, stable_after.as_secs_f64() * 1e3),
                    );
                }
            }
            _ => {}
        }
        let (subject, against_other) = match event {
            // A member that downed the other side and then itself did not
            // go on as the cluster; one that downs the other side again
            // after that (its next process, regrouped with its side) does.
            Event::Downed { id, .. } if id.name == me => {
                for s in &mut self.sides {
                    let side = s.side(i);
                    s.self_downed[side].insert(i);
                    s.winners[side].remove(&i);
                }
                return;
            }
            Event::Downed { id, .. } => (id, true),
            Event::Dead { id, .. } if self.stable_after.is_none() => (id, true),
            _ => return,
        };
        let Some(j) = machines.index_of(&subject.name).filter(|_| against_other && !self.insiders.contains(&i)) else {
            return;
        };
        // Downing a member that downed itself before this partition (its
        // side lost an earlier one) is the end of that story, not a side
        // surviving this one.
        let downed_since = self.self_downs.get(&(j, subject.generation)).copied();
        // A decision taken before this partition began, carried out in its
        // first moments (its margin ended before the member found the
        // others unreachable), is the previous picture's: every member
        // that took it downs the same members, whichever side they are on
        // now, so it says nothing of which side survives this one.
        let decided = self.last_decided.get(&i).copied();
        for s in &mut self.sides {
            if downed_since.is_some_and(|at| at < s.since) || decided.is_some_and(|at| at < s.since) {
                continue;
            }
            if s.side(i) != s.side(j) {
                let side = s.side(i);
                s.winners[side].insert(i);
            }
        }
    }

    /// Keeps every record (or not), from the first on; they are always
    /// hashed.
    pub(crate) fn keep_records(&mut self, keep: bool) {
        self.log = Log::new(keep);
    }

    /// The snapshots the report of `scenario` needs: at the start and the
    /// end, at every fault's boundaries, and a traffic window either side
    /// of every crash. They are to be queued before anything else, so that
    /// at equal times they see the totals from before whatever else happens
    /// then.
    pub(crate) fn snapshot_jobs(scenario: &Scenario) -> Vec<(Instant, Job)> {
        let end = START.saturating_add(scenario.duration);
        let mut marks = BTreeSet::from([START, end]);
        for f in &scenario.faults {
            let at = START.saturating_add(f.at);
            marks.insert(at);
            if let Some(d) = f.duration {
                marks.insert(at.saturating_add(d).min(end));
            }
            if matches!(f.action, Action::Fault(Fault::Crash { .. })) {
                marks.insert(at.saturating_sub(TRAFFIC_WINDOW).max(START));
                marks.insert(at.saturating_add(TRAFFIC_WINDOW).min(end));
            }
        }
        marks.into_iter().map(|at| (at, Job::Snapshot)).collect()
    }

    /// Notes what happened at `now`.
    pub(crate) fn record(&mut self, now: Instant, what: What) {
        self.log.push(Record { at: since_start(now), what });
    }

    /// Takes a snapshot of the totals at `at`.
    pub(crate) fn snapshot(&mut self, at: Instant) {
        self.snapshots.insert(at, self.totals);
    }

    /// A node started `probes` probes and `accusations` suspicions.
    pub(crate) fn started(&mut self, probes: u64, accusations: u64) {
        self.totals.probes += probes;
        self.totals.accusations += accusations;
    }

    /// A message of `kind` and `len` bytes went on the wire.
    pub(crate) fn sent(&mut self, kind: &'static str, len: usize, stream: bool) {
        self.totals.messages += 1;
        self.totals.bytes += len as u64;
        if !stream {
            self.totals.datagrams += 1;
            self.totals.datagram_bytes += len as u64;
        }
        *self.by_kind.entry(kind).or_default() += 1;
    }

    /// Machine `i`'s node reported `event` at `now`: counted, checked
    /// against what really happened to its subject, and recorded.
    pub(crate) fn observe(&mut self, i: usize, event: Event, now: Instant, machines: &Machines, links: &Links) {
        match &event {
            Event::Suspected { id, .. }
                if machines.index_of(&id.name).is_some_and(|j| !machines.crashed(j, id.generation)) =>
            {
                self.totals.false_suspicions += 1;
            }
            Event::Downed { id, .. } => {
                self.downed_ids.insert((id.name.clone(), id.generation));
                if let Some(j) = machines.index_of(&id.name).filter(|&j| !machines.is_impostor(j)) {
                    let own = j == i;
                    if own {
                        self.self_downs.entry((j, id.generation)).or_insert(now);
                    } else if !self.insiders.contains(&i) {
                        // A member that forges may down anyone in its own
                        // view: only correct members' decisions must be
                        // followed by their victims.
                        // A paused member does not act (nor can it stop):
                        // its bound starts when it runs again.
                        let acting = (machines.acting_generation(j) == Some(id.generation) && !machines.paused(j))
                            .then_some(now);
                        let entry = self.downed_by_others.entry((j, id.generation)).or_insert((acting, Vec::new()));
                        entry.1.push((i, machines.generation(i)));
                    }
                    let what = if own { "downed itself".to_owned() } else { format!("downed by {}", machines.name(i)) };
                    let inside = self.correct(j, id.generation, now, machines, links, self.grace);
                    self.violations.add(
                        ms(now),
                        checkers::NO_COLLATERAL,
                        checkers::no_collateral(&id.to_string(), &what, inside),
                    );
                }
            }
            Event::Withdrawn { id, .. } => {
                // A verdict of `i`'s that nobody followed, taken back: its
                // removal stands for nothing.
                if let Some(j) = machines.index_of(&id.name)
                    && let Some((_, by)) = self.downed_by_others.get_mut(&(j, id.generation))
                {
                    by.retain(|d| *d != (i, machines.generation(i)));
                    if by.is_empty() {
                        self.downed_by_others.remove(&(j, id.generation));
                    }
                }
            }
            Event::Dead { id, .. } => {
                if let Some(j) = machines.index_of(&id.name) {
                    if self.downed_ids.contains(&(id.name.clone(), id.generation)) {
                        // A downing decision, not a detection's mistake.
                        self.downed_deaths += 1;
                    } else if self.strategy.is_some() && !machines.crashed(j, id.generation) {
                        // While a strategy decides, only a decision declares a
                        // member dead (a forged or checked rumour taken): no
                        // correct member, whatever is forged.
                        let inside = self.correct(j, id.generation, now, machines, links, self.grace);
                        let what = format!("declared dead by {}", machines.name(i));
                        self.violations.add(
                            ms(now),
                            checkers::NO_COLLATERAL,
                            checkers::no_collateral(&id.to_string(), &what, inside),
                        );
                        self.totals.false_deaths += 1;
                        *self.false_deaths_of.entry(id.name.clone()).or_default() += 1;
                    } else if !machines.crashed(j, id.generation) {
                        self.totals.false_deaths += 1;
                        *self.false_deaths_of.entry(id.name.clone()).or_default() += 1;
                        let inside =
                            self.check_liveness && machines.calm(j, now) && links.calm_for(j, now, self.max_loss);
                        if !inside {
                            self.false_deaths_outside += 1;
                        }
                        self.violations.add(
                            ms(now),
                            checkers::NO_FALSE_DEATH_INSIDE_ENVELOPE,
                            checkers::no_false_death_inside_envelope(machines.name(i), &id.to_string(), inside),
                        );
                    }
                    self.deaths.entry((id.name.clone(), id.generation)).or_default().entry(i).or_insert(now);
                }
            }
            Event::Refuted { .. } => self.refuted += 1,
            Event::PathProblem { .. } => self.path_problems += 1,
            Event::NameConflict { refused: true, .. } if !machines.is_impostor(i) => {
                self.stopped_by_conflict.insert((i, machines.generation(i)));
            }
            _ => {}
        }
        self.watch_sides(i, &event, now, machines);
        self.record(now, What::Membership { node: i, event });
    }

    /// Node `name`'s (generation, incarnation) went from `before` to
    /// `after` at `now`.
    pub(crate) fn epoch(&mut self, name: &str, before: (u64, u64), after: (u64, u64), now: Instant) {
        self.violations.add(
            ms(now),
            checkers::EPOCHS_NEVER_DECREASE,
            checkers::epoch_never_decreases(name, before, after),
        );
    }

    /// Generation `generation` of machine `node` crashed at `now`.
    pub(crate) fn crashed(&mut self, node: usize, generation: u64, now: Instant) {
        self.crashes.push(Crash { node, generation, at: now });
    }

    /// Scenario entry `k` found nothing to act on.
    pub(crate) fn ineffective(&mut self, k: usize) {
        self.ineffective_faults.push(k);
    }

    /// Whether every live node sees every other live node alive at `now`:
    /// the first time it does is the run's convergence; until then, the
    /// next check.
    pub(crate) fn converge_check(&mut self, now: Instant, machines: &Machines) -> Option<(Instant, Job)> {
        if self.converged_ms.is_some() {
            return None;
        }
        if machines.converged() {
            self.converged_ms = Some(ms(now));
            self.record(now, What::Converged);
            return None;
        }
        Some((now.saturating_add(CHECK_EVERY), Job::Check))
    }

    /// Partition `k`, which lasted `lasted`, healed at `now`: the first
    /// check of whether the cluster is one again, which is to be within the
    /// heal bound.
    pub(crate) fn healed(&mut self, k: usize, lasted: Duration, now: Instant, machines: &Machines) -> (Instant, Job) {
        let lasted_ms = lasted.as_secs_f64() * 1e3;
        let (mut surviving_sides, mut self_downed) = (0, [0, 0]);
        if let Some(p) = self.sides.iter().position(|s| s.fault == k) {
            let s = self.sides.remove(p);
            surviving_sides = s.winners.iter().filter(|w| !w.is_empty()).count();
            self_downed = [s.self_downed[0].len(), s.self_downed[1].len()];
            if self.stable_after.is_some() {
                let names = |w: &BTreeSet<usize>| w.iter().map(|&i| machines.name(i)).collect::<Vec<_>>();
                let (a, b) = (names(&s.winners[0]), names(&s.winners[1]));
                self.violations.add(
                    ms(now),
                    checkers::AT_MOST_ONE_SIDE_SURVIVES,
                    checkers::at_most_one_side_survives(k, &a, &b),
                );
            }
        }
        self.heals.push(HealReport {
            fault: k,
            healed_at_ms: ms(now),
            lasted_ms,
            converged_after_ms: None,
            surviving_sides,
            self_downed,
        });
        let deadline = now.saturating_add(self.heal_bound);
        (now.saturating_add(CHECK_EVERY), Job::HealCheck(k, deadline))
    }

    /// Whether the cluster is one again at `now` after partition `k`: if
    /// so, how long it took; if not by `deadline`, a violation; else the
    /// next check.
    pub(crate) fn heal_check(
        &mut self,
        k: usize,
        deadline: Instant,
        now: Instant,
        machines: &Machines,
        links: &Links,
    ) -> Option<(Instant, Job)> {
        // Another partition in force: the cluster cannot be one.
        if links.partitioned() {
            return None;
        }
        let h = self.heals.iter().position(|h| h.fault == k)?;
        if machines.disagreements_without(1, &self.insiders) == 0 {
            self.heals[h].converged_after_ms = Some(ms(now) - self.heals[h].healed_at_ms);
            return None;
        }
        if now >= deadline {
            // A strategy past its tolerance (the referee crashed, too many
            // members down) may keep the sides out by design: promised by
            // nothing, checked by nothing.
            if self.strategy.is_some() && !self.within_tolerance(now, machines, self.grace) {
                return None;
            }
            let (lasted, bound) = (self.heals[h].lasted_ms, self.heal_bound.as_secs_f64() * 1e3);
            let detail = checkers::healed_partition_converges_within_bound(
                k,
                lasted,
                bound,
                machines.disagreements_without(u64::MAX, &self.insiders),
            );
            self.violations.add(ms(now), checkers::HEALED_PARTITIONS_CONVERGE_WITHIN_BOUND, detail);
            return None;
        }
        Some((now.saturating_add(CHECK_EVERY), Job::HealCheck(k, deadline)))
    }

    /// Figures over `[from, to]` from the snapshots (which exist at every
    /// instant this is called with).
    fn stretch(&self, from: Instant, to: Instant, machines: &Machines) -> Stretch {
        let at = |t: Instant| self.snapshots.range(..=t).next_back().map(|(_, s)| *s).unwrap_or_default();
        let totals = at(to).since(&at(from));
        let secs = to.saturating_duration_since(from).as_secs_f64();
        let members = machines.running_at(from).max(1) as f64;
        let rate = |v: u64| if secs > 0.0 { v as f64 / members / secs } else { 0.0 };
        Stretch {
            from_ms: ms(from),
            to_ms: ms(to),
            totals,
            messages_per_member_second: rate(totals.messages),
            bytes_per_member_second: rate(totals.bytes),
            datagrams_per_member_second: rate(totals.datagrams),
            datagram_bytes_per_member_second: rate(totals.datagram_bytes),
        }
    }

    /// The crash's report, and how many survivors declared it within
    /// `bound` if that is fewer than all and the bound can be checked.
    fn crash_report(
        &self,
        c: &Crash,
        bound: Duration,
        end: Instant,
        machines: &Machines,
    ) -> (CrashReport, Option<usize>) {
        let horizon = c.at.saturating_add(bound).min(end);
        let survivors: Vec<usize> =
            (0..machines.len()).filter(|&j| j != c.node && machines.up_throughout(j, c.at, horizon)).collect();
        let declared = self.deaths.get(&(machines.name(c.node).to_owned(), c.generation));
        let mut times: Vec<f64> = survivors
            .iter()
            .filter_map(|j| declared.and_then(|d| d.get(j)))
            .map(|t| t.saturating_duration_since(c.at).as_secs_f64() * 1e3)
            .collect();
        times.sort_by(f64::total_cmp);
        // Extra traffic: the 30 s after the crash against the steady rate of
        // the 30 s before.
        let before = c.at.saturating_sub(TRAFFIC_WINDOW).max(START);
        let after = c.at.saturating_add(TRAFFIC_WINDOW).min(end);
        let base = self.stretch(before, c.at, machines);
        let post = self.stretch(c.at, after, machines);
        let post_secs = after.saturating_duration_since(c.at).as_secs_f64();
        let running_after = machines.running_at(c.at).max(1) as f64;
        let extra = |post_total: u64, base_rate: f64| {
            (before < c.at).then(|| post_total as f64 / running_after - base_rate * post_secs)
        };
        let report = CrashReport {
            node: c.node,
            generation: c.generation,
            at_ms: ms(c.at),
            survivors: survivors.len(),
            detected_by: times.len(),
            first_ms: times.first().copied().unwrap_or(f64::NAN),
            median_ms: median(&times),
            max_ms: times.last().copied().unwrap_or(f64::NAN),
            detection_times_ms: times.clone(),
            extra_messages_per_member: extra(post.totals.datagrams, base.datagrams_per_member_second),
            extra_bytes_per_member: extra(post.totals.datagram_bytes, base.datagram_bytes_per_member_second),
        };
        // A restart within the bound supersedes the old generation: not
        // declaring it dead is then correct. A bound past the end of the run
        // cannot be checked.
        let restarted = machines.restarted(c.node, c.at, horizon);
        let checkable = !restarted && c.at.saturating_add(bound) <= end;
        let bound_ms = bound.as_secs_f64() * 1e3;
        let in_time = times.iter().filter(|&&t| t <= bound_ms).count();
        (report, (checkable && in_time < survivors.len()).then_some(in_time))
    }

    /// What the downing checkers look at once the run is over: every member
    /// others downed stopped within its bound; one cluster again after the
    /// faults; no address a forgery named.
    fn check_downing_at_the_end(&mut self, end: Instant, machines: &Machines) {
        let bound = self.stable_after.unwrap_or_default() + self.removal_margin + Duration::from_secs(60);
        for (&(j, g), (since, by)) in &self.downed_by_others {
            // It never acted as a member again: nothing to stop. A member
            // that forges with the key is not a correct member: nothing it
            // does is promised.
            let Some(at) = *since else { continue };
            if self.insiders.contains(&j) {
                continue;
            }
            // Every member that downed it lost its own side later (it
            // downed itself in that generation): its removal stands for
            // nothing.
            if by.iter().all(|d| self.self_downs.contains_key(d)) {
                continue;
            }
            // Every member that downed it crashed in that generation, and
            // no other member took the death: the verdict went with them
            // (nobody running holds it dead; a restarted process knows
            // nothing of it), and there is nothing to follow.
            let held_elsewhere = self
                .deaths
                .get(&(machines.name(j).to_owned(), g))
                .is_some_and(|declared| declared.keys().any(|k| !by.iter().any(|(d, _)| d == k)));
            if by.iter().all(|&(d, dg)| machines.crashed(d, dg)) && !held_elsewhere {
                continue;
            }
            let deadline = at.saturating_add(bound);
            if deadline > end || machines.crashed(j, g) {
                continue;
            }
            let late = match self.self_downs.get(&(j, g)) {
                Some(when) => *when > deadline,
                None => machines.acting_generation(j) == Some(g) && !machines.paused(j),
            };
            if late {
                let victim = format!("{}#{g}", machines.name(j));
                let detail = checkers::downed_members_stop(&victim, ms(at), bound.as_secs_f64() * 1e3);
                self.violations.add(ms(deadline), checkers::DOWNED_MEMBERS_STOP, Some(detail));
            }
        }
        let quiet = end.saturating_duration_since(self.faults_end);
        if self.strategy.is_some() && quiet >= self.outage_bound && self.within_tolerance(end, machines, self.grace) {
            let out: Vec<&str> = machines
                .running()
                .filter(|(i, alive)| {
                    !alive
                        && !self.insiders.contains(i)
                        && !self.stopped_by_conflict.contains(&(*i, machines.generation(*i)))
                })
                .map(|(i, _)| machines.name(i))
                .collect();
            let disagreeing = machines.disagreements_without(u64::MAX, &self.insiders);
            let detail = checkers::one_cluster_after_faults(quiet.as_secs_f64() * 1e3, &out, disagreeing).map(|d| {
                let pairs = machines.disagreeing_pairs(4, &self.insiders);
                if pairs.is_empty() { d } else { format!("{d} ({})", pairs.join("; ")) }
            });
            self.violations.add(ms(end), checkers::ONE_CLUSTER_AFTER_FAULTS, detail);
        }
        for (i, _) in machines.running() {
            for (member, addr) in machines.addresses_held(i) {
                if addr == crate::adversary::FORGED_ADDR {
                    let detail = checkers::nothing_moved_by_a_forgery(machines.name(i), &member, &addr.to_string());
                    self.violations.add(ms(end), checkers::NOTHING_MOVED_BY_A_FORGERY, Some(detail));
                }
            }
        }
    }

    /// The report of a run of `scenario` that ended at `end`, with the
    /// seals' figures.
    pub(crate) fn finish(
        mut self,
        scenario: &Scenario,
        end: Instant,
        machines: &Machines,
        sealing: SealReport,
    ) -> Report {
        let secs = scenario.duration.as_secs_f64();
        let n = machines.len() as f64;
        let member_hours = n * secs / 3600.0;
        let mut crashes = Vec::new();
        for c in std::mem::take(&mut self.crashes) {
            let (report, missed) = self.crash_report(&c, scenario.detection_bound, end, machines);
            if let Some(in_time) = missed {
                let bound_ms = scenario.detection_bound.as_secs_f64() * 1e3;
                let detail = checkers::every_crash_detected_within_bound(
                    &format!("n{}#{}", c.node, c.generation),
                    report.survivors,
                    in_time,
                    bound_ms,
                );
                self.violations.add(ms(c.at), checkers::EVERY_CRASH_DETECTED_WITHIN_BOUND, detail);
            }
            crashes.push(report);
        }
        self.check_downing_at_the_end(end, machines);
        let first_fault = scenario.faults.iter().map(|f| START.saturating_add(f.at)).min().unwrap_or(end);
        let steady = self.stretch(START, first_fault, machines);
        let fault_windows = scenario
            .faults
            .iter()
            .enumerate()
            .filter_map(|(k, f)| {
                let start = START.saturating_add(f.at);
                let stop = start.saturating_add(f.duration?).min(end);
                Some(FaultWindow {
                    fault: k,
                    kind: f.kind(),
                    during: self.stretch(start, stop, machines),
                    after: self.stretch(stop, end, machines),
                })
            })
            .collect();
        let totals = self.totals;
        Report {
            scenario: scenario.name.clone(),
            nodes: machines.len(),
            seed: scenario.seed,
            virtual_secs: secs,
            crashes,
            totals,
            false_suspicions: totals.false_suspicions,
            false_deaths: totals.false_deaths,
            false_deaths_outside_envelope: self.false_deaths_outside,
            downed_deaths: self.downed_deaths,
            false_deaths_of: self.false_deaths_of,
            refuted: self.refuted,
            path_problems: self.path_problems,
            false_suspicions_per_member_hour: totals.false_suspicions as f64 / member_hours,
            false_deaths_per_member_hour: totals.false_deaths as f64 / member_hours,
            messages_per_member_second: totals.messages as f64 / n / secs,
            bytes_per_member_second: totals.bytes as f64 / n / secs,
            messages_by_kind: self.by_kind,
            steady,
            fault_windows,
            heals: self.heals,
            violations: self.violations,
            converged_ms: self.converged_ms,
            ineffective_faults: self.ineffective_faults,
            sealing,
            final_disagreements: machines.disagreements(u64::MAX),
            forged: self.forged,
            log_hash: self.log.hash(),
            records: self.log.into_records(),
        }
    }
}

//! Who survives a partition, as this node applies it: its own row and the
//! rows the others told it, the picture it decides from, the decision
//! once the picture held still, the winning side's removal margin, the
//! lease, and this node downing itself (when its side lost, when it is
//! threatened, or when members that could be a surviving side tell it
//! they downed it).
//!
//! Rows are first-hand ([`crate::reachability`]): this node tells its row
//! itself to every member it reaches (when it changes, and again every
//! quarter of `stable_after` while it says anything), and takes another
//! member's row only from a datagram of that member, at its own address,
//! in the generation this node knows.

use super::*;
use crate::downing::{self, Candidate, Decision, LeaseAnswer, Pending, Picture};
use crate::message::{Mark, RowEntry};
use crate::resolver::{Answered, Asked, Due};

/// Members sent this node's row in one turn, at most; the rest in the next
/// turns, a gossip interval apart.
const ROW_SENDS_PER_TURN: usize = 64;

/// Row entries in one datagram, at most: a page of a long row. With names
/// of 64 bytes and 10-byte generations an entry takes 76 bytes; 16 of them
/// fit under the smallest datagram budget with room for the header.
const ROW_ENTRIES_PER_PAGE_MIN: usize = 12;

/// How many times the wait before a re-form (for want of the lease)
/// doubles, at most: sixteen times `stable_after` and the margin.
const MAX_REFORM_DOUBLINGS: u32 = 4;

/// The longest a side that downed itself for want of the lease waits
/// before it re-forms and asks again, unless `stable_after` and the margin
/// are longer: four renewals' time, a lease's usual time to live (120 s).
/// A side that took the lease and then crashed loses it that long after
/// its last renewal; the side waiting for it asks again within as long
/// after.
const MAX_REFORM_WAIT: std::time::Duration = downing::LEASE_RENEW_EVERY.saturating_mul(4);

impl Node {
    /// `stable_after` and the removal margin, twice: how long a verdict
    /// about this node's stall explains, and how long a verdict of its own
    /// waits for a follower before it may be withdrawn.
    pub(super) fn two_windows(&self) -> std::time::Duration {
        let d = &self.config.downing;
        d.stable_after.saturating_add(d.down_removal_margin).saturating_mul(2)
    }

    /// Whether a downing strategy decides (anything but `auto`).
    pub(super) fn decides(&self) -> bool {
        self.config.downing.decides()
    }

    /// The member a packet speaks for, if it comes from that member itself:
    /// a member this node knows, in exactly the generation it knows, from
    /// the address it knows it by (or the one it proved to send from), or
    /// on a stream in stream-only mode (where a stream's sender is what
    /// its frame says). Whatever its status.
    pub(super) fn speaker(&self, from: SocketAddr, packet: &Packet, stream: bool) -> Option<&Member> {
        let m = self.members.get(&packet.from.name).filter(|m| m.is(&packet.from))?;
        let at_home = m.addr == from || self.members.source_of(&m.name) == Some(from);
        let by_datagram = !stream || self.config.stream_only;
        (at_home && by_datagram).then_some(m)
    }

    /// A page of `sender`'s row, from the member itself: kept (entries
    /// about members this node does not know in that generation are
    /// dropped: they cannot be in its picture).
    pub(super) fn take_row(
        &mut self,
        now: Instant,
        sender: &NodeId,
        version: u64,
        page: (u16, u16),
        entries: Vec<RowEntry>,
    ) {
        let Some(observer) = self.members.get(&sender.name).map(|m| m.name.clone()) else { return };
        self.tell_held(now, &observer, &entries);
        let known: Vec<crate::reachability::Entry> = entries
            .into_iter()
            .filter_map(|e| {
                if e.id == self.me {
                    return Some((Arc::from(self.me.name.as_str()), e.id.generation, e.mark));
                }
                let m = self.members.get(&e.id.name).filter(|m| m.generation == e.id.generation)?;
                Some((m.name.clone(), e.id.generation, e.mark))
            })
            .collect();
        self.stats.rows_received += 1;
        self.rows.receive(observer, sender.generation, version, page, known);
    }

    /// What this node finds unreachable itself now: the members whose
    /// suspicion ran out while it accused them (its probes, direct and
    /// through others, failed), and, when shared outlier verdicts count,
    /// those enough members eject (each saying so itself, this one
    /// included), within the removal budget; and the members this node's
    /// own outlier detection ejects.
    fn own_row_now(
        &self,
        now: Instant,
    ) -> (std::collections::BTreeMap<Arc<str>, u64>, std::collections::BTreeMap<Arc<str>, u64>) {
        let mut row = std::collections::BTreeMap::new();
        let mut ejects = std::collections::BTreeMap::new();
        for (name, s) in self.suspicions.ripe() {
            if s.accused_by(&self.me.name)
                && let Some(m) = self.members.get(name).filter(|m| m.is_live())
            {
                row.insert(m.name.clone(), m.generation);
            }
        }
        let gray = self.config.gray;
        if !gray.counts_for_downing {
            return (row, ejects);
        }
        for r in crate::gray::reports(&self.me.name, &self.shared.compose(None).unwrap_or_default()) {
            if let Some(m) = self.members.get(&r.subject).filter(|m| m.is_live() && m.generation == r.generation) {
                ejects.insert(m.name.clone(), m.generation);
            }
        }
        if self.gray_budget_left(now) == 0 {
            return (row, ejects);
        }
        let mut ejectors: std::collections::BTreeMap<Arc<str>, usize> = ejects.keys().map(|n| (n.clone(), 1)).collect();
        for m in self.members.iter().filter(|m| m.is_live() && !row.contains_key(&m.name)) {
            let Some((g, entries)) = self.rows.row(&m.name) else { continue };
            if g != m.generation {
                continue;
            }
            for (subject, sg, mark) in entries {
                if *mark == Mark::Ejected
                    && self.members.get(subject).is_some_and(|s| s.is_live() && s.generation == *sg)
                {
                    *ejectors.entry(subject.clone()).or_default() += 1;
                }
            }
        }
        for (subject, count) in ejectors {
            if count >= gray.min_ejectors.max(2)
                && let Some(m) = self.members.get(&subject)
            {
                row.insert(m.name.clone(), m.generation);
            }
        }
        (row, ejects)
    }

    /// Spends the gray budget for each of `down` in this node's row on gray
    /// evidence only (no ripe suspicion of it).
    fn spend_gray_budget(&mut self, now: Instant, down: &[String]) {
        if !self.config.gray.counts_for_downing {
            return;
        }
        for name in down {
            if self.suspicions.get(name).is_none_or(|s| !s.is_ripe()) {
                self.gray_removals.push_back(now);
            }
        }
        while self.gray_removals.len() > 64 {
            self.gray_removals.pop_front();
        }
    }

    /// Removals on gray evidence still allowed in the current window.
    fn gray_budget_left(&self, now: Instant) -> usize {
        let window = self.config.gray.removal_window;
        let recent = self.gray_removals.iter().filter(|t| now.saturating_duration_since(**t) < window).count();
        self.config.gray.max_removals.saturating_sub(recent)
    }

    /// What this node decides from: itself and its live members (their
    /// generations as ages), its own row, and the rows of the members it
    /// reaches, as each told it, in the generation it knows. With
    /// `unstable`, members that flapped lately count as unreachable.
    pub(super) fn picture(&self, unstable: bool) -> Picture {
        let counts = |mark: Mark| mark == Mark::Unreachable || (unstable && mark == Mark::Flapped);
        let mut members = std::collections::BTreeMap::new();
        let me = Candidate { name: self.me.name.clone(), addr: self.addr, age: self.me.generation, tags: self.tags() };
        members.insert(me.name.clone(), me);
        for m in self.members.iter().filter(|m| m.is_live()) {
            let tags = m.tags().cloned().unwrap_or_default();
            let c = Candidate { name: m.name.to_string(), addr: m.addr, age: m.generation, tags };
            members.insert(c.name.clone(), c);
        }
        let live = |name: &str, generation: u64| {
            (name == self.me.name && generation == self.me.generation)
                || self.members.get(name).is_some_and(|m| m.is_live() && m.generation == generation)
        };
        let mut records = std::collections::BTreeSet::new();
        let mut mine = std::collections::BTreeSet::new();
        for (name, generation, mark) in self.rows.own() {
            if counts(mark) && live(name, generation) {
                mine.insert(name.clone());
                records.insert((self.me.name.clone(), name.to_string()));
            }
        }
        for m in self.members.iter().filter(|m| m.is_live() && !mine.contains(&m.name)) {
            let Some((generation, entries)) = self.rows.row(&m.name) else { continue };
            if generation != m.generation {
                continue;
            }
            for (subject, g, mark) in entries {
                if counts(*mark) && live(subject, *g) {
                    records.insert((m.name.to_string(), subject.to_string()));
                }
            }
        }
        // A member this node cannot reach, that a newer process of its
        // name supersedes (the others speak of the newer one; the older did
        // not answer where this node knows it): the others hold no row
        // about the older, since for them it is gone, and their silence
        // must not count as reaching it. Every member finds it
        // unreachable, so that this node decides about it at all (its
        // side keeps the newer one out until a decision downs the older).
        for (name, generation) in self.superseded.iter() {
            if !mine.contains(name) || !live(name, *generation) {
                continue;
            }
            for m in self.members.iter().filter(|m| m.is_live() && m.name != *name) {
                records.insert((m.name.to_string(), name.to_string()));
            }
        }
        // A member this node cannot reach that other members said, each
        // first-hand, they hold dead (in the generation this node holds
        // live): each of them finds it unreachable. They forgot it, and
        // their silence about it is not reaching it; without this, this
        // node alone would hold it in its row, and its core would be
        // itself (the swarm found a member back after downing itself,
        // which had taken a crashed member alive from a packet its stall
        // held up, waiting so for ever). One record per member that said
        // so, as a row would give: a member holding the key adds its own.
        for (name, (generation, tellers)) in self.dead_elsewhere.iter() {
            if !mine.contains(name) || !live(name, *generation) {
                continue;
            }
            for t in tellers.iter().filter(|t| self.members.get(t).is_some_and(|m| m.is_live())) {
                records.insert((t.to_string(), name.to_string()));
            }
        }
        Picture { me: self.me.name.clone(), members, records }
    }

    /// After every input, with a strategy: this node's row is brought up
    /// to date (and told), the gate hears of changes, and whatever is due
    /// is done.
    pub(super) fn settle_downing(&mut self, now: Instant) {
        if !self.decides() || self.status != Status::Alive {
            return;
        }
        let before: std::collections::BTreeSet<Arc<str>> =
            self.rows.own().filter(|(_, _, m)| *m == Mark::Unreachable).map(|(n, _, _)| n.clone()).collect();
        let (current, ejects) = self.own_row_now(now);
        let members = &self.members;
        let live =
            |name: &str, generation: u64| members.get(name).is_some_and(|m| m.is_live() && m.generation == generation);
        let change = self.rows.set_own(now, current, ejects, self.resolver.memory(), live);
        if change.changed {
            self.announce_row_changes(&before);
        }
        if change.flapped {
            self.resolver.flapped(now);
        }
        // Back and seeing the cluster whole for `stable_after`: what it
        // knew before no longer matters. Seen whole only once its
        // detectors have looked again after a long stall: until then the
        // members it took alive from packets the stall held up (sent
        // before a new partition, perhaps) look reachable whatever became
        // of them (the swarm found a split brain so: a member knowing the
        // one it rejoined through and nobody else judged it the oldest,
        // alone).
        let mut past_clear_at = None;
        if !self.past.is_empty() {
            let looked = self.looked_again(now);
            if !looked {
                past_clear_at = self.looked_again_at();
            }
            let clear =
                !self.rejoining && looked && self.members.live_count() > 0 && self.picture(false).records.is_empty();
            let since = if clear { Some(self.past_clear_since.unwrap_or(now)) } else { None };
            self.past_clear_since = since;
            if let Some(since) = since {
                let at = since.saturating_add(self.config.downing.stable_after);
                if now >= at {
                    self.past.clear();
                    self.past_clear_since = None;
                } else {
                    past_clear_at = Some(at);
                }
            }
        }
        let version = self
            .rows
            .changes()
            .wrapping_add(self.members.ring_version())
            .wrapping_add(self.superseded.changes())
            .wrapping_add(self.dead_elsewhere.changes());
        if self.resolver.is_new(version) {
            let anything = !self.picture(true).records.is_empty();
            self.resolver.observe(now, version, anything);
        }
        while self.status == Status::Alive {
            match self.resolver.due(now) {
                Due::Nothing => break,
                Due::Decide => self.decide_downing(now, false),
                Due::Unstable => self.decide_downing(now, true),
                Due::CarryOut(p) => {
                    self.carry_out(now, p);
                    // What it carried out changed the picture: the gate
                    // sees that before anything else is decided (a member
                    // whose timers ran late, paused, finds both due at once).
                    return self.settle_downing(now);
                }
                // The runtime takes the request (`take_lease_request`).
                Due::AskLease => {}
            }
        }
        if self.status != Status::Alive {
            return;
        }
        self.send_rows(now, change.changed);
        let next_send = self.rows.any_owed().then(|| now.saturating_add(self.config.gossip_interval));
        let next = [self.resolver.next_deadline(now), next_send, self.rows.send_at(), past_clear_at]
            .into_iter()
            .flatten()
            .min();
        self.timers.set(Timer::Downing, next);
    }

    /// The members that entered this node's row (unreachable from here) or
    /// left it, as events.
    fn announce_row_changes(&mut self, before: &std::collections::BTreeSet<Arc<str>>) {
        let now_in: std::collections::BTreeSet<Arc<str>> =
            self.rows.own().filter(|(_, _, m)| *m == Mark::Unreachable).map(|(n, _, _)| n.clone()).collect();
        for name in now_in.difference(before) {
            if let Some(m) = self.members.get(name) {
                self.stats.found_unreachable += 1;
                let (id, by) = (m.id(), self.me.clone());
                self.emit(Event::Unreachable { id, by });
            }
        }
        for name in before.difference(&now_in) {
            if let Some(m) = self.members.get(name).filter(|m| m.is_live()) {
                let (id, incarnation) = (m.id(), m.incarnation);
                self.emit(Event::Reachable { id, incarnation });
            }
        }
    }

    /// Tells this node's row to the members owed it (a turn's worth): to
    /// every live member a moment after a change (one second, so that the
    /// changes of one moment go out together), once more three seconds
    /// later, then every `stable_after` while the row says anything. The
    /// members it cannot reach are told too: one it cannot hear may hear
    /// it, and must learn that it is found unreachable.
    fn send_rows(&mut self, now: Instant, changed: bool) {
        let (batch, gap) = (Duration::from_secs(1), Duration::from_secs(3));
        if self.rows.send_due(now, changed, batch, gap, self.config.downing.stable_after) {
            let live: Vec<Arc<str>> = self.members.iter().filter(|m| m.is_live()).map(|m| m.name.clone()).collect();
            self.rows.owe(live);
        }
        if !self.rows.any_owed() {
            return;
        }
        let targets = self.rows.take_owed(ROW_SENDS_PER_TURN);
        // Entries a page holds: the budget, less the header and the
        // longest entry's worth of room.
        let per_page = (self.config.datagram_budget.saturating_sub(120) / 76).max(ROW_ENTRIES_PER_PAGE_MIN);
        let (version, pages) = self.rows.pages(per_page);
        let count = u16::try_from(pages.len()).unwrap_or(u16::MAX);
        for name in targets {
            let Some(addr) = self.members.get(&name).filter(|m| m.is_live()).map(|m| m.addr) else { continue };
            for (page, entries) in pages.iter().enumerate().take(usize::from(count)) {
                let page = u16::try_from(page).unwrap_or(u16::MAX);
                let message = Message::Reachability { version, page, pages: count, entries: entries.clone() };
                self.stats.rows_sent += 1;
                self.send_by(addr, message, None, false);
            }
        }
    }

    /// The picture held still, or flapped for too long (`unstable`):
    /// decide, in the second case with the members that flapped lately
    /// counted unreachable (in every row: each member tells its own).
    fn decide_downing(&mut self, now: Instant, unstable: bool) {
        let mut picture = self.picture(unstable);
        // Calm came back with nobody unreachable: nothing to decide.
        if picture.records.is_empty() {
            return;
        }
        let ghosts = self.add_downed_lately(now, &mut picture);
        let settings = &self.config.downing;
        let mut verdict = downing::decide(&settings.strategy, &picture);
        verdict.down.retain(|n| !ghosts.contains(n));
        // Under `lease-majority` a member is threatened by any side that
        // finds it unreachable, as any side may take the lease: it asks the
        // lease for its own side first (after the minority's delay), and
        // downs itself only if refused by a side that does not count it
        // in. The lease grants one side; the side that threatens it needs
        // the lease to down anyone. (Downing itself at once, a member
        // accused on and off by one cut off alone would go, healthy.) A
        // member that stalled lately downs itself at once, as before: the
        // others may have downed it while it stalled, and no longer hold
        // it in their rows.
        if verdict.decision == Decision::DownReachable
            && !self.stalled_lately(now)
            && let downing::Strategy::LeaseMajority { acquire_delay_for_minority, .. } = &settings.strategy
        {
            verdict.decision = Decision::AskLease { after: *acquire_delay_for_minority };
            verdict.down.clear();
            verdict.threatened = true;
        }
        // A member that stalled long sees, for as long as it stalled, the
        // members it has not heard since as reachable: a side it holds
        // together may be long gone, downed by the others or cut off. It
        // may down itself on that picture, never others: the gate waits
        // for the picture to hold still again, past the quiet.
        let downs_others = matches!(verdict.decision, Decision::AskLease { .. })
            || (verdict.decision == Decision::DownUnreachable && !verdict.down.is_empty());
        if downs_others && self.picture_stale(now) {
            self.stats.decisions_deferred_after_stall += 1;
            self.resolver.reopen(now);
            return;
        }
        // Back after downing itself, this node has heard nothing yet of
        // members it knew then, and its picture has not been clear since:
        // it knows too little of the cluster to say who survives (the
        // oldest may look alone, a side small). It may down itself, never
        // others, until it learns of them or sees the cluster whole.
        if verdict.decision == Decision::DownUnreachable && !verdict.down.is_empty() && !self.past.is_empty() {
            self.stats.decisions_deferred_incomplete += 1;
            self.resolver.reopen(now);
            return;
        }
        if unstable {
            let margin = settings.decide_when_unstable.unwrap_or_default();
            verdict.reason = format!(
                "the picture did not hold still for {} ms: members that flapped counted unreachable; {}",
                (settings.stable_after + margin).as_millis(),
                verdict.reason
            );
        }
        self.stats.downing_decisions += 1;
        self.emit(Event::Decided {
            unstable,
            strategy: settings.strategy.to_string(),
            decision: verdict.decision,
            down: verdict.down.clone(),
            reason: verdict.reason.clone(),
        });
        let addrs = |names: &mut dyn Iterator<Item = &String>| -> Vec<SocketAddr> {
            names.filter_map(|n| picture.members.get(n)).map(|c| c.addr).collect()
        };
        // A removal on gray evidence is spent when it is decided: the member
        // still answers, so it may down itself at once (it is threatened)
        // and be back, at a new generation, before any margin ends.
        if matches!(verdict.decision, Decision::DownUnreachable | Decision::AskLease { .. }) {
            self.spend_gray_budget(now, &verdict.down);
        }
        match verdict.decision {
            Decision::Auto | Decision::Nothing => {}
            Decision::DownAll => self.down_self(now, self.me.clone(), verdict.reason, Vec::new()),
            Decision::DownReachable => {
                // Those that may survive: everyone it does not down with
                // itself; it rejoins through them.
                let mut others = picture.members.keys().filter(|n| **n != picture.me && !verdict.down.contains(n));
                let survivors = addrs(&mut others);
                self.down_self(now, self.me.clone(), verdict.reason, survivors);
            }
            Decision::DownUnreachable => {
                if !verdict.down.is_empty() {
                    let at = now.saturating_add(self.config.downing.down_removal_margin);
                    let generations = self.generations_of(&verdict.down);
                    self.resolver.set_pending(Some(Pending {
                        decision: verdict.decision,
                        generations,
                        down: verdict.down,
                        reason: verdict.reason,
                        at,
                        lease_asked: false,
                        lease_holder: None,
                        threatened: false,
                        unstable,
                    }));
                }
            }
            Decision::AskLease { after } => {
                // This side's name for the lease: its core's, the same for
                // every member of the core.
                let core: Vec<&str> = verdict.core.iter().map(String::as_str).collect();
                let holder = Some(downing::lease_holder(&core));
                self.resolver.asking_for(verdict.core.clone());
                let generations = self.generations_of(&verdict.down);
                self.resolver.set_pending(Some(Pending {
                    decision: verdict.decision,
                    generations,
                    down: verdict.down,
                    reason: verdict.reason,
                    at: now.saturating_add(after),
                    lease_asked: false,
                    lease_holder: holder,
                    threatened: verdict.threatened,
                    unstable,
                }));
            }
        }
    }

    /// Under a strategy that counts members (`keep-majority`,
    /// `lease-majority`, and `keep-oldest` with down-if-alone, which keeps
    /// the oldest of two but not of three), the members this node's decisions downed within
    /// the last two windows, of which it knows no live process, enter the
    /// picture as unreachable from every member, the youngest: they may be
    /// back on the other side of a partition, as newer processes this side
    /// does not know (a member that downed itself rejoined a member of the
    /// other side in the first moments of the partition, before that
    /// member found anyone unreachable). Counted out, they would leave this
    /// side a majority of a membership that is not the cluster's, and both
    /// sides would survive. Their names, which the decision does not down
    /// again.
    fn add_downed_lately(&self, now: Instant, picture: &mut Picture) -> Vec<String> {
        let counts = matches!(
            self.config.downing.strategy,
            downing::Strategy::KeepMajority { .. }
                | downing::Strategy::LeaseMajority { .. }
                | downing::Strategy::KeepOldest { down_if_alone: true, .. }
        );
        // Only a decision that would down someone counts them: a member
        // whose own row is empty waits or downs itself, as before.
        if !counts || !picture.records.iter().any(|(o, _)| *o == picture.me) {
            return Vec::new();
        }
        let mut ghosts = Vec::new();
        for (name, generation) in self.resolver.downed_lately(now, self.two_windows()) {
            if picture.members.contains_key(name) {
                continue;
            }
            let Some(m) = self.members.get(name).filter(|m| m.generation == generation) else { continue };
            let tags = m.tags().cloned().unwrap_or_default();
            ghosts.push(downing::Candidate { name: name.to_owned(), addr: m.addr, age: u64::MAX, tags });
        }
        let observers: Vec<String> = picture.members.keys().cloned().collect();
        for g in &ghosts {
            for o in &observers {
                picture.records.insert((o.clone(), g.name.clone()));
            }
        }
        let names = ghosts.iter().map(|g| g.name.clone()).collect();
        for g in ghosts {
            picture.members.insert(g.name.clone(), g);
        }
        names
    }

    /// Whether another member's word that `name` is dead in `generation`
    /// carries out a decision of this node's: it decided to down that
    /// process, and either still finds it unreachable itself or two
    /// members have told it, first-hand, that they hold it dead. One
    /// member's word is not enough for a process this node reaches again
    /// (its decision spares it): that member may hold the key and lie, and
    /// if it is correct and alone in downing it, it withdraws its verdict
    /// (see [`Node::withdraw`]).
    pub(super) fn carries_out_mine(&self, name: &str, generation: u64, now: Instant) -> bool {
        if !self.resolver.decided_down(name, generation, now) {
            return false;
        }
        let mine = self.suspicions.get(name).is_some_and(|s| s.is_ripe() && s.accused_by(&self.me.name));
        let told = self.dead_elsewhere.get(name).is_some_and(|(g, tellers)| *g == generation && tellers.len() >= 2);
        mine || told
    }

    /// `teller`, a member speaking for itself, holds `u`: if it is a death,
    /// the process `u` names is dead there; if it is a newer process of a
    /// name than the one this node holds live, that one is gone there (the
    /// teller forgot it for the newer one).
    pub(super) fn held_gone_elsewhere(&mut self, u: &Update, teller: &NodeId) {
        match self.members.get(&u.id.name).map(|m| m.id()) {
            Some(held) if held.generation < u.id.generation => self.held_dead_elsewhere(&held, teller),
            _ if u.status == Status::Dead => self.held_dead_elsewhere(&u.id, teller),
            _ => {}
        }
    }

    /// `teller`, a member speaking for itself, holds `id` dead: noted while
    /// this node, which decides, holds that process live (see
    /// [`Node::picture`]).
    pub(super) fn held_dead_elsewhere(&mut self, id: &NodeId, teller: &NodeId) {
        if !self.decides() || teller.name == self.me.name || teller.name == id.name {
            return;
        }
        let Some(m) = self.members.get(&id.name).filter(|m| m.is_live() && m.generation == id.generation) else {
            return;
        };
        let Some(t) = self.members.get(&teller.name).filter(|t| t.is(teller) && t.is_live()) else { return };
        let (name, generation, teller) = (m.name.clone(), m.generation, t.name.clone());
        self.dead_elsewhere.update(
            name,
            || (generation, Default::default()),
            |(held, tellers)| {
                if *held != generation {
                    *held = generation;
                    tellers.clear();
                }
                tellers.insert(teller)
            },
        );
    }

    /// `observer`'s row says it cannot reach members this node holds dead
    /// in that generation, or holds at a newer one (their old process is
    /// gone here): the observer is told, first-hand, what this node holds
    /// of them (a few a probe interval). A death, or a newer process,
    /// passed on once in gossip is easily missed; without it the observer
    /// holds a row this node's side no longer holds, is out of that side's
    /// core, and may wait for ever (the swarm found a member back after a
    /// pause that held a crashed member unreachable, and an impostor's
    /// process in place of a newer one, while the referee's member held
    /// both gone and never said so to it: 15217). Told, it counts each as
    /// unreachable from this node too (see `Node::held_gone_elsewhere`).
    fn tell_held(&mut self, now: Instant, observer: &Arc<str>, entries: &[RowEntry]) {
        /// Members told of per row received, at most.
        const TOLD_PER_ROW: usize = 4;
        let Some(to) = self.members.get(observer).map(|m| m.addr) else { return };
        let held: Vec<Update> = entries
            .iter()
            .filter(|e| e.mark == Mark::Unreachable && e.id.name != self.me.name)
            .filter_map(|e| {
                let m = self.members.get(&e.id.name)?;
                let gone =
                    m.generation > e.id.generation || (m.generation == e.id.generation && m.status == Status::Dead);
                gone.then(|| m.update(if m.status == Status::Dead { self.me.clone() } else { m.id() }))
            })
            .take(TOLD_PER_ROW)
            .collect();
        if held.is_empty() {
            return;
        }
        if !self.note_told(now, observer, Tell::Held) {
            return;
        }
        for u in held {
            self.stats.held_told += 1;
            self.send_with(to, Message::Gossip, Some(u));
        }
    }

    /// Whether this node stalled long enough to be decided about within
    /// the last two windows.
    pub(super) fn stalled_lately(&self, now: Instant) -> bool {
        let window = self.two_windows();
        self.long_stall.is_some_and(|at| now.saturating_duration_since(at) <= window)
    }

    /// Whether this node stalled long lately and its detectors are still
    /// quiet about it: its picture is as old as the stall.
    fn picture_stale(&self, now: Instant) -> bool {
        self.stale_until.is_some_and(|until| now < until)
    }

    /// After a long stall, when this node's detectors will have had
    /// `stable_after` since its picture stopped being stale (see
    /// [`Node::picture_stale`]) to find the members it no longer reaches:
    /// the members it could not hear while it stalled are only found
    /// unreachable then.
    pub(super) fn looked_again_at(&self) -> Option<Instant> {
        self.stale_until.map(|until| until.saturating_add(self.config.downing.stable_after))
    }

    /// Whether [`Node::looked_again_at`] has come (or there was no long
    /// stall).
    pub(super) fn looked_again(&self, now: Instant) -> bool {
        self.looked_again_at().is_none_or(|at| now >= at)
    }

    /// The generations of the members `names`, as this node knows them.
    fn generations_of(&self, names: &[String]) -> Vec<u64> {
        names.iter().map(|n| self.members.get(n).map_or(0, |m| m.generation)).collect()
    }

    /// The removal margin is over: the members the decision downs, still
    /// live in the generation it saw, are declared dead, each only if this
    /// node still finds it unreachable, or, after a decision that counted
    /// flaps, it flapped within the last `stable_after`: one that answered
    /// since a calm decision, or answered and stayed, was not on the other
    /// side of anything (a paused member that resumes before the margin
    /// ends is spared, and the picture is decided again).
    fn carry_out(&mut self, now: Instant, pending: Pending) {
        // The side the decision was for must still be one the strategy
        // keeps: a member cut off from it since (another partition came)
        // would otherwise down, alone, members of the side that now holds
        // the cluster. The lease, once taken, is its own proof; down-all
        // keeps nobody.
        let rechecked = !matches!(
            self.config.downing.strategy,
            downing::Strategy::LeaseMajority { .. } | downing::Strategy::DownAll
        );
        if rechecked && pending.decision == Decision::DownUnreachable {
            let picture = self.picture(pending.unstable);
            let cut_off: std::collections::BTreeSet<&str> = picture.row_of(&picture.me).collect();
            let side: Vec<&str> = picture
                .members
                .keys()
                .map(String::as_str)
                .filter(|n| !cut_off.contains(n) && !pending.down.iter().any(|d| d == n))
                .collect();
            if !downing::keeps(&self.config.downing.strategy, &picture, &side) {
                self.stats.decisions_abandoned += 1;
                self.resolver.reopen(now);
                return;
            }
        }
        let remember = self.config.downing.stable_after.saturating_add(self.config.downing.down_removal_margin);
        self.resolver.carried_out(&pending, now.saturating_add(remember));
        let strategy = self.config.downing.strategy.to_string();
        let (stable, memory) = (self.config.downing.stable_after, self.resolver.memory());
        let still: std::collections::BTreeMap<Arc<str>, Mark> = self
            .rows
            .own()
            .filter(|(n, _, m)| {
                *m == Mark::Unreachable
                    || (pending.unstable && *m == Mark::Flapped && self.rows.flapped_within(n, now, stable, memory))
            })
            .map(|(n, _, m)| (n.clone(), m))
            .collect();
        for (k, name) in pending.down.iter().enumerate() {
            let decided = pending.generations.get(k).copied();
            let Some(m) = self.members.get(name).filter(|m| m.is_live() && Some(m.generation) == decided) else {
                continue;
            };
            // A member that came back counts only while it flaps in an
            // unstable decision, and only if another observer holds it too:
            // one link that flaps, seen from this node alone, is as likely
            // this node's; the rest of the side, reaching it, would not
            // follow, and the member would be dead here only.
            match still.get(&m.name) {
                None => {
                    self.stats.downs_spared += 1;
                    continue;
                }
                Some(Mark::Flapped) if !self.rows.held_by_another(&m.name, m.generation, &m.name) => {
                    self.stats.downs_spared += 1;
                    continue;
                }
                Some(_) => {}
            }
            let death = Update { status: Status::Dead, ..m.update(self.me.clone()) };
            self.resolver.downed(&death.id.name, death.id.generation, now);
            self.stats.members_downed += 1;
            self.emit(Event::Downed {
                id: death.id.clone(),
                by: self.me.clone(),
                strategy: strategy.clone(),
                reason: pending.reason.clone(),
            });
            self.apply(now, death, None);
        }
    }

    /// The lease's answer to [`Node::take_lease_request`]: taken, this side
    /// survives (the others are downed after the removal margin) and this
    /// node renews the lease from then on; refused or not asked, this node
    /// downs itself if it is threatened (a side that finds it unreachable
    /// could hold the lease), and waits if not — or if the lease names its
    /// holder, a member this node reaches whose row (its side's) does not
    /// hold this node: the side that won does not down it.
    ///
    /// A renewal refused means another side took the lease this node's
    /// side held (its renewals stopped for longer than the lease's time to
    /// live: a pause, a lease that could not be asked): unless that side
    /// counts this node in, it acts as the cluster now, and this node downs
    /// itself. A renewal that could not be asked is asked again later.
    pub fn lease_answer(&mut self, now: Instant, answer: LeaseAnswer) {
        let now = self.enter(now);
        let Some(answered) = self.resolver.lease_answered() else { return };
        if self.status != Status::Alive {
            return;
        }
        let p = match answered {
            Answered::Renewal => {
                self.lease_renewed(now, answer);
                return self.settle(now);
            }
            Answered::Decision(p) => p,
        };
        let held = self.resolver.held_lease().map(str::to_owned);
        if answer.granted() {
            if let Some(holder) = p.lease_holder.clone() {
                self.resolver.took_lease(holder, now);
            }
            let at = now.saturating_add(self.config.downing.down_removal_margin);
            let reason = format!("the lease was taken ({})", p.reason);
            self.resolver.set_pending(Some(Pending {
                decision: Decision::DownUnreachable,
                reason,
                at,
                lease_asked: false,
                lease_holder: None,
                ..p
            }));
        } else {
            // Another holder's now: this node's side no longer renews the
            // one it held. (Not asked, it still may hold it: renewed on.)
            if matches!(answer, LeaseAnswer::Refused { .. }) {
                self.resolver.drop_lease();
            }
            // Refused by the holder this node's side held, named after a
            // member of its own part: its part was too small to take it
            // over, and a larger part may do so and down it (the holder
            // naming this node spares nothing then). Named after a member
            // outside its part that it reaches and whose row does not
            // hold it, the rest of its side holds the lease and counts it
            // in (this node alone finds some member unreachable: one that
            // left while this node missed the word, say).
            let picture = self.picture(false);
            let by_old = matches!(&answer, LeaseAnswer::Refused { holder: Some(h) } if held.as_ref() == Some(h))
                && Self::holder_in_core(&picture, &answer);
            // Named after a member that told this node, first-hand, it
            // holds it dead: that side downed it (its row no longer holds
            // a member it holds dead, and does not say so).
            let downed_by_holder = Self::refused_for(&answer).is_some_and(|h| self.tellers.contains(h));
            if p.threatened && (by_old || downed_by_holder || !Self::spared_by(&picture, &answer)) {
                // It rejoins through the members it could not reach (the
                // side that may hold the lease), and through those whose
                // rows hold it (the side that threatens it): a member that
                // alone found a crashed member unreachable would otherwise
                // wait for that member alone.
                let mut addrs: Vec<SocketAddr> =
                    p.down.iter().filter_map(|n| self.members.get(n).map(|m| m.addr)).collect();
                for (name, c) in &picture.members {
                    if *name != picture.me && picture.row_of(name).any(|s| s == picture.me) {
                        addrs.push(c.addr);
                    }
                }
                let reason = match answer {
                    LeaseAnswer::Unusable(why) => format!("the lease could not be asked: {why} ({})", p.reason),
                    _ => format!("the lease went to the other side ({})", p.reason),
                };
                self.lost_lease(now, reason, addrs);
            } else {
                self.follow_holder(now, &picture, &answer, p);
            }
        }
        self.settle(now);
    }

    /// Refused for a holder named after a member of this node's core: the
    /// lease is its own side's, taken by that member's earlier decision.
    /// The members of `p.down` that member, or another member of this
    /// node's core, said first-hand it holds dead or gone (in the
    /// generation decided about) are downed here too after the margin,
    /// still unreachable then: the side downs a member as one, and without
    /// this, a member this node alone still holds (an old process of a
    /// name, kept while a newer one waits for a decision about it) would
    /// stay for as long as that side holds the lease, for ever. Another
    /// member of the core counts as the holder's word passed on: while a
    /// strategy decides, a correct member holds a member dead only by a
    /// decision, its own with the lease or one it followed so, and a
    /// member's word told once is easily missed (the swarm found one that
    /// missed the holder's and heard it from the member that followed it,
    /// 48581). A member holding the key can say so falsely only of a member
    /// this node's core, the holder's among them, finds unreachable, and
    /// whose own decision, under the lease it holds, downs it anyway.
    fn follow_holder(&mut self, now: Instant, picture: &Picture, answer: &LeaseAnswer, p: Pending) {
        if !Self::holder_in_core(picture, answer) {
            return;
        }
        let Some(holder) = Self::refused_for(answer).filter(|h| *h != &*self.me.name).map(str::to_owned) else {
            return;
        };
        let mut down = Vec::new();
        let mut generations = Vec::new();
        for (k, name) in p.down.iter().enumerate() {
            let generation = p.generations.get(k).copied();
            let told = self.dead_elsewhere.get(name.as_str()).is_some_and(|(g, tellers)| {
                Some(*g) == generation && tellers.iter().any(|t| **t == *holder || Self::in_core(picture, t))
            });
            if told && let Some(g) = generation {
                down.push(name.clone());
                generations.push(g);
            }
        }
        if down.is_empty() {
            return;
        }
        let reason = format!("{holder}'s side, which holds the lease, holds them dead ({})", p.reason);
        self.resolver.set_pending(Some(Pending {
            decision: Decision::DownUnreachable,
            down,
            generations,
            reason,
            at: now.saturating_add(self.config.downing.down_removal_margin),
            lease_asked: false,
            lease_holder: None,
            ..p
        }));
    }

    /// A renewal's answer: renewed; refused for a holder named after a
    /// member this node reaches (a part of its side took it over), or for
    /// one it cannot reach (another side took it: this node downs itself);
    /// or not asked (asked again later).
    fn lease_renewed(&mut self, now: Instant, answer: LeaseAnswer) {
        let Some(holder) = self.resolver.held_lease().map(str::to_owned) else { return };
        match answer {
            LeaseAnswer::Granted => {
                self.stats.lease_renewals += 1;
                self.resolver.renew_later(now);
            }
            LeaseAnswer::Unusable(_) => {
                self.stats.lease_renewals_failed += 1;
                self.resolver.renew_later(now);
            }
            LeaseAnswer::Refused { holder: Some(ref taker) } if self.reaches_holder(taker) => {
                // Handed over to a part of this node's side: a member it
                // reaches names the holder. That part renews it now; if
                // its decision downs this node, this node hears it so.
                self.resolver.drop_lease();
            }
            LeaseAnswer::Refused { holder: taker } => {
                self.stats.lease_renewals_failed += 1;
                self.resolver.drop_lease();
                // It rejoins through the members it cannot reach (they may
                // be the side that took the lease), or, reaching everyone,
                // through every member.
                let through: Vec<SocketAddr> = self
                    .rows
                    .own()
                    .filter(|(_, _, m)| *m == Mark::Unreachable)
                    .filter_map(|(n, _, _)| self.members.get(n).map(|m| m.addr))
                    .collect();
                let taker = taker.as_deref().unwrap_or("a holder it does not name");
                let reason = format!(
                    "the lease this side held ({holder}) was taken by {taker} while this member renewed it: that side \
                     acts as the cluster"
                );
                self.lost_lease(now, reason, through);
            }
        }
    }

    /// This node's side does not hold the lease and a side that may hold
    /// it could be downing this node: it downs itself, rejoining through
    /// `addrs` (the side that may hold it). If that side does not answer
    /// (or nobody holds the lease: it could not be asked), this side
    /// re-forms and asks again, counting the other side's members as
    /// before (see `down_self`), waiting longer each time in a row.
    fn lost_lease(&mut self, now: Instant, reason: String, addrs: Vec<SocketAddr>) {
        // Named nobody: it rejoins through every member (with none, it
        // would be out until restarted).
        let addrs = if addrs.is_empty() {
            self.members.iter().filter(|m| m.is_live() && m.addr != self.addr).map(|m| m.addr).collect()
        } else {
            addrs
        };
        self.down_self(now, self.me.clone(), reason, addrs);
        self.reform_later(now);
    }

    /// Downed: if the side it waits for does not answer, this node
    /// re-forms with its own side after `stable_after` and the margin,
    /// doubled for each re-form in a row (up to sixteen times, and no
    /// longer than [`MAX_REFORM_WAIT`] unless `stable_after` and the
    /// margin are).
    fn reform_later(&mut self, now: Instant) {
        let settings = &self.config.downing;
        let base = settings.stable_after.saturating_add(settings.down_removal_margin);
        let wait = base.saturating_mul(1 << self.reforms_in_a_row.min(MAX_REFORM_DOUBLINGS));
        let wait = wait.min(base.max(MAX_REFORM_WAIT));
        if let Some(reform) = self.reform.as_mut() {
            reform.at = Some(now.saturating_add(wait));
        }
    }

    /// Whether `holder` names ([`downing::lease_holder_member`]) this node
    /// or a live member it reaches.
    fn reaches_holder(&self, holder: &str) -> bool {
        let Some(member) = downing::lease_holder_member(holder) else { return false };
        if member == self.me.name {
            return true;
        }
        let live = self.members.get(member).is_some_and(|m| m.is_live());
        live && !self.rows.own().any(|(n, _, m)| &**n == member && m == Mark::Unreachable)
    }

    /// The member a refusal's holder names ([`downing::lease_holder_member`]),
    /// if `answer` is a refusal for a holder made by [`downing::lease_holder`].
    fn refused_for(answer: &LeaseAnswer) -> Option<&str> {
        let LeaseAnswer::Refused { holder: Some(holder) } = answer else { return None };
        downing::lease_holder_member(holder)
    }

    /// Whether `answer`'s holder names this node or a member of its core
    /// (one it reaches whose row is its own).
    fn holder_in_core(picture: &Picture, answer: &LeaseAnswer) -> bool {
        Self::refused_for(answer).is_some_and(|member| Self::in_core(picture, member))
    }

    /// Whether `member` is this node or a member of its core (one it
    /// reaches whose row is its own).
    fn in_core(picture: &Picture, member: &str) -> bool {
        if member == picture.me {
            return true;
        }
        let reached = picture.members.contains_key(member) && !picture.row_of(&picture.me).any(|n| n == member);
        reached && picture.row_of(member).eq(picture.row_of(&picture.me))
    }

    /// Whether the lease went to a side that does not down this node: the
    /// holder names a member of its side ([`downing::lease_holder_member`])
    /// that this node reaches, and whose row (its side's) does not hold
    /// this node — or names this node (that side counts it in).
    fn spared_by(picture: &Picture, answer: &LeaseAnswer) -> bool {
        let Some(member) = Self::refused_for(answer) else { return false };
        // Named itself: the side that holds the lease counts this node in
        // its core, so its row does not hold it.
        if member == picture.me {
            return true;
        }
        if !picture.members.contains_key(member) {
            return false;
        }
        let reached = !picture.row_of(&picture.me).any(|n| n == member);
        reached && !picture.row_of(member).any(|n| n == picture.me)
    }

    /// What the lease is to be asked now, if anything (`lease-majority`):
    /// once per decision, for the holder this node's side asks for, and
    /// every [`LEASE_RENEW_EVERY`](downing::LEASE_RENEW_EVERY) while this
    /// node's side holds it. The runtime asks its lease (a Kubernetes
    /// Lease, an etcd key, a file lock) — every member of a side asks for
    /// the same holder, so a lease already held by the holder is granted
    /// again — and answers with [`Node::lease_answer`]. One request at a
    /// time: the next waits for that answer.
    ///
    /// ```
    /// use vigil_detector::Instant;
    /// use vigil_membership::{Config, Node, NodeId};
    ///
    /// let addr = "127.0.0.1:7946".parse()?;
    /// let mut node = Node::new(NodeId::new("a", 1), addr, Config::lan(5), 0, Instant::from_secs(1))?;
    /// assert_eq!(node.take_lease_request(), None, "nothing decided, no lease held");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take_lease_request(&mut self) -> Option<downing::LeaseRequest> {
        let renewal = match self.resolver.take_lease_request(self.now)? {
            Asked::Renewal if self.status != Status::Alive => {
                // Answered as nothing: a member that left renews nothing.
                self.resolver.lease_answered();
                self.resolver.drop_lease();
                return None;
            }
            Asked::Renewal => true,
            Asked::Decision => false,
        };
        let holder = match renewal {
            true => self.resolver.held_lease()?.to_owned(),
            false => {
                let asked = self.resolver.pending().and_then(|p| p.lease_holder.clone());
                asked.unwrap_or_else(|| self.me.name.clone())
            }
        };
        let replacing = match renewal {
            true => None,
            false => self.resolver.replacing().filter(|h| **h != holder).map(str::to_owned),
        };
        Some(downing::LeaseRequest { holder, replacing, renewal })
    }

    /// `teller`, a live member speaking for itself, says it holds this
    /// node dead in its current generation: a decision downed this node
    /// while it could not decide itself (paused, cut off on and off). Once
    /// the members that said so, with the members this node cannot reach
    /// (they may be on their side), could be a side the strategy keeps,
    /// this node downs itself and rejoins through them. So does the word
    /// of two members (one of them at least is not a member holding the
    /// key that lies: a correct member carried out a decision the rest of
    /// its side did not follow, and this node would be dead there only),
    /// and one member's word after this node stalled long enough to be
    /// decided about (within twice `stable_after` plus the margin). One
    /// member's word alone otherwise (a member holding the key can say
    /// anything) is not enough, unless the strategy lets one member decide
    /// (the oldest, the referee) or the members this node cannot reach are
    /// most of the cluster already.
    pub(super) fn heard_death(&mut self, now: Instant, teller: &NodeId) {
        if !self.decides() || self.status != Status::Alive {
            return;
        }
        self.tellers.insert(teller.name.clone());
        let picture = self.picture(false);
        let tellers: Vec<&str> =
            self.tellers.iter().map(String::as_str).filter(|n| picture.members.contains_key(*n)).collect();
        // The side that downed it: the tellers, and maybe the members this
        // node cannot reach (they may be with them).
        let mut side = tellers.clone();
        side.extend(picture.row_of(&picture.me).filter(|n| !tellers.contains(n)));
        // A member that stalled long enough to be decided about lately
        // takes one member's word: its own absence explains the verdict
        // (a stall is its own to see, nobody can forge one).
        let stalled = self.stalled_lately(now);
        // Under `lease-majority` the lease would keep any side, so the
        // word of one member (a member holding the key that lies, over
        // and over) would down anyone: the side is weighed as a majority
        // instead. A side that took the lease as a minority downs the
        // others by their own decisions (refused the lease, they down
        // themselves), or by the word of two of its members.
        let strategy = match &self.config.downing.strategy {
            downing::Strategy::LeaseMajority { tag, .. } => downing::Strategy::KeepMajority { tag: tag.clone() },
            other => other.clone(),
        };
        let kept = downing::keeps(&strategy, &picture, &side);
        if !kept && !stalled && tellers.len() < 2 {
            return;
        }
        let addrs: Vec<SocketAddr> = tellers.iter().filter_map(|n| picture.members.get(*n)).map(|c| c.addr).collect();
        let why = if kept {
            "with the members it cannot reach, a side that survives"
        } else if tellers.len() >= 2 {
            "more than one member's own decision"
        } else {
            "this member stalled lately: its absence explains the verdict"
        };
        let reason = format!("declared dead by {} ({why})", tellers.join(", "));
        self.down_self(now, teller.clone(), reason, addrs);
    }

    /// `m`, which this node holds dead in the generation its packet came
    /// from, speaks for itself: a member downed by a decision that did not
    /// learn it. It is told, first-hand, once a probe interval at most.
    pub(super) fn tell_downed(&mut self, now: Instant, name: &str) {
        let Some(m) = self.members.get(name).filter(|m| m.status == Status::Dead) else { return };
        let (key, addr, death) = (m.name.clone(), m.addr, m.update(self.me.clone()));
        self.stats.downed_told += 1;
        self.tell(now, &key, Tell::Downed, addr, death);
    }

    /// `id`, which this node downed, is still heard of as that process
    /// (its own packets, or others' word that it is alive): if nobody
    /// followed this node's verdict and two windows (`stable_after` and
    /// the margin, twice) have passed, the member is asked at its address.
    /// A member that answers as that process did not down itself: it heard
    /// the verdict from this node alone and reaches the rest of its side
    /// (one member's word does not down anyone), and no other member said
    /// it holds it dead. The verdict was this node's only: see
    /// [`Node::withdraw`].
    pub(super) fn withdraw_soon(&mut self, now: Instant, id: &NodeId) {
        if !self.resolver.withdrawable(&id.name, id.generation, now, self.two_windows()) {
            return;
        }
        let Some(m) = self.members.get(&id.name).filter(|m| m.is(id) && m.status == Status::Dead) else { return };
        let rumour = Update { status: Status::Alive, ..m.update(m.id()) };
        self.check_rumour(now, CheckKind::Withdraw, rumour);
    }

    /// `id`, downed by this node alone, answered at its address as
    /// itself: the verdict is withdrawn, and the member is alive here
    /// again (the application hears it up): the rest of the side never
    /// held it dead, and the member never downed itself, so keeping it
    /// dead here would split this node from its own side for good.
    pub(super) fn withdraw(&mut self, now: Instant, id: &NodeId) {
        let Some(m) = self.members.get(&id.name).filter(|m| m.is(id) && m.status == Status::Dead) else { return };
        let (name, addr, incarnation) = (m.name.clone(), m.addr, m.incarnation);
        let tags = m.tags().cloned().unwrap_or_default();
        self.resolver.forget_verdict(&name);
        self.stats.downs_withdrawn += 1;
        let reason = "this member downed it alone: no other member held it dead, and it answered as itself two \
                      windows later (it reaches the rest of its side, and one member's word downs nobody)";
        self.emit(Event::Withdrawn { id: id.clone(), reason: reason.to_owned() });
        self.members.set(&name, incarnation, Status::Alive, addr, now);
        self.member_up(id.clone(), addr, tags);
        let alive = Update { id: id.clone(), addr, incarnation, status: Status::Alive, from: id.clone(), tags: None };
        self.broadcast(alive);
    }

    /// This node is downed: the application hears it at once; the node
    /// forgets every member, takes a new generation (its epoch moves, so
    /// the old one's fencing tokens are stale), and rejoins through
    /// `survivors` — or, with none (everyone was downed), stays out until
    /// restarted.
    pub(super) fn down_self(&mut self, now: Instant, by: NodeId, reason: String, survivors: Vec<SocketAddr>) {
        self.stats.self_downs += 1;
        self.emit(Event::Downed {
            id: self.me.clone(),
            by,
            strategy: self.config.downing.strategy.to_string(),
            reason,
        });
        // The side that survives, and this node's own: called once back
        // (see `reconnect_past`), and, for want of the lease, where it
        // re-forms (see `reform_if_due`).
        let surviving: std::collections::BTreeSet<SocketAddr> = survivors.iter().copied().collect();
        let others: Vec<(Arc<str>, u64, SocketAddr)> = self
            .members
            .iter()
            .filter(|m| m.is_live() && surviving.contains(&m.addr))
            .map(|m| (m.name.clone(), m.generation, m.addr))
            .collect();
        let own: Vec<SocketAddr> = self
            .members
            .iter()
            .filter(|m| m.is_live() && !surviving.contains(&m.addr) && m.addr != self.addr)
            .map(|m| m.addr)
            .collect();
        let mut seeds = own.clone();
        if self.re_forms() {
            // Where a downed side re-forms, it calls every member it knew,
            // whatever it held of them: under a static quorum the members
            // of every side may re-form together (a quorum is counted on
            // no membership; a member downed on the other side since
            // waits too, perhaps for a side that is gone), and under
            // `lease-majority` the lease decides between whatever groups
            // meet (a member it held dead may have restarted, and formed
            // a group of its own with another).
            seeds.extend(self.members.iter().filter(|m| m.addr != self.addr).map(|m| m.addr));
            seeds.sort();
            seeds.dedup();
        }
        seeds.extend(self.given_seeds.iter().copied());
        let mut own = own;
        own.sort();
        own.dedup();
        self.past = self.members.iter().filter(|m| m.is_live()).map(|m| m.name.clone()).collect();
        let names: Vec<Arc<str>> = self.members.iter().map(|m| m.name.clone()).collect();
        for name in names {
            self.forget(&name);
            self.monitor.member_gone(&name, now);
        }
        self.broadcasts = Broadcasts::new(MAX_BROADCASTS);
        self.subscribers = Subscribers::default();
        self.timers.set(Timer::Subscribe, None);
        self.introductions = Introductions::new(self.config.introductions_per_source, self.config.introduction_window);
        self.refuted_to.clear();
        self.resolver = Resolver::new(&self.config.downing);
        self.rows = crate::reachability::Rows::default();
        self.tellers.clear();
        // The stall explained a verdict about the generation that stalled,
        // not about the next one.
        self.long_stall = None;
        self.rejoins_held.clear();
        self.told.clear();
        self.checks.clear();
        self.reform = None;
        self.calling.clear();
        self.calling_until = None;
        let mut survivors = survivors;
        survivors.sort();
        survivors.dedup();
        survivors.truncate(MAX_SEEDS);
        match self.me.generation.checked_add(1) {
            Some(generation) => {
                self.me.generation = generation;
                self.incarnation = 0;
                self.emit(Event::Renewed { id: self.me.clone() });
            }
            None => survivors.clear(),
        }
        if survivors.is_empty() {
            // Nobody to rejoin: out until restarted.
            self.status = Status::Left;
            self.timers.clear();
            return;
        }
        self.seeds = survivors;
        self.rejoining = true;
        self.join_backoff = JOIN_RETRY_FIRST;
        self.timers.set(Timer::Rejoin, Some(now));
        self.broadcast(self.self_update(Status::Alive));
        self.reform = Some(super::Reform { at: None, seeds, own, others });
        if self.re_forms_at_will() {
            self.reform_later(now);
        }
    }

    /// Whether a side that downed itself re-forms on its own when the side
    /// it waits for does not answer: under `lease-majority` (the lease
    /// decides between whatever groups meet) and a static quorum (see
    /// [`Node::re_forms_at_will`]). The others wait for that side, or a
    /// restart.
    fn re_forms(&self) -> bool {
        matches!(
            self.config.downing.strategy,
            downing::Strategy::StaticQuorum { .. } | downing::Strategy::LeaseMajority { .. }
        )
    }

    /// Whether a side that downed itself re-forms after any downing, and
    /// hears a call from another downed side at once: under a static
    /// quorum, which is counted on no membership (any side holding one may
    /// act, and two cannot both hold one in a cluster no larger than
    /// `2 × size − 1`), so a re-formed side acts again only if it holds a
    /// quorum. Under `lease-majority` only a side that lost the lease
    /// re-forms, and hears such calls after its first re-form.
    pub(super) fn re_forms_at_will(&self) -> bool {
        matches!(self.config.downing.strategy, downing::Strategy::StaticQuorum { .. })
    }

    /// Downed for want of the lease (or under a static quorum), and no
    /// member of the side that won answered for `stable_after` and the
    /// removal margin (doubled for each re-form in a row, up to sixteen
    /// times): this node re-forms, calling every member it knew (its own
    /// side, the other side, the members it held dead) and the given
    /// seeds, counting the other side's members again, so that
    /// a side that is gone is found unreachable and the strategy decides
    /// again: it asks the lease again, which decides, or it counts a
    /// quorum. Other strategies do not re-form: a side that downed itself
    /// cannot tell a side that survived and then crashed from one still
    /// cut off, and re-formed, counting members that were downed since, it
    /// could out-count the side that survived (the swarm found it doing
    /// so); it waits for that side, or for a restart.
    pub(super) fn reform_if_due(&mut self, now: Instant) {
        let Some(reform) = self.reform.take_if(|r| r.at.is_some_and(|at| at <= now)) else { return };
        if !self.rejoining {
            return;
        }
        self.rejoining = false;
        self.stats.reforms += 1;
        self.reforms_in_a_row = self.reforms_in_a_row.saturating_add(1);
        self.keep_seeds(&reform.seeds);
        self.members.insert_shared(&reform.others, now);
        let all = self.seeds.clone();
        self.ask_seeds(&all);
        self.call_later(now, all);
    }

    /// Back through `through`, a member of the side that survived: the
    /// other members this node knew before it was downed (of either side)
    /// are asked too, at once. Members downed together may have rejoined
    /// through one another, or the side that survived may have changed
    /// since (a member of it restarted, or downed itself): asked, whichever
    /// group they are in now learns of this one, and the two become one.
    /// Those that do not answer are called again (see `Node::call_past`).
    pub(super) fn reconnect_past(&mut self, now: Instant, through: SocketAddr) {
        let Some(reform) = self.reform.take() else { return };
        let mut past: Vec<SocketAddr> = reform.seeds;
        past.extend(reform.others.iter().map(|(_, _, addr)| *addr));
        past.sort();
        past.dedup();
        past.retain(|a| *a != through && *a != self.addr);
        self.ask_seeds(&past);
        self.call_later(now, past);
    }

    /// Keeps `past` (addresses just asked) to call again, for
    /// `reconnect_timeout` from now.
    fn call_later(&mut self, now: Instant, mut past: Vec<SocketAddr>) {
        past.truncate(MAX_SEEDS);
        self.calling_until = (!past.is_empty()).then(|| now.saturating_add(self.config.reconnect_timeout));
        self.calling = past;
    }

    /// Back after a downing, this node asked once the members it knew
    /// then; those cut off at that moment did not hear it. Members of two
    /// groups, each back through one of its own (every side downed
    /// itself), would then never meet again: two clusters, neither
    /// knowing the other. So, as a member believed dead is tried again
    /// (see `Node::reconnect`), one of the addresses no live member holds
    /// is asked again each reconnect interval, for `reconnect_timeout`;
    /// an address a live member holds is done with.
    pub(super) fn call_past(&mut self, now: Instant) {
        let Some(until) = self.calling_until else { return };
        if self.rejoining {
            // Downed again: it speaks to the surviving side only, and
            // calls its past again once back.
            return;
        }
        let held: std::collections::BTreeSet<SocketAddr> =
            self.members.iter().filter(|m| m.is_live()).map(|m| m.addr).collect();
        self.calling.retain(|a| !held.contains(a));
        if now >= until || self.calling.is_empty() {
            self.calling.clear();
            self.calling_until = None;
            return;
        }
        let to = self.calling[self.rng.random_range(0..self.calling.len())];
        self.stats.past_calls += 1;
        self.send_view(to, true);
    }

    /// [`Node::reform_if_due`], now.
    pub(super) fn reform_now(&mut self, now: Instant) {
        if let Some(reform) = self.reform.as_mut().filter(|r| r.at.is_some()) {
            reform.at = Some(now);
        }
        self.reform_if_due(now);
    }

    /// The downing provider's state, for the snapshot.
    pub(super) fn downing_outlook(&self) -> Option<downing::Outlook> {
        if !self.decides() {
            return None;
        }
        Some(downing::Outlook {
            strategy: self.config.downing.strategy.to_string(),
            records: self.picture(false).records.into_iter().collect(),
            decide_at: self.resolver.decide_at(),
            pending: self.resolver.pending().cloned(),
        })
    }
}

//! Who survives a partition, as this node applies it: the picture it
//! decides from (its members and the unreachability records it holds),
//! the decision once the picture held still, the winning side's removal
//! margin, the lease, and this node downing itself.
//!
//! A record "observer finds subject unreachable" is one accuser of a
//! suspicion that ran out here without a refutation. The accusers travel
//! with the suspicion's rumours (the first in every rumour, confirmations
//! while few have been passed on), so the members of one side come to
//! hold the same records; the stability gate waits until they have.

use super::*;
use crate::downing::{self, Candidate, Decision, Pending, Picture};
use crate::resolver::{Due, Resolver};

impl Node {
    /// Whether a downing strategy decides (anything but `auto`).
    pub(super) fn decides(&self) -> bool {
        self.config.downing.decides()
    }

    /// What this node decides from: itself and its live members, with
    /// their generations as ages, and a record per accuser of each
    /// suspicion that ran out.
    pub(super) fn picture(&self) -> Picture {
        let mut members = std::collections::BTreeMap::new();
        let me = Candidate { name: self.me.name.clone(), addr: self.addr, age: self.me.generation, tags: self.tags() };
        members.insert(me.name.clone(), me);
        for m in self.members.iter().filter(|m| m.is_live()) {
            let tags = m.tags().cloned().unwrap_or_default();
            let c = Candidate { name: m.name.to_string(), addr: m.addr, age: m.generation, tags };
            members.insert(c.name.clone(), c);
        }
        let mut records = std::collections::BTreeSet::new();
        for (subject, s) in self.suspicions.ripe() {
            for accuser in s.accusers() {
                records.insert((accuser.to_string(), subject.to_string()));
            }
        }
        // Shared outlier verdicts, when a policy lets them count: the
        // ejector finds the subject unusable, if not unreachable.
        if self.config.gray.counts_for_downing {
            for r in self.gray_reports() {
                records.insert((r.by, r.subject));
            }
        }
        Picture { me: self.me.name.clone(), members, records }
    }

    /// After every input, with a strategy: the gate hears of changes, and
    /// whatever is due is done.
    pub(super) fn settle_downing(&mut self, now: Instant) {
        if !self.decides() {
            return;
        }
        let counts_gray = self.config.gray.counts_for_downing;
        let mut version = self.suspicions.version().wrapping_add(self.members.ring_version());
        if counts_gray {
            version = version.wrapping_add(self.gray_version);
        }
        // What is unreachable is looked at only when the picture changed
        // (the shared verdicts are gathered from every member's tags).
        if self.resolver.is_new(version) {
            let anything = self.suspicions.any_ripe() || (counts_gray && !self.gray_reports().is_empty());
            self.resolver.observe(now, version, anything);
        }
        while self.status == Status::Alive {
            match self.resolver.due(now) {
                Due::Nothing => break,
                Due::Decide => self.decide_downing(now, false),
                Due::Unstable => self.decide_downing(now, true),
                Due::CarryOut(p) => self.carry_out(now, p),
                // The runtime takes the request (`take_lease_request`).
                Due::AskLease => {}
            }
        }
        self.timers.set(Timer::Downing, self.resolver.next_deadline());
    }

    /// The picture held still, or flapped for too long (`unstable`):
    /// decide, in the second case with every accusation seen lately (this
    /// node's own, those of others, and those against this node; twice
    /// the tolerated instability back) counted as a record: a member that
    /// flaps is accused and accuses, so it is indirectly connected, and
    /// downed, whichever side looks at it.
    fn decide_downing(&mut self, now: Instant, unstable: bool) {
        let mut picture = self.picture();
        let seen = self.resolver.seen(now);
        let settings = &self.config.downing;
        let flappers: std::collections::BTreeSet<String> = if unstable {
            let known = |n: &String| picture.members.contains_key(n);
            let added: Vec<(String, String)> = seen.into_iter().filter(|(o, s)| known(o) && known(s)).collect();
            let flappers = added.iter().map(|(_, s)| s.clone()).collect();
            picture.records.extend(added);
            flappers
        } else {
            std::collections::BTreeSet::new()
        };
        // Calm came back with nobody unreachable: nothing to decide.
        if picture.records.is_empty() {
            return;
        }
        let mut verdict = downing::decide(&settings.strategy, &picture);
        // Deaf for a few heartbeats, this node is the likelier problem and
        // what it holds is stale (the refutations it missed): it may down
        // itself, but neither judge others (it waits for another calm) nor
        // ask the lease.
        let quiet = self.config.heartbeat_interval.max(self.config.probe_interval).saturating_mul(4);
        let deaf = self.resolver.deaf(now, quiet);
        let judges_others = match verdict.decision {
            Decision::Nothing | Decision::DownUnreachable => !verdict.down.is_empty() && !verdict.downs_me(&picture),
            _ => false,
        };
        if deaf && judges_others {
            self.resolver.postpone(now);
            return;
        }
        if deaf && matches!(verdict.decision, Decision::AskLease { .. }) {
            // The lease is for the sides that can hear each other: a member
            // that hears nobody does not take it from them.
            verdict.decision = Decision::DownReachable;
            verdict.down = vec![self.me.name.to_string()];
            verdict.reason = format!("this member heard nobody for {} ms; {}", quiet.as_millis(), verdict.reason);
        }
        if unstable {
            let margin = settings.decide_when_unstable.unwrap_or_default();
            let listed: Vec<&str> = flappers.iter().map(String::as_str).collect();
            verdict.reason = format!(
                "unstable for {} ms: the accusations of {} in the last {} ms counted; {}",
                (settings.stable_after + margin).as_millis(),
                listed.join(", "),
                (settings.stable_after + margin).saturating_mul(2).as_millis(),
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
        let survivors = |keep: &dyn Fn(&str) -> bool| -> Vec<SocketAddr> {
            picture.members.values().filter(|c| c.name != picture.me && keep(&c.name)).map(|c| c.addr).collect()
        };
        match verdict.decision {
            Decision::Auto => {}
            Decision::DownAll => self.down_self(now, self.me.clone(), verdict.reason, Vec::new()),
            Decision::DownReachable => {
                // The other side survives: this node rejoins through it.
                let theirs: std::collections::BTreeSet<&str> = picture.unreachable_members().collect();
                let keep = |n: &str| theirs.contains(n) && !verdict.down.iter().any(|d| d == n);
                let addrs = survivors(&keep);
                self.down_self(now, self.me.clone(), verdict.reason, addrs);
            }
            Decision::Nothing | Decision::DownUnreachable if verdict.downs_me(&picture) => {
                // This node is itself indirectly connected.
                let keep = |n: &str| !verdict.down.iter().any(|d| d == n);
                let addrs = survivors(&keep);
                self.down_self(now, self.me.clone(), verdict.reason, addrs);
            }
            Decision::Nothing | Decision::DownUnreachable => {
                if !verdict.down.is_empty() {
                    let at = now.saturating_add(self.config.downing.down_removal_margin);
                    self.resolver.set_pending(Some(Pending {
                        decision: verdict.decision,
                        down: verdict.down,
                        indirect: verdict.indirectly_connected,
                        reason: verdict.reason,
                        at,
                        lease_asked: false,
                        lease_holder: None,
                    }));
                }
            }
            Decision::AskLease { after } => {
                // This side's name for the lease: its member with the
                // lowest address, as every member of the side sees it.
                let theirs: std::collections::BTreeSet<&str> = picture.unreachable_members().collect();
                let holder = picture
                    .members
                    .values()
                    .filter(|c| !theirs.contains(c.name.as_str()) && !verdict.down.contains(&c.name))
                    .min_by_key(|c| c.addr)
                    .map(|c| c.name.clone());
                self.resolver.set_pending(Some(Pending {
                    decision: verdict.decision,
                    down: verdict.down,
                    indirect: verdict.indirectly_connected,
                    reason: verdict.reason,
                    at: now.saturating_add(after),
                    lease_asked: false,
                    lease_holder: holder,
                }));
            }
        }
    }

    /// The removal margin is over: the members the decision downs, still
    /// live in the generation it saw, are declared dead — the indirectly
    /// connected ones in any case, the others only if this node still
    /// finds them unreachable (one that answered since was not on the
    /// other side of anything).
    fn carry_out(&mut self, now: Instant, pending: Pending) {
        let strategy = self.config.downing.strategy.to_string();
        let ejected: std::collections::BTreeSet<String> = if self.config.gray.counts_for_downing {
            self.gray_reports().into_iter().map(|r| r.subject).collect()
        } else {
            std::collections::BTreeSet::new()
        };
        for name in &pending.down {
            let Some(m) = self.members.get(name).filter(|m| m.is_live()) else { continue };
            let unreachable = self.suspicions.get(name).is_some_and(|s| s.is_ripe()) || ejected.contains(name);
            if !unreachable && !pending.indirect.contains(name) {
                continue;
            }
            let death = Update { status: Status::Dead, ..m.update(self.me.clone()) };
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
    /// survives (the others are downed after the removal margin); refused,
    /// this node downs itself.
    pub fn lease_answer(&mut self, now: Instant, answer: downing::LeaseAnswer) {
        let now = self.enter(now);
        let Some(p) = self.resolver.lease_answered() else { return };
        if self.status != Status::Alive {
            return;
        }
        if answer.granted() {
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
            let addrs = p.down.iter().filter_map(|n| self.members.get(n).map(|m| m.addr)).collect();
            let reason = match answer {
                downing::LeaseAnswer::Unusable(why) => format!("the lease could not be asked: {why} ({})", p.reason),
                _ => format!("the lease went to the other side ({})", p.reason),
            };
            self.down_self(now, self.me.clone(), reason, addrs);
        }
        self.settle(now);
    }

    /// The holder this node's side asks the lease for, when the downing
    /// strategy wants it now (`lease-majority`): once per decision. The
    /// runtime asks its lease (a Kubernetes Lease, an etcd key, a file
    /// lock) for that holder — every member of a side asks for the same
    /// one, so a lease already held by the holder is granted again — and
    /// answers with [`Node::lease_answer`].
    pub fn take_lease_request(&mut self) -> Option<String> {
        if !self.resolver.take_lease_request() {
            return None;
        }
        let holder = self.resolver.pending().and_then(|p| p.lease_holder.clone());
        Some(holder.unwrap_or_else(|| self.me.name.clone()))
    }

    /// A member whose word this node takes declared it dead, in its current
    /// generation, while a strategy decides: the other side's decision
    /// downs this node. It rejoins through the members it finds
    /// unreachable (the side that decided) and the decider.
    pub(super) fn downed_by_rumour(&mut self, now: Instant, by: NodeId) {
        let mut addrs: Vec<SocketAddr> =
            self.suspicions.ripe().filter_map(|(n, _)| self.members.get(n).map(|m| m.addr)).collect();
        addrs.extend(self.members.get(&by.name).map(|m| m.addr));
        if addrs.is_empty() {
            addrs.clone_from(&self.seeds);
        }
        let reason = format!("declared dead by {}", by.name);
        self.down_self(now, by, reason, addrs);
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
    }

    /// The downing provider's state, for the snapshot.
    pub(super) fn downing_outlook(&self) -> Option<downing::Outlook> {
        if !self.decides() {
            return None;
        }
        Some(downing::Outlook {
            strategy: self.config.downing.strategy.to_string(),
            records: self.picture().records.into_iter().collect(),
            decide_at: self.resolver.decide_at(),
            pending: self.resolver.pending().cloned(),
        })
    }
}

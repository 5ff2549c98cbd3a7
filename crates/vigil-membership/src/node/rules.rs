//! The protocol's state rules: what a rumour, or a packet's sender, does
//! to this node's beliefs; refuting accusations about itself; the bounds of
//! a suspicion.

use super::*;

impl Node {
    /// Whether this node may accuse `m`: it is alive, or suspected by others
    /// but not yet by this node (a confirmation).
    pub(super) fn may_accuse(&self, m: &Member) -> bool {
        match m.status {
            Status::Alive => true,
            Status::Suspect => self.suspicions.get(&m.name).is_none_or(|s| !s.accused_by(&self.me.name)),
            Status::Dead | Status::Left => false,
        }
    }

    /// A packet's sender is alive as far as its own packet goes: a member
    /// this node did not know, or knew in an older generation, joins the
    /// table (a stranger only once it answers a ping there). It is reached
    /// where it says, if its packet carries its own word (its advertised
    /// address), else where the packet came from, `source`.
    pub(super) fn learn_sender(&mut self, now: Instant, packet: &Packet, source: SocketAddr, vouched: bool) {
        let (id, incarnation) = (&packet.from, packet.incarnation);
        let unknown = self.members.get(&id.name).is_none_or(|m| id.generation > m.generation);
        // φ mode: a packet from a suspect at a higher incarnation is its own
        // refutation, whatever it carries (classic mode keeps memberlist's
        // rule: only an alive rumour refutes); a stranger's packet is not.
        let refutes = vouched
            && self.config.mode == Mode::Phi
            && self.members.get(&id.name).is_some_and(|m| {
                m.generation == id.generation && m.status == Status::Suspect && incarnation > m.incarnation
            });
        if unknown || refutes {
            let own = |u: &&Update| u.id == *id && u.from == u.id && u.status == Status::Alive;
            let pushed = match &packet.message {
                Message::PushPull { members, .. } => members.iter().find(own),
                _ => None,
            };
            let announced = packet.updates.iter().find(own).or(pushed);
            let addr = announced.map_or(source, |u| u.addr);
            // The sender's tags, if it announces itself in this packet (a
            // join's push-pull does): a rumour without them would go out
            // first and stand for the member's alive at this incarnation.
            let tags = announced.filter(|u| u.incarnation == incarnation).and_then(|u| u.tags.clone());
            let alive = Update { id: id.clone(), addr, incarnation, status: Status::Alive, from: id.clone(), tags };
            if vouched || !unknown {
                self.apply(now, alive, None);
            } else {
                self.propose(now, alive, source);
            }
        }
    }

    /// A rumour from a packet. A vouched packet's rumours are applied as
    /// they are (some checked with the member first: see `checks.rs`). A
    /// stranger's word about a member this node knows, or about this node,
    /// changes nothing; a member it introduces is only proposed (pinged,
    /// and admitted if it answers). `speaker` is the packet's sender when
    /// it speaks for itself from its own address: its word that it holds
    /// this node dead is first-hand.
    pub(super) fn take(
        &mut self,
        now: Instant,
        u: Update,
        vouched: bool,
        source: SocketAddr,
        speaker: Option<&NodeId>,
    ) {
        if !vouched {
            let known = u.id.name == self.me.name
                || self.members.get(&u.id.name).is_some_and(|m| m.generation >= u.id.generation);
            if known {
                self.stats.stranger_rumours_ignored += 1;
            } else if matches!(u.status, Status::Alive | Status::Suspect) {
                let proposed = Update { status: Status::Alive, from: u.id.clone(), ..u };
                self.propose(now, proposed, source);
            }
            return;
        }
        // Another member holds dead a member this node downed: its verdict
        // is followed (see `Node::withdraw`).
        if u.status == Status::Dead && u.from.name != self.me.name && u.from != u.id {
            self.resolver.followed(&u.id.name, u.id.generation);
        }
        // What a member passes on, speaking for itself, it holds (a rumour
        // is passed on only once taken): a death, or a newer process of a
        // name in place of the one this node holds.
        if let Some(teller) = speaker {
            self.held_gone_elsewhere(&u, teller);
        }
        // An earlier process of this node's name (this node before it was
        // downed) accused the member: the rumour still says the member
        // exists, which this node, having forgotten everyone, may need to
        // learn; the accusation is not this process's, and is dropped.
        let mut u = u;
        if u.from.name == self.me.name
            && u.from.generation < self.me.generation
            && u.id.name != self.me.name
            && u.status == Status::Suspect
        {
            u = Update { status: Status::Alive, from: u.id.clone(), ..u };
        }
        // This node's own word comes from within, never from the network:
        // a rumour about another member said to be this node's is an echo
        // of what it said (nothing new), or a forgery in its name.
        if u.from.name == self.me.name && u.id.name != self.me.name {
            self.stats.stale_updates += 1;
            return;
        }
        // A leave while a strategy decides is taken from the member itself
        // (a leaving member tells every member directly); anyone else's
        // word is checked like a death.
        if self.decides()
            && u.status == Status::Left
            && u.id.name != self.me.name
            && u.from == u.id
            && speaker.is_some_and(|s| *s == u.id)
        {
            self.apply_as(now, u, None, true);
            return;
        }
        if u.id == self.me && u.status == Status::Dead && self.decides() && speaker.is_some_and(|s| *s == u.from) {
            self.heard_death(now, &u.from);
            if self.status != Status::Alive || self.me.generation != u.id.generation {
                return;
            }
        }
        self.apply(now, u, None);
    }

    /// A stranger proposes `u` (alive), heard from `source`: within the
    /// source's budget, the member is pinged and waits as a candidate.
    pub(super) fn propose(&mut self, now: Instant, u: Update, source: SocketAddr) {
        if self.introductions.is_candidate(&u.id.name) {
            return;
        }
        if self.members.is_full() {
            self.stats.members_full += 1;
            return;
        }
        match self.introductions.admit_proposal(now, source.ip()) {
            Ok(()) => {}
            Err(Refusal::Budget | Refusal::Full) => {
                self.stats.introductions_refused += 1;
                return;
            }
        }
        self.stats.introductions_proposed += 1;
        let seq = self.probes.next_seq();
        self.check_ping(now, seq, u.id.clone(), u.addr, Purpose::Introduce);
        let name = self.members.intern(&u.id.name);
        self.introductions.insert(name, Candidate { update: u, seq });
    }

    /// One direct ping (`seq`) of `target` at `addr`, to check what a
    /// stranger said (`purpose`): answered within two probe timeouts, or
    /// failed.
    fn check_ping(&mut self, now: Instant, seq: u32, target: NodeId, addr: SocketAddr, purpose: Purpose) {
        self.send(addr, Message::Ping { seq, target: target.clone() });
        let probe = Probe {
            target,
            addr,
            purpose,
            level: None,
            stage: Stage::Indirect,
            started: now,
            expected_nacks: 0,
            nacks: 0,
        };
        self.probes.insert(seq, probe, now.saturating_add(self.config.probe_timeout.saturating_mul(2)));
    }

    /// A packet claiming to be from `id`, a known member of this generation,
    /// came from `source`, which is not its address: ping it at its address,
    /// within the source's budget; if the answer comes back from `source`,
    /// `source` speaks for it from then on (see `introductions.rs`).
    pub(super) fn check_source(&mut self, now: Instant, id: &NodeId, source: SocketAddr) {
        let Some(m) = self.members.get(&id.name).filter(|m| m.is(id) && m.is_live()) else { return };
        if self.introductions.is_checking(&m.name) {
            return;
        }
        let (name, target, addr) = (m.name.clone(), m.id(), m.addr);
        let probes = &mut self.probes;
        match self.introductions.check_source(now, name, source, || probes.next_seq()) {
            Ok(seq) => self.check_ping(now, seq, target, addr, Purpose::Source),
            Err(_) => self.stats.introductions_refused += 1,
        }
    }

    /// A known member answered, as `who` and from `from`, the ping (`seq`)
    /// that checks another address of its: if the answer came from that
    /// address, the address is its.
    pub(super) fn source_checked(&mut self, seq: u32, probe: &Probe, who: &NodeId, from: SocketAddr) {
        if let Some(source) = self.introductions.source_answered(&probe.target.name, seq, from)
            && *who == probe.target
        {
            self.stats.sources_learned += 1;
            self.members.set_source(&probe.target.name, source);
        }
    }

    /// A candidate answered its ping (`seq`) as `who`: it is admitted, as if
    /// vouched for.
    pub(super) fn introduced(&mut self, now: Instant, seq: u32, probe: &Probe, who: &NodeId) {
        if *who != probe.target {
            return;
        }
        if let Some(c) = self.introductions.answered(&probe.target.name, seq) {
            self.stats.introductions_admitted += 1;
            self.apply(now, c.update, None);
        }
    }

    /// Applies a rumour: the heart of the protocol's state rules.
    pub(super) fn apply(&mut self, now: Instant, u: Update, level: Option<f64>) {
        self.apply_as(now, u, level, false);
    }

    /// As [`Node::apply`]; `checked` says the member was already asked
    /// about this rumour (see `checks.rs`), so it is taken as it is.
    pub(super) fn apply_as(&mut self, now: Instant, mut u: Update, level: Option<f64>, checked: bool) {
        // Word of a member it knew before it was downed, whatever it says.
        if !self.past.is_empty() {
            self.past.remove(u.id.name.as_str());
        }
        if u.id.name == self.me.name {
            self.about_me(now, u);
            return;
        }
        let Some(m) = self.members.get(&u.id.name) else {
            self.apply_new(now, u, level);
            return;
        };
        // Tags travel with the incarnation they were set at, whatever the
        // rumour's status says about the member.
        let old_tags = m.tags().cloned();
        let mut tags_learned = false;
        if let Some(tags) = u.tags.as_ref().filter(|_| m.generation == u.id.generation)
            && self.members.set_tags(&u.id.name, u.incarnation, tags)
        {
            tags_learned = true;
            self.emit(Event::TagsUpdated { id: u.id.clone(), tags: tags.clone() });
            self.gray_changed(&u.id, old_tags.as_ref(), tags);
        }
        let Some(m) = self.members.get(&u.id.name) else { return };
        // Where a member is reached moves only when it answers there as
        // itself: its own word that it moved is checked; anyone else's
        // word is not taken.
        if m.generation == u.id.generation && u.addr != m.addr {
            let known = m.addr;
            if u.status == Status::Alive && u.from == u.id && u.incarnation > m.incarnation && !checked {
                let moved = u.clone();
                self.check_rumour(now, CheckKind::Address, moved);
            }
            u.addr = known;
        }
        let Some(m) = self.members.get(&u.id.name) else { return };
        // A decision downs a process (its generation), whatever incarnation
        // it was decided at: a death that carries out this node's own
        // decision (see below) beats the member's refutations since.
        if u.status == Status::Dead
            && m.generation == u.id.generation
            && m.is_live()
            && u.incarnation < m.incarnation
            && self.decides()
            && self.resolver.decided_down(&u.id.name, u.id.generation, now)
        {
            u.incarnation = m.incarnation;
        }
        // The common case in anti-entropy: nothing new.
        if m.generation == u.id.generation
            && u.incarnation <= m.incarnation
            && (u.status == m.status || u.status == Status::Alive)
            && !(u.status == Status::Suspect && u.incarnation == m.incarnation)
        {
            self.stats.stale_updates += 1;
            // Nothing new but its tags: those are passed on, so members that
            // heard of it without them learn them too.
            if tags_learned && u.status == Status::Alive && m.status == Status::Alive && u.incarnation == m.incarnation
            {
                self.broadcast(Update { from: u.id.clone(), ..u });
            }
            return;
        }
        // Older generations lose to newer ones, whatever they say.
        if u.id.generation < m.generation {
            self.stats.stale_updates += 1;
            return;
        }
        if u.id.generation > m.generation {
            // A newer process of a live member's name: the one this node
            // knows is asked first, and the newer is taken only if it does
            // not answer (a restart: the old process is gone). A rumour of
            // a newer generation costs nobody their place while they run.
            // While a strategy decides, a newer process this node never
            // heard alive is not buried on another's word (nor checked for:
            // the old process's silence says nothing of the new one's): a
            // member holding the key could say any restarted member is
            // dead before it is heard. Its own leave, or its first word
            // alive, is taken.
            if matches!(u.status, Status::Dead | Status::Left) && self.decides() && u.from != u.id {
                self.stats.stale_updates += 1;
                return;
            }
            if m.is_live() && !checked {
                self.newcomer(now, u);
                return;
            }
            // A newer process of a member a decision downed, while this
            // node cannot reach members of its own: the side that decided
            // may be cut off from this node now, and the newcomer, counted
            // here, would make this node's side look larger than the side
            // that downed it, which does not know it (members downed
            // together rejoined a survivor cut off since, and two sides
            // survived). It is taken once this node reaches everyone again
            // (and its detectors have looked again after a long stall of
            // its own: until then it does not know whom it no longer
            // reaches), or two windows after it first came: by then this
            // node's side has decided about the members it cannot reach, or
            // cannot without it (they crashed, and a static quorum needs
            // it).
            if m.status == Status::Dead
                && self.decides()
                && matches!(u.status, Status::Alive | Status::Suspect)
                && (self.rows.own().any(|(_, _, mark)| mark == crate::message::Mark::Unreachable)
                    || !self.looked_again(now))
            {
                let window = self.two_windows();
                let first = *self.rejoins_held.entry(m.name.clone()).or_insert(now);
                // Counted from when this node's picture is fresh again.
                let since = self.looked_again_at().map_or(first, |f| f.max(first));
                if now.saturating_duration_since(since) < window {
                    self.stats.rejoins_deferred += 1;
                    return;
                }
            }
            self.forget(&u.id.name);
            if matches!(u.status, Status::Dead | Status::Left) {
                // A member this node knew, whose next life is already over:
                // its tombstone, in the new generation.
                self.members.insert(&u.id, u.addr, u.incarnation, u.status, now);
                let event = if u.status == Status::Left {
                    Event::Left { id: u.id.clone() }
                } else {
                    Event::Dead { id: u.id.clone(), by: u.from.clone(), suspected_for: None, silent_for: None }
                };
                self.member_gone(event);
                return;
            }
            self.apply_new(now, u, level);
            return;
        }
        let (name, was, incarnation, addr) = (m.name.clone(), m.status, m.incarnation, m.addr);
        // How long it has had the status it has (a suspicion's age, for the
        // verdict that ends it).
        let held = now.saturating_duration_since(m.since);
        match u.status {
            Status::Alive => {
                // A member downed by a decision stays down in its
                // generation: it comes back as a new process.
                if was == Status::Dead && self.decides() {
                    self.stats.stale_updates += 1;
                    self.withdraw_soon(now, &u.id);
                    return;
                }
                // The fast path above took every incarnation not above ours.
                self.members.set(&name, u.incarnation, Status::Alive, addr, now);
                self.suspicions.remove(&name);
                match was {
                    Status::Suspect => {
                        self.stats.refutations_seen += 1;
                        self.emit(Event::Refuted { id: u.id.clone(), incarnation: u.incarnation, suspected_for: held });
                    }
                    Status::Dead | Status::Left => {
                        let tags = self.members.get(&name).and_then(|m| m.tags().cloned()).unwrap_or_default();
                        self.member_up(u.id.clone(), u.addr, tags);
                    }
                    Status::Alive => {}
                }
                self.broadcast(u);
            }
            Status::Suspect => {
                if u.incarnation < incarnation || matches!(was, Status::Dead | Status::Left) {
                    self.stats.stale_updates += 1;
                    return;
                }
                if was == Status::Suspect && u.incarnation == incarnation {
                    // A confirmation: shrinks the timeout if it is new, and
                    // is passed on while few have been. If it is this node's
                    // own, this node now decides with the accusers.
                    if *u.from.name == *self.me.name {
                        let bounds = self.suspicion_bounds(true);
                        self.suspicions.set_bounds(&name, bounds);
                    }
                    let accuser = self.members.intern(&u.from.name);
                    if let Confirmed::New(c) = self.suspicions.confirm(&name, accuser)
                        && c <= self.config.max_confirmations_gossiped as usize
                    {
                        self.broadcast(u);
                    }
                    self.verify_soon(now, &name);
                    return;
                }
                self.members.set(&name, u.incarnation, Status::Suspect, addr, now);
                let accuser = self.members.intern(&u.from.name);
                let bounds = self.suspicion_bounds(*u.from.name == *self.me.name);
                self.suspicions.start(name.clone(), accuser, now, bounds);
                self.emit(Event::Suspected { id: u.id.clone(), by: u.from.clone(), level });
                self.broadcast(u);
                // Buddy system: tell the suspect at once so it can refute.
                self.send(addr, Message::Gossip);
                self.verify_soon(now, &name);
            }
            Status::Dead | Status::Left => {
                // A dead member may still be forced out (left); nothing
                // else moves a tombstone.
                let forced_out = was == Status::Dead && u.status == Status::Left;
                if u.incarnation < incarnation || (matches!(was, Status::Dead | Status::Left) && !forced_out) {
                    self.stats.stale_updates += 1;
                    return;
                }
                // While a strategy decides, only a decision downs a member,
                // and this node decides for itself: another's word that a
                // live member is dead or left only sets it to look: if the
                // member does not answer, this node accuses it itself, and
                // its row and its decision follow.
                // One exception: a member carries out a decision this node
                // took too (its margin ended first, or this node spared
                // the member as it came back, or could still reach it):
                // taken, so that the side downs it as one — a member it
                // downed would otherwise hear it from part of the side
                // only, never enough to down itself. Whoever says it, it
                // only carries out this node's own decision.
                let alike = u.status == Status::Dead && self.carries_out_mine(&name, u.id.generation, now);
                if self.decides() && !checked && *u.from.name != *self.me.name && !forced_out && !alike {
                    self.check_rumour(now, CheckKind::Verdict, u);
                    return;
                }
                let silent_for = self.monitor.last_heartbeat(&name).map(|t| now.saturating_duration_since(t));
                self.members.set(&name, u.incarnation, u.status, addr, now);
                self.suspicions.remove(&name);
                self.probes.forget(&u.id);
                if u.status == Status::Left {
                    self.member_gone(Event::Left { id: u.id.clone() });
                } else {
                    let suspected_for = (was == Status::Suspect).then_some(held);
                    self.member_gone(Event::Dead { id: u.id.clone(), by: u.from.clone(), suspected_for, silent_for });
                }
                self.broadcast(u);
            }
        }
    }

    /// A rumour about a member this node does not know (or whose older
    /// generation it just forgot).
    pub(super) fn apply_new(&mut self, now: Instant, u: Update, level: Option<f64>) {
        if self.members.is_full() {
            self.stats.members_full += 1;
            return;
        }
        match u.status {
            Status::Alive | Status::Suspect => {
                // Vouched for: no longer a stranger's candidate.
                self.introductions.remove(&u.id.name);
                self.members.insert(&u.id, u.addr, u.incarnation, Status::Alive, now);
                if let Some(tags) = &u.tags {
                    self.members.set_tags(&u.id.name, u.incarnation, tags);
                }
                self.member_up(u.id.clone(), u.addr, u.tags.clone().unwrap_or_default());
                self.broadcast(Update { status: Status::Alive, from: u.id.clone(), ..u.clone() });
                if u.status == Status::Suspect {
                    self.apply(now, u, level);
                }
            }
            // The death of a member this node never knew is not its
            // business (memberlist's rule): a tombstone is only kept for a
            // member that was known alive here, so it never outlives the
            // member's own story (a tombstone learned at second hand, dated
            // when it was heard, would be passed back and forth by
            // anti-entropy for ever).
            Status::Dead | Status::Left => {}
        }
    }

    /// Forgets a member entirely (a newer generation replaces it, or its
    /// tombstone expired).
    pub(super) fn forget(&mut self, name: &str) {
        if let Some(m) = self.members.remove(name) {
            self.resolver.forget_verdict(name);
            self.superseded.remove(name);
            self.dead_elsewhere.remove(name);
            self.rejoins_held.remove(name);
            self.suspicions.remove(name);
            self.probes.forget(&m.id());
        }
    }

    /// A rumour about this node: refute accusations, ignore the rest; a
    /// rumour about another process of its name is [`Node::rival`]'s.
    pub(super) fn about_me(&mut self, now: Instant, u: Update) {
        if u.id.generation != self.me.generation {
            self.rival(now, u);
            return;
        }
        // A leave this node never announced is refuted like an accusation:
        // in plaintext anyone can say it.
        if !matches!(u.status, Status::Suspect | Status::Dead | Status::Left) || self.status != Status::Alive {
            return;
        }
        if u.incarnation >= self.incarnation {
            self.renew(u.incarnation);
            self.refuted_to.clear();
            self.stats.self_refutations += 1;
            self.health.raise(1);
            self.broadcast(self.self_update(Status::Alive));
            self.emit(Event::SelfRefuted { incarnation: self.incarnation });
        }
        // The accusers' timers are the ones that decide: tell each of them
        // directly, once per incarnation, even when its accusation arrives
        // after the refutation.
        let accuser = self.members.intern(&u.from.name);
        if let Some(addr) = self.members.get(&accuser).map(|m| m.addr)
            && self.refuted_to.insert(accuser)
        {
            let alive = self.self_update(Status::Alive);
            self.send_with(addr, Message::Gossip, Some(alive));
        }
    }

    /// A member speaks of another process of this node's name. An older
    /// one, live at another address: this node may be taking the name from
    /// a process that still holds it; a newer one the others hold: this
    /// node may have been replaced. Either way the other process is asked,
    /// at its address, as itself: if it answers, the name is contested
    /// ([`Event::NameConflict`]) and this node stops. A newer one that left
    /// or died, or that does not answer, is outlived: this node takes a
    /// generation above it and says it is alive, so that it is not left
    /// out for good.
    pub(super) fn rival(&mut self, now: Instant, u: Update) {
        if self.status != Status::Alive {
            return;
        }
        let live = matches!(u.status, Status::Alive | Status::Suspect);
        if u.id.generation < self.me.generation {
            if live && u.addr != self.addr {
                self.check_rival(now, u);
            } else {
                self.stats.stale_updates += 1;
            }
            return;
        }
        if live && u.addr != self.addr {
            self.check_rival(now, u);
        } else {
            self.outlive(u.id.generation);
        }
    }

    /// A packet from another process of this node's name: its ping of this
    /// one, as itself, is answered, and the name is said to be contested
    /// (this node holds it: the other is refused by the members, and stops
    /// when it hears this answer); the answer to this node's own check of
    /// the other is taken. Returns whether the packet was one of those.
    pub(super) fn rival_exchange(&mut self, now: Instant, from: SocketAddr, packet: &Packet, stream: bool) -> bool {
        match &packet.message {
            Message::Ping { seq, target } if *target == self.me && self.status == Status::Alive => {
                self.send_by(from, Message::Ack { seq: *seq }, None, stream);
                let said = self.rival_said.is_some_and(|(addr, generation, at)| {
                    addr == from
                        && generation == packet.from.generation
                        && now.saturating_duration_since(at) < self.config.reconnect_interval
                });
                if !said {
                    self.rival_said = Some((from, packet.from.generation, now));
                    self.stats.name_conflicts += 1;
                    self.emit(Event::NameConflict {
                        holder: self.me.clone(),
                        holder_addr: self.addr,
                        claimant: packet.from.clone(),
                        claimant_addr: from,
                        refused: false,
                    });
                }
                true
            }
            Message::Ack { seq } if self.probes.is_check_of(*seq, &packet.from) => {
                if let Some(crate::probe::Answered::Probe(p)) = self.probes.answer(*seq) {
                    self.check_answered(now, *seq, &p, &packet.from, from);
                }
                true
            }
            _ => false,
        }
    }

    /// Asks the other process of this node's name whether it runs.
    fn check_rival(&mut self, now: Instant, u: Update) {
        let probes = &self.probes;
        self.checks.sweep(|seq| probes.has(seq));
        let key: Arc<str> = Arc::from(self.me.name.as_str());
        if self.checks.is_checking(&key) || !self.checks.has_room() {
            return;
        }
        let seq = self.probes.next_seq();
        self.check_ping(now, seq, u.id.clone(), u.addr, Purpose::Check);
        self.stats.checks_started += 1;
        self.checks.start(key, Check { seq, kind: CheckKind::Rival, rumour: u });
    }

    /// Takes a generation above `generation` (another process of this
    /// name's, gone), and says so: a restart would do the same.
    pub(super) fn outlive(&mut self, generation: u64) {
        let Some(next) = generation.checked_add(1).filter(|g| *g > self.me.generation) else { return };
        self.me.generation = next;
        self.incarnation = 0;
        self.refuted_to.clear();
        self.stats.generation_renewals += 1;
        self.emit(Event::Renewed { id: self.me.clone() });
        self.broadcast(self.self_update(Status::Alive));
    }

    /// A newer process of the live member `u` names, at another address:
    /// the member this node knows is asked first (see `checks.rs`), unless
    /// that newcomer was refused lately.
    pub(super) fn newcomer(&mut self, now: Instant, u: Update) {
        self.check_rumour(now, CheckKind::Newcomer, u);
    }

    /// Starts checking `u` with the member it is about (see `checks.rs`):
    /// a probe (direct, then through others) of the member where this node
    /// knows it, or, for a move, a ping at the new address.
    pub(super) fn check_rumour(&mut self, now: Instant, kind: CheckKind, u: Update) {
        let probes = &self.probes;
        self.checks.sweep(|seq| probes.has(seq));
        let Some(m) = self.members.get(&u.id.name) else { return };
        let name = m.name.clone();
        if self.checks.is_checking(&name) || !self.checks.has_room() {
            self.stats.checks_refused += 1;
            return;
        }
        if kind == CheckKind::Newcomer && self.checks.refused_lately(&name, now, self.config.reconnect_interval) {
            // Refused lately: told again, not asked again.
            let (holder, addr) = (m.update(m.id()), u.addr);
            self.tell(now, &name, Tell::Refused, addr, holder);
            return;
        }
        let seq = match kind {
            CheckKind::Address | CheckKind::Withdraw => {
                let seq = self.probes.next_seq();
                self.check_ping(now, seq, m.id(), u.addr, Purpose::Check);
                seq
            }
            _ => match self.start_probe(now, &name, Purpose::Check, None) {
                Some(seq) => seq,
                None => return,
            },
        };
        self.stats.checks_started += 1;
        self.checks.start(name, Check { seq, kind, rumour: u });
    }

    /// A check's probe (`seq`) was answered, as `who`, from `from`.
    pub(super) fn check_answered(&mut self, now: Instant, seq: u32, probe: &Probe, who: &NodeId, from: SocketAddr) {
        let key = if probe.target.name == self.me.name { self.me.name.clone() } else { probe.target.name.clone() };
        let Some(check) = self.checks.take(&key, seq) else { return };
        // A direct ping's answer must come from where it was sent, from the
        // member asked; a probe's may come through another member, which
        // relays only the member's own answer.
        let direct = *who == probe.target && from == probe.addr;
        match check.kind {
            CheckKind::Verdict => self.stats.checks_refuted += 1,
            CheckKind::Address if direct => {
                if let Some(m) = self.members.get(&probe.target.name).filter(|m| m.is(&probe.target)) {
                    let (name, incarnation, status) = (m.name.clone(), m.incarnation, m.status);
                    self.members.set(&name, incarnation, status, probe.addr, now);
                    self.stats.addresses_moved += 1;
                }
            }
            CheckKind::Address => self.stats.checks_refuted += 1,
            CheckKind::Newcomer => {
                // The member this node knows answers: the newcomer is
                // refused, and told who holds the name.
                let Some(m) = self.members.get(&probe.target.name).filter(|m| m.is(&probe.target)) else { return };
                let (holder, holder_addr, name) = (m.id(), m.addr, m.name.clone());
                let rumour = m.update(m.id());
                let (claimant, claimant_addr) = (check.rumour.id.clone(), check.rumour.addr);
                self.stats.name_conflicts += 1;
                self.emit(Event::NameConflict { holder, holder_addr, claimant, claimant_addr, refused: false });
                self.checks.refuse(name.clone(), now, self.config.reconnect_interval);
                self.tell(now, &name, Tell::Refused, claimant_addr, rumour);
            }
            CheckKind::Rival if direct => {
                // Another process of this name answers where the others
                // said: the name is contested, and this node stops.
                let (holder, holder_addr) = (check.rumour.id.clone(), check.rumour.addr);
                self.stats.name_conflicts += 1;
                self.emit(Event::NameConflict {
                    holder,
                    holder_addr,
                    claimant: self.me.clone(),
                    claimant_addr: self.addr,
                    refused: true,
                });
                self.status = Status::Left;
                self.timers.clear();
            }
            CheckKind::Rival => {}
            CheckKind::Withdraw if direct => self.withdraw(now, &probe.target),
            CheckKind::Withdraw => {}
        }
    }

    /// A check's probe went unanswered: the rumour it decided is taken (a
    /// death, a leave, a newcomer), or dropped (a move), or the other
    /// process of this node's name is outlived.
    pub(super) fn check_failed(&mut self, now: Instant, seq: u32, probe: &Probe) {
        let key = if probe.target.name == self.me.name { self.me.name.clone() } else { probe.target.name.clone() };
        let Some(check) = self.checks.take(&key, seq) else { return };
        match check.kind {
            CheckKind::Verdict => {
                // The member does not answer this node either: its own
                // accusation (never another's verdict) starts.
                self.stats.checks_confirmed += 1;
                if let Some(m) = self.members.get(&probe.target.name).filter(|m| m.is(&probe.target))
                    && self.may_accuse(m)
                {
                    let accusation = Update { status: Status::Suspect, ..m.update(self.me.clone()) };
                    self.stats.suspicions_started += 1;
                    self.apply(now, accusation, None);
                }
            }
            CheckKind::Newcomer => {
                self.stats.checks_confirmed += 1;
                // While a strategy decides, a newer process at another
                // address replaces the one this node knows only once a
                // decision downed it (the old one is probed like any
                // member: unreachable, it is decided about): a side that
                // cannot reach a member must not count a second process
                // of its name in its place. At the same address, the old
                // process cannot still be there: the newer is taken.
                let moved = self.members.get(&probe.target.name).is_some_and(|m| m.addr != check.rumour.addr);
                if self.decides() && moved {
                    self.stats.newcomers_deferred += 1;
                    if let Some(m) = self.members.get(&probe.target.name).filter(|m| m.is(&probe.target)) {
                        let (name, generation) = (m.name.clone(), m.generation);
                        self.superseded.insert(name, generation);
                    }
                    return;
                }
                self.apply_as(now, check.rumour, None, true);
            }
            CheckKind::Address | CheckKind::Withdraw => {}
            CheckKind::Rival => {
                if check.rumour.id.generation > self.me.generation {
                    self.outlive(check.rumour.id.generation);
                }
            }
        }
    }

    /// Tells `name`'s process at `to` something it must hear (`rumour`,
    /// piggybacked first), once a probe interval at most.
    pub(super) fn tell(&mut self, now: Instant, name: &Arc<str>, what: Tell, to: SocketAddr, rumour: Update) {
        if self.note_told(now, name, what) {
            self.send_with(to, Message::Gossip, Some(rumour));
        }
    }

    /// Notes that member `name` is told `what` now; false if it was told
    /// that within a probe interval (it is not told again yet).
    pub(super) fn note_told(&mut self, now: Instant, name: &Arc<str>, what: Tell) -> bool {
        let key = (name.clone(), what);
        if self.told.get(&key).is_some_and(|at| now.saturating_duration_since(*at) < self.config.probe_interval) {
            return false;
        }
        if self.told.len() >= crate::checks::MAX_CHECKS {
            let keep = self.config.reconnect_interval;
            self.told.retain(|_, at| now.saturating_duration_since(*at) < keep);
        }
        if self.told.len() < crate::checks::MAX_CHECKS {
            self.told.insert(key, now);
        }
        true
    }

    /// A packet came from `from` in an older generation of `name` than the
    /// one this node knows: that process is told what the others hold (it
    /// was replaced, or it tried to take a name that is held).
    pub(super) fn tell_name_held(&mut self, now: Instant, name: &str, from: SocketAddr) {
        let Some(m) = self.members.get(name) else { return };
        let (key, rumour) = (m.name.clone(), m.update(m.id()));
        self.tell(now, &key, Tell::NameHeld, from, rumour);
    }

    /// Moves this node's incarnation past `at_least`; if it cannot grow any
    /// more, takes a new generation instead (which beats every rumour about
    /// the old one, as a restart does).
    pub(super) fn renew(&mut self, at_least: u64) {
        if let Some(next) = at_least.checked_add(1) {
            self.incarnation = self.incarnation.max(next);
        } else if let Some(generation) = self.me.generation.checked_add(1) {
            self.me.generation = generation;
            self.incarnation = 0;
            self.stats.generation_renewals += 1;
            self.emit(Event::Renewed { id: self.me.clone() });
        }
    }

    /// This node's full view: itself and every member.
    pub(super) fn view(&self) -> Vec<Update> {
        let mut out = Vec::with_capacity(1 + self.members.len());
        out.push(self.self_update(self.status));
        out.extend(self.members.iter().map(|m| self.rumour(m)));
        out
    }

    /// What this node believes about `m`, as a rumour: a suspicion's source
    /// is its first accuser, anything else's the member itself.
    pub(super) fn rumour(&self, m: &Member) -> Update {
        let accuser =
            self.suspicions.get(&m.name).and_then(|s| s.first_accuser()).filter(|_| m.status == Status::Suspect);
        m.update(accuser.map_or_else(|| m.id(), |a| self.id_of(a)))
    }

    /// The identity of `name`, this node or a member, at the generation
    /// this node knows (0 for a name it does not know).
    pub(super) fn id_of(&self, name: &str) -> NodeId {
        if name == self.me.name {
            return self.me.clone();
        }
        NodeId { name: name.to_owned(), generation: self.members.get(name).map_or(0, |x| x.generation) }
    }

    /// Suspicion timeout bounds and expected confirmations, for the current
    /// cluster size. In φ mode the accusers, who probed the member and found
    /// it silent, decide: their timeout runs from `suspicion_max` towards
    /// `suspicion_min` as the other observers confirm. A member that only
    /// heard of the suspicion waits for their verdict (or the suspect's
    /// refutation), and declares the death itself only after
    /// `suspicion_max`, should neither arrive: so a refutation has to reach
    /// the few accusers in time, not the whole cluster. Classic mode keeps
    /// memberlist's rule, every member's timer alike. While a downing
    /// strategy decides, a suspicion that runs out only makes the member
    /// unreachable, and the decision waits `stable_after` of calm, which a
    /// refutation breaks: the refutation's window is the calm, so every
    /// member's suspicion runs out at `suspicion_min` (classic mode: its
    /// minimum), and the members of a side come to hold the same records
    /// at about the same time, however many observers confirmed.
    pub(super) fn suspicion_bounds(&self, accuser: bool) -> Bounds {
        let n = self.cluster_size();
        let c = &self.config;
        if self.decides() {
            let min = match c.mode {
                Mode::Phi => c.suspicion_min,
                Mode::Classic => {
                    let scale = (n.max(1) as f64).log10().max(1.0);
                    c.probe_interval.mul_f64(f64::from(c.suspicion_mult) * scale)
                }
            };
            return Bounds { min, max: min, k: 0 };
        }
        match c.mode {
            Mode::Phi if accuser => {
                let k = c.observers.saturating_sub(1).min(n.saturating_sub(2)) as u32;
                Bounds { min: c.suspicion_min, max: c.suspicion_max, k }
            }
            Mode::Phi => Bounds { min: c.suspicion_max, max: c.suspicion_max, k: 0 },
            Mode::Classic => {
                // memberlist's util.go: log10 with a floor of 1.
                let scale = (n.max(1) as f64).log10().max(1.0);
                let min = c.probe_interval.mul_f64(f64::from(c.suspicion_mult) * scale);
                let max = min.saturating_mul(c.suspicion_max_timeout_mult);
                let k = c.suspicion_mult.saturating_sub(2);
                let k = if (n as u32).saturating_sub(2) < k { 0 } else { k };
                Bounds { min, max, k }
            }
        }
    }
}

//! From silence to a verdict: probing silent watched members and classic
//! rounds' targets, settling probes (path problem or accusation),
//! settling suspicions (a death, or a check of the suspect by a member that
//! only heard of it).

use super::*;

impl Node {
    /// Probes the watched members that went silent.
    pub(super) fn check_silent(&mut self, now: Instant) {
        for silent in self.monitor.poll(now, self.health.multiplier()) {
            let allowed = self.members.get(&silent.name).is_some_and(|m| self.may_accuse(m))
                && !self.probes.probing(&silent.name)
                && now >= self.monitor.quiet_until();
            if allowed {
                self.start_probe(now, &silent.name, Purpose::Silent, silent.level);
            } else {
                let at = now.saturating_add(self.health.scale(self.config.probe_interval));
                self.monitor.recheck(&silent.name, at);
            }
        }
        self.take_notices();
    }

    /// Starts a probe of `name`: a direct ping, and, for a silent watched
    /// member, indirect requests at once (the silence has already lasted);
    /// a classic round, a check of a suspect this node only heard of and a
    /// check of a rumour go indirect only if the direct ping is not
    /// answered (the member usually answers at once). Its sequence number,
    /// if `name` is a member.
    pub(super) fn start_probe(
        &mut self,
        now: Instant,
        name: &str,
        purpose: Purpose,
        level: Option<f64>,
    ) -> Option<u32> {
        let (target, addr) = self.members.get(name).map(|m| (m.id(), m.addr))?;
        let seq = self.probes.next_seq();
        self.stats.probes += 1;
        self.send(addr, Message::Ping { seq, target: target.clone() });
        let mut probe =
            Probe { target, addr, purpose, level, stage: Stage::Direct, started: now, expected_nacks: 0, nacks: 0 };
        let timeout = self.health.scale(self.config.probe_timeout);
        if purpose == Purpose::Classic {
            self.probes.insert(seq, probe, now.saturating_add(timeout));
        } else if matches!(purpose, Purpose::Verify | Purpose::Check) {
            self.probes.insert(seq, probe, now.saturating_add(timeout / 2));
        } else {
            // The silence has lasted: the indirect requests go at once; the
            // stream ping, dearer, only if the direct ping is not answered
            // within half the timeout (a lost heartbeat is usually answered
            // at once, and costs no connection).
            self.send_ping_reqs(seq, &mut probe);
            self.probes.insert(seq, probe, now.saturating_add(timeout / 2));
        }
        Some(seq)
    }

    /// The indirect stage: the requests to others (unless they went out
    /// with the direct ping) and the stream ping.
    fn send_indirect(&mut self, seq: u32, probe: &mut Probe) {
        if matches!(probe.purpose, Purpose::Classic | Purpose::Verify | Purpose::Check) {
            self.send_ping_reqs(seq, probe);
        }
        // The target once more, on a stream: its retransmissions get
        // through loss that drops every datagram of the probe.
        if self.config.stream_ping && !self.config.stream_only {
            self.stats.stream_pings += 1;
            self.send_by(probe.addr, Message::Ping { seq, target: probe.target.clone() }, None, true);
        }
        probe.stage = Stage::Indirect;
    }

    fn send_ping_reqs(&mut self, seq: u32, probe: &mut Probe) {
        let target = probe.target.name.clone();
        let helpers = self
            .members
            .pick(&mut self.rng, self.config.indirect_checks, |m| m.status == Status::Alive && *m.name != *target);
        for name in helpers {
            if let Some(addr) = self.members.get(&name).map(|m| m.addr) {
                self.stats.indirect_probes += 1;
                let msg = Message::PingReq { seq, target: probe.target.clone(), target_addr: probe.addr, nack: true };
                self.send(addr, msg);
                probe.expected_nacks += 1;
            }
        }
    }

    pub(super) fn settle_probes(&mut self, now: Instant) {
        for (seq, item) in self.probes.due(now) {
            match item {
                Answered::Relay(r) => {
                    if r.nack {
                        self.send(r.requester, Message::Nack { seq: r.seq });
                    }
                }
                Answered::Probe(mut probe) if probe.stage == Stage::Direct => {
                    self.send_indirect(seq, &mut probe);
                    let timeout = self.health.scale(self.config.probe_timeout);
                    let deadline = if probe.purpose == Purpose::Classic {
                        // Indirect probes until the end of the period.
                        let period = self.health.scale(self.config.probe_interval);
                        now.saturating_add(period.saturating_sub(timeout).max(self.config.probe_timeout))
                    } else {
                        // The rest of the probe's timeout.
                        probe.started.saturating_add(timeout).max(now)
                    };
                    self.probes.insert(seq, probe, deadline);
                }
                Answered::Probe(probe) => self.probe_failed(now, seq, probe),
            }
        }
    }

    /// No ack came: accuse the target, unless this node is the likelier
    /// problem or a heartbeat answered in the meantime.
    pub(super) fn probe_failed(&mut self, now: Instant, seq: u32, probe: Probe) {
        if probe.purpose == Purpose::Check {
            self.check_failed(now, seq, &probe);
            return;
        }
        if probe.purpose == Purpose::Introduce {
            // A candidate that does not answer is not a member.
            if self.introductions.remove(&probe.target.name) {
                self.stats.introductions_expired += 1;
            }
            return;
        }
        if probe.purpose == Purpose::Source {
            // Its other address stays a stranger's.
            self.introductions.source_failed(&probe.target.name);
            return;
        }
        // Missing nacks are Lifeguard's evidence that this node's own
        // network is the problem.
        let missing = probe.expected_nacks.saturating_sub(probe.nacks);
        if missing > 0 {
            self.health.raise(missing);
        }
        let name = probe.target.name.clone();
        let monitored = probe.purpose == Purpose::Silent;
        let recheck = now.saturating_add(self.health.scale(self.config.probe_interval));
        if now < self.monitor.quiet_until() {
            // This node stalled while the probe was out.
            if monitored {
                self.monitor.recheck(&name, recheck);
            }
            return;
        }
        // A heartbeat that arrived while the probe was out is an answer too:
        // under loss, the probe's own packets are as likely to be lost as
        // the heartbeat that set it off.
        if monitored && self.monitor.last_heartbeat(&name).is_some_and(|last| last > probe.started) {
            self.path_problem(now, probe, false);
            return;
        }
        let Some(m) = self.members.get(&name) else { return };
        if probe.purpose == Purpose::Verify {
            if !(m.is(&probe.target) && m.status == Status::Suspect) {
                return;
            }
            if self.decides() {
                // While a strategy decides, every member forms its own
                // view of a suspect: this node's probes failed too, so it
                // confirms the suspicion, and the suspect is in its row
                // once the suspicion runs out.
                let me = self.members.intern(&self.me.name);
                self.suspicions.confirm(&name, me);
            } else {
                // Nobody's verdict came, and the suspect does not answer
                // this node either: its own evidence.
                self.declare_dead(now, &name);
            }
            return;
        }
        // A failed probe of a member already suspected by others is an
        // independent confirmation (Lifeguard).
        if !m.is(&probe.target) || !self.may_accuse(m) {
            return;
        }
        let accusation = m.update(self.me.clone());
        let accusation = Update { status: Status::Suspect, addr: probe.addr, ..accusation };
        self.stats.suspicions_started += 1;
        self.apply(now, accusation, probe.level);
        if monitored {
            self.monitor.recheck(&name, recheck);
        }
    }

    /// A silent member answered: its heartbeats are not getting through.
    /// Reported; it is looked at again after a probe interval, longer each
    /// time the silence goes on.
    pub(super) fn path_problem(&mut self, now: Instant, probe: Probe, indirect: bool) {
        self.stats.path_problems += 1;
        if probe.purpose == Purpose::Silent {
            let base = self.health.scale(self.config.probe_interval);
            self.monitor.answered(&probe.target.name, now, base);
        }
        self.emit(Event::PathProblem { id: probe.target, level: probe.level, indirect });
    }

    pub(super) fn settle_suspicions(&mut self, now: Instant) {
        for name in self.suspicions.due(now) {
            if self.members.get(&name).is_none() {
                self.suspicions.remove(&name);
                continue;
            }
            let accuser = self.suspicions.get(&name).is_some_and(|s| s.accused_by(&self.me.name));
            if self.decides() {
                // A strategy decides: the member is unreachable from those
                // that accused it, not dead (this node's row has it if this
                // node is one of them). It is looked at again every
                // reconnect interval, in case it answers but does not know
                // it is suspected, or this node has not looked yet.
                let again = self.config.reconnect_interval;
                let bounds = Bounds { min: again, max: again, k: 0 };
                if self.suspicions.ripen(&name, now, bounds)
                    && let Some(m) = self.members.get(&name)
                {
                    // Passed on once more, now that the unreachable are no
                    // longer gossiped to: the members that missed it hear it.
                    let rumour = self.rumour(m);
                    self.broadcast(rumour);
                }
                // Looked at again by the members that watch it, or that
                // accused it first: the others hear of it if it answers.
                let first =
                    self.suspicions.get(&name).and_then(|s| s.first_accuser()).is_some_and(|a| **a == *self.me.name);
                let watches = self.monitor.watched().any(|w| **w == *name);
                if (first || watches || !accuser) && !self.probes.probing(&name) {
                    self.start_probe(now, &name, Purpose::Verify, None);
                }
                continue;
            }
            if self.config.mode == Mode::Phi && !accuser {
                // This node only heard of the suspicion, and neither the
                // accusers' verdict nor a refutation reached it (a rumour
                // can miss a member): it looks for itself before acting.
                // The suspicion's clock starts again, in case the suspect
                // answers but does not refute.
                let bounds = self.suspicion_bounds(false);
                self.suspicions.restart(&name, now, bounds);
                // Looked at again by the members that watch it, or that
                // accused it first: the others hear of it if it answers.
                let first =
                    self.suspicions.get(&name).and_then(|s| s.first_accuser()).is_some_and(|a| **a == *self.me.name);
                let watches = self.monitor.watched().any(|w| **w == *name);
                if (first || watches || !accuser) && !self.probes.probing(&name) {
                    self.start_probe(now, &name, Purpose::Verify, None);
                }
                continue;
            }
            self.declare_dead(now, &name);
            // Whatever happened, this suspicion is settled.
            self.suspicions.remove(&name);
        }
    }

    /// While a strategy decides, a suspicion this node did not start is
    /// checked at once with a probe of its own: every member forms its own
    /// view (its row), so that the members of a side come to see the
    /// cluster alike, and a forged accusation costs a probe, not a record.
    pub(super) fn verify_soon(&mut self, now: Instant, name: &str) {
        if !self.decides() || self.probes.probing(name) {
            return;
        }
        if self.suspicions.get(name).is_some_and(|s| !s.accused_by(&self.me.name)) {
            self.start_probe(now, name, Purpose::Verify, None);
        }
    }

    /// This node declares `name` dead, at the incarnation it knows.
    fn declare_dead(&mut self, now: Instant, name: &str) {
        let Some(m) = self.members.get(name) else { return };
        let death = Update { status: Status::Dead, ..m.update(self.me.clone()) };
        self.stats.deaths_declared += 1;
        self.apply(now, death, None);
    }

    /// A suspect this node set out to verify answered. A refutation comes
    /// with the answer (its incarnation is in the header) if the suspect
    /// knows it is suspected; if it does not, tell it.
    pub(super) fn verified(&mut self, probe: Probe) {
        let Some(m) = self.members.get(&probe.target.name) else { return };
        if m.is(&probe.target) && m.status == Status::Suspect {
            let (addr, accusation) = (m.addr, self.rumour(m));
            self.send_with(addr, Message::Gossip, Some(accusation));
        }
    }
}

//! Faults, applied to the simulated machines and network when they start
//! and undone when they end.

use vigil_membership::{Node, NodeId};

use crate::job::Job;
use crate::record::What;
use crate::scenario::Fault;
use crate::sim::{Sim, addr_of, seed_of};

impl Sim {
    pub(crate) fn fault_start(&mut self, k: usize) {
        let f = self.scenario.faults[k].clone();
        let now = self.now;
        let end = f.duration().map(|d| now.saturating_add(d));
        let mut applied = true;
        match f {
            Fault::Crash { node, .. } => {
                let sn = &mut self.nodes[node];
                match sn.node.take() {
                    Some(_) => {
                        sn.inbox.clear();
                        sn.paused_until = None;
                        let generation = sn.generation;
                        self.note_crash(node, generation);
                    }
                    None => applied = false,
                }
            }
            Fault::Restart { node, .. } => {
                if self.nodes[node].node.is_some() {
                    applied = false;
                } else {
                    let generation = self.nodes[node].generation + 1;
                    let id = NodeId::new(self.nodes[node].name.clone(), generation);
                    let seed = rand::RngExt::random::<u64>(&mut self.rng);
                    match Node::new(id, self.nodes[node].addr, self.config.clone(), seed, now) {
                        Ok(mut fresh) => {
                            fresh.join(now, &[addr_of(seed_of(node))]);
                            let sn = &mut self.nodes[node];
                            sn.node = Some(fresh);
                            sn.generation = generation;
                            sn.epoch = (generation, 0);
                            sn.seen = (0, 0);
                            // A new process: a new session, the same keys.
                            let previous = sn.seal.clone();
                            let started = crate::clock::unix_secs(now);
                            let sn = &mut self.nodes[node];
                            sn.seal = self.sealer.seal_for_start(Some(&previous), started);
                            self.note_restart(node);
                            self.flush(node);
                            self.schedule_wake(node);
                        }
                        // The configuration was validated when the
                        // simulator was built.
                        Err(_) => applied = false,
                    }
                }
            }
            Fault::Pause { node, .. } => {
                if self.nodes[node].node.is_some() {
                    self.nodes[node].paused_until = end;
                } else {
                    applied = false;
                }
            }
            Fault::Slow { node, delay, .. } => self.nodes[node].slow = delay,
            Fault::Block { from, to, .. } => self.links.block(from, to),
            Fault::Partition { split, .. } => self.links.partition(split),
            Fault::Loss { p, .. } => self.links.add_loss(p),
            Fault::Degrade { base_ms, jitter_ms, .. } => self.links.degrade(base_ms, jitter_ms),
            Fault::RotateKey { spread, .. } => {
                let steps = self.sealer.start_rotation(now, spread, self.nodes.len());
                self.queue_jobs(steps);
            }
            Fault::EnableSealing { spread, .. } => {
                let steps = self.sealer.start_rollout(now, spread, self.nodes.len());
                self.queue_jobs(steps);
            }
            Fault::Replay { duration, .. } => self.sealer.start_replay(now, duration),
        }
        if applied {
            self.record(What::FaultStarted { fault: k });
            if let Some(end) = end {
                self.push(end, Job::FaultEnd(k));
            }
        } else {
            self.ineffective_faults.push(k);
        }
    }

    pub(crate) fn fault_end(&mut self, k: usize) {
        let f = self.scenario.faults[k].clone();
        let grace = self.scenario.envelope.grace;
        let until = self.now.saturating_add(grace);
        self.record(What::FaultEnded { fault: k });
        match f {
            Fault::Pause { node, .. } => {
                self.nodes[node].paused_until = None;
                self.nodes[node].disturbed_until = until;
                let inbox = std::mem::take(&mut self.nodes[node].inbox);
                for (from, bytes, stream) in inbox {
                    self.deliver(node, from, &bytes, stream);
                }
                self.wake(node);
            }
            Fault::Slow { node, .. } => {
                self.nodes[node].slow = std::time::Duration::ZERO;
                self.nodes[node].disturbed_until = until;
            }
            Fault::Block { from, to, .. } => {
                self.links.unblock(from, to);
                self.nodes[from].disturbed_until = until;
                self.nodes[to].disturbed_until = until;
            }
            Fault::Partition { split, .. } => {
                self.links.heal(split);
                self.links.disturbed_until(until);
                self.start_heal_check(k);
            }
            Fault::Loss { p, .. } => {
                self.links.remove_loss(p);
                if p > self.scenario.envelope.max_loss {
                    self.links.disturbed_until(until);
                }
            }
            Fault::Degrade { base_ms, jitter_ms, .. } => {
                self.links.restore(base_ms, jitter_ms);
                self.links.disturbed_until(until);
            }
            Fault::Crash { .. }
            | Fault::Restart { .. }
            | Fault::RotateKey { .. }
            | Fault::EnableSealing { .. }
            | Fault::Replay { .. } => {}
        }
    }
}

//! Faults, applied to the simulated machines and network when they start
//! and undone when they end.

use crate::job::Job;
use crate::record::What;
use crate::scenario::Fault;
use crate::sim::Sim;

impl Sim {
    pub(crate) fn fault_start(&mut self, k: usize) {
        let f = self.scenario.faults[k].clone();
        let now = self.now;
        let end = f.duration().map(|d| now.saturating_add(d));
        let mut applied = true;
        match f {
            Fault::Crash { node, .. } => match self.machines.crash(node, now) {
                Some(generation) => self.note_crash(node, generation),
                None => applied = false,
            },
            Fault::Restart { node, .. } => {
                applied = self.machines.restart(node, now, &self.config, &mut self.rng, &mut self.sealer);
                if applied {
                    self.flush(node);
                    self.schedule_wake(node);
                }
            }
            Fault::Pause { node, .. } => applied = self.machines.pause(node, end),
            Fault::Slow { node, delay, .. } => self.machines.slow(node, delay),
            Fault::Block { from, to, .. } => self.links.block(from, to),
            Fault::Partition { split, .. } => self.links.partition(split),
            Fault::Loss { p, .. } => self.links.add_loss(p),
            Fault::Degrade { base_ms, jitter_ms, .. } => self.links.degrade(base_ms, jitter_ms),
            Fault::RotateKey { spread, .. } => {
                let steps = self.sealer.start_rotation(now, spread, self.machines.len());
                self.queue_jobs(steps);
            }
            Fault::EnableSealing { spread, .. } => {
                let steps = self.sealer.start_rollout(now, spread, self.machines.len());
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
                let inbox = self.machines.resume(node, until);
                for (from, bytes, stream) in inbox {
                    self.deliver(node, from, &bytes, stream);
                }
                self.wake(node);
            }
            Fault::Slow { node, .. } => {
                self.machines.unslow(node, until);
            }
            Fault::Block { from, to, .. } => {
                self.links.unblock(from, to);
                self.machines.disturbed_until(from, until);
                self.machines.disturbed_until(to, until);
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

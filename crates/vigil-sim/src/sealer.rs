//! Sealing in the simulator: every machine seals what it sends and opens
//! what it receives with vigil-membership's [`Seal`]; the sealer holds the
//! cluster's keys, rolls rotations and rollouts out as an operator would,
//! and plays the attacker who replays captured datagrams. The randomness it
//! needs (keys, sessions, step times) comes from a stream of its own, so a
//! plaintext run is the same run it always was.

use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vigil_detector::Instant;
use vigil_membership::keyring::{KEY_LEN, KeyId, Keyring, key_id};
use vigil_membership::seal::{OpenError, Seal, SealMode};

use crate::fault::Operation;
use crate::job::{Job, KeyStep};
use crate::preset::CLUSTER;
use crate::report::SealReport;
use crate::scenario::{Scenario, Sealing};

/// The freshness window of every seal, as the runtime's default.
const FRESHNESS: Duration = Duration::from_secs(60);

/// The cluster's keys, the rollouts' randomness and the attacker.
#[derive(Debug, Clone)]
pub(crate) struct Sealer {
    mode: SealMode,
    keys: Vec<[u8; KEY_LEN]>,
    rng: ChaCha8Rng,
    /// Active replay captures: (until, delay).
    replays: Vec<(Instant, Duration)>,
    /// Copies the attacker sent.
    injected: u64,
    /// Copies that reached a machine down or paused.
    undelivered: u64,
    /// Key steps that found nothing to do (a key already removed, say).
    failed_steps: u64,
}

impl Sealer {
    /// The sealer of a run of `scenario`: its sealing mode, and the
    /// cluster's first key.
    pub(crate) fn new(scenario: &Scenario) -> Sealer {
        // A stream of its own: the protocol's draws are untouched.
        let mut rng = ChaCha8Rng::seed_from_u64(scenario.seed ^ 0x5ea1_5ea1_5ea1_5ea1);
        let key: [u8; KEY_LEN] = rng.random();
        let mode = match scenario.sealing {
            Sealing::Staged => SealMode::Staged,
            Sealing::Sealed => SealMode::Sealed,
            _ => SealMode::Plaintext,
        };
        Sealer { mode, keys: vec![key], rng, replays: Vec::new(), injected: 0, undelivered: 0, failed_steps: 0 }
    }

    /// A machine's seal at its (first or new) start, at `unix_secs` on the
    /// hosts' clock. A restarted machine keeps its mode and keyring (its
    /// configuration on disk) with a new session; every seal refuses what
    /// was sealed before it started, as the runtime's do ([`FRESHNESS`]).
    pub(crate) fn seal_for_start(&mut self, previous: Option<&Seal>, unix_secs: u64) -> Seal {
        let mode = previous.map_or(self.mode, Seal::mode);
        if mode == SealMode::Plaintext {
            return Seal::plaintext(CLUSTER);
        }
        let session = self.rng.random::<u64>();
        let keyring = previous.and_then(Seal::keyring).cloned().unwrap_or_else(|| Keyring::new(self.keys[0]));
        Seal::new(CLUSTER, mode, Some(keyring), session)
            .map(|s| s.with_freshness(FRESHNESS, unix_secs))
            .unwrap_or_else(|_| Seal::plaintext(CLUSTER))
    }

    fn id(&self, k: usize) -> KeyId {
        key_id(&self.keys[k])
    }

    /// Starts `operation` at `now` on `machines` machines, for `duration`:
    /// the steps each machine takes, as jobs.
    pub(crate) fn start(
        &mut self,
        operation: &Operation,
        now: Instant,
        duration: Duration,
        machines: usize,
    ) -> Vec<(Instant, Job)> {
        let steps = match operation {
            // A new key, installed, used, then the old one removed.
            Operation::RotateKey => {
                let old = self.keys.len() - 1;
                let key: [u8; KEY_LEN] = self.rng.random();
                self.keys.push(key);
                let new = old + 1;
                [KeyStep::Install(new), KeyStep::Use(new), KeyStep::Remove(old)]
            }
            Operation::EnableSealing => [KeyStep::TakeKey, KeyStep::Stage, KeyStep::Seal],
        };
        self.roll_out(now, duration / Operation::STEPS, machines, steps)
    }

    /// Three steps at every machine, step `k` at a random time in
    /// `[now + k·spread, now + (k + 1)·spread)`.
    fn roll_out(
        &mut self,
        now: Instant,
        spread: Duration,
        machines: usize,
        steps: [KeyStep; Operation::STEPS as usize],
    ) -> Vec<(Instant, Job)> {
        let mut jobs = Vec::with_capacity(machines * steps.len());
        for i in 0..machines {
            for (k, step) in (0u32..).zip(steps) {
                let jitter = spread.mul_f64(self.rng.random::<f64>());
                jobs.push((now.saturating_add(spread.saturating_mul(k)).saturating_add(jitter), Job::Key(i, step)));
            }
        }
        jobs
    }

    /// One step of a rotation or rollout at a machine whose seal is `seal`
    /// (up or down: its keyring and mode are its configuration).
    pub(crate) fn step(&mut self, seal: &mut Seal, step: KeyStep) {
        let (key, id) = match step {
            KeyStep::Install(k) | KeyStep::Use(k) | KeyStep::Remove(k) => (self.keys[k], self.id(k)),
            KeyStep::TakeKey => {
                if seal.keyring().is_none() {
                    seal.set_keyring(Keyring::new(self.keys[0]));
                    // The seal a plaintext start made keeps no windows:
                    // start a session as a sealing process would.
                    let session = self.rng.random::<u64>();
                    seal.restart(session);
                }
                return;
            }
            KeyStep::Stage => {
                if seal.set_mode(SealMode::Staged).is_err() {
                    self.failed_steps += 1;
                }
                return;
            }
            KeyStep::Seal => {
                if seal.set_mode(SealMode::Sealed).is_err() {
                    self.failed_steps += 1;
                }
                return;
            }
        };
        let Some(ring) = seal.keyring_mut() else { return };
        let done = match step {
            KeyStep::Install(_) => ring.install(key).is_ok(),
            // A step that comes before the one it needs (a spread longer
            // than the gap) is retried once the ring is ready.
            KeyStep::Use(_) => ring.install(key).and_then(|_| ring.use_key(id)).is_ok(),
            KeyStep::Remove(_) => ring.remove(id).is_ok(),
            // Handled above.
            KeyStep::TakeKey | KeyStep::Stage | KeyStep::Seal => true,
        };
        if !done {
            self.failed_steps += 1;
        }
    }

    /// The attacker captures every datagram delivered from `now` for
    /// `duration`, and sends each again `duration` after the original.
    pub(crate) fn start_replay(&mut self, now: Instant, duration: Duration) {
        self.replays.push((now.saturating_add(duration), duration));
    }

    /// A datagram from `from` reaches `to` at `now`: a copy of it for every
    /// replay that is capturing.
    pub(crate) fn capture(&mut self, now: Instant, to: usize, from: usize, bytes: &[u8]) -> Vec<(Instant, Job)> {
        if self.replays.is_empty() {
            return Vec::new();
        }
        self.replays.retain(|&(until, _)| until > now);
        let mut copies = Vec::with_capacity(self.replays.len());
        for &(_, delay) in &self.replays {
            self.injected += 1;
            copies.push((now.saturating_add(delay), Job::Replayed { to, from, bytes: bytes.to_vec() }));
        }
        copies
    }

    /// A replayed copy arrived at a machine that was down or paused.
    pub(crate) fn copy_undelivered(&mut self) {
        self.undelivered += 1;
    }

    /// The figures of the machines' `seals`, summed, with the attacker's
    /// and the rollouts'.
    pub(crate) fn report<'a>(&self, seals: impl Iterator<Item = &'a Seal>) -> SealReport {
        let mut r = SealReport {
            replays_injected: self.injected,
            replays_undelivered: self.undelivered,
            key_steps_failed: self.failed_steps,
            ..SealReport::default()
        };
        for s in seals.map(Seal::stats) {
            r.sealed += s.sealed;
            r.opened += s.opened;
            r.plaintext_accepted += s.plaintext_accepted;
            for (reason, count) in OpenError::REASONS.iter().zip(s.rejected) {
                if count > 0 {
                    *r.rejected.entry(reason).or_default() += count;
                }
            }
        }
        r
    }
}

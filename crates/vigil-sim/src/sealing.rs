//! Sealing in the simulator: every node seals what it sends and opens what
//! it receives with vigil-membership's [`Seal`], keys are rotated as an
//! operator would roll a rotation out, and an attacker can replay captured
//! datagrams. The randomness it needs (keys, sessions, step times) comes
//! from a stream of its own, so a plaintext run is the same run it always
//! was.

use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vigil_detector::Instant;
use vigil_membership::keyring::{KEY_LEN, KeyId, Keyring, key_id};
use vigil_membership::seal::{Mode, OpenError, Seal};

use crate::clock::{EPOCH_SECS, since_start};
use crate::job::{Job, KeyStep};
use crate::preset::CLUSTER;
use crate::report::SealReport;
use crate::scenario::{Scenario, Sealing};
use crate::sim::Sim;

/// The freshness window of every seal, as the runtime's default.
pub(crate) const FRESHNESS: Duration = Duration::from_secs(60);

/// The cluster's keys and the attacker.
#[derive(Debug, Clone)]
pub(crate) struct Sealer {
    mode: Mode,
    keys: Vec<[u8; KEY_LEN]>,
    rng: ChaCha8Rng,
    /// Active replay captures: (until, delay).
    pub(crate) replays: Vec<(Instant, Duration)>,
    pub(crate) injected: u64,
    pub(crate) undelivered: u64,
    /// Key steps that found nothing to do (a key already removed, say).
    pub(crate) failed_steps: u64,
}

impl Sealer {
    pub(crate) fn new(scenario: &Scenario) -> Sealer {
        // A stream of its own: the protocol's draws are untouched.
        let mut rng = ChaCha8Rng::seed_from_u64(scenario.seed ^ 0x5ea1_5ea1_5ea1_5ea1);
        let key: [u8; KEY_LEN] = rng.random();
        let mode = match scenario.sealing {
            Sealing::Staged => Mode::Staged,
            Sealing::Sealed => Mode::Sealed,
            _ => Mode::Plaintext,
        };
        Sealer { mode, keys: vec![key], rng, replays: Vec::new(), injected: 0, undelivered: 0, failed_steps: 0 }
    }

    /// A node's seal at its (first or new) start, `now` seconds after the
    /// simulated epoch. A restarted node keeps its mode and keyring (its
    /// configuration on disk) with a new session; every seal refuses what
    /// was sealed before it started, as the runtime's do
    /// ([`FRESHNESS`]).
    pub(crate) fn seal_for_start(&mut self, previous: Option<&Seal>, now: u64) -> Seal {
        let mode = previous.map_or(self.mode, Seal::mode);
        if mode == Mode::Plaintext {
            return Seal::plaintext(CLUSTER);
        }
        let session = self.rng.random::<u64>();
        let keyring = previous.and_then(Seal::keyring).cloned().unwrap_or_else(|| Keyring::new(self.keys[0]));
        Seal::new(CLUSTER, mode, Some(keyring), session)
            .map(|s| s.with_freshness(FRESHNESS, now))
            .unwrap_or_else(|_| Seal::plaintext(CLUSTER))
    }

    fn id(&self, k: usize) -> KeyId {
        key_id(&self.keys[k])
    }
}

impl Sim {
    /// Starts a rolling rotation: a new key, installed, used, then the old
    /// one removed, each step at a random time per node within `spread`.
    pub(crate) fn start_rotation(&mut self, spread: Duration) {
        let old = self.sealer.keys.len() - 1;
        let key: [u8; KEY_LEN] = self.sealer.rng.random();
        self.sealer.keys.push(key);
        let new = old + 1;
        let now = self.now;
        for i in 0..self.nodes.len() {
            for (step, k) in [(KeyStep::Install(new), 0u32), (KeyStep::Use(new), 1), (KeyStep::Remove(old), 2)] {
                let jitter = spread.mul_f64(self.sealer.rng.random::<f64>());
                let at = now.saturating_add(spread.saturating_mul(k)).saturating_add(jitter);
                self.push(at, Job::Key(i, step));
            }
        }
    }

    /// Starts a rolling rollout of encryption: every node to staged, then
    /// every node to sealed.
    pub(crate) fn start_rollout(&mut self, spread: Duration) {
        let now = self.now;
        for i in 0..self.nodes.len() {
            for (step, k) in [(KeyStep::TakeKey, 0u32), (KeyStep::Stage, 1), (KeyStep::Seal, 2)] {
                let jitter = spread.mul_f64(self.sealer.rng.random::<f64>());
                self.push(now.saturating_add(spread.saturating_mul(k)).saturating_add(jitter), Job::Key(i, step));
            }
        }
    }

    /// One step of a rotation or rollout at node `i` (up or down: its
    /// keyring and mode are its configuration).
    pub(crate) fn key_step(&mut self, i: usize, step: KeyStep) {
        let seal = &mut self.nodes[i].seal;
        let (key, id) = match step {
            KeyStep::Install(k) | KeyStep::Use(k) | KeyStep::Remove(k) => (self.sealer.keys[k], self.sealer.id(k)),
            KeyStep::TakeKey => {
                if seal.keyring().is_none() {
                    seal.set_keyring(Keyring::new(self.sealer.keys[0]));
                    // The seal a plaintext start made keeps no windows:
                    // start a session as a sealing process would.
                    let session = self.sealer.rng.random::<u64>();
                    seal.restart(session);
                }
                return;
            }
            KeyStep::Stage => {
                let staged = seal.set_mode(Mode::Staged).is_ok();
                if !staged {
                    self.sealer.failed_steps += 1;
                }
                return;
            }
            KeyStep::Seal => {
                if seal.set_mode(Mode::Sealed).is_err() {
                    self.sealer.failed_steps += 1;
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
            self.sealer.failed_steps += 1;
        }
    }

    /// What node `i` puts on the wire for `bytes`.
    pub(crate) fn seal_out(&mut self, i: usize, bytes: &[u8]) -> Vec<u8> {
        let now = self.unix_secs();
        self.nodes[i].seal.tick(now);
        self.nodes[i].seal.seal(bytes)
    }

    /// Schedules a copy of a datagram delivered now for every replay that
    /// is capturing.
    /// The hosts' clock, in seconds since the Unix epoch.
    pub(crate) fn unix_secs(&self) -> u64 {
        EPOCH_SECS + since_start(self.now).as_secs()
    }

    pub(crate) fn capture(&mut self, to: usize, from: usize, bytes: &[u8]) {
        let now = self.now;
        self.sealer.replays.retain(|&(until, _)| until > now);
        let delays: Vec<Duration> = self.sealer.replays.iter().map(|&(_, d)| d).collect();
        for delay in delays {
            self.sealer.injected += 1;
            self.push(now.saturating_add(delay), Job::Replayed { to, from, bytes: bytes.to_vec() });
        }
    }

    /// The seals' figures, summed over the nodes.
    pub(crate) fn seal_report(&self) -> SealReport {
        let mut r = SealReport {
            replays_injected: self.sealer.injected,
            replays_undelivered: self.sealer.undelivered,
            ..SealReport::default()
        };
        for n in &self.nodes {
            let s = n.seal.stats();
            r.sealed += s.sealed;
            r.opened += s.opened;
            r.plaintext_accepted += s.plaintext_accepted;
            for (reason, count) in OpenError::REASONS.iter().zip(s.rejected) {
                if count > 0 {
                    *r.rejected.entry(reason).or_default() += count;
                }
            }
        }
        r.key_steps_failed = self.sealer.failed_steps;
        r
    }
}

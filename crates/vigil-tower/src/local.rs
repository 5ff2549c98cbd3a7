//! [`LocalHealth`]: a [`Health`] owned by this process, fed by the layer's
//! outcomes and by whatever heartbeats the application gives it.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use vigil_detector::health::{Health, HealthConfig, HealthEvent, HealthPolicy, Verdict};
use vigil_detector::outlier::{Outcome, OutlierConfig};
use vigil_detector::{AkkaConfig, ConfigError, Instant, ModelConfig};

use crate::source::{Board, Census, RouteChange, Source, Standing};

/// A [`Health`] of this process's own: outlier detection from the outcomes
/// the layer records, φ from the heartbeats given to
/// [`LocalHealth::heartbeat`] (an endpoint never given one is judged by its
/// outcomes only), and one of its policies, the routing policy, deciding
/// which endpoints take requests.
///
/// ```
/// use std::time::Duration;
/// use vigil_tower::{LocalHealth, Outcome, Source, Standing};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let health = LocalHealth::outliers(vigil_tower::OutlierConfig::vigil())?;
/// health.enter("a");
/// // Five gateway failures in a row eject at once.
/// for _ in 0..5 {
///     health.record("a", Outcome::Response(503), Duration::from_millis(2));
/// }
/// assert!(health.standing("a").is_out());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct LocalHealth {
    state: Mutex<State>,
    origin: tokio::time::Instant,
    policy: String,
}

#[derive(Debug)]
struct State {
    health: Health<Arc<str>>,
    board: Board,
}

impl LocalHealth {
    /// Judged by `config`'s policies with detectors built from `model`;
    /// `route` names the policy that takes endpoints out of rotation.
    ///
    /// # Errors
    ///
    /// An invalid configuration, or no policy named `route`.
    pub fn new(model: &ModelConfig, config: HealthConfig, route: &str) -> Result<Arc<LocalHealth>, ConfigError> {
        if !config.policies.iter().any(|p| p.name == route) {
            return Err(ConfigError::Inconsistent { reason: format!("no health policy is named {route:?}") });
        }
        Ok(Arc::new(LocalHealth {
            state: Mutex::new(State { health: Health::new(model, config)?, board: Board::default() }),
            origin: tokio::time::Instant::now(),
            policy: route.to_owned(),
        }))
    }

    /// vigil's routing policy, `route=2,ejection`: out of rotation when
    /// ejected by `outliers`, or when φ reaches 2, from the heartbeats given,
    /// by Akka's model with no acceptable pause and σ at least 100 ms: with
    /// a heartbeat a second, about 1.25 s of silence. Routing reacts fast
    /// and may be wrong often: a wrong verdict costs a few requests sent
    /// elsewhere.
    ///
    /// # Errors
    ///
    /// An invalid outlier setting.
    pub fn outliers(outliers: OutlierConfig) -> Result<Arc<LocalHealth>, ConfigError> {
        let route = HealthPolicy::new("route").phi(2.0).on_ejection();
        let model = ModelConfig::Akka(AkkaConfig {
            acceptable_pause: Duration::ZERO,
            min_std_dev: Duration::from_millis(100),
            ..AkkaConfig::default()
        });
        LocalHealth::new(&model, HealthConfig::new(vec![route], outliers), "route")
    }

    /// The routing policy's name.
    pub fn policy(&self) -> &str {
        &self.policy
    }

    /// A heartbeat from `endpoint` now: from then on it is judged by φ too.
    /// Ignored for an endpoint the layer does not route to.
    pub fn heartbeat(&self, endpoint: &str) {
        let now = self.now();
        let mut s = self.lock();
        let Some(key) = s.board.key(endpoint) else { return };
        let at = self.origin_elapsed(now);
        // Decisions due before this heartbeat are taken without it.
        s.settle(now, at, &self.policy);
        // The registry admits any peer; it refuses only beyond its capacity,
        // far above what a balancer holds.
        let _ = s.health.heartbeat(key, now);
        // A recovery is reported by the next poll: take it now.
        let events = s.health.poll(now);
        s.apply(events, at, &self.policy);
    }

    /// Everything the composition knows of `endpoint` now.
    pub fn report(&self, endpoint: &str) -> Option<vigil_detector::health::PeerHealth> {
        let now = self.now();
        let s = self.lock();
        let key = s.board.key(endpoint)?;
        s.health.report(&key, now)
    }

    fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn origin_elapsed(&self, now: Instant) -> Duration {
        Duration::from_nanos(now.as_nanos())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves counts that are
        // still consistent (every update is a whole step): go on.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// Takes the decisions due, then brings the board in line with the
    /// routing policy for every peer an event names.
    fn settle(&mut self, now: Instant, at: Duration, policy: &str) {
        let mut events = self.health.take_events();
        if self.health.next_deadline().is_some_and(|d| d <= now) {
            events.extend(self.health.poll(now));
        }
        self.apply(events, at, policy);
    }

    fn apply(&mut self, events: Vec<HealthEvent<Arc<str>>>, at: Duration, policy: &str) {
        for e in events {
            // The change is dated when the verdict was reached (a φ crossing
            // is found at its instant, however late the poll).
            let (peer, when) = match e {
                HealthEvent::Fired { peer, at, .. } | HealthEvent::Cleared { peer, at, .. } => (peer, at),
                _ => continue,
            };
            self.sync(&peer, Duration::from_nanos(when.as_nanos()).min(at), policy);
        }
    }

    fn sync(&mut self, peer: &Arc<str>, at: Duration, policy: &str) {
        let out = match self.health.verdict(peer, policy) {
            Some(Verdict::Fired(signal)) => Some(signal),
            _ => None,
        };
        self.board.set(peer, out, at);
    }
}

impl Source for LocalHealth {
    fn record(&self, endpoint: &str, outcome: Outcome, latency: Duration) {
        let now = self.now();
        let mut s = self.lock();
        let Some(key) = s.board.key(endpoint) else { return };
        let at = self.origin_elapsed(now);
        s.settle(now, at, &self.policy);
        // Refused only beyond outlier detection's capacity (100,000 hosts).
        let _ = s.health.record(key, outcome, Some(latency), now);
        let events = s.health.take_events();
        s.apply(events, at, &self.policy);
    }

    fn standing(&self, endpoint: &str) -> Standing {
        let now = self.now();
        let mut s = self.lock();
        s.settle(now, self.origin_elapsed(now), &self.policy);
        s.board.standing(endpoint)
    }

    fn level(&self, endpoint: &str) -> Option<f64> {
        let now = self.now();
        let s = self.lock();
        let key = s.board.key(endpoint)?;
        if !s.health.is_watched(&key) {
            return None;
        }
        s.health.level(&key, now)
    }

    fn enter(&self, endpoint: &str) {
        let now = self.now();
        let mut s = self.lock();
        if let Some(key) = s.board.enter(endpoint) {
            let _ = s.health.track(key.clone(), now);
            s.sync(&key, self.origin_elapsed(now), &self.policy);
        }
    }

    fn exit(&self, endpoint: &str) {
        let now = self.now();
        let mut s = self.lock();
        if let Some(key) = s.board.exit(endpoint) {
            s.health.remove(&key, now);
        }
    }

    fn census(&self) -> Census {
        self.lock().board.census()
    }

    fn changes(&self) -> Vec<RouteChange> {
        self.lock().board.changes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_detector::Model;

    #[tokio::test(start_paused = true)]
    async fn phi_takes_a_silent_endpoint_out_and_a_heartbeat_brings_it_back() {
        let h = LocalHealth::outliers(OutlierConfig::vigil()).unwrap();
        h.enter("a");
        h.enter("b");
        assert_eq!(h.level("a"), None, "not judged by φ before its first heartbeat");
        for _ in 0..20 {
            h.heartbeat("a");
            h.heartbeat("b");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        for _ in 0..10 {
            h.heartbeat("b");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert!(matches!(h.standing("a"), Standing::Out(vigil_detector::health::Signal::Phi { .. })));
        assert_eq!(h.standing("b"), Standing::In);
        assert_eq!(h.census(), Census { known: 2, out: 1 });
        h.heartbeat("a");
        assert_eq!(h.standing("a"), Standing::In);
        let changes = h.changes();
        assert_eq!(changes.len(), 2, "{changes:?}");
        // Heartbeats every second, σ at its 100 ms floor: φ = 2 after
        // 1 s + 2.33 σ, about 1.25 s of silence.
        let silent = changes[0].at - Duration::from_secs(19);
        assert!(silent > Duration::from_millis(1100) && silent < Duration::from_millis(1400), "{silent:?}");
    }

    #[tokio::test]
    async fn an_endpoint_dropped_is_forgotten() {
        let h = LocalHealth::outliers(OutlierConfig::vigil()).unwrap();
        h.enter("a");
        for _ in 0..5 {
            h.record("a", Outcome::ConnectFailed, Duration::ZERO);
        }
        assert_eq!(h.census(), Census { known: 1, out: 1 });
        h.exit("a");
        assert_eq!(h.census(), Census::default());
        h.record("a", Outcome::Response(200), Duration::ZERO);
        assert!(h.report("a").is_none(), "outcomes for an endpoint not routed to are ignored");
    }

    #[test]
    fn the_routing_policy_must_exist() {
        let config = HealthConfig::new(vec![HealthPolicy::new("route").phi(2.0)], OutlierConfig::vigil());
        let e = LocalHealth::new(&ModelConfig::default_for(Model::Akka), config, "drain").unwrap_err();
        assert!(e.to_string().contains("\"drain\""), "{e}");
    }
}

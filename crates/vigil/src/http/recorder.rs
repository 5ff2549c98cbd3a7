//! What the agent does with each event and once a second: the event
//! history, the metrics, and the inter-arrival samples.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use vigil_detector::Instant;
use vigil_net::{Cluster, ClusterEvent};

use super::history::History;
use super::metrics::Metrics;
use super::views::event_json;

/// φ samples kept per watched member for the dashboard: two minutes at
/// one a second.
pub(crate) const PHI_SAMPLES: usize = 120;

/// The last [`PHI_SAMPLES`] levels of each watched member: `(ms since the
/// epoch, φ)`, `None` before the first heartbeat.
pub(crate) type PhiHistory = HashMap<String, VecDeque<(u64, Option<f64>)>>;

/// Records one member's events into its history and metrics, and samples
/// its watched members' levels.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    pub(crate) history: Arc<History>,
    pub(crate) metrics: Arc<Mutex<Metrics>>,
    pub(crate) phi: Arc<Mutex<PhiHistory>>,
}

impl Recorder {
    pub(crate) fn new(history_len: usize) -> Recorder {
        Recorder {
            history: Arc::new(History::new(history_len)),
            metrics: Arc::new(Mutex::new(Metrics::new())),
            phi: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub(crate) fn metrics(&self) -> std::sync::MutexGuard<'_, Metrics> {
        self.metrics.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The φ samples, copied.
    pub(crate) fn phi_history(&self) -> PhiHistory {
        self.phi.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Records `e`, an event of member `node`; returns it as JSON (`None`
    /// for events of no interest outside).
    pub(crate) fn record(&self, node: &str, e: &ClusterEvent) -> Option<Value> {
        self.metrics().observe(&e.event);
        let v = event_json(node, e.unix_ms, &e.event)?;
        self.metrics().event();
        self.history.push(v.to_string());
        Some(v)
    }

    /// Samples the member's watched levels and new heartbeat intervals once
    /// a second, until it stops.
    pub(crate) async fn sample(self, cluster: Arc<Cluster>) {
        let mut last: HashMap<String, (u64, Instant)> = HashMap::new();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Ok(s) = cluster.snapshot().await else { return };
            self.metrics().sample(&s);
            {
                let mut phi = self.phi.lock().unwrap_or_else(PoisonError::into_inner);
                phi.retain(|name, _| s.node.watched.iter().any(|w| w.name == *name));
                for w in &s.node.watched {
                    let ring = phi.entry(w.name.clone()).or_default();
                    if ring.len() == PHI_SAMPLES {
                        ring.pop_front();
                    }
                    ring.push_back((s.unix_ms, w.heard.then_some(w.level)));
                }
            }
            last.retain(|name, _| s.node.watched.iter().any(|w| w.name == *name));
            if s.node.recorded_arrivals == 0 {
                continue;
            }
            for w in &s.node.watched {
                let prev = last.get(&w.name).filter(|(g, _)| *g == w.generation).map(|(_, t)| *t);
                let Ok(Some(vigil_net::Recorded { arrivals, .. })) = cluster.arrivals(&w.name, prev).await else {
                    continue;
                };
                let mut before = prev;
                let mut gaps = Vec::with_capacity(arrivals.times.len());
                for &t in &arrivals.times {
                    if let Some(b) = before {
                        gaps.push(t - b);
                    }
                    before = Some(t);
                }
                if let Some(b) = before {
                    last.insert(w.name.clone(), (w.generation, b));
                }
                self.metrics().intervals(&w.name, gaps);
            }
        }
    }
}

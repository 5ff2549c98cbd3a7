//! What the agent keeps of its member: the event history, the metrics, and
//! φ and heartbeat intervals sampled once a second.
//!
//! ```
//! use vigil_agent::record::{EventRecord, Sink};
//! use vigil_agent::recorder::Recorder;
//!
//! let recorder = Recorder::new(2);
//! for n in 1..=3 {
//!     recorder.record(&EventRecord::missed("a", n, n, Sink::Stdout));
//! }
//! let kept = recorder.history.after(0);
//! assert_eq!((kept.entries.len(), kept.missed), (2, 1));
//! ```

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use vigil_detector::Instant;
use vigil_net::{Cluster, Recorded};

use crate::defaults::{PHI_SAMPLES, SAMPLE_INTERVAL};
use crate::history::History;
use crate::metrics::Metrics;
use crate::record::EventRecord;

/// The last [`PHI_SAMPLES`] levels of each watched member: `(ms since the
/// epoch, φ)`, `None` before the first heartbeat.
pub type PhiHistory = HashMap<String, VecDeque<(u64, Option<f64>)>>;

/// Records one member's events into its history and metrics, and samples
/// its watched members' levels. Clones share what they keep.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// The events kept for resuming clients.
    pub history: Arc<History>,
    metrics: Arc<Mutex<Metrics>>,
    phi: Arc<Mutex<PhiHistory>>,
}

impl Recorder {
    /// A recorder keeping the newest `history_len` events.
    pub fn new(history_len: usize) -> Recorder {
        Recorder {
            history: Arc::new(History::new(history_len)),
            metrics: Arc::new(Mutex::new(Metrics::new())),
            phi: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The metrics, locked.
    pub fn metrics(&self) -> MutexGuard<'_, Metrics> {
        self.metrics.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The φ samples, copied.
    pub fn phi_history(&self) -> PhiHistory {
        self.phi.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Records `r` into the metrics and the history; returns its JSON line.
    pub fn record(&self, r: &EventRecord) -> String {
        let line = r.to_line();
        {
            let mut m = self.metrics();
            m.observe(&r.node, &r.what);
            m.event();
        }
        self.history.push(line.clone());
        line
    }

    /// Samples the member's watched levels and new heartbeat intervals once
    /// a second, until it stops.
    pub async fn sample(self, member: Arc<Cluster>) {
        let mut last: HashMap<String, (u64, Instant)> = HashMap::new();
        let mut tick = tokio::time::interval(SAMPLE_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Ok(s) = member.snapshot().await else { return };
            self.metrics().sample(&s);
            {
                let mut phi = self.phi.lock().unwrap_or_else(PoisonError::into_inner);
                phi.retain(|name, _| s.node.watch(name).is_some());
                for w in &s.node.watched {
                    let ring = phi.entry(w.name.clone()).or_default();
                    if ring.len() == PHI_SAMPLES {
                        ring.pop_front();
                    }
                    ring.push_back((s.unix_ms, w.heard.then_some(w.level)));
                }
            }
            last.retain(|name, _| s.node.watch(name).is_some());
            if s.node.recorded_arrivals == 0 {
                continue;
            }
            for w in &s.node.watched {
                let prev = last.get(&w.name).filter(|(g, _)| *g == w.generation).map(|(_, t)| *t);
                let Ok(Some(Recorded { arrivals, .. })) = member.arrivals(&w.name, prev).await else { continue };
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

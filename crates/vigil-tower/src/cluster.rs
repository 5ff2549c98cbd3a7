//! [`ClusterHealth`]: the health view of an embedded vigil member, whose φ
//! comes from the endpoints' own heartbeats (feature `cluster`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::mpsc;
use vigil_detector::health::Signal;
use vigil_detector::outlier::Outcome;
use vigil_net::{Cluster, Event, RequestOutcome};

use crate::source::{Board, Census, RouteChange, Source, Standing};

/// Outcomes and watch requests queued for the member at most; beyond,
/// outcomes are dropped and counted ([`ClusterHealth::dropped`]).
pub const QUEUE: usize = 8192;

/// How often the levels the load weighs are read again.
const LEVELS_EVERY: Duration = Duration::from_millis(500);

/// Verdicts from a running [`Cluster`] member: an endpoint is out of
/// rotation while the member's routing policy (one of
/// [`Config::policies`](vigil_net::Config::policies), say
/// `route=2,ejection`) has fired for it, and from its death or departure
/// until it comes back. Each endpoint is the member of the same name,
/// watched from the moment the layer routes to it, so φ is judged from its
/// own heartbeats; outcomes go to the member's outlier detection
/// ([`Cluster::record_outcomes`]) in batches, without blocking the request.
///
/// Made inside a tokio runtime: a task follows the member's events.
///
/// ```
/// use std::sync::Arc;
/// use vigil_net::{Cluster, Config, DEFAULT_CLUSTER};
/// use vigil_tower::{ClusterHealth, HealthLayer};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut config = Config::lan(DEFAULT_CLUSTER);
/// config.policies = vec!["route=2,ejection".parse()?];
/// let cluster = Arc::new(Cluster::builder("client").bind("127.0.0.1:0".parse()?).config(config).start().await?);
/// let health = ClusterHealth::new(cluster, "route");
/// let layer = HealthLayer::new(health);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct ClusterHealth {
    shared: Arc<Shared>,
    tx: mpsc::Sender<Ask>,
}

#[derive(Debug)]
struct Shared {
    board: Mutex<Board>,
    origin: tokio::time::Instant,
    dropped: AtomicU64,
}

impl Shared {
    fn board(&self) -> MutexGuard<'_, Board> {
        self.board.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn at(&self) -> Duration {
        self.origin.elapsed()
    }
}

#[derive(Debug)]
enum Ask {
    Outcome(RequestOutcome),
    Watch(String),
    Unwatch(String),
}

impl ClusterHealth {
    /// Follows `cluster`'s verdicts of the policy named `route`. A name no
    /// policy has never fires: check the member's configuration.
    pub fn new(cluster: Arc<Cluster>, route: &str) -> Arc<ClusterHealth> {
        let shared = Arc::new(Shared {
            board: Mutex::new(Board::default()),
            origin: tokio::time::Instant::now(),
            dropped: AtomicU64::new(0),
        });
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(follow(cluster, route.to_owned(), shared.clone(), rx));
        Arc::new(ClusterHealth { shared, tx })
    }

    /// Outcomes dropped because the member was not taking them fast enough
    /// (more than [`QUEUE`] waiting), or had stopped.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }
}

impl Source for ClusterHealth {
    fn record(&self, endpoint: &str, outcome: Outcome, latency: Duration) {
        let ask = Ask::Outcome(RequestOutcome { member: endpoint.to_owned(), outcome, latency: Some(latency) });
        if self.tx.try_send(ask).is_err() {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn standing(&self, endpoint: &str) -> Standing {
        self.shared.board().standing(endpoint)
    }

    fn level(&self, endpoint: &str) -> Option<f64> {
        self.shared.board().level(endpoint)
    }

    fn enter(&self, endpoint: &str) {
        if self.shared.board().enter(endpoint).is_some() {
            // A full queue loses the watch; the endpoint is still judged
            // by the member's own monitoring and outlier detection.
            let _ = self.tx.try_send(Ask::Watch(endpoint.to_owned()));
        }
    }

    fn exit(&self, endpoint: &str) {
        if self.shared.board().exit(endpoint).is_some() {
            let _ = self.tx.try_send(Ask::Unwatch(endpoint.to_owned()));
        }
    }

    fn census(&self) -> Census {
        self.shared.board().census()
    }

    fn changes(&self) -> Vec<RouteChange> {
        self.shared.board().changes()
    }
}

/// Follows the member's events and passes the layer's asks on, until the
/// member stops or the source is dropped.
async fn follow(cluster: Arc<Cluster>, route: String, shared: Arc<Shared>, mut rx: mpsc::Receiver<Ask>) {
    let mut events = cluster.events();
    let mut levels = tokio::time::interval(LEVELS_EVERY);
    levels.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut batch = Vec::new();
    loop {
        tokio::select! {
            e = events.next() => {
                let Some(e) = e else { break };
                let at = shared.at();
                let mut board = shared.board();
                match e.event {
                    Event::Policy { id, policy, fired, signal, .. } if policy == route => {
                        board.set(&id.name, fired.then_some(signal), at);
                    }
                    // A new process starts afresh.
                    Event::Up { id, .. } => board.set(&id.name, None, at),
                    Event::Dead { id, .. } | Event::Left { id } => {
                        board.set(&id.name, Some(Signal::Phi { level: None }), at);
                    }
                    _ => {}
                }
            }
            n = rx.recv_many(&mut batch, 1024) => {
                if n == 0 {
                    break;
                }
                let mut outcomes = Vec::new();
                for ask in batch.drain(..) {
                    let done = match ask {
                        Ask::Outcome(o) => {
                            outcomes.push(o);
                            Ok(())
                        }
                        Ask::Watch(name) => cluster.watch(&name).await,
                        Ask::Unwatch(name) => cluster.unwatch(&name).await,
                    };
                    if done.is_err() {
                        break;
                    }
                }
                if !outcomes.is_empty() {
                    let n = outcomes.len() as u64;
                    if cluster.record_outcomes(outcomes).await.is_err() {
                        shared.dropped.fetch_add(n, Ordering::Relaxed);
                    }
                }
            }
            _ = levels.tick() => {
                let names: Vec<Arc<str>> = shared.board().keys().cloned().collect();
                for name in names {
                    let Ok(report) = cluster.watch_report(&name).await else { return };
                    let level = report.filter(|r| r.heard).map(|r| r.level);
                    shared.board().set_level(&name, level);
                }
            }
        }
    }
}

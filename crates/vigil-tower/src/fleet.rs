//! Real tower balancers under the fleet lab's closed loop (feature `lab`):
//! the same fleet and faults as vigil's built-in setups
//! ([`vigil_lab::fleet`]), drawn from the same seed, with every request
//! routed by an actual tower stack on a tokio runtime whose clock is the
//! run's virtual time. (A stack makes its own choices, so the draws that
//! follow differ from a built-in setup's: the request count of a run
//! differs by a fraction of a percent.)
//!
//! Unlike the built-in setups, which record a request's outcome when it is
//! sent, a stack learns it when the response arrives, after its latency,
//! as it would in a service.
//!
//! Each host is a tower service that answers what the lab draws for it,
//! after the drawn latency (virtual). The stacks ([`STACKS`]):
//!
//! - `p2c`: tower's power of two choices over tower's PeakEWMA, as a
//!   service using tower alone routes: an endpoint leaves only when its
//!   `poll_ready` fails, which a failing request does not make it do;
//! - `p2c-accrual`: the same, each endpoint behind consecutive-failure
//!   accrual with linkerd2-proxy's defaults (7 failures in a row make it
//!   unavailable for an exponential backoff from 1 s to 60 s, jitter 0.5;
//!   then one probe request decides), written here after linkerd2's
//!   documented behaviour;
//! - `consecutive-eject`: the same, each endpoint behind consecutive-error
//!   ejection with tower-resilience's documented semantics (5 errors in a
//!   row eject, for 30 s times the number of ejections, at most 50 % of
//!   the fleet; back when the time is up), written here after its
//!   documentation: its own crate reads the wall clock, so it cannot run
//!   on the lab's virtual one. A 5xx counts as an error, as its users
//!   configure it for HTTP;
//! - `vigil-tower`: this crate, composed: [`HealthLayer`] over
//!   [`LocalHealth::outliers`] fed the hosts' heartbeats, balanced by
//!   [`balance_seeded`] (panic threshold 50 %).
//!
//! Every random choice (the balancers', the backoffs' jitter) comes from the
//! run's seed.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant as Clock;
use tower::balance::p2c::Balance;
use tower::discover::ServiceList;
use tower::load::{CompleteOnResponse, PeakEwma};
use tower::util::BoxService;
use tower::{Layer, Service};
use vigil_detector::Instant;
use vigil_detector::outlier::{Outcome, OutlierConfig};
use vigil_lab::fleet::{FleetResult, FleetScenario, Hosts, Router, run_router};

use crate::guard::SplitMix;
use crate::{AllOut, BoxError, HealthLayer, LocalHealth, Source, balance_seeded};

/// The stacks, by name.
pub const STACKS: [&str; 4] = ["p2c", "p2c-accrual", "consecutive-eject", "vigil-tower"];

/// A name that is not one of [`STACKS`], or a scenario the lab refuses.
#[derive(Debug, Clone, PartialEq)]
pub enum FleetError {
    /// Not a stack.
    UnknownStack(String),
    /// The scenario is invalid.
    Scenario(vigil_detector::ConfigError),
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetError::UnknownStack(s) => {
                write!(f, "'{}' is not a tower stack ({})", s.escape_debug(), STACKS.join(", "))
            }
            FleetError::Scenario(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for FleetError {}

/// Runs `scenario` with requests routed by the tower stack named `stack`,
/// seeded.
///
/// ```
/// use vigil_lab::fleet::FleetScenario;
///
/// let mut crash = FleetScenario::builtin("low-traffic-crash").unwrap();
/// crash.duration_ms = 120_000.0;
/// let p2c = vigil_tower::fleet::run(&crash, "p2c", 1)?;
/// let vigil = vigil_tower::fleet::run(&crash, "vigil-tower", 1)?;
/// assert!(p2c.stopped_routing_after_ms.is_none(), "p2c never learns of a crash");
/// assert!(vigil.stopped_routing_after_ms.is_some(), "heartbeats tell");
/// assert_eq!(vigil.requests_to_bad_host, 0);
/// # Ok::<(), vigil_tower::fleet::FleetError>(())
/// ```
///
/// # Errors
///
/// An unknown stack, or an invalid scenario.
pub fn run(scenario: &FleetScenario, stack: &str, seed: u64) -> Result<FleetResult, FleetError> {
    scenario.validate().map_err(FleetError::Scenario)?;
    let mut router = TowerRouter::new(stack, scenario.hosts, seed)?;
    run_router(scenario, stack, &mut router, seed).map_err(FleetError::Scenario)
}

type Answer = (Outcome, Option<Duration>);
/// The request being routed: the host whose service was called, and where
/// its answer goes.
type Slot = Arc<Mutex<Option<(u32, oneshot::Sender<Answer>)>>>;
type Response = http::Response<()>;
type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A host: answers what the lab drew for it, after the drawn latency.
#[derive(Clone)]
struct VirtualHost {
    id: u32,
    slot: Slot,
}

impl Service<()> for VirtualHost {
    type Response = Response;
    type Error = BoxError;
    type Future = BoxFuture<Result<Response, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        let (tx, rx) = oneshot::channel();
        *lock(&self.slot) = Some((self.id, tx));
        Box::pin(async move {
            let (outcome, latency) = rx.await.map_err(|_| "the lab drew no answer")?;
            if let Some(l) = latency {
                tokio::time::sleep(l).await;
            }
            match outcome {
                Outcome::Response(code) => Ok(http::Response::builder().status(code).body(()).expect("a status")),
                Outcome::Timeout => Err(Box::new(tower::timeout::error::Elapsed::new()) as BoxError),
                Outcome::ConnectFailed | Outcome::Connected => {
                    Err(Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)) as BoxError)
                }
            }
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Tower's PeakEWMA around an endpoint, as linkerd2 configures it (30 ms
/// before the first answer, 10 s decay).
fn ewma<S>(s: S) -> PeakEwma<S, CompleteOnResponse> {
    PeakEwma::new(s, Duration::from_millis(30), 10e9, CompleteOnResponse::default())
}

/// Whether a result counts as a failure for the consecutive counters.
fn failed(r: &Result<Response, BoxError>) -> bool {
    r.as_ref().map_or(true, |res| res.status().is_server_error())
}

/// A stack on a runtime whose clock is the lab's.
struct TowerRouter {
    rt: tokio::runtime::Runtime,
    origin: Clock,
    balancer: BoxService<(), Response, BoxError>,
    slot: Slot,
    away: Box<dyn Fn(u32) -> bool>,
    heartbeat: Box<dyn Fn(u32)>,
}

impl TowerRouter {
    fn new(stack: &str, hosts: u32, seed: u64) -> Result<TowerRouter, FleetError> {
        if !STACKS.contains(&stack) {
            return Err(FleetError::UnknownStack(stack.to_owned()));
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a current-thread runtime builds");
        let slot: Slot = Arc::new(Mutex::new(None));
        let host = |id: u32| VirtualHost { id, slot: slot.clone() };
        let (origin, balancer, away, heartbeat) = rt.block_on(async {
            let origin = Clock::now();
            let none = |_: u32| false;
            type Parts = (BoxService<(), Response, BoxError>, Box<dyn Fn(u32) -> bool>, Box<dyn Fn(u32)>);
            let parts: Parts = match stack {
                "p2c" => {
                    let list: Vec<_> = (0..hosts).map(|h| ewma(host(h))).collect();
                    (
                        BoxService::new(Balance::from_rng(ServiceList::new(list), SplitMix(seed))),
                        Box::new(none),
                        Box::new(|_| {}),
                    )
                }
                "p2c-accrual" => {
                    let states: Vec<_> =
                        (0..hosts).map(|h| Arc::new(Mutex::new(Accrual::new(seed ^ u64::from(h))))).collect();
                    let list: Vec<_> = (0..hosts)
                        .map(|h| ewma(Accruing { inner: host(h), state: states[h as usize].clone(), wait: None }))
                        .collect();
                    let away = move |h: u32| states.get(h as usize).is_some_and(|s| lock(s).away(Clock::now()));
                    (
                        BoxService::new(Balance::from_rng(ServiceList::new(list), SplitMix(seed))),
                        Box::new(away),
                        Box::new(|_| {}),
                    )
                }
                "consecutive-eject" => {
                    let detector = Arc::new(Mutex::new(Ejector::new(hosts)));
                    let list: Vec<_> = (0..hosts)
                        .map(|h| ewma(Ejecting { inner: host(h), id: h, detector: detector.clone(), wait: None }))
                        .collect();
                    let away = move |h: u32| lock(&detector).ejected(h, Clock::now());
                    (
                        BoxService::new(Balance::from_rng(ServiceList::new(list), SplitMix(seed))),
                        Box::new(away),
                        Box::new(|_| {}),
                    )
                }
                _ => {
                    let health = LocalHealth::outliers(OutlierConfig::vigil()).expect("vigil's preset is valid");
                    let layer = HealthLayer::new(health.clone());
                    let names: Vec<String> = (0..hosts).map(|h| format!("h{h}")).collect();
                    let list: Vec<_> = (0..hosts).map(|h| layer.endpoint(&names[h as usize]).layer(host(h))).collect();
                    let balancer = balance_seeded(ServiceList::new(list), health.clone(), AllOut::default(), seed);
                    let judged = health.clone();
                    let names2 = names.clone();
                    let away = move |h: u32| names2.get(h as usize).is_some_and(|n| judged.standing(n).is_out());
                    let beat = move |h: u32| {
                        if let Some(n) = names.get(h as usize) {
                            health.heartbeat(n);
                        }
                    };
                    (BoxService::new(balancer), Box::new(away), Box::new(beat))
                }
            };
            (origin, parts.0, parts.1, parts.2)
        });
        Ok(TowerRouter { rt, origin, balancer, slot, away, heartbeat })
    }

    /// Lets virtual time pass to `now`: every timer due on the way fires at
    /// its own instant, and every response due completes.
    fn advance(&mut self, now: Instant) {
        let target = self.origin + Duration::from_nanos(now.as_nanos());
        self.rt.block_on(async move {
            if target > Clock::now() {
                tokio::time::sleep_until(target).await;
            }
            tokio::task::yield_now().await;
        });
    }
}

impl Router for TowerRouter {
    fn heartbeat(&mut self, host: u32, now: Instant) {
        self.advance(now);
        let _in_runtime = self.rt.enter();
        (self.heartbeat)(host);
    }

    fn poll(&mut self, now: Instant) {
        self.advance(now);
    }

    fn next_deadline(&mut self) -> Option<Instant> {
        None
    }

    fn route(&mut self, now: Instant, hosts: &mut dyn Hosts) -> Option<u32> {
        self.advance(now);
        let balancer = &mut self.balancer;
        let ready = self.rt.block_on(std::future::poll_fn(|cx| Poll::Ready(balancer.poll_ready(cx))));
        if !matches!(ready, Poll::Ready(Ok(()))) {
            return None;
        }
        let response = {
            let _in_runtime = self.rt.enter();
            self.balancer.call(())
        };
        let (host, answer) = lock(&self.slot).take()?;
        let _ = answer.send(hosts.answer(host));
        self.rt.spawn(async move {
            let _ = response.await;
        });
        Some(host)
    }

    fn routed_away(&self, host: u32) -> bool {
        let _in_runtime = self.rt.enter();
        (self.away)(host)
    }
}

/// Consecutive-failure accrual after linkerd2-proxy's defaults.
#[derive(Debug)]
struct Accrual {
    state: AccrualState,
    /// Backoffs taken since the endpoint was last available.
    attempt: u32,
    jitter: SplitMix,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum AccrualState {
    /// Failures in a row so far.
    Available(u32),
    /// Held back until then.
    Unavailable(Clock),
    /// One probe allowed; whether it is out.
    Probation(bool),
}

/// Failures in a row that make an endpoint unavailable.
const ACCRUAL_FAILURES: u32 = 7;
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
const BACKOFF_JITTER: f64 = 0.5;

impl Accrual {
    fn new(seed: u64) -> Accrual {
        Accrual { state: AccrualState::Available(0), attempt: 0, jitter: SplitMix(seed) }
    }

    fn away(&self, now: Clock) -> bool {
        match self.state {
            AccrualState::Available(_) => false,
            AccrualState::Unavailable(until) => now < until,
            AccrualState::Probation(_) => false,
        }
    }

    fn back_off(&mut self, now: Clock) {
        use tower::util::rng::Rng;
        let base = BACKOFF_MIN.saturating_mul(1u32 << self.attempt.min(16)).min(BACKOFF_MAX);
        let jittered = base.mul_f64(1.0 + BACKOFF_JITTER * self.jitter.next_f64());
        self.attempt += 1;
        self.state = AccrualState::Unavailable(now + jittered);
    }

    fn outcome(&mut self, failure: bool, now: Clock) {
        match (self.state, failure) {
            (AccrualState::Available(n), true) if n + 1 >= ACCRUAL_FAILURES => self.back_off(now),
            (AccrualState::Available(n), true) => self.state = AccrualState::Available(n + 1),
            (AccrualState::Available(_), false) => self.state = AccrualState::Available(0),
            (AccrualState::Probation(_), true) => self.back_off(now),
            (AccrualState::Probation(_), false) => {
                self.attempt = 0;
                self.state = AccrualState::Available(0);
            }
            // Answers to requests sent before it became unavailable.
            (AccrualState::Unavailable(_), _) => {}
        }
    }
}

struct Accruing<S> {
    inner: S,
    state: Arc<Mutex<Accrual>>,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S: Service<(), Response = Response, Error = BoxError>> Service<()> for Accruing<S>
where
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = BoxError;
    type Future = BoxFuture<Result<Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        let until = {
            let mut a = lock(&self.state);
            match a.state {
                AccrualState::Available(_) | AccrualState::Probation(false) => None,
                AccrualState::Probation(true) => Some(Clock::now() + Duration::from_millis(100)),
                AccrualState::Unavailable(until) if Clock::now() >= until => {
                    a.state = AccrualState::Probation(false);
                    None
                }
                AccrualState::Unavailable(until) => Some(until),
            }
        };
        match until {
            None => {
                self.wait = None;
                self.inner.poll_ready(cx)
            }
            Some(until) => {
                let wait = self.wait.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
                wait.as_mut().reset(until);
                let _ = wait.as_mut().poll(cx);
                Poll::Pending
            }
        }
    }

    fn call(&mut self, req: ()) -> Self::Future {
        {
            let mut a = lock(&self.state);
            if a.state == AccrualState::Probation(false) {
                a.state = AccrualState::Probation(true);
            }
        }
        let state = self.state.clone();
        let response = self.inner.call(req);
        Box::pin(async move {
            let r = response.await;
            lock(&state).outcome(failed(&r), Clock::now());
            r
        })
    }
}

/// Consecutive-error ejection with tower-resilience's documented semantics.
#[derive(Debug)]
struct Ejector {
    hosts: HashMap<u32, Ejectee>,
}

#[derive(Debug, Default)]
struct Ejectee {
    errors: u32,
    ejections: u32,
    until: Option<Clock>,
}

const EJECT_ERRORS: u32 = 5;
const EJECT_BASE: Duration = Duration::from_secs(30);
const EJECT_MAX_PERCENT: f64 = 50.0;

impl Ejector {
    fn new(hosts: u32) -> Ejector {
        Ejector { hosts: (0..hosts).map(|h| (h, Ejectee::default())).collect() }
    }

    /// Whether `h` is ejected at `now`; an ejection whose time is up ends
    /// here, its count of errors reset.
    fn ejected(&mut self, h: u32, now: Clock) -> bool {
        let Some(e) = self.hosts.get_mut(&h) else { return false };
        match e.until {
            Some(until) if now >= until => {
                e.until = None;
                e.errors = 0;
                false
            }
            Some(_) => true,
            None => false,
        }
    }

    fn outcome(&mut self, h: u32, failure: bool, now: Clock) {
        let total = self.hosts.len();
        let ejected = self.hosts.values().filter(|e| e.until.is_some_and(|u| now < u)).count();
        let Some(e) = self.hosts.get_mut(&h) else { return };
        if e.until.is_some() {
            return;
        }
        if !failure {
            e.errors = 0;
            return;
        }
        e.errors += 1;
        if e.errors >= EJECT_ERRORS && (ejected + 1) as f64 / total as f64 * 100.0 <= EJECT_MAX_PERCENT {
            e.ejections += 1;
            e.until = Some(now + EJECT_BASE.saturating_mul(e.ejections));
        }
    }
}

struct Ejecting<S> {
    inner: S,
    id: u32,
    detector: Arc<Mutex<Ejector>>,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S: Service<(), Response = Response, Error = BoxError>> Service<()> for Ejecting<S>
where
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = BoxError;
    type Future = BoxFuture<Result<Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        let until = {
            let mut d = lock(&self.detector);
            if d.ejected(self.id, Clock::now()) { d.hosts.get(&self.id).and_then(|e| e.until) } else { None }
        };
        match until {
            None => {
                self.wait = None;
                self.inner.poll_ready(cx)
            }
            Some(until) => {
                let wait = self.wait.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
                wait.as_mut().reset(until);
                let _ = wait.as_mut().poll(cx);
                Poll::Pending
            }
        }
    }

    fn call(&mut self, req: ()) -> Self::Future {
        let detector = self.detector.clone();
        let id = self.id;
        let response = self.inner.call(req);
        Box::pin(async move {
            let r = response.await;
            lock(&detector).outcome(id, failed(&r), Clock::now());
            r
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accrual_backs_off_after_seven_failures_and_a_probe_decides() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        rt.block_on(async {
            let t0 = Clock::now();
            let mut a = Accrual::new(1);
            for _ in 0..6 {
                a.outcome(true, t0);
            }
            assert!(!a.away(t0));
            a.outcome(true, t0);
            let AccrualState::Unavailable(until) = a.state else { panic!("{:?}", a.state) };
            let backoff = until - t0;
            assert!(backoff >= BACKOFF_MIN && backoff <= BACKOFF_MIN.mul_f64(1.5), "{backoff:?}");
            a.state = AccrualState::Probation(true);
            a.outcome(true, until);
            let AccrualState::Unavailable(next) = a.state else { panic!() };
            assert!(next - until >= 2 * BACKOFF_MIN, "the second backoff doubles");
            a.state = AccrualState::Probation(true);
            a.outcome(false, next);
            assert_eq!(a.state, AccrualState::Available(0));
        });
    }

    #[test]
    fn ejection_is_capped_and_lasts_longer_each_time() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        rt.block_on(async {
            let t0 = Clock::now();
            let mut d = Ejector::new(4);
            for h in 0..3 {
                for _ in 0..EJECT_ERRORS {
                    d.outcome(h, true, t0);
                }
            }
            let out: Vec<bool> = (0..4).map(|h| d.ejected(h, t0)).collect();
            assert_eq!(out, [true, true, false, false], "at most 50 % of 4");
            assert!(!d.ejected(0, t0 + EJECT_BASE), "back after 30 s");
            for _ in 0..EJECT_ERRORS {
                d.outcome(0, true, t0 + EJECT_BASE);
            }
            assert!(d.ejected(0, t0 + EJECT_BASE * 2 + Duration::from_secs(29)), "60 s the second time");
        });
    }

    #[test]
    fn unknown_stacks_are_named() {
        let s = FleetScenario::builtin("crash").unwrap();
        assert_eq!(
            run(&s, "envoy", 1).unwrap_err().to_string(),
            "'envoy' is not a tower stack (p2c, p2c-accrual, consecutive-eject, vigil-tower)"
        );
    }
}

//! [`HealthLayer`]: wraps each endpoint's service, records what became of
//! every request, and holds the endpoint back while the routing policy
//! keeps it out of rotation.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::time::{Instant, Sleep};
use tower::load::Load;
use tower::{Layer, Service};

use crate::BoxError;
use crate::classify::{Classify, HttpClassifier};
use crate::source::{Source, Standing};

/// What to do when endpoints are out of rotation and too few are left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AllOut {
    /// Envoy's panic threshold: while the share in rotation is below
    /// `below` (0 to 1), route to every endpoint as if none were out (a
    /// fleet mostly judged bad is more likely judged wrongly than bad).
    /// `Panic { below: 0.5 }` is Envoy's default; `below: 0.0` never
    /// panics, and requests wait while every endpoint is out.
    Panic {
        /// The share in rotation under which the rule applies.
        below: f64,
    },
    /// Fail fast: when every endpoint is out (or none is known), the
    /// balancer's [`Guard`](crate::Guard) fails each request at once with
    /// [`NoEndpoint`](crate::NoEndpoint) instead of waiting.
    FailFast,
}

impl Default for AllOut {
    /// `Panic { below: 0.5 }`.
    fn default() -> AllOut {
        AllOut::Panic { below: 0.5 }
    }
}

/// The layer's settings; [`HealthLayer`]'s builder methods set them.
#[derive(Debug, Clone)]
struct Settings {
    all_out: AllOut,
    recheck: Duration,
    phi_weight: f64,
    default_rtt: Duration,
    decay: Duration,
}

/// Wraps endpoints' services so that outcomes are recorded into a
/// [`Source`] and readiness follows its routing policy. One layer serves a
/// whole balancer: [`HealthLayer::endpoint`] names the endpoint a service
/// reaches.
///
/// ```
/// use std::convert::Infallible;
/// use tower::{Layer, Service, ServiceExt};
/// use vigil_tower::{HealthLayer, LocalHealth, OutlierConfig, Source};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), vigil_tower::BoxError> {
/// let health = LocalHealth::outliers(OutlierConfig::vigil())?;
/// let layer = HealthLayer::new(health.clone());
/// // An endpoint whose every answer is a 503.
/// let inner = tower::service_fn(|_: http::Request<()>| async {
///     Ok::<_, Infallible>(http::Response::builder().status(503).body(()).unwrap())
/// });
/// let mut svc = layer.endpoint("billing-1").layer(inner);
/// for _ in 0..5 {
///     svc.ready().await?.call(http::Request::new(())).await?;
/// }
/// assert!(health.standing("billing-1").is_out(), "ejected after five 503s");
/// # Ok(())
/// # }
/// ```
pub struct HealthLayer<C = HttpClassifier> {
    source: Arc<dyn Source>,
    classify: C,
    settings: Arc<Settings>,
}

impl<C: Clone> Clone for HealthLayer<C> {
    fn clone(&self) -> Self {
        HealthLayer { source: self.source.clone(), classify: self.classify.clone(), settings: self.settings.clone() }
    }
}

impl<C> fmt::Debug for HealthLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthLayer").field("source", &self.source).field("settings", &self.settings).finish()
    }
}

impl HealthLayer<HttpClassifier> {
    /// A layer over `source`, classifying HTTP and gRPC responses
    /// ([`HttpClassifier`]), with the panic rule at 50 %
    /// ([`AllOut::default`]).
    pub fn new(source: Arc<dyn Source>) -> HealthLayer<HttpClassifier> {
        HealthLayer {
            source,
            classify: HttpClassifier,
            settings: Arc::new(Settings {
                all_out: AllOut::default(),
                recheck: Duration::from_millis(100),
                phi_weight: 1.0,
                default_rtt: Duration::from_millis(30),
                decay: Duration::from_secs(10),
            }),
        }
    }
}

impl<C> HealthLayer<C> {
    /// Classifies responses with `classify` instead.
    pub fn classify<C2>(self, classify: C2) -> HealthLayer<C2> {
        HealthLayer { source: self.source, classify, settings: self.settings }
    }

    /// What to do when too few endpoints are in rotation. Default
    /// [`AllOut::Panic`] below 50 %.
    pub fn all_out(mut self, rule: AllOut) -> Self {
        Arc::make_mut(&mut self.settings).all_out = rule;
        self
    }

    /// How often an endpoint out of rotation asks again whether it is back
    /// (it is held back meanwhile). Default 100 ms; at least 1 ms.
    pub fn recheck(mut self, every: Duration) -> Self {
        Arc::make_mut(&mut self.settings).recheck = every.max(Duration::from_millis(1));
        self
    }

    /// How much φ weighs in the load: an endpoint's cost is its peak-EWMA
    /// cost times `1 + weight × φ`. Default 1; 0 leaves PeakEWMA alone.
    /// Negative or not-a-number weights count as 0.
    pub fn phi_weight(mut self, weight: f64) -> Self {
        Arc::make_mut(&mut self.settings).phi_weight = if weight > 0.0 { weight } else { 0.0 };
        self
    }

    /// PeakEWMA's round-trip estimate before an endpoint's first answer
    /// (default 30 ms), and how fast older answers fade (default 10 s).
    /// An endpoint new to the balancer is compared by that estimate, fading
    /// towards zero: set it near the latency endpoints answer in, or a new
    /// one waits for its estimate to fade below theirs before it is tried.
    pub fn ewma(mut self, default_rtt: Duration, decay: Duration) -> Self {
        let s = Arc::make_mut(&mut self.settings);
        s.default_rtt = default_rtt;
        s.decay = decay.max(Duration::from_millis(1));
        self
    }

    /// The source this layer records into.
    pub fn source(&self) -> &Arc<dyn Source> {
        &self.source
    }

    /// The rule for too few endpoints in rotation.
    pub fn all_out_rule(&self) -> AllOut {
        self.settings.all_out
    }
}

impl<C: Clone> HealthLayer<C> {
    /// The layer for one endpoint, by the name its source knows it by.
    pub fn endpoint(&self, name: &str) -> EndpointLayer<C> {
        EndpointLayer { layer: self.clone(), name: Arc::from(name) }
    }
}

/// [`HealthLayer`] for one named endpoint: a [`tower::Layer`].
pub struct EndpointLayer<C = HttpClassifier> {
    layer: HealthLayer<C>,
    name: Arc<str>,
}

impl<C: Clone> Clone for EndpointLayer<C> {
    fn clone(&self) -> Self {
        EndpointLayer { layer: self.layer.clone(), name: self.name.clone() }
    }
}

impl<C> fmt::Debug for EndpointLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointLayer").field("name", &self.name).finish()
    }
}

impl<S, C: Clone> Layer<S> for EndpointLayer<C> {
    type Service = HealthService<S, C>;

    fn layer(&self, inner: S) -> HealthService<S, C> {
        let l = &self.layer;
        l.source.enter(&self.name);
        HealthService {
            inner,
            endpoint: Arc::new(Endpoint {
                name: self.name.clone(),
                source: l.source.clone(),
                ewma: Mutex::new(Ewma { rtt_ns: l.settings.default_rtt.as_nanos() as f64, at: Instant::now() }),
                pending: AtomicUsize::new(0),
                settings: l.settings.clone(),
            }),
            classify: l.classify.clone(),
            wait: None,
        }
    }
}

/// One endpoint: its name, its source, and its load.
struct Endpoint {
    name: Arc<str>,
    source: Arc<dyn Source>,
    ewma: Mutex<Ewma>,
    pending: AtomicUsize,
    settings: Arc<Settings>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.source.exit(&self.name);
    }
}

/// PeakEWMA's round-trip estimate: a slower answer than the estimate
/// replaces it at once, a faster one pulls it down with a weight that
/// fades with the time since the last, and the estimate itself fades
/// towards zero while no answer comes (so an endpoint not tried for a
/// while, or never, is tried again).
#[derive(Debug, Clone, Copy)]
struct Ewma {
    rtt_ns: f64,
    at: Instant,
}

impl Ewma {
    fn faded(&self, now: Instant, decay: Duration) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_nanos() as f64;
        self.rtt_ns * (-elapsed / decay.as_nanos() as f64).exp()
    }
}

impl Endpoint {
    fn answered(&self, rtt: Duration, now: Instant) {
        let mut e = self.ewma.lock().unwrap_or_else(|e| e.into_inner());
        let rtt = rtt.as_nanos() as f64;
        if rtt > e.rtt_ns {
            e.rtt_ns = rtt;
        } else {
            let elapsed = now.saturating_duration_since(e.at).as_nanos() as f64;
            let keep = (-elapsed / self.settings.decay.as_nanos() as f64).exp();
            e.rtt_ns = e.rtt_ns * keep + rtt * (1.0 - keep);
        }
        e.at = now;
    }
}

/// An endpoint's service behind the layer. See [`HealthLayer`].
pub struct HealthService<S, C = HttpClassifier> {
    inner: S,
    endpoint: Arc<Endpoint>,
    classify: C,
    /// While out of rotation: when to ask again.
    wait: Option<Pin<Box<Sleep>>>,
}

impl<S: Clone, C: Clone> Clone for HealthService<S, C> {
    fn clone(&self) -> Self {
        HealthService {
            inner: self.inner.clone(),
            endpoint: self.endpoint.clone(),
            classify: self.classify.clone(),
            wait: None,
        }
    }
}

impl<S, C> fmt::Debug for HealthService<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthService").field("endpoint", &self.endpoint.name).finish()
    }
}

impl<S, C> HealthService<S, C> {
    /// The endpoint's name.
    pub fn name(&self) -> &str {
        &self.endpoint.name
    }

    /// Whether the endpoint takes requests now: in rotation, or out while
    /// the panic rule applies.
    pub fn admits(&self) -> bool {
        let source = &self.endpoint.source;
        match source.standing(&self.endpoint.name) {
            Standing::In => true,
            Standing::Out(_) => match self.endpoint.settings.all_out {
                AllOut::Panic { below } => source.census().in_rotation() < below,
                AllOut::FailFast => false,
            },
        }
    }
}

impl<S, C, Req, Res> Service<Req> for HealthService<S, C>
where
    S: Service<Req, Response = Res>,
    S::Error: Into<BoxError>,
    C: Classify<Res>,
{
    type Response = Res;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, C>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        if self.admits() {
            self.wait = None;
            return self.inner.poll_ready(cx).map_err(Into::into);
        }
        // Held back: not an error (a balancer would drop the endpoint and
        // its load estimate); ask again after a while.
        let every = self.endpoint.settings.recheck;
        let wait = self.wait.get_or_insert_with(|| Box::pin(tokio::time::sleep(every)));
        while wait.as_mut().poll(cx).is_ready() {
            wait.as_mut().reset(Instant::now() + every);
        }
        Poll::Pending
    }

    fn call(&mut self, req: Req) -> Self::Future {
        self.endpoint.pending.fetch_add(1, Ordering::Relaxed);
        ResponseFuture {
            inner: self.inner.call(req),
            guard: Some(InFlight { endpoint: self.endpoint.clone(), start: Instant::now() }),
            classify: self.classify.clone(),
        }
    }
}

/// A request in flight: counted in the endpoint's load until it ends,
/// however it ends.
struct InFlight {
    endpoint: Arc<Endpoint>,
    start: Instant,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.endpoint.pending.fetch_sub(1, Ordering::Relaxed);
    }
}

pin_project_lite::pin_project! {
    /// The response of a [`HealthService`]: records the outcome when it
    /// completes. A request dropped before it completes records nothing.
    pub struct ResponseFuture<F, C> {
        #[pin]
        inner: F,
        guard: Option<InFlight>,
        classify: C,
    }
}

impl<F, C> fmt::Debug for ResponseFuture<F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl<F, C, Res, E> Future for ResponseFuture<F, C>
where
    F: Future<Output = Result<Res, E>>,
    E: Into<BoxError>,
    C: Classify<Res>,
{
    type Output = Result<Res, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = ready!(this.inner.poll(cx)).map_err(Into::into);
        if let Some(guard) = this.guard.take() {
            let now = Instant::now();
            let latency = now.saturating_duration_since(guard.start);
            let outcome = match &result {
                Ok(res) => this.classify.response(res),
                Err(e) => this.classify.error(&**e),
            };
            let endpoint = &guard.endpoint;
            endpoint.source.record(&endpoint.name, outcome, latency);
            endpoint.answered(latency, now);
        }
        Poll::Ready(result)
    }
}

/// An endpoint's load: its PeakEWMA cost (round-trip estimate × requests in
/// flight + 1) weighted by φ. Lower is better.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Cost(pub f64);

impl<S, C> Load for HealthService<S, C> {
    type Metric = Cost;

    /// `rtt × (in flight + 1) × (1 + weight × φ)`, the round-trip estimate
    /// faded by the time since the last answer: of two endpoints as fast,
    /// the one whose heartbeats are fresher is preferred.
    fn load(&self) -> Cost {
        let e = &self.endpoint;
        let rtt = e.ewma.lock().unwrap_or_else(|e| e.into_inner()).faded(Instant::now(), e.settings.decay);
        let pending = e.pending.load(Ordering::Relaxed) as f64;
        let phi = e.source.level(&e.name).filter(|l| l.is_finite()).unwrap_or(0.0).max(0.0);
        Cost(rtt * (pending + 1.0) * (1.0 + e.settings.phi_weight * phi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LocalHealth;
    use std::convert::Infallible;
    use tower::ServiceExt;
    use vigil_detector::outlier::OutlierConfig;

    fn status(code: u16) -> impl Service<(), Response = http::Response<()>, Error = Infallible, Future: Send> + Clone {
        tower::service_fn(move |()| async move { Ok(http::Response::builder().status(code).body(()).unwrap()) })
    }

    #[tokio::test(start_paused = true)]
    async fn an_ejected_endpoint_is_held_back_until_it_returns() {
        let health = LocalHealth::outliers(OutlierConfig::vigil()).unwrap();
        let layer = HealthLayer::new(health.clone()).all_out(AllOut::Panic { below: 0.0 });
        let mut bad = layer.endpoint("bad").layer(status(503));
        let _good = layer.endpoint("good").layer(status(200));
        for _ in 0..5 {
            bad.ready().await.unwrap().call(()).await.unwrap();
        }
        assert!(!bad.admits());
        let held = tokio::time::timeout(Duration::from_secs(20), bad.ready()).await;
        assert!(held.is_err(), "held back for Envoy's 30 s base ejection");
        // Back after the base ejection time, at the next 10 s interval.
        tokio::time::timeout(Duration::from_secs(25), bad.ready()).await.expect("returned").unwrap();
        assert_eq!(health.changes().len(), 2);
    }

    #[tokio::test]
    async fn the_panic_rule_routes_to_all_below_its_share() {
        let health = LocalHealth::outliers(OutlierConfig::vigil()).unwrap();
        let layer = HealthLayer::new(health.clone());
        let mut a = layer.endpoint("a").layer(status(503));
        let b = layer.endpoint("b").layer(status(200));
        for _ in 0..5 {
            a.ready().await.unwrap().call(()).await.unwrap();
        }
        // One of two out: 50 % in rotation, not below 50 %: held back.
        assert!(!a.admits());
        drop(b);
        // Now the only endpoint, and out: 0 % in rotation, the rule applies.
        assert!(a.admits());
        let fail_fast = HealthLayer::new(health.clone()).all_out(AllOut::FailFast);
        let a2 = fail_fast.endpoint("a").layer(status(503));
        assert!(!a2.admits(), "fail-fast never routes to an endpoint out");
    }

    #[tokio::test(start_paused = true)]
    async fn an_estimate_fades_while_no_answer_comes() {
        let health = LocalHealth::outliers(OutlierConfig::vigil()).unwrap();
        let layer = HealthLayer::new(health).ewma(Duration::from_millis(30), Duration::from_secs(10));
        let svc = layer.endpoint("a").layer(status(200));
        tokio::time::sleep(Duration::from_secs(10)).await;
        let faded = svc.load().0 / 30e6;
        assert!((faded - (-1f64).exp()).abs() < 1e-6, "e⁻¹ of the estimate after one decay time: {faded}");
    }

    #[tokio::test]
    async fn load_counts_requests_in_flight_and_phi() {
        let health = LocalHealth::outliers(OutlierConfig::vigil()).unwrap();
        let layer = HealthLayer::new(health.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let rx = Arc::new(tokio::sync::Mutex::new(Some(rx)));
        let slow = tower::service_fn(move |()| {
            let rx = rx.clone();
            async move {
                if let Some(rx) = rx.lock().await.take() {
                    let _ = rx.await;
                }
                Ok::<_, Infallible>(http::Response::new(()))
            }
        });
        let mut svc = layer.endpoint("a").layer(slow);
        let idle = svc.load().0;
        assert!(idle > 29.9e6 && idle <= 30e6, "the default 30 ms, nothing in flight, no φ: {idle}");
        let call = svc.ready().await.unwrap().call(());
        let busy = svc.load().0;
        assert!(busy > 59.9e6 && busy <= 60e6, "one request in flight doubles it: {busy}");
        tx.send(()).unwrap();
        call.await.unwrap();
        assert!(svc.load().0 <= 30e6, "a fast answer pulls the estimate down");
        health.heartbeat("a");
        tokio::time::sleep(Duration::from_millis(50)).await;
        health.heartbeat("a");
        assert!(health.level("a").is_some());
    }
}

//! [`Guard`]: the balancer's answer when no endpoint is left to route to,
//! and [`balance`], a power-of-two-choices balancer built with it.

use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::Service;
use tower::balance::p2c::Balance;
use tower::discover::Discover;

use crate::BoxError;
use crate::layer::AllOut;
use crate::source::{Census, Source};

/// No endpoint takes requests: every one known is out of rotation, or none
/// is known, and the rule is [`AllOut::FailFast`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoEndpoint {
    /// What the source knew when the request was refused.
    pub census: Census,
}

impl fmt::Display for NoEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.census.known == 0 {
            f.write_str("no endpoint to route to: none is known yet")
        } else {
            write!(f, "no endpoint to route to: all {} are out of rotation", self.census.known)
        }
    }
}

impl std::error::Error for NoEndpoint {}

/// Wraps a balancer: under [`AllOut::FailFast`], a request made while no
/// endpoint is in rotation fails at once with [`NoEndpoint`] (the balancer
/// would otherwise wait for one to come back). Under [`AllOut::Panic`] it
/// only passes requests on.
pub struct Guard<S> {
    inner: S,
    source: Arc<dyn Source>,
    rule: AllOut,
    refuse: Option<Census>,
}

impl<S> fmt::Debug for Guard<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard").field("rule", &self.rule).finish_non_exhaustive()
    }
}

impl<S> Guard<S> {
    /// Guards `inner`, whose endpoints `source` judges, by `rule`.
    pub fn new(inner: S, source: Arc<dyn Source>, rule: AllOut) -> Guard<S> {
        Guard { inner, source, rule, refuse: None }
    }

    /// The balancer guarded.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, Req> Service<Req> for Guard<S>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = GuardFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        if self.rule == AllOut::FailFast {
            let census = self.source.census();
            if census.known == 0 || census.out >= census.known {
                // Ready, so that `call` can say why (as tower's load-shed does).
                self.refuse = Some(census);
                return Poll::Ready(Ok(()));
            }
        }
        self.refuse = None;
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        match self.refuse.take() {
            Some(census) => GuardFuture { inner: None, refused: Some(NoEndpoint { census }) },
            None => GuardFuture { inner: Some(Box::pin(self.inner.call(req))), refused: None },
        }
    }
}

/// [`Guard`]'s response: the balancer's, or [`NoEndpoint`] at once.
pub struct GuardFuture<F> {
    inner: Option<Pin<Box<F>>>,
    refused: Option<NoEndpoint>,
}

impl<F> fmt::Debug for GuardFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardFuture").field("refused", &self.refused).finish_non_exhaustive()
    }
}

impl<F, T, E> Future for GuardFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(e) = self.refused.take() {
            return Poll::Ready(Err(Box::new(e)));
        }
        match self.inner.as_mut() {
            Some(f) => f.as_mut().poll(cx).map_err(Into::into),
            None => Poll::Ready(Err("polled after completion".into())),
        }
    }
}

/// A power-of-two-choices balancer over `discover`'s endpoints (each a
/// [`HealthService`](crate::HealthService), compared by its [`Cost`](crate::Cost)),
/// guarded by `rule` ([`Guard`]). Endpoints out of rotation are held back,
/// not removed: the balancer keeps their load estimates for when they
/// return.
///
/// The balancer's random choices are seeded from the thread's generator;
/// [`balance_seeded`] takes a seed to replay them.
pub fn balance<D, Req>(discover: D, source: Arc<dyn Source>, rule: AllOut) -> Guard<Balance<D, Req>>
where
    D: Discover,
    D::Key: Hash,
    D::Service: Service<Req>,
    <D::Service as Service<Req>>::Error: Into<BoxError>,
{
    Guard::new(Balance::new(discover), source, rule)
}

/// [`balance`], its random choices drawn from `seed`.
pub fn balance_seeded<D, Req>(discover: D, source: Arc<dyn Source>, rule: AllOut, seed: u64) -> Guard<Balance<D, Req>>
where
    D: Discover,
    D::Key: Hash,
    D::Service: Service<Req>,
    <D::Service as Service<Req>>::Error: Into<BoxError>,
{
    Guard::new(Balance::from_rng(discover, SplitMix(seed)), source, rule)
}

/// SplitMix64: a small, seeded generator for the balancer's choices.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix(pub(crate) u64);

impl tower::util::rng::Rng for SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

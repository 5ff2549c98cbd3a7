//! The API's connections, served so that no idle or slow client can take
//! the API away from the others:
//!
//! - a request's headers must arrive within [`HEADER_TIMEOUT`] of the
//!   connection opening, or of the previous response on a kept-alive
//!   connection (so an idle connection is closed after that long too);
//! - at most [`MAX_CONNECTIONS`] connections at once, at most
//!   [`PER_SOURCE`] of them from one address;
//! - at a limit, a newcomer takes the place of the connection that has
//!   waited longest without a request in progress (one still sending its
//!   headers, or idle between requests): from its own address when that
//!   address is at its limit, from any address otherwise. A client that
//!   sends a complete request at once is served however many sockets
//!   others hold open;
//! - when every connection has a request in progress (followers of the
//!   event stream, say), a newcomer is still served on one of
//!   [`RESERVE`] further connections, for `/v1/health/*` only (503
//!   otherwise), one request each;
//! - a response whose client stops reading is dropped after
//!   [`WRITE_STALL`] without progress, so that a stalled reader does not
//!   keep its connection forever. A follower of the event stream that reads
//!   is never cut: its response is in progress, and the stream sends a
//!   comment every 15 s.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Response, StatusCode, header};
use http_body::{Frame, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tower::ServiceExt as _;

use crate::defaults::{HEADER_TIMEOUT, MAX_CONNECTIONS, PER_SOURCE, RESERVE, RESERVE_HEADER_TIMEOUT, WRITE_STALL};

/// Serves `app` on `listener` until the process ends.
pub(crate) async fn serve(listener: TcpListener, app: Router) {
    let table = Arc::new(Mutex::new(Table::default()));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of descriptors, or a connection reset before it was
            // taken: wait a little and go on.
            Err(e) => {
                tracing::debug!("HTTP accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let admitted = lock(&table).admit(peer.ip().to_canonical(), Instant::now());
        let Some((id, reserve, evicted)) = admitted else {
            tracing::debug!("HTTP connection from {peer} refused: every connection is busy");
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(Io::new(stream, WRITE_STALL), app.clone(), table.clone(), id, reserve, evicted));
        // Let the connection read what it was sent before the next one is
        // taken: a client whose request is already there is busy before a
        // burst of others can make it the longest waiting.
        tokio::task::yield_now().await;
    }
}

/// One connection, until it closes, times out or makes room for another.
async fn connection<S>(io: Io<S>, app: Router, table: Arc<Mutex<Table>>, id: u64, reserve: bool, evicted: Arc<Notify>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let _gone = Gone { table: table.clone(), id };
    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let app = app.clone();
        let busy = Busy::new(table.clone(), id);
        async move {
            let res = if reserve && !req.uri().path().starts_with("/v1/health/") {
                crowded()
            } else {
                app.oneshot(req.map(Body::new)).await.unwrap_or_else(|e: Infallible| match e {})
            };
            Ok::<_, Infallible>(res.map(|body| Tracked { body, _busy: busy }))
        }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(if reserve { RESERVE_HEADER_TIMEOUT } else { HEADER_TIMEOUT })
        .keep_alive(!reserve);
    let served = http.serve_connection(TokioIo::new(io), service);
    tokio::select! {
        r = served => if let Err(e) = r {
            tracing::debug!("HTTP connection closed: {e}");
        },
        () = evicted.notified() => tracing::debug!("HTTP connection closed to make room for another"),
    }
}

/// The answer on a reserve connection to anything but the health
/// endpoints.
fn crowded() -> Response<Body> {
    let body = serde_json::json!({
        "error": "too many connections: this one serves /v1/health/live and /v1/health/ready only; try again shortly"
    });
    let mut res = Response::new(Body::from(body.to_string()));
    *res.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    res
}

fn lock(table: &Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    // The table is consistent after every statement: a panic elsewhere
    // leaves nothing half done.
    table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The open connections.
#[derive(Debug, Default)]
struct Table {
    next: u64,
    open: HashMap<u64, Conn>,
}

#[derive(Debug)]
struct Conn {
    source: IpAddr,
    /// A reserve connection (health endpoints only).
    reserve: bool,
    /// Requests in progress: received and not yet fully answered.
    busy: u32,
    /// Since when it has had no request in progress.
    since: Instant,
    /// Told when it must close to make room.
    evicted: Arc<Notify>,
}

impl Table {
    /// Takes a connection from `source` in: its id, whether it is a
    /// reserve one, and what tells it to close; `None` when even the
    /// reserve is busy.
    fn admit(&mut self, source: IpAddr, now: Instant) -> Option<(u64, bool, Arc<Notify>)> {
        let regular = |c: &Conn| !c.reserve;
        let from_source = self.open.values().filter(|c| regular(c) && c.source == source).count();
        let room = if from_source >= PER_SOURCE {
            self.evict(|c| regular(c) && c.source == source)
        } else if self.open.values().filter(|c| regular(c)).count() >= MAX_CONNECTIONS {
            self.evict(regular)
        } else {
            true
        };
        let reserve = !room;
        if reserve && self.open.values().filter(|c| c.reserve).count() >= RESERVE && !self.evict(|c| c.reserve) {
            return None;
        }
        let id = self.next;
        self.next += 1;
        let evicted = Arc::new(Notify::new());
        self.open.insert(id, Conn { source, reserve, busy: 0, since: now, evicted: evicted.clone() });
        Some((id, reserve, evicted))
    }

    /// Closes the connection among `which` that has waited longest without
    /// a request in progress; false if every one has a request in progress.
    fn evict(&mut self, which: impl Fn(&Conn) -> bool) -> bool {
        let oldest = self.open.iter().filter(|(_, c)| c.busy == 0 && which(c)).min_by_key(|(id, c)| (c.since, **id));
        let Some(id) = oldest.map(|(id, _)| *id) else { return false };
        if let Some(c) = self.open.remove(&id) {
            c.evicted.notify_one();
        }
        true
    }
}

/// Removes a connection from the table when it ends.
struct Gone {
    table: Arc<Mutex<Table>>,
    id: u64,
}

impl Drop for Gone {
    fn drop(&mut self) {
        lock(&self.table).open.remove(&self.id);
    }
}

/// A request in progress on a connection, from its headers to the end of
/// its answer (the answer's body holds it).
struct Busy {
    table: Arc<Mutex<Table>>,
    id: u64,
}

impl Busy {
    fn new(table: Arc<Mutex<Table>>, id: u64) -> Busy {
        if let Some(c) = lock(&table).open.get_mut(&id) {
            c.busy += 1;
        }
        Busy { table, id }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(c) = lock(&self.table).open.get_mut(&self.id) {
            c.busy = c.busy.saturating_sub(1);
            if c.busy == 0 {
                c.since = Instant::now();
            }
        }
    }
}

/// An answer's body, holding its request's [`Busy`] until it is sent or
/// dropped.
struct Tracked {
    body: Body,
    _busy: Busy,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A connection's socket, whose writes fail once they have waited `stall`
/// without progress on a client that does not read.
struct Io<S> {
    inner: S,
    stall: Duration,
    waiting: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> Io<S> {
    fn new(inner: S, stall: Duration) -> Io<S> {
        Io { inner, stall, waiting: None }
    }

    /// `r` as it is, unless it is pending and has been for `stall`.
    fn watch<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if r.is_ready() {
            self.waiting = None;
            return r;
        }
        let stall = self.stall;
        let waiting = self.waiting.get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
        match waiting.as_mut().poll(cx) {
            Poll::Ready(()) => {
                Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading the answer")))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Io<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Io<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, r)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_newcomer_takes_the_place_of_the_longest_waiting_connection_of_its_address() {
        let mut t = Table::default();
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_millis(s);
        let mut ids = Vec::new();
        for i in 0..PER_SOURCE as u64 {
            let (id, reserve, _) = t.admit(ip("10.0.0.1"), at(i)).unwrap();
            assert!(!reserve);
            ids.push(id);
        }
        // The first has a request in progress: the second makes room.
        t.open.get_mut(&ids[0]).unwrap().busy = 1;
        let (_, reserve, _) = t.admit(ip("10.0.0.1"), at(100)).unwrap();
        assert!(!reserve);
        assert!(t.open.contains_key(&ids[0]) && !t.open.contains_key(&ids[1]));
        assert_eq!(t.open.len(), PER_SOURCE);
        // Another address is not affected by the first one's limit.
        t.admit(ip("10.0.0.2"), at(101)).unwrap();
        assert_eq!(t.open.len(), PER_SOURCE + 1);
    }

    #[test]
    fn when_every_connection_is_busy_a_newcomer_gets_a_reserve_one_and_beyond_that_nothing() {
        let mut t = Table::default();
        let now = Instant::now();
        for i in 0..MAX_CONNECTIONS {
            let source = IpAddr::from([10, 0, (i / PER_SOURCE) as u8, 1]);
            let (id, reserve, _) = t.admit(source, now).unwrap();
            assert!(!reserve, "connection {i}");
            t.open.get_mut(&id).unwrap().busy = 1;
        }
        let mut reserves = Vec::new();
        for _ in 0..RESERVE {
            let (id, reserve, _) = t.admit(ip("10.9.9.9"), now).unwrap();
            assert!(reserve);
            reserves.push(id);
        }
        // A full reserve makes room from its idle ones, and refuses when
        // every one is answering.
        let (_, reserve, _) = t.admit(ip("10.9.9.9"), now).unwrap();
        assert!(reserve);
        for c in t.open.values_mut() {
            c.busy = 1;
        }
        assert!(t.admit(ip("10.9.9.9"), now).is_none());
    }

    #[test]
    fn at_the_total_limit_the_longest_waiting_connection_of_any_address_makes_room() {
        let mut t = Table::default();
        let t0 = Instant::now();
        let mut first = None;
        for i in 0..MAX_CONNECTIONS as u64 {
            let source = IpAddr::from([10, 0, (i as usize / PER_SOURCE) as u8, 1]);
            let (id, _, _) = t.admit(source, t0 + Duration::from_millis(i)).unwrap();
            first.get_or_insert(id);
        }
        let (_, reserve, _) = t.admit(ip("192.0.2.1"), t0 + Duration::from_secs(1)).unwrap();
        assert!(!reserve);
        assert!(!t.open.contains_key(&first.unwrap()));
        assert_eq!(t.open.len(), MAX_CONNECTIONS);
    }

    #[tokio::test]
    async fn a_write_to_a_client_that_does_not_read_fails_after_the_stall() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = tokio::net::TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (near, _) = listener.accept().await.unwrap();
        let mut io = Io::new(near, Duration::from_millis(300));
        let chunk = vec![0u8; 64 * 1024];
        let mut sent = 0usize;
        let mut since_progress = Instant::now();
        let err = loop {
            let r = std::future::poll_fn(|cx| Pin::new(&mut io).poll_write(cx, &chunk)).await;
            match r {
                Ok(n) => {
                    sent += n;
                    since_progress = Instant::now();
                }
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(sent > 0, "what the buffers take is written");
        assert!(since_progress.elapsed() >= Duration::from_millis(300));
    }
}

//! What became of a request, from the response or the error the endpoint's
//! service gave: the [`Outcome`] outlier detection counts.
//!
//! [`Classify`] is the trait; [`HttpClassifier`] the default for HTTP and
//! gRPC over HTTP/2:
//!
//! - an HTTP response is its status (`503` counts as a gateway failure, as
//!   do `502` and `504`; any other `5xx` as a server error; the rest as
//!   successes);
//! - a gRPC response carries its status in `grpc-status`: `UNAVAILABLE` is
//!   taken as `503` and `DEADLINE_EXCEEDED` as `504` (gateway failures),
//!   `INTERNAL`, `UNKNOWN` and `DATA_LOSS` as `500` (the server's fault),
//!   and every other status as a success: `NOT_FOUND` or
//!   `INVALID_ARGUMENT` says nothing against the host. The status is read
//!   from the response's headers, where a server puts it when it fails a
//!   call before any message (a trailers-only response, as tonic does for a
//!   handler's error); one sent in trailers after streamed messages is not
//!   seen;
//! - an error is local-origin: a timeout (tower's or tokio's `Elapsed`, or
//!   an I/O `TimedOut` anywhere in its chain) is [`Outcome::Timeout`], and
//!   anything else (refused, reset, no route) is [`Outcome::ConnectFailed`].
//!
//! ```
//! use vigil_tower::classify::{Classify, HttpClassifier};
//! use vigil_tower::Outcome;
//!
//! let c = HttpClassifier;
//! let grpc = http::Response::builder().header("grpc-status", "14").body(()).unwrap();
//! assert_eq!(c.response(&grpc), Outcome::Response(503));
//! let refused: vigil_tower::BoxError = Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
//! assert_eq!(Classify::<http::Response<()>>::error(&c, &*refused), Outcome::ConnectFailed);
//! ```

use std::error::Error;

use vigil_detector::outlier::Outcome;

/// Maps a response, or an error, to an [`Outcome`].
pub trait Classify<Res>: Clone + Send + Sync + 'static {
    /// The outcome of a response.
    fn response(&self, response: &Res) -> Outcome;

    /// The outcome of an error from the endpoint's service (or a timeout
    /// around it). Default: [`error_outcome`].
    fn error(&self, error: &(dyn Error + 'static)) -> Outcome {
        error_outcome(error)
    }
}

/// HTTP statuses and gRPC statuses, as the [module](self) describes.
#[derive(Debug, Clone, Copy, Default)]
pub struct HttpClassifier;

impl<B> Classify<http::Response<B>> for HttpClassifier {
    fn response(&self, response: &http::Response<B>) -> Outcome {
        if let Some(code) = response.headers().get("grpc-status") {
            return grpc_outcome(code.as_bytes());
        }
        Outcome::Response(response.status().as_u16())
    }
}

/// The outcome of a gRPC status code, as written in `grpc-status`: see the
/// [module](self). A value that is not a number is the server's fault
/// (`500`).
///
/// ```
/// use vigil_tower::classify::grpc_outcome;
/// use vigil_tower::Outcome;
///
/// assert_eq!(grpc_outcome(b"0"), Outcome::Response(200));
/// assert_eq!(grpc_outcome(b"4"), Outcome::Response(504));
/// assert_eq!(grpc_outcome(b"5"), Outcome::Response(200)); // NOT_FOUND: the caller's concern
/// ```
pub fn grpc_outcome(code: &[u8]) -> Outcome {
    let code = std::str::from_utf8(code).ok().and_then(|s| s.trim().parse::<u32>().ok());
    Outcome::Response(match code {
        // UNAVAILABLE
        Some(14) => 503,
        // DEADLINE_EXCEEDED
        Some(4) => 504,
        // UNKNOWN, INTERNAL, DATA_LOSS
        Some(2 | 13 | 15) => 500,
        Some(_) => 200,
        None => 500,
    })
}

/// The default outcome of an error: [`Outcome::Timeout`] if a timeout is
/// anywhere in its chain of sources, otherwise [`Outcome::ConnectFailed`].
pub fn error_outcome(error: &(dyn Error + 'static)) -> Outcome {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.is::<tower::timeout::error::Elapsed>() || e.is::<tokio::time::error::Elapsed>() {
            return Outcome::Timeout;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::TimedOut
        {
            return Outcome::Timeout;
        }
        next = e.source();
    }
    Outcome::ConnectFailed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapped(std::io::Error);
    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("client error")
        }
    }
    impl Error for Wrapped {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn http_statuses_are_taken_as_they_are() {
        for code in [200u16, 404, 500, 502, 503, 504] {
            let r = http::Response::builder().status(code).body(()).unwrap();
            assert_eq!(HttpClassifier.response(&r), Outcome::Response(code));
        }
    }

    #[test]
    fn grpc_statuses_map_onto_the_host_s_health() {
        let expect = [(0, 200), (1, 200), (2, 500), (3, 200), (4, 504), (5, 200), (8, 200), (13, 500), (14, 503)];
        for (grpc, http) in expect {
            let r = http::Response::builder().header("grpc-status", grpc.to_string()).body(()).unwrap();
            assert_eq!(HttpClassifier.response(&r), Outcome::Response(http), "grpc-status {grpc}");
        }
        assert_eq!(grpc_outcome(b"fourteen"), Outcome::Response(500));
        assert_eq!(grpc_outcome(b"\xff"), Outcome::Response(500));
    }

    #[test]
    fn timeouts_are_found_anywhere_in_the_chain() {
        let timed_out = Wrapped(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert_eq!(error_outcome(&timed_out), Outcome::Timeout);
        assert_eq!(error_outcome(&tower::timeout::error::Elapsed::new()), Outcome::Timeout);
        let reset = Wrapped(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert_eq!(error_outcome(&reset), Outcome::ConnectFailed);
    }
}

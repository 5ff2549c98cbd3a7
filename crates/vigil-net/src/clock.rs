//! The mapping between the runtime's clock and the protocol's time.
//!
//! The protocol takes time as an argument ([`vigil_detector::Instant`],
//! nanoseconds since an arbitrary origin); the runtime reads tokio's
//! monotonic clock. A [`Clock`] fixes the origin when the node starts and
//! converts both ways, so a deadline the protocol asks for becomes a tokio
//! sleep and a packet's arrival becomes protocol time.

use std::time::Duration;

use vigil_detector::Instant;

/// Converts between tokio's clock and protocol time.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: tokio::time::Instant,
}

impl Clock {
    /// A clock whose origin is now.
    pub fn start() -> Clock {
        Clock { origin: tokio::time::Instant::now() }
    }

    /// Protocol time now.
    pub fn now(&self) -> Instant {
        self.to_protocol(tokio::time::Instant::now())
    }

    /// A runtime instant as protocol time (saturating at the origin and at
    /// about 584 years).
    pub fn to_protocol(&self, t: tokio::time::Instant) -> Instant {
        let since = t.saturating_duration_since(self.origin);
        Instant::from_nanos(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
    }

    /// A protocol instant as a runtime instant, for a sleep.
    pub fn to_runtime(&self, t: Instant) -> tokio::time::Instant {
        self.origin + Duration::from_nanos(t.as_nanos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn conversions_round_trip_and_track_time() {
        let c = Clock::start();
        assert_eq!(c.now(), Instant::from_nanos(0));
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert_eq!(c.now(), Instant::from_millis(1500));
        let later = Instant::from_millis(4000);
        assert_eq!(c.to_protocol(c.to_runtime(later)), later);
    }
}

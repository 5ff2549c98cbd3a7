//! The mapping between the runtime's clock and the protocol's time.
//!
//! The protocol takes time as an argument ([`vigil_detector::Instant`],
//! nanoseconds since an arbitrary origin); the runtime reads tokio's
//! monotonic clock. A [`Clock`] fixes the origin when the node starts and
//! converts both ways, so a deadline the protocol asks for becomes a tokio
//! sleep and a packet's arrival becomes protocol time.
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use vigil_net::Instant;
//! use vigil_net::clock::Clock;
//!
//! let clock = Clock::start();
//! // A deadline the protocol asks for, 1.5 s after the origin, to sleep until.
//! let wake = clock.to_runtime(Instant::from_millis(1500));
//! assert_eq!(clock.to_protocol(wake), Instant::from_millis(1500));
//! # }
//! ```

use std::time::Duration;

use vigil_detector::Instant;

/// Converts between tokio's clock and protocol time. A copy converts the
/// same way: the origin is fixed when it starts.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
/// use vigil_net::clock::Clock;
///
/// let clock = Clock::start();
/// tokio::time::sleep(Duration::from_millis(20)).await;
/// assert!(clock.now().as_nanos() >= 20_000_000);
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: tokio::time::Instant,
}

impl Clock {
    /// A clock whose origin is now: protocol time 0.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use vigil_net::Instant;
    /// use vigil_net::clock::Clock;
    ///
    /// let clock = Clock::start();
    /// assert!(clock.now() < Instant::from_millis(1000), "just started");
    /// # }
    /// ```
    pub fn start() -> Clock {
        Clock { origin: tokio::time::Instant::now() }
    }

    /// Protocol time now: how long since the clock started.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use vigil_net::clock::Clock;
    ///
    /// let clock = Clock::start();
    /// let (first, second) = (clock.now(), clock.now());
    /// assert!(second >= first, "monotonic");
    /// # }
    /// ```
    pub fn now(&self) -> Instant {
        self.to_protocol(tokio::time::Instant::now())
    }

    /// A runtime instant as protocol time (saturating at the origin and at
    /// about 584 years): when a packet arrived, say.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use vigil_net::Instant;
    /// use vigil_net::clock::Clock;
    ///
    /// let before = tokio::time::Instant::now();
    /// let clock = Clock::start();
    /// assert_eq!(clock.to_protocol(before), Instant::from_nanos(0), "before the origin");
    /// let later = clock.to_runtime(Instant::from_millis(250)) + Duration::from_millis(250);
    /// assert_eq!(clock.to_protocol(later), Instant::from_millis(500));
    /// # }
    /// ```
    pub fn to_protocol(&self, t: tokio::time::Instant) -> Instant {
        let since = t.saturating_duration_since(self.origin);
        Instant::from_nanos(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
    }

    /// A protocol instant as a runtime instant, for a sleep.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use vigil_net::clock::Clock;
    ///
    /// let clock = Clock::start();
    /// let deadline = clock.now() + Duration::from_millis(10);
    /// tokio::time::sleep_until(clock.to_runtime(deadline)).await;
    /// assert!(clock.now() >= deadline);
    /// # }
    /// ```
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

//! Drives outlier detection and its composition with φ from arbitrary
//! bytes: outcomes with any status and latency, heartbeats, ticks at any
//! time (backwards too), hosts added and removed, any configuration.
//!
//! Besides "never panics", checks that the ejected never exceed the cap of
//! the moment while hosts are only added, and that the count of ejected
//! hosts is the count of hosts marked ejected.

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use vigil_detector::health::{Health, HealthConfig, HealthPolicy};
use vigil_detector::outlier::{Outcome, OutlierConfig, Outliers};
use vigil_detector::{Instant, Model, ModelConfig};

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let config = OutlierConfig {
        consecutive_5xx: u32::from(data[0] % 8),
        max_ejection_percent: u32::from(data[1] % 101),
        always_eject_one_host: data[2] & 1 == 1,
        split_local_origin_errors: data[2] & 2 == 2,
        enforcing_failure_percentage: u32::from(data[3] % 101),
        seed: u64::from(data[3]),
        max_hosts: 32,
        ..OutlierConfig::vigil()
    };
    let mut od: Outliers<u8> = Outliers::new(config.clone()).expect("valid");
    let policies =
        vec![HealthPolicy::new("route").phi(2.0).on_ejection(), HealthPolicy::new("remove").phi(8.0).destructive()];
    let mut health: Health<u8> =
        Health::new(&ModelConfig::default_for(Model::Akka), HealthConfig::new(policies, config.clone()))
            .expect("valid");
    let mut now = Instant::from_secs(1);
    let mut removed_any = false;
    for chunk in data[4..].chunks(4) {
        let byte = |i: usize| chunk.get(i).copied().unwrap_or(0);
        let [op, host, a, b] = [byte(0), byte(1) % 40, byte(2), byte(3)];
        let outcome = match a % 5 {
            0 => Outcome::Response(u16::from_le_bytes([a, b])),
            1 => Outcome::Timeout,
            2 => Outcome::ConnectFailed,
            3 => Outcome::Connected,
            _ => Outcome::Response(if b & 1 == 1 { 503 } else { 200 }),
        };
        match op % 6 {
            0 | 1 => {
                let latency = (b > 128).then(|| Duration::from_micros(u64::from(b) << (a % 40)));
                let _ = od.record(host, outcome, latency, now);
                let _ = health.record(host, outcome, latency, now);
            }
            2 => {
                now = now + Duration::from_millis(u64::from(a) * u64::from(b) * 50);
                od.poll(now);
                health.poll(now);
            }
            3 => {
                let _ = od.insert(host, now);
                let _ = health.insert(host, now);
                let _ = health.heartbeat(host, now);
            }
            4 => {
                removed_any = true;
                od.remove(&host);
                health.remove(&host, now);
            }
            _ => {
                // A time from the past.
                od.poll(Instant::from_secs(u64::from(a)));
                let _ = health.heartbeat(host, Instant::from_secs(u64::from(b)));
            }
        }
        od.take_events();
        let marked = (0..40u8).filter(|h| od.is_ejected(h)).count();
        assert_eq!(marked, od.ejected_count());
        if !removed_any {
            let by_percent = config.max_ejection_percent as usize * od.len() / 100;
            let cap = if config.always_eject_one_host { by_percent.max(1) } else { by_percent };
            assert!(od.ejected_count() <= cap, "{} ejected of {}", od.ejected_count(), od.len());
        }
    }
});

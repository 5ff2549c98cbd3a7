//! An agent's metrics, read from the text its `/metrics` serves, series by
//! series.

use std::time::Duration;

/// Every series of the metric `name` at `base` (`http://IP:PORT`): its
/// labels as written (`{reason="forged"}`, or empty) and its value.
pub(crate) fn series(base: &str, name: &str) -> Vec<(String, f64)> {
    let url = format!("{base}/metrics");
    let agent: ureq::Agent = ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(10))).build().into();
    let mut r = agent.get(&url).call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let text = r.body_mut().read_to_string().unwrap();
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(name).filter(|r| r.starts_with(['{', ' ']))?;
            let (labels, value) = rest.rsplit_once(' ')?;
            Some((labels.trim().to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// The sum of the series of `name` whose labels hold `labels` (`""` for
/// every series).
pub(crate) fn sum(base: &str, name: &str, labels: &str) -> f64 {
    series(base, name).iter().filter(|(l, _)| l.contains(labels)).map(|(_, v)| v).sum()
}

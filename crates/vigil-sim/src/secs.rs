//! Durations as the scenario format writes them: seconds, as a number
//! (`at = 12.5`), for `#[serde(with = "crate::secs")]`; [`opt`] for an
//! optional one.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

use crate::shown::shown;

pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    from_secs(f64::deserialize(d)?)
}

/// A number of seconds as a duration, or the error that names it.
fn from_secs<E: serde::de::Error>(v: f64) -> Result<Duration, E> {
    Duration::try_from_secs_f64(v).map_err(|_| E::custom(format!("{} is not a duration in seconds", shown(v))))
}

/// An optional duration in seconds, for `#[serde(with = "crate::secs::opt")]`.
pub(crate) mod opt {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?.map(super::from_secs).transpose()
    }
}

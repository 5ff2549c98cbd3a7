//! The detector models. Each has a configuration type with validated,
//! documented defaults and a detector type implementing [`Detector`](crate::Detector).

pub(crate) mod chen;
pub(crate) mod empirical;
pub(crate) mod exponential;
pub(crate) mod normal;
pub(crate) mod timeout;

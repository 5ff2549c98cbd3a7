//! Building a detector configuration from named parameters: the detector
//! crate's grammar ([`vigil_detector::spec`]), under the lab's names.
//!
//! `vigil replay` takes the parameters as flags (`--window 100`, through
//! [`Params`]); the same names and values are what a detector spec such as
//! `akka:threshold=8,min-std-ms=100` carries ([`DetectorSpec`]).
//!
//! ```
//! use vigil_lab::spec::DetectorSpec;
//!
//! let spec: DetectorSpec = "normal:window=100,min-std-ms=1,threshold=8".parse()?;
//! assert_eq!(spec.with("threshold", "12")?.to_string(), "normal:window=100,min-std-ms=1,threshold=12");
//! # Ok::<(), vigil_lab::spec::SpecError>(())
//! ```

pub use vigil_detector::spec::{DetectorSpec, Params, SpecError, SpecErrorKind, allowed};

//! Text from users and the network, made safe to print on a terminal: the
//! detector crate's [`vigil_detector::text`], whose spec grammar quotes what
//! was typed in its errors, under the lab's name.
//!
//! ```
//! use vigil_lab::text::escaped;
//!
//! assert_eq!(escaped("h3\u{1b}[2J"), "h3\\u{1b}[2J");
//! ```

pub use vigil_detector::text::{escaped, escaped_lines, is_unsafe};

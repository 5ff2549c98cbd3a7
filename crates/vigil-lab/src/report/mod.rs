//! Presentation: everything the lab shows a person, and nothing it
//! computes.
//!
//! The analysis modules ([`crate::engine`], [`crate::qos`], [`crate::sweep`],
//! [`crate::chen`], ...) produce numbers; this module turns numbers into
//! tables, charts and reports, and no analysis module imports it.
//!
//! - [`document`]: a report as blocks (headings, text, tables, figures),
//!   rendered for a terminal or as a self-contained HTML page.
//! - [`table`]: tables, aligned for a terminal.
//! - [`charts`]: the lab's standard figures (frontiers, a detector's level
//!   over time).
//! - [`svg`]: the SVG chart renderer; [`html`]: the HTML page builder and
//!   escaping.

pub mod charts;
pub mod document;
pub mod html;
pub mod svg;
pub mod table;

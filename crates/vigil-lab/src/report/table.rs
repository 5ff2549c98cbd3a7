//! Tables of results, and their terminal form.

use serde::Serialize;

use crate::text::escaped;

/// A table of results: formatted cells under a header.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// Short identifier (stable, for scripts).
    pub id: String,
    /// Title.
    pub title: String,
    /// Column names.
    pub header: Vec<String>,
    /// Rows of formatted cells.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with an id, a title, a header and rows.
    pub fn new(id: &str, title: &str, header: &[&str], rows: Vec<Vec<String>>) -> Table {
        Table { id: id.into(), title: title.into(), header: header.iter().map(|h| h.to_string()).collect(), rows }
    }
}

/// Formats a table for a terminal: the title, then aligned columns, numbers
/// right-aligned.
///
/// ```
/// use vigil_lab::report::table::{Table, format_table};
///
/// let t = Table::new("t", "Results", &["detector", "T_D (ms)"], vec![vec!["akka".into(), "1200.5".into()]]);
/// assert_eq!(format_table(&t), "Results\n  detector  T_D (ms)\n  --------  --------\n  akka        1200.5\n");
/// ```
pub fn format_table(t: &Table) -> String {
    // Names from the user (a scenario's, a file's, a member's) are shown,
    // never acted on by the terminal.
    let shown = |cells: &[String]| cells.iter().map(|c| escaped(c).into_owned()).collect::<Vec<_>>();
    let t = &Table {
        id: String::new(),
        title: escaped(&t.title).into_owned(),
        header: shown(&t.header),
        rows: t.rows.iter().map(|r| shown(r)).collect(),
    };
    let cols = t.header.len();
    let width = |i: usize| {
        t.rows
            .iter()
            .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
            .chain([t.header[i].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..cols).map(width).collect();
    // A number, a percentage, a number and a unit word (`12 ms`), or a
    // fraction (`3/200`) is right-aligned; a name that starts with a digit
    // (`2w`) is not.
    let numeric = |s: &str| {
        let s = s.trim_start_matches(['≤', '≥', ' ']);
        let number = |x: &str| {
            let x = x.strip_suffix('%').unwrap_or(x);
            let x = match x.rsplit_once(' ') {
                Some((n, unit)) if unit.chars().all(char::is_alphabetic) => n,
                _ => x,
            };
            x.trim().parse::<f64>().is_ok()
        };
        number(s) || s.split_once('/').is_some_and(|(a, b)| number(a) && number(b))
    };
    let mut out = format!("{}\n", t.title);
    let line = |cells: &[String], out: &mut String| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = widths.get(i).copied().unwrap_or(0).saturating_sub(c.chars().count());
                if numeric(c) { format!("{}{c}", " ".repeat(pad)) } else { format!("{c}{}", " ".repeat(pad)) }
            })
            .collect();
        out.push_str("  ");
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(&t.header, &mut out);
    out.push_str(&format!("  {}\n", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  ")));
    for r in &t.rows {
        line(r, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_terminal_would_act_on_is_shown_in_every_cell() {
        let t = Table::new(
            "t",
            "run \u{1b}]0;title\u{7}",
            &["name\u{9b}"],
            vec![vec!["h\u{1b}[2J".into()], vec!["\u{202e}abc".into()]],
        );
        let text = format_table(&t);
        assert!(!text.chars().any(|c| crate::text::is_unsafe(c) && c != '\n'), "{text:?}");
        assert!(text.starts_with("run \\u{1b}]0;title\\u{7}\n"), "{text}");
        assert!(
            text.contains("h\\u{1b}[2J") && text.contains("\\u{202e}abc") && text.contains("name\\u{9b}"),
            "{text}"
        );
    }
}

//! A small, dependency-free builder of self-contained HTML reports.
//!
//! The lab writes its findings as one HTML5 file that can be opened from
//! disk, mailed or archived as is: CSS is inline, charts are inline SVG
//! (from [`crate::report::svg`]), and there are no scripts and no external links.
//! A [`Report`] is a title and a list of blocks (headings, paragraphs,
//! tables, figures, preformatted text, notes and lists); [`Report::to_html`]
//! renders them, with a table of contents of the second-level headings at
//! the top.
//!
//! All text is escaped; the only markup recognised in it is `` `code` ``
//! spans in paragraphs, notes, list items and captions. SVG passed to
//! [`Report::svg`] is trusted and embedded verbatim. Output is deterministic.
//!
//! # Example
//!
//! ```
//! use vigil_lab::report::html::Report;
//!
//! let mut report = Report::new("Failure detector lab");
//! report.heading(2, "Results");
//! report.paragraph("The `normal` model detects a crash in 1.2 s at threshold 8.");
//! report.table(&["model", "detection", "mistakes"], &[
//!     vec!["normal".to_string(), "1.2 s".to_string(), "0.1%".to_string()],
//!     vec!["exponential".to_string(), "2.9 s".to_string(), "0.02%".to_string()],
//! ]);
//! report.note("Mistake rates are per peer and hour.");
//! let html = report.to_html();
//! assert!(html.starts_with("<!DOCTYPE html>"));
//! assert!(html.contains(r##"<a href="#results">Results</a>"##));
//! assert!(html.contains("<code>normal</code>"));
//! ```

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Escapes text for HTML element content and (quoted) attribute values:
/// `&`, `<`, `>`, `"` and `'` become entities, and control characters other
/// than tab, newline and carriage return become U+FFFD.
///
/// ```
/// assert_eq!(vigil_lab::report::html::escape(r#"<a href="x">&'"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
/// ```
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            // Characters XML 1.0 forbids (an inline SVG is XML too).
            c if c < ' ' || c == '\u{7f}' || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A self-contained HTML report under construction.
///
/// Blocks appear in the order they are added. Every adding method returns
/// `&mut Self`, so calls can be chained or used as statements.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    title: String,
    blocks: Vec<Block>,
}

#[derive(Clone, Debug, PartialEq)]
enum Block {
    Heading { level: u8, text: String },
    Paragraph(String),
    List(Vec<String>),
    Table { header: Vec<String>, rows: Vec<Vec<String>> },
    Figure { svg: String, caption: String },
    Preformatted(String),
    Note(String),
}

impl Report {
    /// An empty report; `title` becomes the page title and the `<h1>`.
    pub fn new(title: &str) -> Report {
        Report { title: title.to_string(), blocks: Vec::new() }
    }

    /// Adds a heading. `level` is clamped to 2..=4 (the title is the only
    /// `<h1>`); level-2 headings are listed in the table of contents.
    pub fn heading(&mut self, level: u8, text: &str) -> &mut Self {
        self.blocks.push(Block::Heading { level: level.clamp(2, 4), text: text.to_string() });
        self
    }

    /// Adds a paragraph of plain text. Text between backticks becomes
    /// inline code; an unmatched backtick is kept as is.
    pub fn paragraph(&mut self, text: &str) -> &mut Self {
        self.blocks.push(Block::Paragraph(text.to_string()));
        self
    }

    /// Adds a bulleted list; items are formatted like paragraphs.
    pub fn list<I, S>(&mut self, items: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.blocks.push(Block::List(items.into_iter().map(|s| s.as_ref().to_string()).collect()));
        self
    }

    /// Adds a table. Rows shorter than the widest row (or the header) are
    /// padded with empty cells.
    ///
    /// A cell is numeric when it is a number, optionally followed by a unit
    /// of up to six letters or `%`, `/`, `°`, `×` (`42`, `-1.5e-3`,
    /// `12.5 ms`, `99.9%`, `3x`, `1,234`). Numeric cells are right-aligned
    /// with tabular digits. In a column whose non-empty cells are all numeric
    /// or placeholders (`-`, `–`, `—`, `n/a`, `NaN`, `inf`, `∞`), the
    /// placeholders and the header are right-aligned too.
    pub fn table(&mut self, header: &[&str], rows: &[Vec<String>]) -> &mut Self {
        self.blocks
            .push(Block::Table { header: header.iter().map(|s| (*s).to_string()).collect(), rows: rows.to_vec() });
        self
    }

    /// Adds a figure: `svg` is embedded verbatim (it is trusted, e.g. the
    /// output of [`crate::report::svg::Chart::to_svg`]; a leading XML declaration is
    /// dropped), followed by the caption unless it is empty.
    pub fn svg(&mut self, svg: &str, caption: &str) -> &mut Self {
        self.blocks.push(Block::Figure { svg: svg.to_string(), caption: caption.to_string() });
        self
    }

    /// Adds preformatted text (escaped, whitespace preserved).
    pub fn preformatted(&mut self, text: &str) -> &mut Self {
        self.blocks.push(Block::Preformatted(text.to_string()));
        self
    }

    /// Adds a highlighted callout box; text is formatted like a paragraph.
    pub fn note(&mut self, text: &str) -> &mut Self {
        self.blocks.push(Block::Note(text.to_string()));
        self
    }

    /// Renders the complete HTML5 document.
    pub fn to_html(&self) -> String {
        let ids = self.heading_ids();
        let title = escape(self.title.trim());
        let mut out = String::with_capacity(16 * 1024);
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        let _ = writeln!(out, "<title>{title}</title>");
        let _ = writeln!(out, "<style>\n{CSS}</style>\n</head>\n<body>\n<main>\n<h1>{title}</h1>");

        let toc: Vec<(&str, &str)> = self
            .blocks
            .iter()
            .zip(&ids)
            .filter_map(|(block, id)| match block {
                Block::Heading { level: 2, text } => Some((text.as_str(), id.as_str())),
                _ => None,
            })
            .collect();
        if !toc.is_empty() {
            out.push_str("<nav class=\"toc\" aria-label=\"Contents\">\n<p class=\"toc-title\">Contents</p>\n<ol>\n");
            for (text, id) in toc {
                let _ = writeln!(out, "<li><a href=\"#{id}\">{}</a></li>", escape(text.trim()));
            }
            out.push_str("</ol>\n</nav>\n");
        }

        for (block, id) in self.blocks.iter().zip(&ids) {
            match block {
                Block::Heading { level, text } => {
                    let _ = writeln!(out, "<h{level} id=\"{id}\">{}</h{level}>", escape(text.trim()));
                }
                Block::Paragraph(text) => {
                    let _ = writeln!(out, "<p>{}</p>", inline(text.trim()));
                }
                Block::List(items) => {
                    out.push_str("<ul>\n");
                    for item in items {
                        let _ = writeln!(out, "<li>{}</li>", inline(item.trim()));
                    }
                    out.push_str("</ul>\n");
                }
                Block::Table { header, rows } => render_table(header, rows, &mut out),
                Block::Figure { svg, caption } => {
                    let _ = writeln!(out, "<figure>\n{}", strip_xml_declaration(svg).trim());
                    if !caption.trim().is_empty() {
                        let _ = writeln!(out, "<figcaption>{}</figcaption>", inline(caption.trim()));
                    }
                    out.push_str("</figure>\n");
                }
                Block::Preformatted(text) => {
                    let _ = writeln!(out, "<pre>{}</pre>", escape(text.trim_end()));
                }
                Block::Note(text) => {
                    let _ = writeln!(out, "<aside class=\"note\"><p>{}</p></aside>", inline(text.trim()));
                }
            }
        }
        out.push_str("</main>\n</body>\n</html>\n");
        out
    }

    /// A unique id per block (empty for blocks that are not headings).
    fn heading_ids(&self) -> Vec<String> {
        let mut used = BTreeSet::new();
        self.blocks
            .iter()
            .map(|block| match block {
                Block::Heading { text, .. } => {
                    let base = slug(text);
                    let mut id = base.clone();
                    let mut n = 2;
                    while used.contains(&id) {
                        id = format!("{base}-{n}");
                        n += 1;
                    }
                    used.insert(id.clone());
                    id
                }
                _ => String::new(),
            })
            .collect()
    }
}

const CSS: &str = r#":root { color-scheme: light; }
* { box-sizing: border-box; }
body {
  margin: 0;
  background: #ffffff;
  color: #1f2328;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 16px;
  line-height: 1.55;
}
main { max-width: 1000px; margin: 0 auto; padding: 2rem 1.25rem 4rem; }
h1 { font-size: 2rem; line-height: 1.2; margin: 0 0 1rem; }
h2 { font-size: 1.45rem; margin: 2.5rem 0 0.75rem; padding-bottom: 0.3rem; border-bottom: 1px solid #d8dee4; }
h3 { font-size: 1.2rem; margin: 1.75rem 0 0.5rem; }
h4 { font-size: 1rem; margin: 1.25rem 0 0.5rem; }
p, ul { margin: 0.75rem 0; }
a { color: #0b5cad; text-decoration: none; }
a:hover { text-decoration: underline; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 0.9em; }
code { background: #f0f2f4; border-radius: 3px; padding: 0.1em 0.3em; }
pre {
  background: #f6f8fa;
  border: 1px solid #d8dee4;
  border-radius: 4px;
  padding: 0.75rem 1rem;
  overflow-x: auto;
  line-height: 1.4;
}
nav.toc { background: #f6f8fa; border: 1px solid #d8dee4; border-radius: 4px; padding: 0.75rem 1.25rem; margin: 1rem 0 2rem; }
nav.toc .toc-title { font-weight: 600; margin: 0 0 0.25rem; }
nav.toc ol { margin: 0; padding-left: 1.5rem; }
.table-wrap { overflow-x: auto; margin: 1rem 0; }
table { border-collapse: collapse; font-size: 0.92rem; }
th, td { padding: 0.35rem 0.75rem; border-bottom: 1px solid #d8dee4; text-align: left; vertical-align: top; }
th { background: #eef1f4; font-weight: 600; border-bottom: 2px solid #c4ccd4; }
tbody tr:nth-child(even) { background: #f6f8fa; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
figure { margin: 1.5rem 0; }
figure svg { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { color: #57606a; font-size: 0.9rem; margin-top: 0.5rem; text-align: center; }
.note { background: #fff8e1; border-left: 4px solid #d9a400; border-radius: 4px; padding: 0.75rem 1rem; margin: 1rem 0; }
.note p { margin: 0; }
@media print {
  main { max-width: none; padding: 0; }
  figure, table, pre, .note { break-inside: avoid; }
}
"#;

fn render_table(header: &[String], rows: &[Vec<String>], out: &mut String) {
    let columns = rows.iter().map(Vec::len).chain([header.len()]).max().unwrap_or(0);
    let cell = |row: &[String], c: usize| row.get(c).map_or("", |s| s.trim()).to_string();
    let numeric_column: Vec<bool> = (0..columns)
        .map(|c| {
            let cells: Vec<String> = rows.iter().map(|row| cell(row, c)).collect();
            cells.iter().any(|s| is_numeric(s)) && cells.iter().all(|s| is_numeric(s) || is_placeholder(s))
        })
        .collect();
    let class = |numeric: bool| if numeric { " class=\"num\"" } else { "" };

    out.push_str("<div class=\"table-wrap\">\n<table>\n");
    if !header.is_empty() {
        out.push_str("<thead>\n<tr>");
        for (c, &numeric) in numeric_column.iter().enumerate() {
            let _ = write!(out, "<th{}>{}</th>", class(numeric), escape(&cell(header, c)));
        }
        out.push_str("</tr>\n</thead>\n");
    }
    out.push_str("<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for (c, &numeric) in numeric_column.iter().enumerate() {
            let text = cell(row, c);
            let right = is_numeric(&text) || (numeric && is_placeholder(&text));
            let _ = write!(out, "<td{}>{}</td>", class(right), escape(&text));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</div>\n");
}

/// Whether a (trimmed) table cell is a number with an optional short unit.
fn is_numeric(cell: &str) -> bool {
    let is_unit_char = |c: char| c.is_alphabetic() || matches!(c, '%' | '/' | '°' | '×');
    let number = cell.trim_end_matches(is_unit_char);
    if cell[number.len()..].chars().count() > 6 {
        return false;
    }
    let number = number.trim_end();
    let number = match number.strip_prefix('−') {
        Some(rest) => format!("-{rest}"),
        None => number.to_string(),
    };
    let starts_well = number.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '+' | '.'));
    starts_well && strip_thousands(&number).parse::<f64>().is_ok_and(f64::is_finite)
}

/// Removes `,` thousands separators when they group digits by three.
fn strip_thousands(number: &str) -> String {
    let int_end = number.find(['.', 'e', 'E']).unwrap_or(number.len());
    let (int, rest) = number.split_at(int_end);
    let groups: Vec<&str> = int.split(',').collect();
    let grouped = groups.len() > 1
        && groups[1..].iter().all(|g| g.len() == 3 && g.chars().all(|c| c.is_ascii_digit()))
        && !groups[0].trim_start_matches(['-', '+']).is_empty()
        && groups[0].trim_start_matches(['-', '+']).len() <= 3;
    if grouped { format!("{}{rest}", groups.concat()) } else { number.to_string() }
}

fn is_placeholder(cell: &str) -> bool {
    matches!(cell, "" | "-" | "–" | "—" | "n/a" | "N/A" | "NaN" | "nan" | "inf" | "-inf" | "∞" | "-∞")
}

/// Escapes `text`, turning `` `spans` `` into `<code>` elements.
fn inline(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    // An even number of parts means an odd number of backticks: the last
    // one is unmatched and stays literal.
    let unmatched = parts.len().is_multiple_of(2);
    let mut out = String::with_capacity(text.len() + 16);
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 0 {
            out.push_str(&escape(part));
        } else if unmatched && i == parts.len() - 1 {
            out.push('`');
            out.push_str(&escape(part));
        } else {
            let _ = write!(out, "<code>{}</code>", escape(part));
        }
    }
    out
}

/// A fragment identifier from heading text: lowercase ASCII letters and
/// digits, other runs of characters collapsed to `-`.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() { "section".to_string() } else { out.to_string() }
}

fn strip_xml_declaration(svg: &str) -> &str {
    let trimmed = svg.trim_start();
    match trimmed.strip_prefix("<?xml").and_then(|rest| rest.find("?>").map(|end| &rest[end + 2..])) {
        Some(rest) => rest,
        None => trimmed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VOID: [&str; 2] = ["meta", "br"];

    /// A tiny HTML/XML tag-balance checker: every non-void element is closed
    /// in order, attributes are quoted, `<`, `>` and `&` in text are escaped
    /// (except inside `<style>`).
    fn check_balanced(doc: &str) -> Result<(), String> {
        let mut stack: Vec<String> = Vec::new();
        let mut rest = doc;
        while let Some(open) = rest.find('<') {
            if stack.last().is_none_or(|top| top != "style") {
                check_text(&rest[..open])?;
            }
            rest = &rest[open..];
            if rest.starts_with("<!DOCTYPE") {
                rest = &rest[rest.find('>').ok_or("bad doctype")? + 1..];
                continue;
            }
            if let Some(after) = rest.strip_prefix("</") {
                let end = after.find('>').ok_or("unterminated end tag")?;
                let name = &after[..end];
                match stack.pop() {
                    Some(top) if top == name => {}
                    other => return Err(format!("</{name}> closes {other:?}")),
                }
                rest = &after[end + 1..];
                continue;
            }
            let after = &rest[1..];
            let n = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).unwrap_or(0);
            if n == 0 {
                return Err(format!("bad tag at {:?}", &rest[..rest.len().min(20)]));
            }
            let name = after[..n].to_string();
            let mut attrs = &after[n..];
            let self_closing = loop {
                attrs = attrs.trim_start();
                if let Some(r) = attrs.strip_prefix("/>") {
                    attrs = r;
                    break true;
                }
                if let Some(r) = attrs.strip_prefix('>') {
                    attrs = r;
                    break false;
                }
                let a = attrs.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == ':')).unwrap_or(0);
                if a == 0 {
                    return Err(format!("bad attribute in <{name}>"));
                }
                let value = attrs[a..].strip_prefix("=\"").ok_or_else(|| format!("unquoted attribute in <{name}>"))?;
                let end = value.find('"').ok_or("unterminated attribute")?;
                check_text(&value[..end])?;
                attrs = &value[end + 1..];
            };
            if !self_closing && !VOID.contains(&name.as_str()) {
                stack.push(name);
            }
            rest = attrs;
        }
        check_text(rest)?;
        if stack.is_empty() { Ok(()) } else { Err(format!("unclosed {stack:?}")) }
    }

    fn check_text(text: &str) -> Result<(), String> {
        if text.contains('>') {
            return Err(format!("raw '>' in {text:?}"));
        }
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            if !["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].iter().any(|e| entity.starts_with(e)) {
                return Err(format!("bad entity at {:?}", &entity[..entity.len().min(10)]));
            }
        }
        Ok(())
    }

    fn sample() -> Report {
        let mut report = Report::new("Failure detector lab");
        report
            .heading(2, "Setup")
            .paragraph("We replay `trace.csv` through every model.")
            .heading(3, "Models")
            .list(["`normal`", "`exponential`"])
            .heading(2, "Results")
            .table(
                &["model", "detection", "mistakes", "note"],
                &[
                    vec!["normal".into(), "1.2 s".into(), "0.1%".into(), "fast".into()],
                    vec!["fixed".into(), "—".into(), "12".into(), "".into()],
                ],
            )
            .svg("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 10 10\"><rect width=\"10\" height=\"10\"/></svg>", "φ over time")
            .preformatted("phi  8.0\nrate 0.1")
            .note("Thresholds are `8` unless stated.");
        report
    }

    #[test]
    fn document_is_well_formed_and_self_contained() {
        let html = sample().to_html();
        check_balanced(&html).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
        assert!(html.contains("<meta charset=\"utf-8\">"));
        assert!(html.contains("max-width: 1000px"));
        assert!(html.contains("max-width: 100%; height: auto"));
        assert!(!html.contains("<script"));
        assert!(!html.contains("<link"));
        assert!(!html.contains("src="));
        // The only URL is the SVG namespace.
        assert_eq!(html.matches("://").count(), 1);
    }

    #[test]
    fn hostile_text_is_escaped() {
        let evil = "<script>alert('x')</script>";
        let mut report = Report::new(evil);
        report
            .heading(2, evil)
            .paragraph(evil)
            .table(&[evil], &[vec![evil.to_string()]])
            .svg("<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>", evil)
            .preformatted(evil)
            .note(evil)
            .list([evil]);
        let html = report.to_html();
        check_balanced(&html).unwrap();
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
        assert!(html.contains("<title>&lt;script&gt;"));
        assert!(html.contains("<td>&lt;script&gt;"));
        assert!(html.contains("<p>&lt;script&gt;"));
        // Inside code spans too.
        assert_eq!(inline("a `<b>` c"), "a <code>&lt;b&gt;</code> c");
    }

    #[test]
    fn escape_covers_all_special_characters() {
        assert_eq!(escape("&<>\"'"), "&amp;&lt;&gt;&quot;&#39;");
        assert_eq!(escape("plain φ text\n"), "plain φ text\n");
        assert_eq!(escape("nul\u{0}bell\u{7}"), "nul\u{fffd}bell\u{fffd}");
    }

    #[test]
    fn toc_lists_the_second_level_headings() {
        let html = sample().to_html();
        let toc = &html[html.find("<nav").unwrap()..html.find("</nav>").unwrap()];
        assert!(toc.contains("<li><a href=\"#setup\">Setup</a></li>"));
        assert!(toc.contains("<li><a href=\"#results\">Results</a></li>"));
        assert!(!toc.contains("Models"), "h3 stays out of the TOC");
        assert!(toc.find("Setup").unwrap() < toc.find("Results").unwrap());
        assert!(html.contains("<h2 id=\"setup\">Setup</h2>"));
        assert!(html.contains("<h3 id=\"models\">Models</h3>"));
        let empty = Report::new("nothing").to_html();
        assert!(!empty.contains("<nav"));
    }

    #[test]
    fn heading_ids_are_unique() {
        let mut report = Report::new("t");
        report.heading(2, "Results").heading(2, "Results").heading(2, "φ!").heading(9, "Deep").heading(0, "Top");
        let html = report.to_html();
        assert!(html.contains("<h2 id=\"results\">"));
        assert!(html.contains("<h2 id=\"results-2\">"));
        assert!(html.contains("<h2 id=\"section\">"));
        assert!(html.contains("<h4 id=\"deep\">Deep</h4>"), "levels clamp to 4");
        assert!(html.contains("<h2 id=\"top\">Top</h2>"), "levels clamp to 2");
        assert_eq!(slug("  Detection time vs. mistake rate (log)  "), "detection-time-vs-mistake-rate-log");
    }

    #[test]
    fn numeric_cells_are_right_aligned() {
        for numeric in ["42", "-1.5e-3", "+3", "12.5 ms", "12.5ms", "99.9%", "3x", "1,234", "1,234.5 µs", "−2", ".5"]
        {
            assert!(is_numeric(numeric), "{numeric}");
        }
        for text in ["", "normal", "ms", "1.2.3", "inf", "NaN", "1 2", "12 (3%)", "1,23", "5 elephants", "e5"] {
            assert!(!is_numeric(text), "{text}");
        }
        let html = sample().to_html();
        assert!(
            html.contains("<th>model</th><th class=\"num\">detection</th><th class=\"num\">mistakes</th><th>note</th>")
        );
        assert!(html.contains("<td>normal</td><td class=\"num\">1.2 s</td><td class=\"num\">0.1%</td><td>fast</td>"));
        assert!(html.contains("<td>fixed</td><td class=\"num\">—</td><td class=\"num\">12</td><td></td>"));
        // A number in a text column is still right-aligned on its own.
        let mut report = Report::new("t");
        report.table(&["a"], &[vec!["x".into()], vec!["7".into()], vec!["-".into()]]);
        let html = report.to_html();
        assert!(html.contains("<th>a</th>"));
        assert!(html.contains("<td class=\"num\">7</td>"));
        assert!(html.contains("<td>-</td>"));
    }

    #[test]
    fn ragged_tables_are_padded() {
        let mut report = Report::new("t");
        report.table(&["a", "b"], &[vec!["1".into()], vec!["1".into(), "2".into(), "3".into()]]);
        let html = report.to_html();
        check_balanced(&html).unwrap();
        assert!(html.contains("<tr><td class=\"num\">1</td><td class=\"num\"></td><td class=\"num\"></td></tr>"));
        assert!(html.contains("<th class=\"num\">a</th><th class=\"num\">b</th><th class=\"num\"></th>"));
    }

    #[test]
    fn inline_code_spans() {
        assert_eq!(inline("use `phi > 8` now"), "use <code>phi &gt; 8</code> now");
        assert_eq!(inline("`a` and `b`"), "<code>a</code> and <code>b</code>");
        assert_eq!(inline("a ` lone"), "a ` lone");
        assert_eq!(inline("`x` then ` lone"), "<code>x</code> then ` lone");
        assert_eq!(inline("no code"), "no code");
    }

    #[test]
    fn figures_embed_the_svg_verbatim() {
        let svg = "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"><g/></svg>\n";
        let mut report = Report::new("t");
        report.svg(svg, "`phi` over time").svg(svg, "");
        let html = report.to_html();
        assert!(html.contains("<figure>\n<svg xmlns=\"http://www.w3.org/2000/svg\"><g/></svg>\n<figcaption><code>phi</code> over time</figcaption>\n</figure>"));
        assert!(html.contains("<figure>\n<svg xmlns=\"http://www.w3.org/2000/svg\"><g/></svg>\n</figure>"));
        assert!(!html.contains("<?xml"));
    }

    #[test]
    fn output_is_deterministic() {
        assert_eq!(sample().to_html(), sample().to_html());
        assert_eq!(sample().clone().to_html(), sample().to_html());
    }

    #[test]
    fn works_with_real_charts() {
        use crate::report::svg::{Chart, Scale, Series, Style};
        let chart = Chart::new("Pareto <frontier>", "detection time (ms)", "mistake rate")
            .with_x_scale(Scale::Log10)
            .with_y_scale(Scale::Log10)
            .with_series(Series::new("normal & co", [(100.0, 1e-2), (300.0, 1e-4)]).with_style(Style::LinePoints));
        let mut report = Report::new("lab");
        report.heading(2, "Frontier").svg(&chart.to_svg(), "Pareto frontier");
        let html = report.to_html();
        check_balanced(&html).unwrap();
        assert!(html.contains("Pareto &lt;frontier&gt;"));
    }
}

//! A report as a list of blocks, for a terminal or a self-contained HTML
//! page.

use serde::Serialize;

use crate::report::html::Report;
use crate::report::table::{Table, format_table};

/// A figure: an SVG chart, the file it is written to beside the report, and
/// its caption.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// File name to write it to (`*.svg`).
    pub file: String,
    /// Caption.
    pub caption: String,
    /// The SVG document.
    #[serde(skip)]
    pub svg: String,
}

/// One piece of a report, in reading order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Block {
    /// A section heading.
    Heading(String),
    /// A paragraph.
    Text(String),
    /// A table.
    Table(Table),
    /// A figure.
    Figure(Figure),
}

/// A report: a title and blocks.
///
/// ```
/// use vigil_lab::report::document::Document;
///
/// let mut doc = Document::new("vigil lab run: calm");
/// doc.heading("Quality of service");
/// doc.text("Two detectors on 200 traces.");
/// doc.table("qos", "QoS", &["detector", "T_D (ms)"], vec![vec!["akka".into(), "1200.5".into()]]);
/// doc.figure("phi.svg", "φ over time", "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>".into());
/// let html = doc.to_html();
/// assert!(html.contains("<td>akka</td>") && html.contains("<figcaption>φ over time</figcaption>"));
/// assert!(doc.to_text(80).contains("== Quality of service =="));
/// assert_eq!(doc.figures().count(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Document {
    /// The title (the page's `<h1>`).
    pub title: String,
    /// Everything else, in reading order.
    pub blocks: Vec<Block>,
}

impl Document {
    /// An empty report.
    pub fn new(title: &str) -> Document {
        Document { title: title.into(), blocks: Vec::new() }
    }

    /// Adds a section heading.
    pub fn heading(&mut self, text: &str) -> &mut Self {
        self.blocks.push(Block::Heading(text.into()));
        self
    }

    /// Adds a paragraph.
    pub fn text(&mut self, text: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Text(text.into()));
        self
    }

    /// Adds a table.
    pub fn table(&mut self, id: &str, title: &str, header: &[&str], rows: Vec<Vec<String>>) -> &mut Self {
        self.blocks.push(Block::Table(Table::new(id, title, header, rows)));
        self
    }

    /// Adds a figure, written as `file` beside the page.
    pub fn figure(&mut self, file: &str, caption: &str, svg: String) -> &mut Self {
        self.blocks.push(Block::Figure(Figure { file: file.into(), caption: caption.into(), svg }));
        self
    }

    /// The tables, in order.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.blocks.iter().filter_map(|b| if let Block::Table(t) = b { Some(t) } else { None })
    }

    /// The figures, in order.
    pub fn figures(&self) -> impl Iterator<Item = &Figure> {
        self.blocks.iter().filter_map(|b| if let Block::Figure(f) = b { Some(f) } else { None })
    }

    /// The table with this id.
    pub fn table_by_id(&self, id: &str) -> Option<&Table> {
        self.tables().find(|t| t.id == id)
    }

    /// A self-contained HTML page: styles inline, figures inline, no scripts
    /// and no links out.
    pub fn to_html(&self) -> String {
        let mut r = Report::new(&self.title);
        for b in &self.blocks {
            match b {
                Block::Heading(h) => {
                    r.heading(2, h);
                }
                Block::Text(t) => {
                    r.paragraph(t);
                }
                Block::Table(t) => {
                    r.heading(4, &t.title);
                    let header: Vec<&str> = t.header.iter().map(String::as_str).collect();
                    r.table(&header, &t.rows);
                }
                Block::Figure(f) => {
                    r.svg(&f.svg, &f.caption);
                }
            }
        }
        r.to_html()
    }

    /// The report for a terminal: headings, paragraphs wrapped at `width`
    /// columns, aligned tables. Figures are left to the HTML page.
    pub fn to_text(&self, width: usize) -> String {
        let mut out = String::new();
        for b in &self.blocks {
            match b {
                Block::Heading(h) => out.push_str(&format!("\n== {h} ==\n")),
                Block::Table(t) => out.push_str(&format!("\n{}\n", format_table(t))),
                Block::Text(t) => out.push_str(&format!("\n{}\n", wrap(t, width))),
                Block::Figure(_) => {}
            }
        }
        out
    }
}

/// Wraps text at `width` columns, on spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        let n = word.chars().count();
        if line > 0 && line + 1 + n > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += n;
    }
    out
}

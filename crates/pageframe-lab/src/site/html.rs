//! The report page: one HTML file with its style, plots (SVG as data URIs)
//! and a small script inline, so it can be mailed or attached as it is.
//!
//! The script checks the page itself once it has loaded — every plot image
//! decoded, every table's row count, each conformance suite's status — and writes the result as JSON into a
//! hidden `<pre id="page-check">`, which the browser test reads.

use super::markup::escape;
use super::{conform_section, RunInfo, Section};
use crate::conform::saved::SuiteSummary;
use crate::experiments;
use crate::report::{columns_of, Row};
use crate::summary::{self, SummaryLine};
use serde_json::Value;
use std::fmt::Write;

const STYLE: &str = "body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
h1{margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.8em 0;font-size:.85em}th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right}
th{background:#f4f4f4}td.text{text-align:left}.meta td{text-align:left}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.9em;color:#555}
.matches{color:#176e17}.DIFFERS{color:#b00}.notes{font-size:.85em;color:#555}pre{background:#f8f8f8;padding:.6em;overflow:auto;font-size:.8em}
.scroll{overflow-x:auto}";

const CHECK_SCRIPT: &str = "window.addEventListener('load', function () {
  var images = Array.prototype.map.call(document.querySelectorAll('img.plot'), function (img) {
    return {name: img.getAttribute('data-plot'), loaded: img.complete && img.naturalWidth > 0, width: img.naturalWidth};
  });
  var tables = Array.prototype.map.call(document.querySelectorAll('table.rows'), function (table) {
    return {name: table.getAttribute('data-table'), rows: table.tBodies.length ? table.tBodies[0].rows.length : 0};
  });
  var conform = Array.prototype.map.call(document.querySelectorAll('table.conform tbody tr'), function (row) {
    return {suite: row.getAttribute('data-suite'), status: row.getAttribute('data-status')};
  });
  var out = document.createElement('pre');
  out.id = 'page-check';
  out.hidden = true;
  out.textContent = JSON.stringify({images: images, tables: tables, conform: conform});
  document.body.appendChild(out);
});";

/// Standard base64 with padding (for data URIs).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let word = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for at in 0..4 {
            if at <= chunk.len() {
                out.push(ALPHABET[(word >> (18 - 6 * at)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The whole page; the conformance section after the experiments when given.
pub fn page(info: &RunInfo, sections: &[Section], conform: Option<&[SuiteSummary]>) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>pageframe lab: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&info.command)
    );
    let _ = writeln!(out, "<h1>pageframe laboratory</h1>");
    let _ = writeln!(
        out,
        "<p>The experiments of the five source documents, rerun on pageframe. Each plot draws our numbers solid and the document's dashed or pale.</p>"
    );
    let _ = writeln!(out, "<table class=\"meta\">");
    for (key, value) in [
        ("command", info.command.as_str()),
        ("seed", &info.seed.to_string()),
        ("scale", info.scale.as_str()),
        ("machine", info.machine.as_str()),
        ("date", info.date.as_str()),
    ] {
        let _ = writeln!(out, "<tr><th>{key}</th><td>{}</td></tr>", escape(value));
    }
    let _ = writeln!(out, "</table>");
    summary_table(&mut out, sections);
    for section in sections {
        experiment(&mut out, section);
    }
    if let Some(summaries) = conform {
        conform_section::section(&mut out, summaries);
    }
    let _ = write!(out, "<script>{CHECK_SCRIPT}</script>\n</body>\n</html>\n");
    out
}

fn summary_table(out: &mut String, sections: &[Section]) {
    let lines: Vec<SummaryLine> = sections
        .iter()
        .map(|section| (section.report.experiment.clone(), section.headline.clone()))
        .collect();
    let _ = writeln!(out, "<h2 id=\"summary\">Summary</h2>");
    let _ = writeln!(
        out,
        "<table class=\"rows\" data-table=\"summary\"><thead><tr><th>experiment</th><th>headline</th><th>ours</th><th>document</th><th>direction</th><th>seconds</th></tr></thead><tbody>"
    );
    for ((name, headline), section) in lines.iter().zip(sections) {
        let (metric, ours, document, direction) = match headline {
            Some(headline) => (
                headline.metric.as_str(),
                headline.ours.as_str(),
                headline.document.as_str(),
                summary::direction_word(headline.direction_matches),
            ),
            None => ("(no headline yet)", "-", "-", "n/a"),
        };
        let _ = writeln!(
            out,
            "<tr><td class=\"text\"><a href=\"#{0}\">{0}</a></td><td class=\"text\">{1}</td><td>{2}</td><td>{3}</td><td class=\"{4}\">{4}</td><td>{5:.1}</td></tr>",
            escape(name),
            escape(metric),
            escape(ours),
            escape(document),
            direction,
            section.seconds
        );
    }
    let _ = writeln!(out, "</tbody></table>");
}

fn experiment(out: &mut String, section: &Section) {
    let report = &section.report;
    let name = escape(&report.experiment);
    let _ = writeln!(out, "<h2 id=\"{name}\">{name}</h2>");
    if let Ok(entry) = experiments::find(&report.experiment) {
        let source = if entry.source().is_empty() {
            String::new()
        } else {
            format!(" Source: <code>{}</code>.", escape(entry.source()))
        };
        let _ = writeln!(out, "<p>{}.{source}</p>", escape(entry.about()));
    }
    let mut parameters: Vec<String> = vec![
        format!("seed {}", report.seed),
        format!("scale {}", escape(&report.scale)),
    ];
    for (key, value) in section.params.values() {
        parameters.push(format!("{key} = {}", escape(&value.to_string())));
    }
    let _ = writeln!(
        out,
        "<p class=\"notes\">{}; {:.1} s. Files: <a href=\"{name}/{name}.json\">JSON</a>, <a href=\"{name}/{name}.csv\">CSV</a>.</p>",
        parameters.join(", "),
        section.seconds
    );
    for (plot, svg) in &section.plots {
        let plot_name = escape(&plot.name);
        let _ = writeln!(
            out,
            "<figure><img class=\"plot\" data-plot=\"{name}/{plot_name}\" alt=\"{}\" src=\"data:image/svg+xml;base64,{}\"><figcaption>{} (<a href=\"{name}/{plot_name}.svg\">SVG</a>, <a href=\"{name}/{plot_name}.png\">PNG</a>)</figcaption></figure>",
            escape(&plot.title),
            base64(svg.as_bytes()),
            escape(&plot.caption)
        );
    }
    rows_table(out, report);
    if !report.notes.is_empty() {
        let _ = writeln!(out, "<ul class=\"notes\">");
        for note in &report.notes {
            let _ = writeln!(out, "<li>{}</li>", escape(note));
        }
        let _ = writeln!(out, "</ul>");
    }
    for (label, view, text) in &section.views {
        let _ = writeln!(
            out,
            "<details><summary>/proc/{} ({})</summary><pre>{}</pre></details>",
            escape(view),
            escape(label),
            escape(text)
        );
    }
}

/// The result rows as the experiment's table (class `rows`, which the
/// page check counts), then each series folded away in a table of its own.
fn rows_table(out: &mut String, report: &crate::report::Report) {
    let results: Vec<&Row> = report.results().collect();
    table(
        out,
        &format!(
            "<table class=\"rows\" data-table=\"{}\">",
            escape(&report.experiment)
        ),
        &results,
    );
    for name in report.series_names() {
        let samples: Vec<&Row> = report.series(&name).collect();
        let _ = writeln!(
            out,
            "<details><summary>series {}: {} samples</summary>",
            escape(&name),
            samples.len()
        );
        table(
            out,
            &format!("<table class=\"series\" data-series=\"{}\">", escape(&name)),
            &samples,
        );
        let _ = writeln!(out, "</details>");
    }
}

fn table(out: &mut String, open_tag: &str, rows: &[&Row]) {
    let columns = columns_of(rows.iter().copied());
    let _ = write!(out, "<div class=\"scroll\">{open_tag}<thead><tr>");
    for column in &columns {
        let _ = write!(out, "<th>{}</th>", escape(column));
    }
    let _ = writeln!(out, "</tr></thead><tbody>");
    for row in rows {
        let _ = write!(out, "<tr>");
        for column in &columns {
            match row.get(column) {
                Some(Value::String(text)) => {
                    let _ = write!(out, "<td class=\"text\">{}</td>", escape(text));
                }
                Some(Value::Null) | None => {
                    let _ = write!(out, "<td>-</td>");
                }
                Some(other) => {
                    let _ = write!(out, "<td>{}</td>", escape(&other.to_string()));
                }
            }
        }
        let _ = writeln!(out, "</tr>");
    }
    let _ = writeln!(out, "</tbody></table></div>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}

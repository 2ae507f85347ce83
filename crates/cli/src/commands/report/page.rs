//! The report's HTML: one self-contained page (inline style, no script) that shows the
//! summary table and links the images beside it, each with its size and a caption.
//!
//! It knows nothing of how the images were made; it is told their files and sizes.

use std::fmt::Write as _;

/// Text safe inside HTML.
pub(super) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page being written.
pub(super) struct Page {
    html: String,
}

impl Page {
    /// A page titled after the run, with its summary table.
    pub(super) fn new(run: &str, summary: &[(String, String)]) -> Self {
        let mut html = String::from(concat!(
            "<!doctype html>\n<html><head><meta charset=\"utf-8\">",
            "<title>flysim run report</title>\n<style>",
            "body{font-family:sans-serif;margin:2em;max-width:1100px}",
            "td{padding:2px 12px}figure{margin:1em 0;overflow-x:auto}",
            "figcaption{color:#444;font-size:90%;max-width:900px}",
            "img{border:1px solid #ccc;display:block}",
            "img.pixels{image-rendering:pixelated}",
            "</style></head><body>\n"
        ));
        let _ = writeln!(html, "<h1>Run {}</h1>\n<table>", escape(run));
        for (key, value) in summary {
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td><code>{}</code></td></tr>",
                escape(key),
                escape(value)
            );
        }
        html.push_str("</table>\n");
        Self { html }
    }

    /// A section heading.
    pub(super) fn heading(&mut self, text: &str) {
        let _ = writeln!(self.html, "<h2>{}</h2>", escape(text));
    }

    /// A paragraph of plain text.
    pub(super) fn note(&mut self, text: &str) {
        let _ = writeln!(self.html, "<p>{}</p>", escape(text));
    }

    /// An image of `width` x `height` pixels with its caption; `pixels` keeps its pixels
    /// sharp when the browser scales it.
    pub(super) fn image(
        &mut self,
        file: &str,
        (width, height): (u32, u32),
        caption: &str,
        pixels: bool,
    ) {
        let _ = writeln!(
            self.html,
            "<figure><img{} src=\"{}\" width=\"{width}\" height=\"{height}\" alt=\"{}\"><figcaption>{}</figcaption></figure>",
            if pixels { " class=\"pixels\"" } else { "" },
            escape(file),
            escape(caption),
            escape(caption)
        );
    }

    /// The finished document.
    pub(super) fn finish(mut self) -> String {
        self.html.push_str("</body></html>\n");
        self.html
    }
}

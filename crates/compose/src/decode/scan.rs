//! A pass over a document's text before the KDL parser sees it: the parser recurses once per
//! nested children block and per nested `/* */` comment, so a document nested deeper than
//! [`DEPTH_LIMIT`] is refused here (it would overflow the stack); the parser holds every node
//! in memory (a few kilobytes each), so the nodes are counted here and a document past its
//! budget of nodes is refused before any is built; and a comment holding a code point KDL 2
//! disallows (C0 controls, bidi overrides) is refused, since the parser lets comments through
//! unchecked.
//!
//! It knows where strings, comments and nodes begin and end, and nothing else of KDL's grammar;
//! a document it cannot follow (an unterminated string) is left to the parser to report. The
//! node count is an upper bound: a node is counted where text other than whitespace and
//! comments begins after a node's end (a newline, `;`, `{` or `}`), so a node is never missed.

/// How deep children blocks and block comments may nest, together.
pub(crate) const DEPTH_LIMIT: usize = 64;

/// How many nodes a composition may have, with its included files (slashdashed nodes count: the
/// parser builds them too). A composition needs a few dozen; the limit leaves room for any
/// hand-written one, and the parser's memory for this many is some hundred megabytes.
pub(crate) const NODE_LIMIT: usize = 65_536;

/// What the scan refused, at a byte offset.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Finding {
    /// Nesting deeper than [`DEPTH_LIMIT`] opens here.
    TooDeep {
        /// The offset of the `{` or `/*` one level too deep.
        at: usize,
    },
    /// More nodes than the budget: the first node past it begins here.
    TooManyNodes {
        /// The offset where the node past the budget begins.
        at: usize,
    },
    /// A disallowed code point in a comment.
    Disallowed {
        /// Its offset.
        at: usize,
        /// The code point.
        ch: char,
    },
}

/// Whether KDL 2 disallows `ch` as a literal code point in a document.
pub(crate) fn disallowed(ch: char) -> bool {
    matches!(ch,
        '\u{0}'..='\u{8}'
        | '\u{e}'..='\u{1f}'
        | '\u{7f}'
        | '\u{200e}' | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}'
        | '\u{feff}')
}

/// Why the walk stopped early.
enum Stop {
    /// A refusal.
    Found(Finding),
    /// Text the walk cannot follow (an unterminated string or comment): the parser reports it.
    Lost,
}

/// The number of nodes in `text` (at most `budget`), or its first refusal.
pub(super) fn scan(text: &str, budget: usize) -> Result<usize, Finding> {
    let mut nodes = NodeCount {
        budget,
        ..NodeCount::default()
    };
    match walk(text, &mut nodes) {
        Err(Stop::Found(found)) => Err(found),
        Ok(()) => Ok(nodes.count),
        // An unterminated string or comment: the scan no longer knows what is text, and the
        // parser may read it otherwise. Bound the nesting of every `{` and `/*` as written, so
        // no reading of the rest can recurse past the limit. The rest is one string or comment
        // to the parser, so it holds no node.
        Err(Stop::Lost) => match raw_too_deep(text) {
            Some(at) => Err(Finding::TooDeep { at }),
            None => Ok(nodes.count),
        },
    }
}

/// The nodes met so far, against a budget.
#[derive(Default)]
struct NodeCount {
    /// How many nodes may begin.
    budget: usize,
    /// How many have begun.
    count: usize,
    /// Whether the current node has begun (text since the last node end).
    open: bool,
    /// Whether a `\` continues the current node onto the next line.
    continued: bool,
}

impl NodeCount {
    /// Text other than whitespace or a comment at offset `at`: a node begins unless one is open.
    fn text(&mut self, at: usize) -> Result<(), Stop> {
        if !self.open {
            self.open = true;
            self.count += 1;
            if self.count > self.budget {
                return Err(Stop::Found(Finding::TooManyNodes { at }));
            }
        }
        Ok(())
    }

    /// A newline: it ends the node unless a `\` continued it.
    fn newline(&mut self) {
        if !std::mem::take(&mut self.continued) {
            self.open = false;
        }
    }

    /// A `;`, `{` or `}`: the node (or its header) ends.
    fn end(&mut self) {
        self.open = false;
        self.continued = false;
    }
}

/// The length of the newline at the start of `rest` (KDL 2's newlines), 0 if none.
fn newline_len(rest: &[u8]) -> usize {
    const MULTI_BYTE: [&[u8]; 3] = [
        "\u{85}".as_bytes(),
        "\u{2028}".as_bytes(),
        "\u{2029}".as_bytes(),
    ];
    match rest.first() {
        Some(b'\n' | b'\r' | 0x0c) => 1,
        Some(_) => MULTI_BYTE
            .iter()
            .find(|n| rest.starts_with(n))
            .map_or(0, |n| n.len()),
        None => 0,
    }
}

/// The first `{` or `/*` nested past [`DEPTH_LIMIT`] when strings and comments are ignored.
fn raw_too_deep(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0usize;
    while i < bytes.len() {
        if bytes[i] == b'{' || bytes[i..].starts_with(b"/*") {
            depth += 1;
            if depth > DEPTH_LIMIT {
                return Some(i);
            }
        } else if bytes[i] == b'}' || bytes[i..].starts_with(b"*/") {
            depth = depth.saturating_sub(1);
        }
        i += if bytes[i..].starts_with(b"/*") || bytes[i..].starts_with(b"*/") {
            2
        } else {
            1
        };
    }
    None
}

/// Walks `text` outside strings, counting nesting and nodes and checking comments.
fn walk(text: &str, nodes: &mut NodeCount) -> Result<(), Stop> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0usize;
    while i < bytes.len() {
        let newline = newline_len(&bytes[i..]);
        if newline > 0 {
            nodes.newline();
            i += newline;
            continue;
        }
        match bytes[i] {
            b' ' | b'\t' => i += 1,
            b'"' => {
                nodes.text(i)?;
                i = string_end(text, i, 0)?;
            }
            b'#' => {
                nodes.text(i)?;
                let hashes = bytes[i..].iter().take_while(|b| **b == b'#').count();
                if bytes.get(i + hashes) == Some(&b'"') {
                    i = string_end(text, i + hashes, hashes)?;
                } else {
                    i += hashes;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(text.len(), |n| i + n);
                check_text(text, i, end)?;
                i = end;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = comment_end(text, i, depth)?,
            b'{' => {
                nodes.end();
                depth += 1;
                if depth > DEPTH_LIMIT {
                    return Err(Stop::Found(Finding::TooDeep { at: i }));
                }
                i += 1;
            }
            b'}' | b';' => {
                nodes.end();
                if bytes[i] == b'}' {
                    depth = depth.saturating_sub(1);
                }
                i += 1;
            }
            b'\\' => {
                nodes.continued = true;
                i += 1;
            }
            _ => {
                nodes.text(i)?;
                i += 1;
            }
        }
    }
    Ok(())
}

/// Refuses the first disallowed code point in `text[start..end]`.
fn check_text(text: &str, start: usize, end: usize) -> Result<(), Stop> {
    match text[start..end]
        .char_indices()
        .find(|(_, c)| disallowed(*c))
    {
        Some((n, ch)) => Err(Stop::Found(Finding::Disallowed { at: start + n, ch })),
        None => Ok(()),
    }
}

/// The offset just past the block comment opening at `start` (block comments nest), inside
/// `outer` children blocks.
fn comment_end(text: &str, start: usize, outer: usize) -> Result<usize, Stop> {
    let bytes = text.as_bytes();
    let mut nesting = 0usize;
    let mut i = start;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"/*") {
            nesting += 1;
            if outer + nesting > DEPTH_LIMIT {
                return Err(Stop::Found(Finding::TooDeep { at: i }));
            }
            i += 2;
        } else if bytes[i..].starts_with(b"*/") {
            nesting -= 1;
            i += 2;
            if nesting == 0 {
                return Ok(i);
            }
        } else {
            let ch = text[i..].chars().next().unwrap_or_default();
            check_text(text, i, i + ch.len_utf8())?;
            i += ch.len_utf8();
        }
    }
    Err(Stop::Lost)
}

/// The offset just past the string whose opening quote is at `quote` (raw, with `hashes`
/// hashes, when `hashes > 0`).
fn string_end(text: &str, quote: usize, hashes: usize) -> Result<usize, Stop> {
    let bytes = text.as_bytes();
    let multi = bytes[quote..].starts_with(b"\"\"\"");
    let closer = format!(
        "{}{}",
        if multi { "\"\"\"" } else { "\"" },
        "#".repeat(hashes)
    );
    let mut i = quote + if multi { 3 } else { 1 };
    if hashes > 0 {
        return text[i..]
            .find(&closer)
            .map(|n| i + n + closer.len())
            .ok_or(Stop::Lost);
    }
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
        } else if bytes[i..].starts_with(closer.as_bytes()) {
            return Ok(i + closer.len());
        } else {
            i += 1;
        }
    }
    Err(Stop::Lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scan of `text` with the full budget.
    fn scan_all(text: &str) -> Result<usize, Finding> {
        scan(text, NODE_LIMIT)
    }

    #[test]
    fn an_unterminated_string_does_not_hide_deep_nesting() {
        let text = format!("node \"{}", "a {".repeat(DEPTH_LIMIT + 1));
        assert!(matches!(scan_all(&text), Err(Finding::TooDeep { .. })));
        assert_eq!(scan_all("node \"unterminated {"), Ok(1));
    }

    #[test]
    fn nesting_is_counted_outside_strings_and_comments_are_checked() {
        let deep = "a {".repeat(DEPTH_LIMIT + 1);
        assert_eq!(
            scan_all(&deep),
            Err(Finding::TooDeep {
                at: 3 * DEPTH_LIMIT + 2
            })
        );
        assert_eq!(scan_all(&"a {".repeat(DEPTH_LIMIT)), Ok(DEPTH_LIMIT));
        let comments = "/*".repeat(DEPTH_LIMIT + 1);
        assert_eq!(
            scan_all(&comments),
            Err(Finding::TooDeep {
                at: 2 * DEPTH_LIMIT
            })
        );
        let braces_in_strings = format!(
            "a \"{}\" #\"{}\"# \"\\\"{{\"",
            "{".repeat(99),
            "{".repeat(99)
        );
        assert_eq!(scan_all(&braces_in_strings), Ok(1));
        assert_eq!(
            scan_all("a // x\u{202e}y\n"),
            Err(Finding::Disallowed {
                at: 6,
                ch: '\u{202e}'
            })
        );
        assert_eq!(
            scan_all("a /* \u{1b}[2J */"),
            Err(Finding::Disallowed {
                at: 5,
                ch: '\u{1b}'
            })
        );
        assert_eq!(scan_all("a \"\u{1b}\" /* fine */ // fine\n"), Ok(1));
    }

    #[test]
    fn every_node_is_counted_and_only_nodes() {
        let cases: [(&str, usize); 12] = [
            ("", 0),
            ("\n  \n// a comment\n/* a { b } */\n", 0),
            ("a", 1),
            ("a 1 2 k=v\n", 1),
            ("a; b;c\n", 3),
            ("a { b; c { d } }\ne", 5),
            ("a {\n  b\n}\n", 2),
            ("a \\ // continued\n  2\nb", 2),
            ("/-a { b }\nc /-d", 3),
            ("\"a b\" \"c\nd\"\n#\"e\nf\"#", 2),
            ("a\rb\u{2028}c\u{85}d\u{2029}e\u{c}f", 6),
            ("a \"\"\"\n b\n c\n \"\"\"\n", 1),
        ];
        for (text, count) in cases {
            assert_eq!(scan_all(text), Ok(count), "{text:?}");
        }
    }

    #[test]
    fn a_document_past_its_budget_is_refused_at_the_first_node_past_it() {
        assert_eq!(scan("a; b; c", 3), Ok(3));
        assert_eq!(scan("a; b; c", 2), Err(Finding::TooManyNodes { at: 6 }));
        assert_eq!(scan("a { b }", 1), Err(Finding::TooManyNodes { at: 4 }));
        assert_eq!(scan("a", 0), Err(Finding::TooManyNodes { at: 0 }));
    }
}

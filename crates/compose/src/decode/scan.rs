//! A pass over a document's text before the KDL parser sees it: the parser recurses once per
//! nested children block and per nested `/* */` comment, so a document nested deeper than
//! [`DEPTH_LIMIT`] is refused here (it would overflow the stack), and a comment holding a code
//! point KDL 2 disallows (C0 controls, bidi overrides) is refused, since the parser lets
//! comments through unchecked.
//!
//! It knows where strings and comments begin and end, and nothing else of KDL's grammar; a
//! document it cannot follow (an unterminated string) is left to the parser to report.

/// How deep children blocks and block comments may nest, together.
pub(crate) const DEPTH_LIMIT: usize = 64;

/// What the scan refused, at a byte offset.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Finding {
    /// Nesting deeper than [`DEPTH_LIMIT`] opens here.
    TooDeep {
        /// The offset of the `{` or `/*` one level too deep.
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

/// The first refusal in `text`, if any.
pub(super) fn scan(text: &str) -> Option<Finding> {
    match walk(text) {
        Err(Stop::Found(found)) => Some(found),
        Ok(()) => None,
        // An unterminated string or comment: the scan no longer knows what is text, and the
        // parser may read it otherwise. Bound the nesting of every `{` and `/*` as written, so
        // no reading of the rest can recurse past the limit.
        Err(Stop::Lost) => raw_too_deep(text).map(|at| Finding::TooDeep { at }),
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

/// Walks `text` outside strings, counting nesting and checking comments.
fn walk(text: &str) -> Result<(), Stop> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => i = string_end(text, i, 0)?,
            b'#' => {
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
                depth += 1;
                if depth > DEPTH_LIMIT {
                    return Err(Stop::Found(Finding::TooDeep { at: i }));
                }
                i += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
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
    #[test]
    fn an_unterminated_string_does_not_hide_deep_nesting() {
        let text = format!("node \"{}", "a {".repeat(super::DEPTH_LIMIT + 1));
        assert!(matches!(
            super::scan(&text),
            Some(super::Finding::TooDeep { .. })
        ));
        assert_eq!(super::scan("node \"unterminated {"), None);
    }

    use super::*;

    #[test]
    fn nesting_is_counted_outside_strings_and_comments_are_checked() {
        let deep = "a {".repeat(DEPTH_LIMIT + 1);
        assert_eq!(
            scan(&deep),
            Some(Finding::TooDeep {
                at: 3 * DEPTH_LIMIT + 2
            })
        );
        assert_eq!(scan(&"a {".repeat(DEPTH_LIMIT)), None);
        let comments = "/*".repeat(DEPTH_LIMIT + 1);
        assert_eq!(
            scan(&comments),
            Some(Finding::TooDeep {
                at: 2 * DEPTH_LIMIT
            })
        );
        let braces_in_strings = format!(
            "a \"{}\" #\"{}\"# \"\\\"{{\"",
            "{".repeat(99),
            "{".repeat(99)
        );
        assert_eq!(scan(&braces_in_strings), None);
        assert_eq!(
            scan("a // x\u{202e}y\n"),
            Some(Finding::Disallowed {
                at: 6,
                ch: '\u{202e}'
            })
        );
        assert_eq!(
            scan("a /* \u{1b}[2J */"),
            Some(Finding::Disallowed {
                at: 5,
                ch: '\u{1b}'
            })
        );
        assert_eq!(scan("a \"\u{1b}\" /* fine */ // fine\n"), None);
    }
}

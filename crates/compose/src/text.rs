//! Small text helpers: lexical path joining and "did you mean" suggestions.

/// Joins `path` (relative, `/`-separated) onto the directory `base` (relative to the composition's
/// directory, `""` for the directory itself) and normalises `.` and `..` lexically.
///
/// Returns the joined path and whether it climbs out of the composition's directory (then it
/// keeps its leading `..` components).
pub(crate) fn join_lexical(base: &str, path: &str) -> (String, bool) {
    let mut parts: Vec<&str> = Vec::new();
    for part in base.split('/').chain(path.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let escapes = parts.first() == Some(&"..");
    (parts.join("/"), escapes)
}

/// Levenshtein distance between two short strings.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(row[j + 1])
            };
            prev = here;
        }
    }
    row[b.len()]
}

/// The closest candidate to `word`, if it is close enough to be a likely typo.
pub(crate) fn suggest<'a>(
    word: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(2);
    candidates
        .map(|c| (distance(word, c), c))
        .filter(|(d, c)| *d <= limit || c.starts_with(word) || word.starts_with(*c))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_join() {
        assert_eq!(join_lexical("", "a/b.kdl"), ("a/b.kdl".to_owned(), false));
        assert_eq!(join_lexical("a", "../b.kdl"), ("b.kdl".to_owned(), false));
        assert_eq!(
            join_lexical("a", "../../b.kdl"),
            ("../b.kdl".to_owned(), true)
        );
        assert_eq!(join_lexical("", "./x/./y"), ("x/y".to_owned(), false));
    }

    #[test]
    fn suggestions() {
        let words = ["agent", "environment", "profile"];
        assert_eq!(suggest("agnet", words.iter().copied()), Some("agent"));
        assert_eq!(
            suggest("enviroment", words.iter().copied()),
            Some("environment")
        );
        assert_eq!(suggest("zzz", words.iter().copied()), None);
    }
}

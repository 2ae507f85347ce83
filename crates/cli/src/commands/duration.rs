//! Durations written on the command line: a number with an optional unit, `16.7ms`,
//! `16666667ns`, `1/60s`, `250us`, or a bare integer or `N/D` meaning nanoseconds, turned into
//! the exact [`RationalNs`] it names.
//!
//! It owns the spellings and their refusal; it does not know what the duration is for.

use flysim_types::RationalNs;

/// Why a duration was refused, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal(pub(crate) String);

/// The units, longest suffix first, and their length in nanoseconds.
const UNITS: [(&str, u128); 5] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

/// Parses a duration (see the module header).
pub(crate) fn parse(text: &str) -> Result<RationalNs, Refusal> {
    let (number, unit) = UNITS
        .iter()
        .find_map(|(suffix, ns)| text.strip_suffix(suffix).map(|n| (n, Some(*ns))))
        .unwrap_or((text, None));
    let (numerator, denominator) = fraction(number)?;
    if unit.is_none() && number.contains('.') {
        return Err(Refusal(format!("{number} has a decimal point but no unit")));
    }
    let scale = unit.unwrap_or(1);
    let numerator = numerator
        .checked_mul(scale)
        .ok_or_else(|| Refusal("it is too long to count in nanoseconds".to_owned()))?;
    RationalNs::reduce(numerator, denominator, || format!("the duration {text}"))
        .map_err(|e| Refusal(e.to_string()))
}

/// `number` as `numerator / denominator`: digits, digits with a decimal point, or `N/D`.
fn fraction(number: &str) -> Result<(u128, u128), Refusal> {
    let digits = |s: &str| -> Result<u128, Refusal> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 30 {
            return Err(Refusal(if number.is_empty() {
                "there is no number".to_owned()
            } else {
                format!("{number:?} is not a number")
            }));
        }
        s.parse()
            .map_err(|_| Refusal(format!("{number:?} is too large")))
    };
    if let Some((n, d)) = number.split_once('/') {
        let d = digits(d)?;
        if d == 0 {
            return Err(Refusal("the denominator is zero".to_owned()));
        }
        return Ok((digits(n)?, d));
    }
    if let Some((whole, part)) = number.split_once('.') {
        let places = u32::try_from(part.len()).unwrap_or(u32::MAX);
        let scale = 10u128
            .checked_pow(places)
            .filter(|_| places <= 18)
            .ok_or_else(|| Refusal(format!("{number:?} has too many decimal places")))?;
        let whole = if whole.is_empty() { 0 } else { digits(whole)? };
        let numerator = whole
            .checked_mul(scale)
            .and_then(|w| w.checked_add(digits(part).ok()?))
            .ok_or_else(|| Refusal(format!("{number:?} is not a number")))?;
        return Ok((numerator, scale));
    }
    Ok((digits(number)?, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(text: &str) -> String {
        parse(text).map_or_else(|r| format!("refused: {}", r.0), |d| d.to_string())
    }

    #[test]
    fn every_spelling_names_its_exact_duration() {
        assert_eq!(ns("16.7ms"), "16700000/1");
        assert_eq!(ns("16666667ns"), "16666667/1");
        assert_eq!(ns("16666667"), "16666667/1");
        assert_eq!(ns("1/60s"), "50000000/3");
        assert_eq!(ns("1/60"), "1/60");
        assert_eq!(ns("250us"), "250000/1");
        assert_eq!(ns("250µs"), "250000/1");
        assert_eq!(ns(".5s"), "500000000/1");
        assert_eq!(ns("8572265625/512"), "8572265625/512");
    }

    #[test]
    fn a_bad_unit_or_number_is_refused() {
        assert_eq!(ns("16.7"), "refused: 16.7 has a decimal point but no unit");
        assert_eq!(ns("16.7min"), "refused: \"16.7min\" is not a number");
        assert_eq!(ns("ms"), "refused: there is no number");
        assert_eq!(ns("1/0s"), "refused: the denominator is zero");
        assert!(ns("1.2.3ms").starts_with("refused"));
        assert!(ns("-1ms").starts_with("refused"));
    }
}

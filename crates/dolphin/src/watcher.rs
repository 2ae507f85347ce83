//! The MemoryWatcher datagram parser and the mirror of Dolphin's watch cache.
//!
//! Dolphin's MemoryWatcher sends, at the end of every emulated field, one datagram holding a
//! `"<location>\n<hex value>\n"` pair for every watched word that changed since its own cache,
//! then a NUL; with nothing changed the datagram is the single byte `"\0"`. Older builds sent one
//! pair per datagram or zero-padded the value; [`parse`] reads all of these forms. Because only
//! changes are sent, the consumer keeps a [`Mirror`] that equals Dolphin's cache at all times
//! (both start with every value 0).

use std::collections::BTreeMap;

use crate::error::DolphinError;

/// The `(location, value)` pairs of one datagram, in the order sent.
///
/// # Errors
///
/// [`DolphinError::HelperFailed`] for text that is not UTF-8, an unpaired location, or a value
/// that is not a 32-bit hex number.
pub fn parse(datagram: &[u8]) -> Result<Vec<(String, u32)>, DolphinError> {
    let body = datagram
        .iter()
        .rposition(|b| *b != 0)
        .map_or(&datagram[..0], |last| &datagram[..=last]);
    let text = std::str::from_utf8(body)
        .map_err(|_| DolphinError::helper("a MemoryWatcher datagram is not UTF-8"))?;
    let mut lines = text.split('\n').filter(|l| !l.is_empty());
    let mut pairs = Vec::new();
    while let Some(location) = lines.next() {
        let value = lines.next().ok_or_else(|| {
            DolphinError::helper(format!(
                "MemoryWatcher location {location:?} came without a value"
            ))
        })?;
        let parsed = u32::from_str_radix(value.trim(), 16).map_err(|_| {
            DolphinError::helper(format!(
                "MemoryWatcher value {value:?} for {location:?} is not a 32-bit hex number"
            ))
        })?;
        pairs.push((location.trim().to_owned(), parsed));
    }
    Ok(pairs)
}

/// The consumer's copy of Dolphin's watch cache: one value per watched location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    values: BTreeMap<String, u32>,
    order: Vec<String>,
}

impl Mirror {
    /// A mirror of `locations` (in watch order), every value 0 as in Dolphin's fresh cache.
    #[must_use]
    pub fn new(locations: &[String]) -> Self {
        Self {
            values: locations.iter().map(|l| (l.clone(), 0)).collect(),
            order: locations.to_vec(),
        }
    }

    /// Applies one datagram.
    ///
    /// # Errors
    ///
    /// [`DolphinError::HelperFailed`] for a malformed datagram or a location that is not
    /// watched; the mirror is unchanged then.
    pub fn apply(&mut self, datagram: &[u8]) -> Result<(), DolphinError> {
        let pairs = parse(datagram)?;
        if let Some((unknown, _)) = pairs.iter().find(|(l, _)| !self.values.contains_key(l)) {
            return Err(DolphinError::helper(format!(
                "the MemoryWatcher reported {unknown:?}, which is not watched"
            )));
        }
        for (location, value) in pairs {
            self.values.insert(location, value);
        }
        Ok(())
    }

    /// The current values, in watch order.
    #[must_use]
    pub fn values(&self) -> Vec<u32> {
        self.order.iter().map(|l| self.values[l]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multi_pair_datagram_yields_every_pair_in_order() {
        let got = parse(b"80001804\n2a\n80001808\n1c5fee\n8000180c\n1\n\0").unwrap();
        assert_eq!(
            got,
            [
                ("80001804".to_owned(), 0x2a),
                ("80001808".to_owned(), 0x1c_5fee),
                ("8000180c".to_owned(), 1)
            ]
        );
    }

    #[test]
    fn an_empty_datagram_is_a_field_with_no_change() {
        assert_eq!(parse(b"\0").unwrap(), []);
        assert_eq!(parse(b"").unwrap(), []);
    }

    #[test]
    fn older_forms_parse_too() {
        assert_eq!(
            parse(b"804d7420 10 4\n0000002a\n").unwrap(),
            [("804d7420 10 4".to_owned(), 42)]
        );
        assert_eq!(
            parse(b"80001800\nffffffff\n\0").unwrap(),
            [("80001800".to_owned(), u32::MAX)]
        );
    }

    #[test]
    fn malformed_datagrams_are_refused() {
        for bad in [
            &b"80001800\n\0"[..],
            b"80001800\nxyz\n\0",
            b"80001800\n100000000\n\0",
            b"\xff\xfe\n1\n\0",
        ] {
            assert_eq!(parse(bad).unwrap_err().code_str(), "FS0805", "{bad:?}");
        }
    }

    #[test]
    fn the_mirror_starts_at_zero_and_keeps_unchanged_values() {
        let locations = vec!["80001800".to_owned(), "80001804".to_owned()];
        let mut mirror = Mirror::new(&locations);
        assert_eq!(mirror.values(), [0, 0]);
        mirror
            .apply(b"80001800\n46534743\n80001804\n1\n\0")
            .unwrap();
        assert_eq!(mirror.values(), [0x4653_4743, 1]);
        mirror.apply(b"80001804\n2\n\0").unwrap();
        mirror.apply(b"\0").unwrap();
        assert_eq!(mirror.values(), [0x4653_4743, 2]);
        let before = mirror.clone();
        assert!(mirror.apply(b"80001804\n3\n80002000\n1\n\0").is_err());
        assert_eq!(mirror, before, "a refused datagram changes nothing");
    }
}

//! The registry of flysim diagnostic codes and their explain pages.
//!
//! Every refusal flysim reports carries a code `FS` + four digits. This crate lists each code
//! once, with its explain page (`explain/FSnnnn.md`, compiled in with `include_str!`, so a missing
//! page is a build error), and says whether the code is still emitted. `flysim explain CODE`
//! prints the page; a workspace test checks the registry both ways (every emitted code is
//! registered, every registered code is emitted or retired) and runs every page's example.
//!
//! Ranges: `FS00xx` reserved, `FS01xx` contract values and JSON (flysim-types), `FS02xx`
//! compositions, `FS03xx` sessions, `FS04xx` store (`FS044x` the checkpoint envelope; `FS046x`
//! the presentation gateway), `FS05xx` bus and RPC, `FS06xx` the Game Boy backend, `FS07xx` the
//! brain (connectome files `FS070x`, importers `FS071x`, profiles and the model `FS072x`,
//! snapshots `FS073x`), `FS08xx` the Dolphin (GameCube) backend, `FS09xx` the command line.
//!
//! **Invariant:** this crate has no dependencies and no logic beyond lookup; it knows which codes
//! exist, not where they are raised. Codes are never reused: a retired code keeps its page.

/// One registered diagnostic code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    /// The code, `FS` + four digits.
    pub code: &'static str,
    /// The explain page in Markdown: a `# FSnnnn: summary` heading, then Example, Cause and Fix.
    pub explain: &'static str,
    /// Whether the code is no longer emitted (its page stays).
    pub retired: bool,
}

impl Code {
    /// The one-line summary from the page heading.
    #[must_use]
    pub fn summary(&self) -> &'static str {
        let heading = self.explain.lines().next().unwrap_or_default();
        heading.split_once(": ").map_or(heading, |(_, s)| s).trim()
    }
}

macro_rules! registry {
    ($($code:ident $(($retired:ident))?),* $(,)?) => {
        /// Every registered code, in ascending order.
        pub const ALL: &[Code] = &[
            $(Code {
                code: stringify!($code),
                explain: include_str!(concat!("../explain/", stringify!($code), ".md")),
                retired: registry!(@retired $($retired)?),
            },)*
        ];
    };
    (@retired) => { false };
    (@retired retired) => { true };
}

registry! {
    FS0101, FS0102, FS0103, FS0104, FS0105, FS0106, FS0107,
    FS0110, FS0111, FS0112, FS0113, FS0114, FS0115, FS0116, FS0117, FS0118, FS0119,
    FS0120, FS0121, FS0122,
    FS0130, FS0131,
    FS0201, FS0202, FS0203, FS0204, FS0205, FS0206, FS0207, FS0208, FS0209,
    FS0210, FS0211, FS0212, FS0213, FS0214, FS0215, FS0216, FS0217, FS0218, FS0219,
    FS0220, FS0221, FS0222, FS0223, FS0224, FS0225, FS0226, FS0227, FS0228, FS0229,
    FS0230, FS0231, FS0236, FS0237, FS0238, FS0239, FS0240, FS0241, FS0242, FS0243,
    FS0244,
    FS0250, FS0251, FS0252, FS0253, FS0254, FS0255, FS0256, FS0257, FS0258, FS0259, FS0260,
    FS0261,
    FS0270, FS0271, FS0272, FS0273,
    FS0301, FS0302, FS0303, FS0304, FS0305, FS0306, FS0307, FS0308, FS0309, FS0310, FS0311,
    FS0312, FS0313, FS0314,
    FS0401, FS0402, FS0403, FS0404, FS0405, FS0406, FS0407, FS0408, FS0409,
    FS0440, FS0441, FS0442, FS0443, FS0444, FS0445, FS0446, FS0447, FS0448, FS0449,
    FS0460, FS0461,
    FS0501, FS0502, FS0503, FS0504, FS0505, FS0506, FS0507, FS0508, FS0509, FS0510,
    FS0511,
    FS0520, FS0521, FS0522, FS0523,
    FS0601, FS0602, FS0603, FS0604, FS0605, FS0606, FS0607, FS0608, FS0609,
    FS0701, FS0702, FS0703, FS0704,
    FS0710, FS0711, FS0712,
    FS0720, FS0721, FS0722, FS0723,
    FS0730, FS0731, FS0732,
    FS0801, FS0802, FS0803, FS0804, FS0805, FS0806, FS0807, FS0808, FS0809, FS0810,
    FS0811, FS0812,
    FS0901, FS0902, FS0903, FS0904, FS0905, FS0906, FS0907, FS0908, FS0909, FS0910,
    FS0911, FS0912,
    FS0930, FS0931, FS0932, FS0933, FS0934, FS0935, FS0936, FS0937, FS0938,
}

/// Looks a code up, accepting any letter case (`fs0101` finds `FS0101`).
#[must_use]
pub fn lookup(code: &str) -> Option<&'static Code> {
    ALL.iter().find(|c| c.code.eq_ignore_ascii_case(code))
}

/// Whether `text` has the shape of a code: `FS` and four digits.
#[must_use]
pub fn is_well_formed(text: &str) -> bool {
    text.len() == 6 && text.starts_with("FS") && text[2..].bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_is_sorted_unique_and_well_formed() {
        for pair in ALL.windows(2) {
            assert!(
                pair[0].code < pair[1].code,
                "{} then {}",
                pair[0].code,
                pair[1].code
            );
        }
        assert!(ALL.iter().all(|c| is_well_formed(c.code)));
    }

    #[test]
    fn every_page_has_heading_example_cause_and_fix() {
        for c in ALL {
            let heading = format!("# {}: ", c.code);
            assert!(
                c.explain.starts_with(&heading),
                "{} page must start with `{heading}`",
                c.code
            );
            assert!(!c.summary().is_empty(), "{} has an empty summary", c.code);
            for section in ["## Example", "## Cause", "## Fix"] {
                assert!(
                    c.explain.contains(section),
                    "{} page lacks `{section}`",
                    c.code
                );
            }
        }
    }

    #[test]
    fn every_page_file_is_registered() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("explain");
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let code = name.strip_suffix(".md").unwrap_or(&name);
            assert!(
                lookup(code).is_some(),
                "explain/{name} has no registry entry"
            );
        }
    }

    #[test]
    fn lookup_ignores_case_and_refuses_unknown() {
        assert_eq!(lookup("fs0101").map(|c| c.code), Some("FS0101"));
        assert!(lookup("FS9999").is_none());
    }
}

//! A crash: running one input under `catch_unwind`, and when it panics, keeping the input where
//! a person can make it a regression fixture (`<target dir>/fuzz-crashes/<target>/<sha256>`)
//! and describing it (where it came from, the panic, the input's hex). It knows nothing about
//! how inputs are made.

use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// The most input bytes a failure message shows as hex (the file holds them all).
const HEX_SHOWN: usize = 4096;

/// Runs `check` on `bytes`; the panic's message if it panicked.
pub(crate) fn run_caught(check: &dyn Fn(&[u8]), bytes: &[u8]) -> Option<String> {
    let payload = catch_unwind(AssertUnwindSafe(|| check(bytes))).err()?;
    Some(if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    })
}

/// Lowercase hex.
#[must_use]
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// The lowercase hex SHA-256 of `bytes` (a crash file's name).
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The cargo target directory of the running test binary (`<target>/<profile>/deps/<exe>`),
/// or the system's temporary directory when the binary sits elsewhere.
fn target_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            let deps = exe.ancestors().find(|a| a.ends_with("deps"))?.to_path_buf();
            Some(deps.parent()?.parent()?.to_path_buf())
        })
        .unwrap_or_else(std::env::temp_dir)
}

/// Where crashes of `target` are kept.
#[must_use]
pub fn crash_dir(target: &str) -> PathBuf {
    target_dir().join("fuzz-crashes").join(target)
}

/// Writes the crashing input into `dir` under its SHA-256; the path, or why it could not.
fn keep(dir: &Path, bytes: &[u8]) -> Result<PathBuf, String> {
    let path = dir.join(sha256_hex(bytes));
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, bytes))
        .map(|()| path)
        .map_err(|e| format!("could not be written to {}: {e}", dir.display()))
}

/// Keeps the input and describes the crash, for the test's failure message.
pub(crate) fn describe(target: &str, origin: &str, panic: &str, bytes: &[u8]) -> String {
    let kept = match keep(&crash_dir(target), bytes) {
        Ok(path) => format!("kept at {}", path.display()),
        Err(why) => why,
    };
    let shown = &bytes[..bytes.len().min(HEX_SHOWN)];
    let cut = if shown.len() < bytes.len() {
        format!(" (the first {HEX_SHOWN} bytes)")
    } else {
        String::new()
    };
    format!(
        "fuzz target `{target}` panicked on {origin}: {panic}\n\
         the input ({} bytes) is {kept}; copy it to fixtures/fuzz/{target}/ to keep it as a \
         regression\nhex{cut}: {}",
        bytes.len(),
        hex(shown)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_caught_with_its_message() {
        let check = |b: &[u8]| assert!(b.len() < 3, "too long: {}", b.len());
        assert_eq!(run_caught(&check, b"ab"), None);
        assert_eq!(run_caught(&check, b"abcd").as_deref(), Some("too long: 4"));
        let check = |_: &[u8]| panic!("plain");
        assert_eq!(run_caught(&check, b"").as_deref(), Some("plain"));
    }

    #[test]
    fn hex_and_digest_are_lowercase() {
        assert_eq!(hex(&[0x00, 0xab, 0x7f]), "00ab7f");
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}

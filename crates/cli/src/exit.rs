//! Exit codes of the `flysim` binary, one named constant each (documented in the README).

/// The command did what was asked.
pub(crate) const SUCCESS: u8 = 0;
/// The input was refused: a diagnostic with a code was printed.
pub(crate) const INPUT_REFUSED: u8 = 1;
/// The command line itself was malformed (clap's own exit code).
#[expect(dead_code, reason = "documents clap's usage exit code beside ours")]
pub(crate) const USAGE: u8 = 2;
/// A file could not be read or written.
pub(crate) const IO_FAILURE: u8 = 3;
/// A capability the command needs is not in this build (e.g. the Game Boy backend).
pub(crate) const UNAVAILABLE: u8 = 4;
/// A check found damage: `flysim assets verify` named corrupt registry entries.
pub(crate) const DAMAGE_FOUND: u8 = 5;
/// A run started and its epoch failed: a worker refused, was lost or timed out (`FS03xx`).
pub(crate) const RUN_FAILED: u8 = 6;
/// `flysim replay` computed another run digest than the recorded or asserted one (`FS0404`).
pub(crate) const DIGEST_MISMATCH: u8 = 7;
/// Standard output was a pipe whose reader had gone (`EPIPE`): nothing is reported, and the
/// code is the one a Unix tool killed by `SIGPIPE` ends with (128 + 13). Any other failure to
/// write standard output (a full disk) is `FS0908` with [`IO_FAILURE`].
pub(crate) const OUTPUT_CLOSED: u8 = 141;

//! Reading the files a composition names (includes, assets by path), bounded: the path's
//! metadata first, so a directory, FIFO, device or socket is refused before it is opened (a
//! FIFO would block, a device would never end), then at most [`INCLUDE_LIMIT`] bytes of an
//! included file.
//!
//! It owns these refusals as values; the caller turns them into diagnostics. It does not know
//! what the bytes mean.

use std::io::Read as _;
use std::path::Path;

/// The largest included file read: 16 MiB (a composition is a few kilobytes).
pub(crate) const INCLUDE_LIMIT: u64 = 16 << 20;

/// Why a file was not read.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The operating system refused.
    Io(std::io::Error),
    /// Not a regular file: what it is, in words.
    NotAFile(&'static str),
    /// Larger than the limit.
    TooLarge(u64),
}

/// The length of the regular file at `path`, or why it is no regular file.
pub(crate) fn regular_len(path: &Path) -> Result<u64, Refusal> {
    let meta = std::fs::metadata(path).map_err(Refusal::Io)?;
    if meta.is_file() {
        Ok(meta.len())
    } else {
        Err(Refusal::NotAFile(file_kind(&meta)))
    }
}

/// The bytes of the regular file at `path`, at most `limit` of them.
pub(crate) fn read(path: &Path, limit: u64) -> Result<Vec<u8>, Refusal> {
    let len = regular_len(path)?;
    if len > limit {
        return Err(Refusal::TooLarge(limit));
    }
    let file = std::fs::File::open(path).map_err(Refusal::Io)?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    // The file may have grown since `metadata`: read one byte past the limit at most.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(Refusal::Io)?;
    if bytes.len() as u64 > limit {
        return Err(Refusal::TooLarge(limit));
    }
    Ok(bytes)
}

/// What a path that is not a regular file is, in words (the command line's bounded reader says
/// it the same way).
#[must_use]
pub fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = meta.file_type();
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_are_refused_before_they_are_opened() {
        assert!(matches!(
            read(Path::new("/dev/zero"), 10),
            Err(Refusal::NotAFile("a device"))
        ));
        assert!(matches!(
            read(Path::new("/"), 10),
            Err(Refusal::NotAFile("a directory"))
        ));
        let file = std::env::temp_dir().join(format!("flysim-bounded-{}", std::process::id()));
        std::fs::write(&file, b"0123456789").unwrap();
        assert!(matches!(read(&file, 9), Err(Refusal::TooLarge(9))));
        assert_eq!(read(&file, 10).unwrap(), b"0123456789");
        std::fs::remove_file(&file).unwrap();
    }
}

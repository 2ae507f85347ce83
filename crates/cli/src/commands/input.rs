//! Reading a command's input file, bounded: a regular file (or standard input for `-`) of at
//! most [`INPUT_LIMIT`] bytes, checked before anything is allocated for it.
//!
//! It owns the refusals of unreadable, special and oversized inputs; it does not know what the
//! bytes mean.

use std::io::Read as _;
use std::path::Path;

use crate::error::CliError;

/// The largest input a command reads: 1 GiB. Connectomes are the largest inputs flysim reads
/// whole; a composition, a plan or a checkpoint is far smaller.
pub(crate) const INPUT_LIMIT: u64 = 1 << 30;

/// The largest composition read: 16 MiB (a composition is a few kilobytes of text).
pub(crate) const COMPOSITION_LIMIT: u64 = 16 << 20;

/// Reads a file, or standard input for `-`, refusing directories, FIFOs, devices and sockets
/// and anything over [`INPUT_LIMIT`].
pub(crate) fn read_input(path: &Path) -> Result<Vec<u8>, CliError> {
    read_bounded(path, INPUT_LIMIT)
}

/// [`read_input`] with another limit.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, CliError> {
    let unreadable = |error| unreadable(path, error);
    let too_large = || CliError::InputTooLarge {
        path: path.to_owned(),
        limit,
    };
    let mut bytes = Vec::new();
    if path == Path::new("-") {
        std::io::stdin()
            .lock()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(unreadable)?;
    } else {
        let meta = std::fs::metadata(path).map_err(unreadable)?;
        if !meta.is_file() {
            return Err(CliError::NotAFile {
                path: path.to_owned(),
                kind: flysim_compose::file_kind(&meta),
            });
        }
        if meta.len() > limit {
            return Err(too_large());
        }
        let file = std::fs::File::open(path).map_err(unreadable)?;
        // The length may have changed since `metadata`: read at most one byte past the limit.
        let capacity = usize::try_from(meta.len()).unwrap_or(0);
        bytes.reserve(capacity);
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(unreadable)?;
    }
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The refusal of a path that cannot be read: for a missing relative path, the help names a
/// near path that exists (`compositions/<path>`, or `<path>.kdl`).
pub(crate) fn unreadable(path: &Path, error: std::io::Error) -> CliError {
    let near = [
        Path::new("compositions").join(path),
        path.with_extension("kdl"),
    ];
    let near = near
        .iter()
        .filter(|_| error.kind() == std::io::ErrorKind::NotFound && path.is_relative())
        .filter(|p| p.as_path() != path)
        .find(|p| p.is_file());
    let help = match near {
        Some(p) => format!("did you mean {}?", p.display()),
        None if error.kind() == std::io::ErrorKind::NotFound && path.is_relative() => {
            "check the path; a relative path starts at the current directory".to_owned()
        }
        None if error.kind() == std::io::ErrorKind::NotFound => "check the path".to_owned(),
        None => "check the path and its permissions; `-` reads standard input".to_owned(),
    };
    CliError::ReadInput {
        path: path.to_owned(),
        error,
        help,
    }
}

/// The name a document is shown under in diagnostics.
pub(crate) fn display_name(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".to_owned()
    } else {
        path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_a_directory_and_an_oversized_file_are_refused() {
        let dev = read_input(Path::new("/dev/zero")).unwrap_err();
        assert!(
            matches!(
                dev,
                CliError::NotAFile {
                    kind: "a device",
                    ..
                }
            ),
            "{dev:?}"
        );
        let dir = read_input(Path::new("/")).unwrap_err();
        assert!(
            matches!(
                dir,
                CliError::NotAFile {
                    kind: "a directory",
                    ..
                }
            ),
            "{dir:?}"
        );
        let file = std::env::temp_dir().join(format!("flysim-input-{}", std::process::id()));
        std::fs::write(&file, b"0123456789").unwrap();
        assert!(matches!(
            read_bounded(&file, 9),
            Err(CliError::InputTooLarge { limit: 9, .. })
        ));
        assert_eq!(read_bounded(&file, 10).unwrap(), b"0123456789");
        std::fs::remove_file(&file).unwrap();
    }
}

//! The assets a plan pins: each declared asset's bytes found (at its path, relative to the file
//! that declares it, or in the local registry) and checked against its `sha256`.
//!
//! It reads asset files and the registry and nothing else; it does not know which profile or
//! environment declared an asset, nor whether the backend wants one.

use flysim_types::plan::PlanAsset;
use flysim_types::{Digest, Id, U64};

use super::Resolver;
use crate::assets::{AssetRegistry, hash_file};
use crate::decode::bounded::{Refusal, regular_len};
use crate::diag::Problem;
use crate::model::{AssetDecl, Spanned};
use crate::text::join_lexical;

/// The plan entries of the declared assets, sorted by id; a refused asset is reported and left
/// out.
pub(super) fn plan_assets(
    r: &mut Resolver<'_>,
    decls: &[&AssetDecl],
    registry: Option<&AssetRegistry>,
) -> Vec<PlanAsset> {
    let mut assets = Vec::new();
    for decl in decls {
        if let Some(a) = asset(r, decl, registry) {
            assets.push(a);
        }
    }
    assets.sort_by(|a, b| a.id.cmp(&b.id));
    assets
}

/// Finds an asset's bytes (at its pinned path, or in the registry) and checks its digest.
fn asset(
    r: &mut Resolver<'_>,
    decl: &AssetDecl,
    registry: Option<&AssetRegistry>,
) -> Option<PlanAsset> {
    let id = &decl.id;
    let source = &r.comp.sources[id.span.file];
    let missing = |reason: String, help: &str| Problem::MissingAsset {
        src: source.src.clone(),
        id: id.value.to_string(),
        reason,
        at: id.span.at,
        help: Some(help.to_owned()),
    };
    let (digest, len, format, path) = if let Some(path) = &decl.path {
        if path.value.starts_with('/') || std::path::Path::new(&path.value).is_absolute() {
            let problem = Problem::AbsoluteAssetPath {
                src: r.src(path.span),
                path: path.value.clone(),
                at: path.span.at,
            };
            r.push(path.span, problem);
            return None;
        }
        let file = source.dir.join(&path.value);
        let (rel, foreign) = join_lexical(
            source.rel.rsplit_once('/').map_or("", |(d, _)| d),
            &path.value,
        );
        if refuse_special(r, path, &file) {
            return None;
        }
        let (digest, len) = match hash_file(&file) {
            Ok(v) => v,
            Err(e) => {
                let problem = missing(
                    format!("cannot read {:?}: {e}", path.value),
                    "the path is relative to the file that declares the asset; put the file there, or add it to the registry with `flysim assets add` and drop `path`",
                );
                r.push(id.span, problem);
                return None;
            }
        };
        let Some(pin) = &decl.sha256 else {
            let problem = Problem::Unpinned {
                src: r.src(path.span),
                what: format!("asset `{}`", id.value),
                reason: "a path without `sha256` names whatever bytes are there".to_owned(),
                at: path.span.at,
                // The digest of a file outside the composition's folder is not shown.
                help: Some(if foreign {
                    "pin the digest of the bytes you mean: sha256=\"...\"".to_owned()
                } else {
                    format!("pin the bytes found there: sha256=\"{digest}\"")
                }),
            };
            r.push(path.span, problem);
            return None;
        };
        (
            check_pin(r, decl, pin, digest, foreign)?,
            len,
            None,
            Some(rel),
        )
    } else {
        let Some(registry) = registry else {
            let problem = missing(
                "no asset registry is available".to_owned(),
                "name the file with path=\"...\" sha256=\"...\", or set FLYSIM_HOME (or HOME) so flysim can find its registry",
            );
            r.push(id.span, problem);
            return None;
        };
        let record = match registry.get(&id.value) {
            Ok(Some(record)) => record,
            Ok(None) => {
                let problem = missing(
                    "the registry has no asset with this id".to_owned(),
                    "add it with `flysim assets add FILE --id <id>` (nothing is ever downloaded), or name it with path=\"...\" sha256=\"...\"",
                );
                r.push(id.span, problem);
                return None;
            }
            Err(e) => {
                let problem = missing(e.to_string(), "run `flysim assets verify`");
                r.push(id.span, problem);
                return None;
            }
        };
        let blob_ok = std::fs::metadata(registry.blob_path(&record.digest))
            .is_ok_and(|m| m.len() == record.byte_length.get());
        if !blob_ok {
            let problem = missing(
                "the registry names it but its bytes are gone".to_owned(),
                "run `flysim assets verify`, then add the file again",
            );
            r.push(id.span, problem);
            return None;
        }
        let digest = match &decl.sha256 {
            Some(pin) => check_pin(r, decl, pin, record.digest, false)?,
            None => record.digest,
        };
        (digest, record.byte_length.get(), Some(record.format), None)
    };
    let format = decl
        .format
        .as_ref()
        .map(|f| f.value.clone())
        .or(format)
        .or_else(|| Id::parse("bin").ok())?;
    Some(PlanAsset {
        id: id.value.clone(),
        digest,
        byte_length: U64(len),
        format,
        path,
    })
}

/// `actual` when it is the digest `decl` pins, else a mismatch reported; the digest found is
/// shown only for a file inside the composition's folder (not `foreign`).
fn check_pin(
    r: &mut Resolver<'_>,
    decl: &AssetDecl,
    pin: &Spanned<Digest>,
    actual: Digest,
    foreign: bool,
) -> Option<Digest> {
    if pin.value == actual {
        return Some(actual);
    }
    let actual = (!foreign).then(|| actual.hex());
    let help = match &actual {
        Some(hex) => format!(
            "the bytes found hash to sha256 {hex}; if they are the bytes you mean, pin that digest, otherwise restore the pinned file"
        ),
        None => "the file is outside the composition's folder, so the digest of its bytes is not shown; restore the pinned file, or pin its digest after checking it yourself".to_owned(),
    };
    let problem = Problem::DigestMismatch {
        src: r.src(pin.span),
        id: decl.id.value.to_string(),
        actual,
        at: pin.span.at,
        help,
    };
    r.push(pin.span, problem);
    None
}

/// Refuses an asset path that names no regular file (a FIFO would block the hash, a device
/// would never end); whether it did.
fn refuse_special(r: &mut Resolver<'_>, path: &Spanned<String>, file: &std::path::Path) -> bool {
    let Err(Refusal::NotAFile(kind)) = regular_len(file) else {
        return false;
    };
    let problem = Problem::NotAFile {
        src: r.src(path.span),
        path: path.value.clone(),
        kind,
        at: path.span.at,
    };
    r.push(path.span, problem);
    true
}

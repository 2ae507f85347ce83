# The source tree every cargo derivation sees.
#
# crane's commonCargoSources keeps only Cargo.lock, *.rs and *.toml. The rest
# is data the crates embed or read at build or test time:
#   crates/        whole, not just the Rust files: crates/codes/explain/*.md is
#                  pulled in with include_str! (and listed by a test); insta
#                  snapshots and other test data live there too
#   compositions/  composition files (e.g. gameboy.kdl)
#   schemas/       committed JSON Schemas (checks.schemas-up-to-date)
#   fixtures/      test fixtures
#   docs/
#   roms/          sources of the project's own ROMs and programs (crates/dolphin
#                  embeds roms/gc-fieldcount/ with include_str!)
# Each listed path must exist, or evaluation fails; in a git flake its files
# must also be tracked (git add) to be seen.
{ lib, craneLib }:
let
  root = ../.;
in
lib.fileset.toSource {
  inherit root;
  fileset = lib.fileset.unions [
    (craneLib.fileset.commonCargoSources root)
    ../crates
    ../compositions
    ../schemas
    ../fixtures
    ../docs
    ../roms
  ];
}

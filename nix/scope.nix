# Everything that depends on the target system, built once per system by
# flake.nix and handed back as one attribute set.
{ system, nixpkgs, rust-overlay, crane, binjgb }:
let
  pkgs = import nixpkgs {
    inherit system;
    overlays = [ rust-overlay.overlays.default ];
  };
  inherit (pkgs) lib;

  # The toolchain (channel and components) comes from the same
  # rust-toolchain.toml that rustup users get, not from nixpkgs' rustc.
  toolchain = p: p.rust-bin.fromRustupToolchainFile ../rust-toolchain.toml;
  craneLib = (crane.mkLib pkgs).overrideToolchain toolchain;

  src = import ./source.nix { inherit lib craneLib; };

  # Shared by every cargo derivation. BINJGB_SRC is the (read-only) store path
  # of the binjgb C sources; the build script compiles them into OUT_DIR.
  commonArgs = {
    inherit src;
    pname = "flysim";
    strictDeps = true;
    BINJGB_SRC = "${binjgb}";
  };

  # Dependencies compiled once in crane's default (release) profile, reused by
  # the package and clippy.
  cargoArtifacts = craneLib.buildDepsOnly commonArgs;

  # Tests run in cargo's dev profile (debug assertions on). CARGO_PROFILE = ""
  # makes crane leave out --profile/--cargo-profile, so cargo uses `dev`; the
  # dependencies get their own dev-profile artifacts so they are not rebuilt
  # on every source change.
  devArgs = commonArgs // { CARGO_PROFILE = ""; };
  cargoArtifactsDev = craneLib.buildDepsOnly devArgs;

  flysim = import ./package.nix { inherit craneLib commonArgs cargoArtifacts; };

  checks = import ./checks.nix {
    inherit pkgs craneLib src commonArgs cargoArtifacts devArgs cargoArtifactsDev flysim;
  };
in
{
  inherit pkgs craneLib src flysim checks;
  devShell = import ./devshell.nix { inherit pkgs craneLib binjgb checks; };
}

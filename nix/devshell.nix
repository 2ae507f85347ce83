# `nix develop`: the pinned toolchain (via crane), the build inputs of every
# check, a few tools, and BINJGB_SRC so `cargo build` works outside the sandbox.
{ pkgs, craneLib, binjgb, checks }:
craneLib.devShell {
  inherit checks;
  packages = [
    pkgs.cargo-nextest
    pkgs.rust-analyzer
  ];
  BINJGB_SRC = "${binjgb}";
}

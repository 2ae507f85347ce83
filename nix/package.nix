# The `flysim` binary (package crates/cli of the workspace).
{ craneLib, commonArgs, cargoArtifacts }:
craneLib.buildPackage (
  commonArgs
  // {
    inherit cargoArtifacts;
    cargoExtraArgs = "--locked --package flysim";
    # Tests are run by checks.flysim-nextest, not here.
    doCheck = false;
    meta = {
      description = "flysim simulator command-line tool";
      mainProgram = "flysim";
    };
  }
)

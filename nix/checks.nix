# `nix flake check` targets.
{
  pkgs,
  craneLib,
  src,
  commonArgs,
  cargoArtifacts,
  devArgs,
  cargoArtifactsDev,
  flysim,
}:
{
  # Building the package is a check in itself.
  inherit flysim;

  flysim-clippy = craneLib.cargoClippy (
    commonArgs
    // {
      inherit cargoArtifacts;
      cargoClippyExtraArgs = "--all-targets -- --deny warnings";
    }
  );

  flysim-fmt = craneLib.cargoFmt {
    inherit src;
    pname = "flysim";
  };

  # Dev profile (see devArgs in scope.nix); fail if nextest finds no tests at
  # all, which would mean the test targets were filtered out of the build.
  flysim-nextest = craneLib.cargoNextest (
    devArgs
    // {
      cargoArtifacts = cargoArtifactsDev;
      cargoNextestExtraArgs = "--no-tests=fail";
    }
  );

  # The committed schemas/ must be exactly what the binary generates: no stale,
  # missing or extra files (so schemas/ holds only generated *.schema.json).
  schemas-up-to-date = pkgs.runCommand "flysim-schemas-up-to-date" { } ''
    ${flysim}/bin/flysim schema --all --out "$TMPDIR/s"
    diff -ru ${src}/schemas "$TMPDIR/s"
    touch $out
  '';
}

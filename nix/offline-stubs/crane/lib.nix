# Stub of crane's lib. Cargo derivations are /bin/sh scripts that check their
# inputs (src has Cargo.toml, BINJGB_SRC is a directory) and build nothing.
{ pkgs, toolchain ? null }:
let
  inherit (pkgs) lib;
  inherit (pkgs.__stub) mkStubDrv toEnv;

  readCargoToml = src: builtins.fromTOML (builtins.readFile (src + "/Cargo.toml"));

  crateNameFromCargoToml =
    { src, ... }@args:
    let
      toml = readCargoToml src;
    in
    {
      pname = args.pname or toml.package.name or toml.workspace.package.name or "cargo-package";
      version = args.version or toml.package.version or toml.workspace.package.version or "0.0.1";
    };

  mkCargo =
    {
      kind,
      needsLock ? true,
      needsArtifacts ? false,
      script ? _args: "",
    }:
    args:
    let
      src = args.src or (throw "${what}: `src` is required");
      names = crateNameFromCargoToml (args // { inherit src; });
      suffix = if kind == "" then "" else "-${kind}";
      what = "stub crane ${if kind == "" then "buildPackage" else kind}";
    in
    if !builtins.pathExists (src + "/Cargo.toml") then
      throw "${what}: no Cargo.toml at the root of src"
    else if needsLock && !(args ? cargoVendorDir) && !builtins.pathExists (src + "/Cargo.lock") then
      throw "${what}: no Cargo.lock in src (crane vendors the dependencies from it)"
    else if needsArtifacts && !(args ? cargoArtifacts) then
      throw "${what}: `cargoArtifacts` is required"
    else
      mkStubDrv {
        name = "${names.pname}${suffix}-${names.version}";
        env =
          toEnv (removeAttrs args [ "pname" "version" "meta" "passthru" ])
          // lib.optionalAttrs (toolchain != null) { rustToolchain = toolchain; };
        script = ''
          test -f "$src/Cargo.toml"
          if [ -n "''${BINJGB_SRC+set}" ] && [ ! -d "$BINJGB_SRC" ]; then
            echo "stub crane: BINJGB_SRC='$BINJGB_SRC' is not a directory" >&2
            exit 1
          fi
          mkdir -p "$out"
          ${script args}
        '';
        meta = args.meta or { };
        passthru = names // (args.passthru or { });
      };

  fileFilterUnder = pred: path: lib.fileset.fileFilter pred path;

  self = {
    overrideToolchain =
      f: import ./lib.nix { inherit pkgs; toolchain = if builtins.isFunction f then f pkgs else f; };

    inherit crateNameFromCargoToml;
    path = p: builtins.path { path = p; name = "source"; };

    filterCargoSources =
      path: type:
      let
        b = baseNameOf path;
      in
      type == "directory" || b == "Cargo.lock" || lib.hasSuffix ".rs" b || lib.hasSuffix ".toml" b;
    cleanCargoSource = src: builtins.path { path = src; name = "source"; filter = self.filterCargoSources; };

    # crane: Cargo.toml/Cargo.lock + *.rs + every *.toml under the path.
    fileset = rec {
      cargoTomlAndLock = fileFilterUnder (f: f.name == "Cargo.toml" || f.name == "Cargo.lock");
      rust = fileFilterUnder (f: f.hasExt "rs");
      toml = fileFilterUnder (f: f.hasExt "toml");
      configToml = fileFilterUnder (f: f.name == "config.toml");
      commonCargoSources = path: lib.fileset.unions [ (cargoTomlAndLock path) (rust path) (toml path) ];
    };

    vendorCargoDeps = mkCargo { kind = "vendor"; };
    buildDepsOnly = mkCargo { kind = "deps"; };
    mkCargoDerivation = mkCargo { kind = "drv"; needsArtifacts = true; };
    cargoClippy = mkCargo { kind = "clippy"; needsArtifacts = true; };
    cargoFmt = mkCargo { kind = "fmt"; needsLock = false; };
    cargoNextest = mkCargo { kind = "nextest"; needsArtifacts = true; };
    cargoTest = mkCargo { kind = "test"; needsArtifacts = true; };
    cargoDoc = mkCargo { kind = "doc"; needsArtifacts = true; };
    cargoDocTest = mkCargo { kind = "doctest"; needsArtifacts = true; };

    buildPackage = mkCargo {
      kind = "";
      script = args: ''
        bin=${args.meta.mainProgram or args.pname or "flysim"}
        mkdir -p "$out/bin"
        sed -e "s|@NAME@|$bin|g" \
            -e "s|@BINJGB_SRC@|''${BINJGB_SRC-unset}|g" \
            -e "s|@SRC@|$src|g" \
            ${./flysim-stub.sh} > "$out/bin/$bin"
        chmod +x "$out/bin/$bin"
      '';
    };

    # Like crane: mkShell with the checks' inputs, the toolchain and `packages`.
    devShell =
      {
        checks ? { },
        inputsFrom ? [ ],
        packages ? [ ],
        ...
      }@args:
      pkgs.mkShell (
        removeAttrs args [ "checks" ]
        // {
          inputsFrom = builtins.attrValues checks ++ inputsFrom;
          packages = lib.optional (toolchain != null) toolchain ++ packages;
        }
      );
  };
in
self

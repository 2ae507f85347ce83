# Stub of `import nixpkgs { system; overlays; }`.
#
# Derivations here are real but trivial: /bin/sh (or /bin/bash) scripts run on
# the host, which works because Debian's nix.conf has `sandbox = false`. Derivations
# for other systems are evaluated (drvPath, outPath) but never built.
{
  system ? builtins.currentSystem,
  overlays ? [ ],
  config ? { },
  ...
}:
let
  lib = import ./lib.nix;

  # Arguments that can become environment variables of a derivation.
  envable = v:
    builtins.isString v || builtins.isInt v || builtins.isBool v || builtins.isPath v || lib.isDerivation v
    || (builtins.isList v && builtins.all (x: builtins.isString x || lib.isDerivation x) v);
  toEnv = attrs: lib.filterAttrs (n: v: envable v) (removeAttrs attrs [ "name" "system" "builder" "args" ]);

  # script runs with `set -eu`; it must create $out itself (like runCommand).
  mkStubDrv =
    {
      name,
      script ? "mkdir -p \"$out\"",
      env ? { },
      meta ? { },
      passthru ? { },
      builder ? "/bin/sh",
    }:
    let
      drv = derivation (
        env
        // {
          inherit name system builder;
          args = [
            "-c"
            ''
              set -eu
              export PATH=/usr/bin:/bin
              ${script}
            ''
          ];
        }
      );
    in
    drv // { inherit meta; } // passthru;

  stubPackage = name: mkStubDrv { name = "${name}-stub"; };

  base = final: {
    inherit lib system config;
    __stub = { inherit mkStubDrv toEnv; };

    stdenv = {
      hostPlatform = {
        inherit system;
        isLinux = lib.hasSuffix "-linux" system;
        isDarwin = lib.hasSuffix "-darwin" system;
      };
      mkDerivation = a: mkStubDrv { name = a.name or "${a.pname}-${a.version}"; env = toEnv a; };
    };

    runCommand = name: env: script: mkStubDrv { inherit name script; env = toEnv env; };
    runCommandLocal = final.runCommand;

    # `nix develop` (2.8) insists on a builder called bash and on `outputs`.
    mkShell =
      {
        packages ? [ ],
        buildInputs ? [ ],
        nativeBuildInputs ? [ ],
        inputsFrom ? [ ],
        ...
      }@a:
      mkStubDrv {
        name = a.name or "nix-shell";
        builder = "/bin/bash";
        env = toEnv (removeAttrs a [ "packages" "inputsFrom" ]) // {
          outputs = [ "out" ];
          nativeBuildInputs = packages ++ nativeBuildInputs;
          inherit buildInputs;
          # The real mkShell takes the *inputs* of inputsFrom, not the
          # derivations themselves: evaluate them fully but don't depend on them.
          inputsFromDrvs = map (d: builtins.unsafeDiscardStringContext d.drvPath) inputsFrom;
        };
        passthru.outputs = [ "out" ];
      };

    # `nix develop` looks this up in the flake's nixpkgs for its shell.
    bashInteractive = mkStubDrv {
      name = "bash-interactive-stub";
      script = "mkdir -p \"$out/bin\" && ln -s /bin/bash \"$out/bin/bash\"";
    };

    cargo-nextest = stubPackage "cargo-nextest";
    rust-analyzer = stubPackage "rust-analyzer";
    pkg-config = stubPackage "pkg-config";
    SDL2 = stubPackage "SDL2";
    diffutils = stubPackage "diffutils";
  };
in
lib.fix (lib.extends (lib.composeManyExtensions overlays) base)

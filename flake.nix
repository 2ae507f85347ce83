{
  description = "flysim: build, checks and dev shell for the flysim workspace";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixpkgs-unstable";

    rust-overlay = {
      url = "github:oxalica/rust-overlay";
      inputs.nixpkgs.follows = "nixpkgs";
    };

    # Pin a release tag: crane's master may break its API at any time.
    crane.url = "github:ipetkov/crane/v0.23.4";

    # C sources of the binjgb Game Boy emulator, compiled by our build script
    # (it reads them from $BINJGB_SRC). Not a flake.
    binjgb = {
      url = "github:binji/binjgb/66d69e90b4c79ccc35a9a1976bca16093c44632e";
      flake = false;
    };
  };

  outputs =
    { self, nixpkgs, rust-overlay, crane, binjgb, ... }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];

      # One scope (pkgs, craneLib, source, package, checks, shell) per system.
      scopes = nixpkgs.lib.genAttrs systems (
        system: import ./nix/scope.nix { inherit system nixpkgs rust-overlay crane binjgb; }
      );

      eachSystem = f: builtins.mapAttrs (_system: f) scopes;
    in
    {
      packages = eachSystem (s: {
        default = s.flysim;
        flysim = s.flysim;
      });

      apps = eachSystem (
        s:
        let
          flysim = {
            type = "app";
            program = "${s.flysim}/bin/flysim";
            meta.description = "Run the flysim simulator (e.g. `nix run .#flysim -- compositions/gameboy.kdl`)";
          };
        in
        {
          default = flysim;
          inherit flysim;
        }
      );

      checks = eachSystem (s: s.checks);

      devShells = eachSystem (s: { default = s.devShell; });
    };
}

{
  description = "OFFLINE STUB of nixpkgs (just enough lib and pkgs for flysim's flake wiring)";

  outputs =
    { self }:
    let
      lib = import ./lib.nix;
    in
    {
      inherit lib;
      legacyPackages = lib.genAttrs [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ] (
        system: import ./default.nix { inherit system; }
      );
    };
}

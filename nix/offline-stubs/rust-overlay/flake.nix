{
  description = "OFFLINE STUB of oxalica/rust-overlay";

  # Present so that `inputs.nixpkgs.follows = "nixpkgs"` in the root flake has
  # something to follow; with the override it is the nixpkgs stub.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixpkgs-unstable";

  outputs =
    { self, nixpkgs }:
    {
      overlays.default = import ./overlay.nix;
      overlays.rust-overlay = self.overlays.default;
    };
}

{
  description = "OFFLINE STUB of ipetkov/crane (the mkLib API surface flysim uses)";

  outputs =
    { self }:
    {
      mkLib = pkgs: import ./lib.nix { inherit pkgs; };
    };
}

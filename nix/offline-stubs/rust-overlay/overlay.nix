# Stub of rust-overlay's overlay: rust-bin.fromRustupToolchainFile reads the
# toml like the real one (toolchain.channel required) and returns a dummy drv.
final: prev:
let
  toolchain =
    channel: extra:
    prev.__stub.mkStubDrv { name = "rust-toolchain-stub-${channel}"; }
    // { version = channel; } // extra;
in
{
  rust-bin = {
    fromRustupToolchainFile =
      file:
      let
        t = (builtins.fromTOML (builtins.readFile file)).toolchain
          or (throw "stub rust-overlay: ${toString file} has no [toolchain] table");
        channel = t.channel or (throw "stub rust-overlay: ${toString file} sets no toolchain.channel");
      in
      toolchain channel {
        components = t.components or [ ];
        targets = t.targets or [ ];
        profile = t.profile or "default";
      };
    stable.latest.default = toolchain "stable" { };
    stable.latest.minimal = toolchain "stable" { };
  };
}

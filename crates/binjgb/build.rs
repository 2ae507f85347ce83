//! Compiles binjgb's core from a pinned source tree, or records why the backend is absent.
//!
//! The source comes from `BINJGB_SRC` (the Nix flake sets it from its locked input) or from a
//! `third_party/binjgb` checkout at the workspace root. Every file compiled is checked against the
//! SHA-256 pinned below: another revision is refused with a build error naming the file, because
//! the backend's determinism claim (`fixed-build`) is only true of the revision it was tested on.
//! With no source at all the crate still builds; `flysim backends` then reports the backend absent
//! and why, instead of a link error.

#![allow(
    clippy::disallowed_methods,
    reason = "the build script finds the pinned source through BINJGB_SRC; what it builds is checked against its digest"
)]

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The binjgb revision the digests below were taken from.
const REVISION: &str = "66d69e90b4c79ccc35a9a1976bca16093c44632e";

/// Every file of the core build, with its SHA-256 at `REVISION`.
const PINNED: [(&str, &str); 9] = [
    (
        "src/emulator.c",
        "8d02da94a7d91ae9431422a2df54dfa3032366f5d4d22a13784da1cc89b057b4",
    ),
    (
        "src/emulator.h",
        "89e254e3281a246bc202609f593d22fd13a3e2b67bd2122067a14717f9a4ae8e",
    ),
    (
        "src/common.c",
        "403f6422646287d22c41c339a0b10857a76c044d8e5abcc14482f3ee8f4fec52",
    ),
    (
        "src/common.h",
        "e158def6542ad2c76060e16a968c2ddea359d8ab18ce3900a471f4247dc1e86e",
    ),
    (
        "src/memory.c",
        "5d1e84aaa2288bb7f2162559b441a02cf0b876721a9fb050e70608f0f35f2204",
    ),
    (
        "src/memory.h",
        "67fd974b77824476cd2a5a014ae7c9f3724afec59173dbd0080aeb2628985c30",
    ),
    (
        "src/joypad.c",
        "e995b5462c6f0404f72dc88f5dfc1d0aef85e58b328444641676bf36b51c3437",
    ),
    (
        "src/joypad.h",
        "9840799dcb954c02519791dde46000519cf4ebbb040903804946a2c3a76f662a",
    ),
    (
        "src/builtin-palettes.def",
        "6472762cdd1822a5fb22b456bb8a33be376787888525e4a3b05895fea345791b",
    ),
];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where the source is, or why there is none.
fn locate() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("BINJGB_SRC") {
        return Ok(PathBuf::from(dir));
    }
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let submodule = manifest.join("../../third_party/binjgb");
    if submodule.join("src/emulator.c").is_file() {
        return Ok(submodule);
    }
    Err(format!(
        "no binjgb source: set BINJGB_SRC to a binjgb tree at revision {REVISION} (the Nix dev shell does), \
         or check out the third_party/binjgb submodule, then rebuild"
    ))
}

fn verify(dir: &Path) -> Result<(), String> {
    for (file, pinned) in PINNED {
        let path = dir.join(file);
        let bytes =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let got = hex(&Sha256::digest(&bytes));
        if got != pinned {
            return Err(format!(
                "{} has SHA-256 {got}, but flysim pins {pinned} (binjgb revision {REVISION}); \
                 point BINJGB_SRC at that revision",
                path.display()
            ));
        }
    }
    Ok(())
}

fn main() {
    println!("cargo:rerun-if-env-changed=BINJGB_SRC");
    println!("cargo:rerun-if-changed=csrc/core.c");
    println!("cargo:rerun-if-changed=csrc/shim.c");
    println!("cargo:rerun-if-changed=csrc/state_check.c");
    println!("cargo:rerun-if-changed=csrc/plain_loop.c");
    println!("cargo:rerun-if-changed=../../third_party/binjgb/src");
    println!("cargo::rustc-check-cfg=cfg(binjgb)");
    println!("cargo:rustc-env=FLYSIM_BINJGB_REVISION={REVISION}");
    let dir = match locate() {
        Ok(dir) => dir,
        Err(reason) => {
            println!("cargo:rustc-env=FLYSIM_BINJGB_ABSENT={reason}");
            println!("cargo:rustc-env=FLYSIM_BINJGB_TEST_ROMS=");
            println!("cargo:warning=flysim-binjgb: the Game Boy backend is absent: {reason}");
            return;
        }
    };
    for (file, _) in PINNED {
        println!("cargo:rerun-if-changed={}", dir.join(file).display());
    }
    if let Err(refusal) = verify(&dir) {
        // A different revision is refused outright: silently building it would void the pin.
        panic!("flysim-binjgb refuses this binjgb source: {refusal}");
    }
    let src = dir.join("src");
    let mut build = cc::Build::new();
    build
        .include(&src)
        // core.c includes the pinned emulator.c (it is compiled there, once).
        .file("csrc/core.c")
        .file(src.join("common.c"))
        .file(src.join("memory.c"))
        .file(src.join("joypad.c"))
        .file("csrc/shim.c")
        .file("csrc/plain_loop.c")
        .define("NDEBUG", None)
        // The core's diagnostics go to two functions in the shim that discard them.
        .define("printf", Some("flysim_binjgb_printf"))
        .define("fprintf", Some("flysim_binjgb_fprintf"))
        // No contraction into fused multiply-add: the audio mixer uses floats.
        .flag_if_supported("-ffp-contract=off")
        .warnings(false);
    build.compile("flysim_binjgb");
    println!("cargo:rustc-cfg=binjgb");
    // binjgb's own test ROMs (blargg's), for the wrapper's tests; nothing else reads this path.
    println!(
        "cargo:rustc-env=FLYSIM_BINJGB_TEST_ROMS={}",
        dir.join("test").display()
    );
    println!("cargo:rustc-env=FLYSIM_BINJGB_ABSENT=");
}

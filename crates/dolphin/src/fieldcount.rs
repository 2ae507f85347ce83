//! The project's own GameCube test program, `roms/gc-fieldcount/`: its sources (compiled into
//! this crate, so a build needs no checkout), how to build it with Debian's
//! `powerpc-linux-gnu-gcc`, its documented RAM addresses, and the backend configuration that
//! watches them.
//!
//! The built ELF is committed as `fixtures/roms/gc-fieldcount.elf` (compositions pin it by
//! SHA-256, and a compiler of another version may emit other bytes): it is built with
//! `-nostdlib -nostartfiles` and linked against no library at all, so every byte of it is the
//! project's own code. A test rebuilds it byte for byte with the compiler it was built with
//! ([`FIXTURE_COMPILER`]), and checks that its symbols are only the program's own.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use flysim_types::{Digest, Id};

use crate::config::{Address, BackendConfig, CONFIG_FORMAT, Content, Mode, Ready, Watch};
use crate::error::DolphinError;
use crate::xfb::Xfb;

/// `crt0.S`: stack, `.bss`, the call into `fc_main`.
pub const CRT0_S: &str = include_str!("../../../roms/gc-fieldcount/crt0.S");
/// `main.c`: video interface, field counter, controller copies, magic word, and a made-up Melee
/// match at Melee NTSC 1.02's addresses (the Melee task's stand-in).
pub const MAIN_C: &str = include_str!("../../../roms/gc-fieldcount/main.c");
/// `link.ld`: one segment at 0x80003100.
pub const LINK_LD: &str = include_str!("../../../roms/gc-fieldcount/link.ld");

/// The magic word, `"FSGC"`, at [`MAGIC_ADDRESS`] once the program runs.
pub const MAGIC: u32 = 0x4653_4743;
/// Where the magic word is written.
pub const MAGIC_ADDRESS: u32 = 0x8000_1800;
/// Fields counted since the program started.
pub const FIELDS_ADDRESS: u32 = 0x8000_1804;
/// Main-loop passes since the program started.
pub const LOOPS_ADDRESS: u32 = 0x8000_1808;
/// 0 after the middle of a first field, 1 after a second.
pub const PHASE_ADDRESS: u32 = 0x8000_180c;
/// The high SI input word of channel `n` (0-based) is at `PAD_ADDRESS + 8n`, the low word 4
/// bytes later.
pub const PAD_ADDRESS: u32 = 0x8000_1810;

/// The program's external framebuffer: 640 x 480 YUV 4:2:2 pixels at physical 1 MiB (its
/// first 16 lines show the field count as brightness over a dark screen).
pub const XFB: Xfb = Xfb {
    address: 0x8010_0000,
    width: 640,
    height: 480,
};

/// The field whose end is boundary 0 of the test program in Qt mode: its magic word is written
/// within the first field, and Dolphin's first pause lands a few fields in (free-running, the
/// program reaches field 40 within about 160 ms).
pub const START_FIELD: u64 = 40;

/// Where the built program is committed, relative to the repository root.
pub const FIXTURE: &str = "fixtures/roms/gc-fieldcount.elf";
/// The first line of `powerpc-linux-gnu-gcc --version` of the compiler that built [`FIXTURE`].
pub const FIXTURE_COMPILER: &str = "powerpc-linux-gnu-gcc (Debian 12.2.0-13) 12.2.0";
/// The format id a composition gives the test program's content asset.
pub const CONTENT_FORMAT: &str = "gc-fieldcount";

/// Compiler flags: freestanding PowerPC 750 code, no PIC (Debian's gcc defaults to PIE, and
/// linker symbols then silently resolve to 0).
pub const CFLAGS: [&str; 13] = [
    "-mcpu=750",
    "-mbig-endian",
    "-ffreestanding",
    "-fno-builtin",
    "-nostdlib",
    "-nostartfiles",
    "-fno-pic",
    "-fno-pie",
    "-mno-sdata",
    "-msoft-float",
    "-O2",
    "-std=gnu11",
    "-Wall",
];

/// Builds the program with the cross compiler `gcc` into `out_dir`, returning the ELF's path.
///
/// # Errors
///
/// [`DolphinError::ProgramBuild`] when the compiler cannot be run or fails.
pub fn build(gcc: &Path, out_dir: &Path) -> Result<PathBuf, DolphinError> {
    let fail = |reason: String| DolphinError::ProgramBuild { reason };
    let src = out_dir.join("gc-fieldcount");
    std::fs::create_dir_all(&src).map_err(|e| fail(e.to_string()))?;
    for (name, text) in [("crt0.S", CRT0_S), ("main.c", MAIN_C), ("link.ld", LINK_LD)] {
        std::fs::write(src.join(name), text).map_err(|e| fail(e.to_string()))?;
    }
    let elf = out_dir.join("fieldcount.elf");
    let output = Command::new(gcc)
        .env_clear()
        .current_dir(&src)
        .args(CFLAGS)
        .args([
            "-Werror",
            "-Wl,-T,link.ld",
            "-Wl,-N",
            "-Wl,--build-id=none",
            "-Wl,--no-warn-rwx-segments",
            "-static",
            "-no-pie",
            "-o",
        ])
        .arg(&elf)
        .args(["crt0.S", "main.c"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| fail(format!("cannot run {}: {e}", gcc.display())))?;
    if !output.status.success() {
        return Err(fail(format!(
            "{} failed ({}): {}",
            gcc.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(elf)
}

/// The names of the high and low SI words of the four channels, channel 0 first.
const PAD_WATCHES: [(&str, &str); 4] = [
    ("pad1-hi", "pad1-lo"),
    ("pad2-hi", "pad2-lo"),
    ("pad3-hi", "pad3-lo"),
    ("pad4-hi", "pad4-lo"),
];

fn watch(name: &'static str, address: u32) -> Watch {
    Watch {
        name: Id::from_static(name),
        address: Address(address),
        offsets: Vec::new(),
    }
}

/// The watch list of the test program: magic, fields, loops, phase, then the high and low SI
/// words of the four channels.
#[must_use]
pub fn watches() -> Vec<Watch> {
    let mut list = vec![
        watch("magic", MAGIC_ADDRESS),
        watch("fields", FIELDS_ADDRESS),
        watch("loops", LOOPS_ADDRESS),
        watch("phase", PHASE_ADDRESS),
    ];
    for (n, (hi, lo)) in (0u32..).zip(PAD_WATCHES) {
        list.push(watch(hi, PAD_ADDRESS + 8 * n));
        list.push(watch(lo, PAD_ADDRESS + 8 * n + 4));
    }
    list
}

/// The test program's ready condition: the magic word in place.
#[must_use]
pub fn ready() -> Ready {
    Ready {
        watch: Id::from_static("magic"),
        value: Address(MAGIC),
    }
}

/// A backend configuration that boots the test program at `elf` (with digest `sha256`) and is
/// ready when the magic word appears.
#[must_use]
pub fn config(
    binary: &Path,
    version: &str,
    xvfb: Option<&Path>,
    elf: &Path,
    sha256: Digest,
    ports: Vec<u8>,
    mode: Mode,
) -> BackendConfig {
    BackendConfig {
        format: CONFIG_FORMAT.to_owned(),
        binary: binary.to_owned(),
        version: version.to_owned(),
        xvfb: xvfb.map(Path::to_owned),
        content: Content {
            path: elf.to_owned(),
            sha256,
        },
        ports,
        watches: watches(),
        ready: Some(ready()),
        start_field: match mode {
            Mode::Qt => Some(START_FIELD),
            Mode::Nogui => None,
        },
        mode,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_addresses_are_the_programs() {
        assert!(MAIN_C.contains("#define OUT ((volatile u32 *)0x80001800)"));
        assert!(MAIN_C.contains("#define MAGIC 0x46534743u"));
        assert!(LINK_LD.contains(". = 0x80003100;"));
        assert!(CRT0_S.contains("bl\tfc_main"));
    }

    #[test]
    fn the_watch_list_is_a_valid_configuration() {
        let cfg = config(
            Path::new("/usr/games/dolphin-emu"),
            crate::config::PINNED_VERSION,
            Some(Path::new("/usr/bin/Xvfb")),
            Path::new("/tmp/fieldcount.elf"),
            flysim_types::digest::sha256(b"elf"),
            vec![1, 2, 3, 4],
            Mode::Qt,
        );
        cfg.validate().unwrap();
        assert_eq!(cfg.watches.len(), 12);
        assert_eq!(
            cfg.locations_txt().lines().take(2).collect::<Vec<_>>(),
            ["80001800", "80001804"]
        );
    }
}

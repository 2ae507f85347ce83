//! The committed test program, `fixtures/roms/gc-fieldcount.elf`: only the project's own code,
//! and exactly what its sources build to with the compiler it was built with.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use flysim_dolphin::fieldcount;

use crate::{find, scratch};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn committed() -> Vec<u8> {
    std::fs::read(root().join(fieldcount::FIXTURE)).unwrap()
}

/// A big-endian ELF32 field.
fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn be16(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(bytes[at..at + 2].try_into().unwrap())
}

/// The symbols of an ELF32 big-endian file: (name, type), type 0 NOTYPE, 2 FUNC, 3 SECTION,
/// 4 FILE.
fn symbols(elf: &[u8]) -> Vec<(String, u8)> {
    let shoff = be32(elf, 0x20) as usize;
    let shentsize = usize::from(be16(elf, 0x2e));
    let shnum = usize::from(be16(elf, 0x30));
    let section = |i: usize| {
        let at = shoff + i * shentsize;
        (
            be32(elf, at + 4),
            be32(elf, at + 16) as usize,
            be32(elf, at + 20) as usize,
            be32(elf, at + 24) as usize,
        )
    };
    let mut out = Vec::new();
    for i in 0..shnum {
        let (kind, offset, size, link) = section(i);
        if kind != 2 {
            continue; // SHT_SYMTAB only
        }
        let (_, strings, _, _) = section(link);
        for entry in elf[offset..offset + size].chunks(16).skip(1) {
            let name_at = strings + be32(entry, 0) as usize;
            let end = elf[name_at..].iter().position(|b| *b == 0).unwrap();
            let name = String::from_utf8(elf[name_at..name_at + end].to_vec()).unwrap();
            out.push((name, entry[12] & 0xf));
        }
    }
    out
}

#[test]
fn the_committed_program_holds_only_the_projects_own_code() {
    let elf = committed();
    assert_eq!(&elf[..6], b"\x7fELF\x01\x02", "ELF32, big-endian");
    assert_eq!(be16(&elf, 0x12), 20, "PowerPC");
    assert_eq!(be32(&elf, 0x18), 0x8000_3100, "entry: _start of crt0.S");
    assert_eq!(be16(&elf, 0x2c), 1, "one program header");
    let mut names: Vec<String> = symbols(&elf)
        .into_iter()
        .filter(|(_, kind)| *kind != 3)
        .map(|(name, _)| name)
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["__bss_end", "__bss_start", "_start", "fc_main", "main.c"],
        "the only symbols are crt0.S's, link.ld's and main.c's: no library member was linked"
    );
}

#[test]
fn the_committed_program_is_what_its_sources_build_to() {
    let Some(gcc) = find("powerpc-linux-gnu-gcc") else {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!(
                "skipped: not installed: powerpc-linux-gnu-gcc (apt-get install gcc-powerpc-linux-gnu); {} was not rebuilt",
                fieldcount::FIXTURE
            );
        }
        return;
    };
    let version = Command::new(&gcc)
        .arg("--version")
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&version.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    if version != fieldcount::FIXTURE_COMPILER {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!(
                "skipped: {} was built with {:?}; this compiler is {version:?} and may emit other bytes",
                fieldcount::FIXTURE,
                fieldcount::FIXTURE_COMPILER
            );
        }
        return;
    }
    let dir = scratch();
    let elf = fieldcount::build(&gcc, dir.path()).unwrap();
    assert!(
        std::fs::read(elf).unwrap() == committed(),
        "{} differs from roms/gc-fieldcount; rebuild it with the command in docs/dolphin.md \
         (`-o fixtures/roms/gc-fieldcount.elf`)",
        fieldcount::FIXTURE
    );
}

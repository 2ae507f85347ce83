//! The committed fly arena ROM is exactly what its source assembles to.

#[test]
fn committed_rom_is_the_assembled_source() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let source = std::fs::read_to_string(root.join("roms/fly-arena/arena.asm")).unwrap();
    let built = flysim_sm83::build(&source).unwrap();
    let committed = std::fs::read(root.join("fixtures/roms/fly-arena.gb")).unwrap();
    assert!(
        built == committed,
        "fixtures/roms/fly-arena.gb differs from roms/fly-arena/arena.asm; rebuild with \
         `cargo run -p flysim-sm83 -- roms/fly-arena/arena.asm -o fixtures/roms/fly-arena.gb`"
    );
}

#[test]
fn header_is_valid() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let rom = std::fs::read(root.join("fixtures/roms/fly-arena.gb")).unwrap();
    assert_eq!(rom.len(), flysim_sm83::ROM_SIZE);
    assert_eq!(
        &rom[0x100..0x104],
        [0x00, 0xc3, 0x50, 0x01],
        "entry: nop; jp $0150"
    );
    assert_eq!(&rom[0x134..0x13d], b"FLY ARENA");
    assert_eq!(rom[0x147], 0, "ROM only");
    assert_eq!(rom[0x148], 0, "32 KiB");
    assert_eq!(rom[0x14d], flysim_sm83::header_checksum(&rom));
    assert_eq!(
        u16::from_be_bytes([rom[0x14e], rom[0x14f]]),
        flysim_sm83::global_checksum(&rom)
    );
}

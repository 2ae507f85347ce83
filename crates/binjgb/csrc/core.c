/*
 * binjgb's core, compiled as one translation unit together with flysim's memory-image reader.
 *
 * emulator.c is the pinned file, included unchanged (build.rs checks its digest); it is not
 * compiled a second time. Sharing its translation unit gives the reader the core's memory map
 * (ROM bank bases, external-RAM bank, work-RAM bank offset), which emulator.h does not export:
 * the image is then a few copies rather than 56K calls through emulator_read_mem, with the same
 * bytes (crates/binjgb/tests checks the two against each other on bank-switching ROMs). The
 * check of a saved state (state_check.c) is included here for the same reason: it reads the
 * state's layout and the loaded cartridge.
 */
#include "emulator.c"

#include <stddef.h>
#include <string.h>

/* The check of a saved state before the core installs it (shares this translation unit). */
#include "state_check.c"

/* Reads `len` bytes from `start` one by one through the core's own raw read. */
static void image_read(Emulator* e, u8* out, u32 start, u32 len) {
  for (u32 addr = start; addr < start + len; ++addr) {
    out[addr] = read_u8_pair(e, map_address((Address)addr), TRUE);
  }
}

/* Whether a banked region of `len` bytes at `base` is copied: `base` aligned to the region (so
 * the core's `base | offset` is `base + offset`) and the region inside `size`. */
static Bool image_bank_copies(u32 base, u32 len, size_t size) {
  return (base & (len - 1)) == 0 && (size_t)base + len <= size;
}

/* Copies a banked region of `len` bytes at `data + base` when it can (image_bank_copies); else
 * reads it. */
static void image_bank(Emulator* e, u8* out, u32 start, const u8* data, u32 base, u32 len,
                       size_t size) {
  if (image_bank_copies(base, len, size)) {
    memcpy(out + start, data + base, len);
  } else {
    image_read(e, out, start, len);
  }
}

/* How the image's external-RAM region ($A000-$BFFF) is read. */
enum {
  IMAGE_EXT_NONE = 0, /* no cartridge RAM, or disabled: $FF */
  IMAGE_EXT_BANK = 1, /* copied from the enabled external-RAM bank */
  IMAGE_EXT_READ = 2, /* MBC2's 4-bit RAM, MBC3's clock registers: the cartridge's read */
};

static u32 image_ext_mode(Emulator* e) {
  if (e->memory_map.read_ext_ram == gb_read_ext_ram) {
    return MMAP_STATE.ext_ram_enabled ? IMAGE_EXT_BANK : IMAGE_EXT_NONE;
  }
  return e->memory_map.read_ext_ram == dummy_read ? IMAGE_EXT_NONE : IMAGE_EXT_READ;
}

/* The regions that change as the game runs: external RAM (unless absent), work RAM and its
 * echo, HRAM and IE. */
static void image_live(Emulator* e, u8* out, u32 ext_mode) {
  if (ext_mode == IMAGE_EXT_BANK) {
    image_bank(e, out, 0xa000, EXT_RAM.data, MMAP_STATE.ext_ram_base, 0x2000,
               sizeof(EXT_RAM.data));
  } else if (ext_mode == IMAGE_EXT_READ) {
    image_read(e, out, 0xa000, 0x2000);
  }
  memcpy(out + 0xc000, WRAM.data, 0x1000);
  memcpy(out + 0xd000, WRAM.data + WRAM.offset, 0x1000);
  memcpy(out + 0xe000, WRAM.data, 0x1000);
  memcpy(out + 0xf000, WRAM.data + WRAM.offset, 0xe00);
  memcpy(out + 0xff80, HRAM, HIGH_RAM_SIZE);
  /* $FFFF is IE, an I/O register: read through the core. */
  image_read(e, out, 0xffff, 1);
}

/*
 * Fills out[0..65536) with the memory image flysim publishes: ROM ($0000-$7FFF), external RAM
 * ($A000-$BFFF), work RAM and its echo ($C000-$FDFF), $FEA0-$FEFF and HRAM/IE ($FF80-$FFFF) as
 * the CPU reads them; VRAM, OAM and I/O as $FF (reading them would run the PPU/APU catch-up).
 * Reads nothing that mutates the emulator.
 */
void fly_gb_core_memory_image(Emulator* e, u8* out) {
  /* Every byte is written once: the regions that read as $FF are filled, the rest copied. */
  memset(out + 0x8000, INVALID_READ_BYTE, 0x2000); /* VRAM */
  memset(out + 0xfe00, INVALID_READ_BYTE, 0x100);  /* OAM, and unused memory ($FEA0-$FEFF) */
  memset(out + 0xff00, INVALID_READ_BYTE, 0x80);   /* I/O */
  /* The ROM as banked (the core masks bank numbers to its bank count). */
  size_t rom_bytes = (size_t)ROM_BANK_COUNT(e) << ROM_BANK_SHIFT;
  for (u32 w = 0; w < 2; ++w) {
    image_bank(e, out, w * 0x4000, e->cart_info->data, MMAP_STATE.rom_base[w], 0x4000, rom_bytes);
  }
  u32 ext_mode = image_ext_mode(e);
  if (ext_mode == IMAGE_EXT_NONE) {
    memset(out + 0xa000, INVALID_READ_BYTE, 0x2000);
  }
  image_live(e, out, ext_mode);
}

/* What an image's unchanging regions were written for (the Rust `ImageMap`). */
typedef struct FlyGbImageMap {
  u32 valid;
  u32 rom_base[2];
  u32 ext_mode;
} FlyGbImageMap;

/*
 * Brings `out`, an image this emulator's ROM filled under `map`, to the current boundary. While
 * the mapping is the one `map` records, the ROM banks and the $FF regions already hold what a
 * full image would write, so only the live regions are rewritten (about 16 KiB of 64); any other
 * mapping, or an invalid `map`, gets a full image and `map` is updated. A ROM bank the core
 * reads byte by byte (a base not aligned to its window) is never taken as unchanged.
 */
void fly_gb_core_memory_image_refresh(Emulator* e, u8* out, FlyGbImageMap* map) {
  size_t rom_bytes = (size_t)ROM_BANK_COUNT(e) << ROM_BANK_SHIFT;
  u32 ext_mode = image_ext_mode(e);
  Bool copied = TRUE;
  for (u32 w = 0; w < 2; ++w) {
    copied = copied && image_bank_copies(MMAP_STATE.rom_base[w], 0x4000, rom_bytes);
  }
  if (map->valid && copied && map->rom_base[0] == MMAP_STATE.rom_base[0] &&
      map->rom_base[1] == MMAP_STATE.rom_base[1] && map->ext_mode == ext_mode) {
    image_live(e, out, ext_mode);
    return;
  }
  fly_gb_core_memory_image(e, out);
  map->valid = copied ? 1u : 0u;
  map->rom_base[0] = MMAP_STATE.rom_base[0];
  map->rom_base[1] = MMAP_STATE.rom_base[1];
  map->ext_mode = ext_mode;
}

/*
 * Fills out[0..len) with the image's bytes from `start` on, for a window inside one of the
 * image's read ranges (the caller checks): work RAM and its echo are copied, anything else is
 * read through the core's raw read, as the image does. The world's per-step inspection reads
 * its window this way rather than a call per byte.
 */
void fly_gb_core_read_window(Emulator* e, u8* out, u32 start, u32 len) {
  u32 stop = start + len;
  for (u32 addr = start; addr < stop;) {
    /* One 4 KiB block at a time: each maps to one work-RAM bank. */
    u32 end = (addr | 0xfffu) + 1;
    if (end > stop) {
      end = stop;
    }
    if (addr >= 0xc000 && addr < 0xfe00) {
      if (end > 0xfe00) {
        end = 0xfe00;
      }
      /* $C000 and its echo $E000 are bank 0; $D000 and $F000 the switchable bank. */
      const u8* bank = ((addr - 0xc000) & 0x1000) ? WRAM.data + WRAM.offset : WRAM.data;
      memcpy(out + (addr - start), bank + (addr & 0xfffu), end - addr);
    } else {
      for (u32 a = addr; a < end; ++a) {
        out[a - start] = read_u8_pair(e, map_address((Address)a), TRUE);
      }
    }
    addr = end;
  }
}

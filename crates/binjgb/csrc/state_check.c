/*
 * flysim's check of a saved state before the core installs it. Included by core.c, which shares
 * the core's translation unit, so it sees the state's layout and the loaded cartridge; it is
 * not compiled on its own.
 *
 * The core's own load checks only the size and the header and then trusts every field: a ROM
 * bank base is added to the cartridge's data pointer, the cartridge-info index selects an entry
 * (an empty one makes the core exit), the external-RAM base and the RAM bank offsets address
 * fixed arrays, a few enumerations index static tables, and the clocks of the units the core
 * catches up tick by tick bound its loops (a lag that is not a whole number of steps never
 * ends; a playing sound channel with no period never advances). Each such field is checked here
 * against the cartridge this emulator runs (or against the array it addresses); the first one
 * out of range is reported and nothing is installed. What the check does not know: which state
 * a game could reach. A field in range may still be a state no game produces.
 */

/* Why a state was refused (the Rust `StateRefusal`, crates/binjgb/src/state_check.rs). */
enum {
  FLY_STATE_OK = 0,
  FLY_STATE_SIZE = 1,         /* not this build's state size */
  FLY_STATE_HEADER = 2,       /* not binjgb's header and version */
  FLY_STATE_CART_INFO = 3,    /* the cartridge-info index names no loadable cartridge */
  FLY_STATE_ROM_BASE = 4,     /* a ROM bank base outside the cartridge (which = window) */
  FLY_STATE_EXT_RAM_BASE = 5, /* the external-RAM bank base outside the cartridge's RAM */
  FLY_STATE_RAM_OFFSET = 6,   /* a video/work RAM bank offset outside its array */
  FLY_STATE_INDEX = 7,        /* a table index or enumeration out of range (which = field) */
  FLY_STATE_MODEL = 8,        /* not the hardware model this emulator runs (which = flag) */
};

/* The fields FLY_STATE_INDEX names, in the order of the Rust `INDEX_FIELDS`. */
enum {
  FLY_INDEX_PALETTE_COLOR = 0,
  FLY_INDEX_OAM_PALETTE = 1,
  FLY_INDEX_LINE_OBJ_COUNT = 2,
  FLY_INDEX_LINE_OBJ_PALETTE = 3,
  FLY_INDEX_TIMER_CLOCK = 4,
  FLY_INDEX_NOISE_DIVISOR = 5,
  FLY_INDEX_WAVE_VOLUME = 6,
  FLY_INDEX_WAVE_POSITION = 7,
  FLY_INDEX_SQUARE_DUTY = 8,
  FLY_INDEX_SQUARE_POSITION = 9,
  FLY_INDEX_OBJ_SIZE = 10,
  FLY_INDEX_CHANNEL_PERIOD = 11,
  FLY_INDEX_CPU_TICK = 12,
  FLY_INDEX_TIMER_LAG = 13,
  FLY_INDEX_SERIAL_LAG = 14,
  FLY_INDEX_DMA_LAG = 15,
  FLY_INDEX_PPU_LAG = 16,
  FLY_INDEX_APU_LAG = 17,
};

/* The most CPU ticks a unit that catches up tick by tick may lag the CPU: 16 s of emulated
 * time (a running timer is caught up at least at every overflow, about 0.06 s at its slowest,
 * and the PPU at least every line while the display is on). */
#define FLY_STATE_MAX_LAG (1ull << 26)

/* A refusal: its kind, which instance of the field, the value found and the bound it broke. */
typedef struct FlyGbStateCheck {
  u32 kind;
  u32 which;
  u64 value;
  u64 limit;
} FlyGbStateCheck;

static Bool state_refuse(FlyGbStateCheck* out, u32 kind, u32 which, u64 value, u64 limit) {
  out->kind = kind;
  out->which = which;
  out->value = value;
  out->limit = limit;
  return FALSE;
}

/* Whether the core can install cartridge `c`: parsed, of a type and size it knows, with a
 * memory map it implements, its ROM inside the loaded file. */
static Bool state_cart_loadable(Emulator* e, const CartInfo* c) {
  if (!c->data || !is_rom_size_valid(c->rom_size) || !is_cart_type_valid(c->cart_type) ||
      !is_ext_ram_size_valid(c->ext_ram_size)) {
    return FALSE;
  }
  switch (s_cart_type_info[c->cart_type].mbc_type) {
    case MBC_TYPE_NO_MBC: case MBC_TYPE_MBC1: case MBC_TYPE_MBC2: case MBC_TYPE_MMM01:
    case MBC_TYPE_MBC3: case MBC_TYPE_MBC5: case MBC_TYPE_HUC1:
      break;
    default:
      return FALSE;
  }
  size_t rom_bytes = (size_t)s_rom_bank_count[c->rom_size] << ROM_BANK_SHIFT;
  return c->offset + rom_bytes <= e->file_data.size;
}

/* The cartridge the state selects, its ROM banks and its external-RAM bank. */
static Bool state_check_cart(Emulator* e, const EmulatorState* s, FlyGbStateCheck* out) {
  u32 index = s->cart_info_index;
  if (index >= MAX_CART_INFOS || !state_cart_loadable(e, &e->cart_infos[index])) {
    return state_refuse(out, FLY_STATE_CART_INFO, 0, index, e->cart_info_count);
  }
  const CartInfo* c = &e->cart_infos[index];
  u32 rom_bytes = s_rom_bank_count[c->rom_size] << ROM_BANK_SHIFT;
  for (u32 w = 0; w < 2; ++w) {
    /* The core reads `data[base | offset]` for offsets below 16 KiB. */
    u32 base = s->memory_map_state.rom_base[w];
    if ((base & ADDR_MASK_16K) != 0 || base >= rom_bytes) {
      return state_refuse(out, FLY_STATE_ROM_BASE, w, base, rom_bytes);
    }
  }
  /* The core reads and writes `ext_ram.data[base | offset]` for offsets below 8 KiB. */
  u32 ext = s->memory_map_state.ext_ram_base;
  u32 ext_limit = EXT_RAM_MAX_SIZE;
  const CartTypeInfo* type = &s_cart_type_info[c->cart_type];
  if (type->ext_ram_type == EXT_RAM_TYPE_WITH_RAM && type->mbc_type != MBC_TYPE_MBC2) {
    u32 ram_bytes = s_ext_ram_byte_size[c->ext_ram_size];
    ext_limit = ram_bytes > ADDR_MASK_8K + 1 ? ram_bytes : ADDR_MASK_8K + 1;
  }
  if ((ext & ADDR_MASK_8K) != 0 || ext >= ext_limit) {
    return state_refuse(out, FLY_STATE_EXT_RAM_BASE, 0, ext, ext_limit);
  }
  return TRUE;
}

/* The bank offsets added to the video and work RAM arrays. */
static Bool state_check_ram(const EmulatorState* s, FlyGbStateCheck* out) {
  /* Video RAM is read at `offset + addr`, addr below 8 KiB: bank 0 or 1 of 16 KiB. */
  if (s->vram.offset != 0 && s->vram.offset != 0x2000) {
    return state_refuse(out, FLY_STATE_RAM_OFFSET, 0, s->vram.offset, VIDEO_RAM_SIZE);
  }
  /* Work RAM's switchable window is read at `offset + addr`, addr below 4 KiB: banks 1..7. */
  u32 w = s->wram.offset;
  if ((w & ADDR_MASK_4K) != 0 || w < 0x1000 || w + 0x1000 > WORK_RAM_SIZE) {
    return state_refuse(out, FLY_STATE_RAM_OFFSET, 1, w, WORK_RAM_SIZE);
  }
  return TRUE;
}

/* Checks `value < limit` for the index field `field`. */
static Bool state_index(FlyGbStateCheck* out, u32 field, u64 value, u64 limit) {
  return value < limit ? TRUE : state_refuse(out, FLY_STATE_INDEX, field, value, limit);
}

/* The enumerations and counters the core uses to index a table or an array. */
static Bool state_check_indices(const EmulatorState* s, FlyGbStateCheck* out) {
  for (u32 t = 0; t < PALETTE_TYPE_COUNT; ++t) {
    for (u32 i = 0; i < PALETTE_COLOR_COUNT; ++i) {
      if (!state_index(out, FLY_INDEX_PALETTE_COLOR, s->ppu.pal[t].color[i], PALETTE_COLOR_COUNT))
        return FALSE;
    }
  }
  /* A DMG object's palette selects OBP0 or OBP1. */
  for (u32 i = 0; i < OBJ_COUNT; ++i) {
    if (!state_index(out, FLY_INDEX_OAM_PALETTE, s->oam[i].palette, 2)) return FALSE;
  }
  if (!state_index(out, FLY_INDEX_LINE_OBJ_COUNT, s->ppu.line_obj_count, OBJ_PER_LINE_COUNT + 1))
    return FALSE;
  for (u32 i = 0; i < OBJ_PER_LINE_COUNT; ++i) {
    if (!state_index(out, FLY_INDEX_LINE_OBJ_PALETTE, s->ppu.line_obj[i].palette, 2)) return FALSE;
  }
  for (u32 c = 0; c < 2; ++c) {
    const SquareWave* square = &s->apu.channel[c].square_wave;
    if (!state_index(out, FLY_INDEX_SQUARE_DUTY, square->duty, WAVE_DUTY_COUNT) ||
        !state_index(out, FLY_INDEX_SQUARE_POSITION, square->position, DUTY_CYCLE_COUNT))
      return FALSE;
  }
  /* A playing channel reloads its countdown from its period, in steps of APU_TICKS. */
  u32 periods[APU_CHANNEL_COUNT] = {s->apu.channel[0].square_wave.period,
                                    s->apu.channel[1].square_wave.period, s->apu.wave.period,
                                    s->apu.noise.period};
  for (u32 c = 0; c < APU_CHANNEL_COUNT; ++c) {
    if (s->apu.channel[c].status && periods[c] < APU_TICKS) {
      return state_refuse(out, FLY_STATE_INDEX, FLY_INDEX_CHANNEL_PERIOD, periods[c], APU_TICKS);
    }
  }
  return state_index(out, FLY_INDEX_TIMER_CLOCK, s->timer.clock_select, 4) &&
         state_index(out, FLY_INDEX_NOISE_DIVISOR, s->apu.noise.divisor, NOISE_DIVISOR_COUNT) &&
         state_index(out, FLY_INDEX_WAVE_VOLUME, s->apu.wave.volume, WAVE_VOLUME_COUNT) &&
         state_index(out, FLY_INDEX_WAVE_POSITION, s->apu.wave.position, WAVE_SAMPLE_COUNT) &&
         state_index(out, FLY_INDEX_OBJ_SIZE, s->ppu.lcdc.obj_size, 2);
}

/* A unit `lag` CPU ticks behind that catches up in steps of `step` (when `looping`). */
static Bool state_lag(FlyGbStateCheck* out, u32 field, Bool looping, Ticks now, Ticks synced,
                      Ticks step) {
  if (!looping || now <= synced) return TRUE;
  Ticks lag = now - synced;
  if (lag % step != 0 || lag > FLY_STATE_MAX_LAG) {
    return state_refuse(out, FLY_STATE_INDEX, field, lag, FLY_STATE_MAX_LAG);
  }
  return TRUE;
}

/* The clocks: the units the core catches up tick by tick, by `TICKS - sync_ticks` in steps,
 * would never finish from a lag that is not a whole number of steps, or take hours from a huge
 * one. A DMG runs at normal speed: one CPU tick is CPU_TICK. */
static Bool state_check_clocks(const EmulatorState* s, FlyGbStateCheck* out) {
  if (s->cpu_tick != CPU_TICK) {
    return state_refuse(out, FLY_STATE_INDEX, FLY_INDEX_CPU_TICK, s->cpu_tick, CPU_TICK);
  }
  Ticks now = s->ticks;
  Ticks ppu_now = ALIGN_DOWN(now, CPU_TICK);
  if (!IS_ALIGNED(s->ppu.sync_ticks, CPU_TICK)) {
    return state_refuse(out, FLY_STATE_INDEX, FLY_INDEX_PPU_LAG, s->ppu.sync_ticks, CPU_TICK);
  }
  Bool serial = s->serial.transferring && s->serial.clock == SERIAL_CLOCK_INTERNAL;
  return state_lag(out, FLY_INDEX_TIMER_LAG, s->timer.on, now, s->timer.sync_ticks, CPU_TICK) &&
         state_lag(out, FLY_INDEX_SERIAL_LAG, serial, now, s->serial.sync_ticks, CPU_TICK) &&
         state_lag(out, FLY_INDEX_DMA_LAG, s->dma.state != DMA_INACTIVE, now, s->dma.sync_ticks,
                   CPU_TICK) &&
         state_lag(out, FLY_INDEX_PPU_LAG, s->ppu.lcdc.display, ppu_now, s->ppu.sync_ticks,
                   CPU_TICK) &&
         state_lag(out, FLY_INDEX_APU_LAG, TRUE, now, s->apu.sync_ticks, APU_TICKS);
}

/*
 * Checks `len` bytes at `in` as a state for this emulator; fills `out` and returns 0 when
 * refused, 1 when the core may install it. Reads only `in` and the loaded cartridge.
 */
static int state_check(Emulator* e, const u8* in, size_t len, FlyGbStateCheck* out) {
  if (len != sizeof(EmulatorState)) {
    return state_refuse(out, FLY_STATE_SIZE, 0, len, sizeof(EmulatorState));
  }
  /* A copy: `in` need not be aligned for the struct. */
  EmulatorState* s = malloc(sizeof(EmulatorState));
  if (!s) return state_refuse(out, FLY_STATE_SIZE, 0, len, sizeof(EmulatorState));
  memcpy(s, in, sizeof(EmulatorState));
  Bool ok = TRUE;
  if (s->header != SAVE_STATE_HEADER) {
    ok = state_refuse(out, FLY_STATE_HEADER, 0, s->header, SAVE_STATE_HEADER);
  } else if (!s->is_cgb != !e->state.is_cgb) {
    ok = state_refuse(out, FLY_STATE_MODEL, 0, s->is_cgb, e->state.is_cgb);
  } else if (!s->is_sgb != !e->state.is_sgb) {
    ok = state_refuse(out, FLY_STATE_MODEL, 1, s->is_sgb, e->state.is_sgb);
  } else {
    ok = state_check_cart(e, s, out) && state_check_ram(s, out) &&
         state_check_indices(s, out) && state_check_clocks(s, out);
  }
  free(s);
  return ok ? 1 : 0;
}

/* Checks the state, then installs it; returns 1 when installed, else 0 with `out` filled. */
int fly_gb_core_load_state(Emulator* e, const u8* in, size_t len, FlyGbStateCheck* out) {
  memset(out, 0, sizeof(*out));
  if (!state_check(e, in, len, out)) return 0;
  FileData fd;
  fd.data = (u8*)in;
  fd.size = len;
  if (!SUCCESS(emulator_read_state(e, &fd))) {
    return state_refuse(out, FLY_STATE_HEADER, 0, 0, SAVE_STATE_HEADER);
  }
  return 1;
}

/* Where the checked fields sit in a state (the Rust `StateOffsets`), for tests and tools that
 * craft states. */
typedef struct FlyGbStateOffsets {
  u64 cart_info_index;
  u64 rom_base[2];
  u64 ext_ram_base;
  u64 vram_offset;
  u64 wram_offset;
  u64 is_cgb;
  u64 timer_clock_select;
} FlyGbStateOffsets;

void fly_gb_core_state_offsets(FlyGbStateOffsets* out) {
  out->cart_info_index = offsetof(EmulatorState, cart_info_index);
  out->rom_base[0] = offsetof(EmulatorState, memory_map_state.rom_base[0]);
  out->rom_base[1] = offsetof(EmulatorState, memory_map_state.rom_base[1]);
  out->ext_ram_base = offsetof(EmulatorState, memory_map_state.ext_ram_base);
  out->vram_offset = offsetof(EmulatorState, vram.offset);
  out->wram_offset = offsetof(EmulatorState, wram.offset);
  out->is_cgb = offsetof(EmulatorState, is_cgb);
  out->timer_clock_select = offsetof(EmulatorState, timer.clock_select);
}

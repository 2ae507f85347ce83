/*
 * flysim's C shim over the binjgb core: a small, stable ABI with no struct layouts shared with
 * Rust, so the Rust side never depends on binjgb's struct definitions.
 *
 * The core is compiled with printf/fprintf renamed to the two functions below, which discard
 * output: the library never prints (the flysim CLI reports errors itself).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emulator.h"

int flysim_binjgb_printf(const char* format, ...) {
  (void)format;
  return 0;
}

int flysim_binjgb_fprintf(FILE* stream, const char* format, ...) {
  (void)stream;
  (void)format;
  return 0;
}

/* One frame of the DMG: 154 lines of 456 dots. */
#define FLY_FRAME_TICKS 70224

typedef struct FlyGb {
  Emulator* e;
  /* Audio drained while running and not yet taken, unsigned 8-bit interleaved stereo: at most
     audio_limit bytes; what arrives while the buffer is full is dropped and counted. */
  u8* audio;
  size_t audio_len;
  size_t audio_cap;
  size_t audio_limit;
  u64 audio_dropped;
} FlyGb;

static int drain_audio(FlyGb* gb) {
  AudioBuffer* buffer = emulator_get_audio_buffer(gb->e);
  size_t len = (size_t)(buffer->position - buffer->data);
  size_t room = gb->audio_limit > gb->audio_len ? gb->audio_limit - gb->audio_len : 0;
  size_t kept = len < room ? len : room;
  gb->audio_dropped += len - kept;
  if (gb->audio_len + kept > gb->audio_cap) {
    size_t cap = gb->audio_cap ? gb->audio_cap : 4096;
    while (cap < gb->audio_len + kept) cap *= 2;
    if (cap > gb->audio_limit) cap = gb->audio_limit;
    u8* grown = realloc(gb->audio, cap);
    if (!grown) return 0;
    gb->audio = grown;
    gb->audio_cap = cap;
  }
  if (kept > 0) memcpy(gb->audio + gb->audio_len, buffer->data, kept);
  gb->audio_len += kept;
  buffer->position = buffer->data;
  return 1;
}

/* rom is copied; len must be a non-zero multiple of 32 KiB (checked by the caller). */
FlyGb* fly_gb_new(const u8* rom, size_t len, u32 audio_frequency, u32 audio_frames) {
  FlyGb* gb = calloc(1, sizeof(FlyGb));
  if (!gb) return NULL;
  u8* copy = malloc(len);
  if (!copy) {
    free(gb);
    return NULL;
  }
  memcpy(copy, rom, len);
  EmulatorInit init;
  memset(&init, 0, sizeof(init));
  init.rom.data = copy;
  init.rom.size = len;
  init.audio_frequency = (int)audio_frequency;
  init.audio_frames = (int)audio_frames;
  init.random_seed = 0; /* power-on RAM contents are fixed */
  init.force_dmg = TRUE;
  gb->e = emulator_new(&init); /* owns copy from here on, also on failure */
  if (!gb->e) {
    free(gb);
    return NULL;
  }
  return gb;
}

void fly_gb_delete(FlyGb* gb) {
  if (!gb) return;
  emulator_delete(gb->e);
  free(gb->audio);
  free(gb);
}

/* Runs exactly one frame of CPU time; returns 0 if audio could not be kept. */
int fly_gb_run_frame(FlyGb* gb) {
  Ticks until = emulator_get_ticks(gb->e) + FLY_FRAME_TICKS;
  while (emulator_get_ticks(gb->e) < until) {
    EmulatorEvent event = emulator_run_until(gb->e, until);
    if (event & EMULATOR_EVENT_AUDIO_BUFFER_FULL) {
      if (!drain_audio(gb)) return 0;
    }
  }
  return drain_audio(gb);
}

u64 fly_gb_ticks(FlyGb* gb) { return emulator_get_ticks(gb->e); }

/* bit i = button i in the order up, down, left, right, a, b, start, select. */
void fly_gb_set_buttons(FlyGb* gb, u8 mask) {
  JoypadButtons j;
  memset(&j, 0, sizeof(j));
  j.up = (mask >> 0) & 1;
  j.down = (mask >> 1) & 1;
  j.left = (mask >> 2) & 1;
  j.right = (mask >> 3) & 1;
  j.A = (mask >> 4) & 1;
  j.B = (mask >> 5) & 1;
  j.start = (mask >> 6) & 1;
  j.select = (mask >> 7) & 1;
  emulator_set_joypad_buttons(gb->e, &j);
}

/* 160x144 RGBA8, row-major, top-left first: 92160 bytes. */
void fly_gb_framebuffer(FlyGb* gb, u8* out) {
  FrameBuffer* fb = emulator_get_frame_buffer(gb->e);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* RGBA keeps red in the low byte, so a little-endian pixel already is R, G, B, A in memory. */
  memcpy(out, *fb, sizeof(FrameBuffer));
#else
  for (size_t i = 0; i < SCREEN_WIDTH * SCREEN_HEIGHT; ++i) {
    RGBA p = (*fb)[i];
    out[4 * i + 0] = (u8)(p & 0xff);
    out[4 * i + 1] = (u8)((p >> 8) & 0xff);
    out[4 * i + 2] = (u8)((p >> 16) & 0xff);
    out[4 * i + 3] = (u8)((p >> 24) & 0xff);
  }
#endif
}

/* Whether the frame on screen is the 92160 bytes at `other`, as fly_gb_framebuffer writes it;
   compared in place, so an unchanged screen is never copied. */
int fly_gb_framebuffer_equals(FlyGb* gb, const u8* other) {
  FrameBuffer* fb = emulator_get_frame_buffer(gb->e);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return memcmp(*fb, other, sizeof(FrameBuffer)) == 0;
#else
  for (size_t i = 0; i < SCREEN_WIDTH * SCREEN_HEIGHT; ++i) {
    RGBA p = (*fb)[i];
    if (other[4 * i + 0] != (u8)(p & 0xff) || other[4 * i + 1] != (u8)((p >> 8) & 0xff) ||
        other[4 * i + 2] != (u8)((p >> 16) & 0xff) || other[4 * i + 3] != (u8)((p >> 24) & 0xff)) {
      return 0;
    }
  }
  return 1;
#endif
}

/* Brings `out`, the 92160 bytes of an earlier frame as fly_gb_framebuffer wrote them, up to the
   frame on screen by rewriting the rows from the first one that differs to the last one that
   differs (a game redraws what moves, so most rows of a recycled buffer are already right).
   Returns how many rows it rewrote: 0 when `out` already is the frame on screen. */
int fly_gb_framebuffer_update(FlyGb* gb, u8* out) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  FrameBuffer* fb = emulator_get_frame_buffer(gb->e);
  const u8* screen = (const u8*)*fb;
  const size_t row = SCREEN_WIDTH * sizeof(RGBA);
  int first = 0;
  while (first < SCREEN_HEIGHT && memcmp(out + first * row, screen + first * row, row) == 0) {
    ++first;
  }
  if (first == SCREEN_HEIGHT) {
    return 0;
  }
  int last = SCREEN_HEIGHT - 1;
  while (last > first && memcmp(out + last * row, screen + last * row, row) == 0) {
    --last;
  }
  memcpy(out + first * row, screen + first * row, (size_t)(last - first + 1) * row);
  return last - first + 1;
#else
  fly_gb_framebuffer(gb, out);
  return SCREEN_HEIGHT;
#endif
}

u8 fly_gb_read(FlyGb* gb, u16 addr) { return emulator_read_mem(gb->e, addr); }

/* In core.c, which shares the core's translation unit. */
void fly_gb_core_memory_image(Emulator* e, u8* out);

/* The 64 KiB memory image (see core.c); `out` has room for 65536 bytes. */
void fly_gb_memory_image(FlyGb* gb, u8* out) { fly_gb_core_memory_image(gb->e, out); }

/* In core.c: an image brought up to date in place (see there). */
typedef struct FlyGbImageMap FlyGbImageMap;
void fly_gb_core_memory_image_refresh(Emulator* e, u8* out, FlyGbImageMap* map);

/* Refreshes `out` (65536 bytes, filled by an earlier call with `map`, or `map` invalid). */
void fly_gb_memory_image_refresh(FlyGb* gb, u8* out, FlyGbImageMap* map) {
  fly_gb_core_memory_image_refresh(gb->e, out, map);
}

void fly_gb_core_read_window(Emulator* e, u8* out, u32 start, u32 len);

/* `len` bytes of the memory image from `start` (see core.c); `out` has room for them. */
void fly_gb_read_window(FlyGb* gb, u8* out, u16 start, u16 len) {
  fly_gb_core_read_window(gb->e, out, start, len);
}

size_t fly_gb_audio_len(FlyGb* gb) { return gb->audio_len; }

void fly_gb_set_audio_limit(FlyGb* gb, size_t limit) { gb->audio_limit = limit; }

u64 fly_gb_audio_dropped(FlyGb* gb) { return gb->audio_dropped; }

/* Copies and clears the drained audio; returns bytes copied (at most cap). */
size_t fly_gb_take_audio(FlyGb* gb, u8* out, size_t cap) {
  size_t n = gb->audio_len < cap ? gb->audio_len : cap;
  memcpy(out, gb->audio, n);
  memmove(gb->audio, gb->audio + n, gb->audio_len - n);
  gb->audio_len -= n;
  return n;
}

size_t fly_gb_state_size(void) {
  FileData fd;
  emulator_init_state_file_data(&fd);
  size_t size = fd.size;
  free(fd.data);
  return size;
}

int fly_gb_save_state(FlyGb* gb, u8* out, size_t len) {
  FileData fd;
  fd.data = out;
  fd.size = len;
  return SUCCESS(emulator_write_state(gb->e, &fd));
}

/* In core.c (state_check.c): checks a state against the loaded cartridge, then installs it. */
typedef struct FlyGbStateCheck FlyGbStateCheck;
int fly_gb_core_load_state(Emulator* e, const u8* in, size_t len, FlyGbStateCheck* out);

/* Installs a checked state; returns 1, or 0 with why in `out` (nothing is changed then). */
int fly_gb_load_state(FlyGb* gb, const u8* in, size_t len, FlyGbStateCheck* out) {
  return fly_gb_core_load_state(gb->e, in, len, out);
}

typedef struct FlyGbStateOffsets FlyGbStateOffsets;
void fly_gb_core_state_offsets(FlyGbStateOffsets* out);

/* Where the checked fields sit in a state (see state_check.c). */
void fly_gb_state_offsets(FlyGbStateOffsets* out) { fly_gb_core_state_offsets(out); }

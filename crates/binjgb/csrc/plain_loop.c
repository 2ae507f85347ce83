/*
 * A reference frame loop in plain C over the same binjgb core, for the benchmark that compares
 * it with the Rust wrapper: power on, then run `frames` frames of 70224 cycles, discarding audio
 * as the core produces it. Returns the number of frames run, or 0 if the ROM was refused.
 */
#include <stdlib.h>
#include <string.h>

#include "emulator.h"

u32 fly_gb_plain_frames(const u8* rom, size_t len, u32 frames) {
  u8* copy = malloc(len);
  if (!copy) return 0;
  memcpy(copy, rom, len);
  EmulatorInit init;
  memset(&init, 0, sizeof(init));
  init.rom.data = copy;
  init.rom.size = len;
  init.audio_frequency = 48000;
  init.audio_frames = 4096;
  init.force_dmg = TRUE;
  Emulator* e = emulator_new(&init);
  if (!e) return 0;
  for (u32 i = 0; i < frames; ++i) {
    Ticks until = emulator_get_ticks(e) + 70224;
    while (emulator_get_ticks(e) < until) {
      if (emulator_run_until(e, until) & EMULATOR_EVENT_AUDIO_BUFFER_FULL) {
        AudioBuffer* audio = emulator_get_audio_buffer(e);
        audio->position = audio->data;
      }
    }
  }
  emulator_delete(e);
  return frames;
}

/* gc-fieldcount: flysim's own GameCube test program (no SDK, no copyrighted content).
 *
 * It programs the video interface for 480i NTSC with an external framebuffer (XFB) so that every
 * field presents a new frame, counts fields, copies the controller words of all four serial
 * interface channels to fixed RAM addresses on every pass of its main loop, and writes a magic
 * word once it is running. Every time its field counter steps it also writes a made-up Super
 * Smash Bros. Melee match (a pure function of the field count) at the addresses Melee NTSC 1.02
 * keeps its match state at, so a Melee memory task can be tested without the game. The addresses
 * and the match's schedule are documented in README.md beside this file; flysim's Dolphin
 * backend and its tests read them. */

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

/* Results, at fixed cached-RAM addresses in the unused area below the program. */
#define OUT ((volatile u32 *)0x80001800)
#define OUT_MAGIC 0   /* 0x80001800: MAGIC once running */
#define OUT_FIELDS 1  /* 0x80001804: fields seen since the program started */
#define OUT_LOOPS 2   /* 0x80001808: main-loop passes since the program started */
#define OUT_PARITY 3  /* 0x8000180c: 0 after the middle of a first field, 1 after a second, 2 before either */
#define OUT_PAD 4     /* 0x80001810 + 8n: SI channel n input words (high, low), n = 0..3 */
#define MAGIC 0x46534743u /* "FSGC" */

/* The Z button in the high SI word of a standard controller. While port 1 holds Z the program
 * repaints only after even fields, so a frame lasts two fields: a test of how the backend
 * reports a frame advance that covers more than one field. */
#define PAD_Z 0x00100000u

/* Video interface (VI) registers. */
#define VI16 ((volatile u16 *)0xCC002000)
#define VI32 ((volatile u32 *)0xCC002000)
#define VI_VTR (0x00 / 2)     /* vertical timing: ACV << 4 | EQU */
#define VI_DCR (0x02 / 2)     /* display configuration */
#define VI_VTO (0x0C / 4)     /* odd-field vertical blanking: PSB << 16 | PRB */
#define VI_VTE (0x10 / 4)     /* even-field vertical blanking */
#define VI_TFBL (0x1C / 4)    /* top-field XFB base (POFF | address >> 5) */
#define VI_BFBL (0x24 / 4)    /* bottom-field XFB base */
#define VI_VCOUNT (0x2C / 2)  /* vertical beam position, 1..525 */
#define VI_HSW (0x48 / 2)     /* WPL << 8 | STD, in units of 16 pixels */

/* Serial interface (SI) registers: channel n at 0xCC006400 + 12n. */
#define SI32 ((volatile u32 *)0xCC006400)
#define SI_OUTBUF(n) ((n) * 3)
#define SI_INBUF_HI(n) ((n) * 3 + 1)
#define SI_INBUF_LO(n) ((n) * 3 + 2)
#define SI_POLL (0x30 / 4)
#define SI_SR (0x38 / 4)

/* A 640x480 interlaced XFB (YUYV, 2 bytes a pixel) at physical 1 MiB, written through the
 * uncached mirror. The top field is the even lines, the bottom field the odd lines. */
#define XFB_PHYS 0x00100000u
#define XFB ((volatile u32 *)(0xC0000000u | XFB_PHYS))
#define LINE_BYTES 1280u
#define LINE_WORDS (LINE_BYTES / 4)
#define LINES 480u
#define POFF 0x10000000u

/* The beam position (line 1..525) in the middle of each field: lines 100..262 lie in the first
 * field, lines 363..525 in the second. The field counter steps when the beam enters the other
 * field's middle, well away from the field boundaries where Dolphin's frame advance stops. */
#define FIRST_FIELD_MIDDLE 100u
#define SECOND_FIELD_START 263u
#define SECOND_FIELD_MIDDLE 363u
#define NO_PHASE 2u

/* 0 in the middle of the first field, 1 in the middle of the second, NO_PHASE near a boundary. */
static u32 phase(void)
{
	u32 line = VI16[VI_VCOUNT];
	if (line >= FIRST_FIELD_MIDDLE && line < SECOND_FIELD_START)
		return 0;
	if (line >= SECOND_FIELD_MIDDLE)
		return 1;
	return NO_PHASE;
}

/* Passes of the idle loop between two polls of the hardware: cheap instructions keep Dolphin's
 * host time per emulated field low (register reads are slow to emulate), while a poll every few
 * thousand cycles still sees a field change within a fraction of a line. */
#define IDLE_PASSES 2000u

static void idle(void)
{
	u32 n = IDLE_PASSES;
	__asm__ volatile("mtctr %0\n1: bdnz 1b" : : "r"(n) : "ctr");
}

static void paint(u32 lines, u32 luma)
{
	u32 word = (luma << 24) | 0x00800000u | (luma << 8) | 0x80u; /* Y0 U Y1 V, no colour */
	for (u32 i = 0; i < lines * LINE_WORDS; i++)
		XFB[i] = word;
}

/* The made-up Melee match ("Melee stand-in" in README.md). Melee NTSC 1.02 keeps each player's
 * static block at MELEE_PLAYER(n) and the global frame counter at MELEE_FRAME; a player's entity
 * pointer points at its character data, whose action state word is at MELEE_ACTION. The two
 * entities live in otherwise unused RAM at P1_ENTITY and P2_ENTITY. */
#define MELEE_PLAYER(n) (0x80453080u + 0xE90u * ((n) - 1u))
#define MELEE_X 0x10u       /* f32: x position */
#define MELEE_Y 0x14u       /* f32: y position */
#define MELEE_PERCENT 0x60u /* u16: damage percent */
#define MELEE_STOCKS 0x8Eu  /* u8: stocks left */
#define MELEE_ENTITY 0xB0u  /* u32: entity pointer, 0 when there is none */
#define MELEE_ACTION 0x70u  /* u32 at (entity + MELEE_ACTION): action state */
#define MELEE_FRAME 0x80479D60u /* u32: frame counter */
#define P1_ENTITY 0x80C00000u
#define P2_ENTITY 0x80C01000u
/* Player 2 loses a stock every P2_STOCK_FIELDS fields; after four the match is over. */
#define P2_STOCK_FIELDS 64u

static inline void put8(u32 address, u32 value)
{
	*(volatile u8 *)address = (u8)value;
}

static inline void put16(u32 address, u32 value)
{
	*(volatile u16 *)address = (u16)value;
}

static inline void put32(u32 address, u32 value)
{
	*(volatile u32 *)address = value;
}

/* The IEEE-754 single bit pattern of q / 4, built with integer arithmetic (the program leaves
 * the FPU off). Exact for |q| < 2^24: the most significant set bit of |q| is the leading 1 of the
 * significand, so the value is 1.fraction * 2^(top - 2), and the bits below it, moved up to the
 * top of the 23-bit fraction field, are the fraction. */
static inline u32 quarters(int q)
{
	if (q == 0)
		return 0; /* +0.0 */
	u32 sign = q < 0 ? 0x80000000u : 0;
	u32 m = q < 0 ? (u32)-q : (u32)q;
	u32 top = 31u - (u32)__builtin_clz(m);  /* cntlzw: no library call */
	u32 exponent = top - 2u + 127u;          /* biased */
	u32 fraction = (m << (23u - top)) & 0x007FFFFFu;
	return sign | (exponent << 23) | fraction;
}

/* Writes the match as it stands at field f. Always inlined: the program's only function symbol
 * is fc_main (a test checks the ELF's symbols). */
static inline __attribute__((always_inline)) void write_match(u32 f)
{
	put32(MELEE_FRAME, f);

	/* Player 1: four stocks throughout, a percent that climbs by one every 16 fields, walking
	 * right from -20.0 in steps of 0.25 and wrapping every 160 fields, on the ground, cycling
	 * through 8 action states every 4 fields each. */
	u32 p1 = MELEE_PLAYER(1);
	put8(p1 + MELEE_STOCKS, 4);
	put16(p1 + MELEE_PERCENT, f / 16u);
	put32(p1 + MELEE_X, quarters(-80 + (int)(f % 160u))); /* -20.0 + 0.25 (f mod 160) */
	put32(p1 + MELEE_Y, quarters(0));
	put32(p1 + MELEE_ENTITY, P1_ENTITY);
	put32(P1_ENTITY + MELEE_ACTION, 0x0Eu + (f / 4u) % 8u);

	/* Player 2: loses a stock every 64 fields. Within each stock (t = f mod 64) its percent
	 * climbs by 9 every 8 fields, it walks left from 30.5 in steps of 0.5, hops between 0.0 and
	 * 10.0 every 8 fields, has no entity for its first 8 fields (respawning) and cycles through 16
	 * action states every 2 fields each. Once the fourth stock is lost the match is over: zeros,
	 * and the action state word keeps its last value. */
	u32 p2 = MELEE_PLAYER(2);
	u32 lost = f / P2_STOCK_FIELDS;
	if (lost < 4u) {
		u32 t = f % P2_STOCK_FIELDS;
		put8(p2 + MELEE_STOCKS, 4u - lost);
		put16(p2 + MELEE_PERCENT, 9u * (t / 8u));
		put32(p2 + MELEE_X, quarters(122 - 2 * (int)t));         /* 30.5 - 0.5 t */
		put32(p2 + MELEE_Y, quarters(40 * (int)((f / 8u) % 2u))); /* 0.0 or 10.0 */
		put32(p2 + MELEE_ENTITY, t < 8u ? 0u : P2_ENTITY);
		put32(P2_ENTITY + MELEE_ACTION, 0x14u + (f / 2u) % 16u);
	} else {
		put8(p2 + MELEE_STOCKS, 0);
		put16(p2 + MELEE_PERCENT, 0);
		put32(p2 + MELEE_X, quarters(0));
		put32(p2 + MELEE_Y, quarters(0));
		put32(p2 + MELEE_ENTITY, 0);
	}
}

static void setup_video(void)
{
	paint(LINES, 0x10);
	VI16[VI_VTR] = (240 << 4) | 6;     /* 240 active lines a field, 6 equalisation half-lines */
	VI32[VI_VTO] = (3u << 16) | 24u;   /* odd field: 24 half-lines pre-, 3 post-blanking */
	VI32[VI_VTE] = (2u << 16) | 25u;   /* even field: 25 pre-, 2 post-blanking: 525 lines */
	VI16[VI_HSW] = (40 << 8) | 80;     /* 640 pixels wide, a stride of two lines (interlaced) */
	VI32[VI_TFBL] = POFF | (XFB_PHYS >> 5);
	VI32[VI_BFBL] = POFF | ((XFB_PHYS + LINE_BYTES) >> 5);
	VI16[VI_DCR] = 1;                  /* enable, interlaced, NTSC */
}

static void setup_serial(void)
{
	for (u32 n = 0; n < 4; n++)
		SI32[SI_OUTBUF(n)] = 0x00400300u; /* "get status", analog mode 3, motor off */
	SI32[SI_POLL] = (263u << 16) | (1u << 8) | 0xF0u; /* poll all four channels once a field */
	SI32[SI_SR] = 0x80000000u;                        /* write the output buffers */
}

void fc_main(void)
{
	u32 fields = 0;
	u32 loops = 0;
	u32 pad1 = 0;

	setup_video();
	setup_serial();
	u32 parity = NO_PHASE;
	OUT[OUT_FIELDS] = 0;
	OUT[OUT_LOOPS] = 0;
	OUT[OUT_PARITY] = parity;
	write_match(0); /* the match at field 0, in place before the magic word */
	OUT[OUT_MAGIC] = MAGIC;

	for (;;) {
		u32 now = phase();
		if (now != NO_PHASE && now != parity) {
			parity = now;
			fields++;
			OUT[OUT_FIELDS] = fields;
			OUT[OUT_PARITY] = parity;
			write_match(fields);
			/* A new picture every field: the first 16 lines (8 of each field) show the
			 * field count as brightness, so no two consecutive fields are duplicates. */
			if (!(pad1 & PAD_Z) || (fields & 1) == 0)
				paint(16, 0x10 + (fields & 0x7F));
		}
		for (u32 n = 0; n < 4; n++) {
			OUT[OUT_PAD + 2 * n] = SI32[SI_INBUF_HI(n)];
			OUT[OUT_PAD + 2 * n + 1] = SI32[SI_INBUF_LO(n)];
		}
		pad1 = OUT[OUT_PAD];
		loops++;
		OUT[OUT_LOOPS] = loops;
		idle();
	}
}

; fly arena — flysim's own Game Boy test game (SM83 assembly for crates/sm83).
;
; A fly sprite moves over a tiled field with the D-pad, one pixel per frame per held direction.
; Food appears at positions taken in order from an in-ROM table; touching it scores a point and
; moves the food to the next position. Everything runs once per frame, woken by VBlank, so one
; emulator frame is one game step, and the game is a pure function of the joypad sequence.
;
; Documented WRAM (all read by tasks through the memory image; see roms/fly-arena/README.md):
FLY_X       equ $c000   ; fly left edge, screen pixels, 0..152
FLY_Y       equ $c001   ; fly top edge, screen pixels, 0..136
SCORE       equ $c002   ; foods eaten, u16 little-endian ($c002 low, $c003 high)
FOOD_X      equ $c004   ; food left edge, screen pixels
FOOD_Y      equ $c005   ; food top edge, screen pixels
FOOD_INDEX  equ $c006   ; position in the food table (wraps at 256; the table repeats every 16)
PAD         equ $c007   ; buttons read this frame, 1 = down: bit 0 right, 1 left, 2 up, 3 down,
                        ; 4 A, 5 B, 6 select, 7 start
FRAME       equ $c008   ; frames since power-on, u16 little-endian

MAX_X       equ 152
MAX_Y       equ 136
START_X     equ 76
START_Y     equ 68
REACH       equ 8       ; fly and food touch when both |dx| and |dy| are below this

; Hardware registers (low byte of $ff00+n, for ldh).
P1          equ $00
IF          equ $0f
LCDC        equ $40
SCY         equ $42
SCX         equ $43
LY          equ $44
BGP         equ $47
OBP0        equ $48
IE          equ $ff

LCDC_ON     equ %10010011   ; LCD on, tile data $8000, BG map $9800, 8x8 objects on, BG on
PALETTE     equ %11100100   ; colour n shows as shade n (0 white .. 3 black)

; Restart and interrupt vectors. Unused ROM is $ff (rst $38), so a runaway jump lands here and
; stops visibly instead of executing garbage.
        org $0038
trap:   jr trap

        org $0040       ; VBlank: the main loop's halt wakes here
        reti

; Cartridge header. The logo area ($0104-$0133) is left zero: flysim ships no Nintendo data, and
; binjgb (which runs no boot ROM) loads a cartridge without it. Checksums are written by the
; assembler's header fix-up.
        org $0100
        nop
        jp main
        org $0104
        ds 48, 0
        org $0134
        db "FLY ARENA"          ; title, NUL-padded to 15 bytes
        ds 6, 0
        db $00                  ; $0143 DMG only
        db "00"                 ; $0144 new licensee code: none
        db $00                  ; $0146 no SGB functions
        db $00                  ; $0147 ROM only
        db $00                  ; $0148 32 KiB
        db $00                  ; $0149 no cartridge RAM
        db $01                  ; $014a non-Japanese
        db $00                  ; $014b old licensee: none
        db $00                  ; $014c version 0
        db $00                  ; $014d header checksum (fixed up)
        dw $0000                ; $014e global checksum (fixed up)

        org $0150
main:
        di
        ld sp, $dffe

        ; The LCD may only be switched off during VBlank.
.vblank:
        ldh a, (LY)
        cp 144
        jr c, .vblank
        xor a
        ldh (LCDC), a

        ; Tiles 0..2 into $8000.
        ld hl, $8000
        ld de, tiles
        ld b, tiles_end - tiles
.tiles:
        ld a, (de)
        ld (hl+), a
        inc de
        dec b
        jr nz, .tiles

        ; The whole background map is field (tile 0).
        ld hl, $9800
        ld bc, 1024
.map:
        xor a
        ld (hl+), a
        dec bc
        ld a, b
        or c
        jr nz, .map

        ; No stray objects.
        ld hl, $fe00
        ld b, 160
        xor a
.oam:
        ld (hl+), a
        dec b
        jr nz, .oam

        ld a, PALETTE
        ldh (BGP), a
        ldh (OBP0), a
        xor a
        ldh (SCY), a
        ldh (SCX), a

        ; Game state.
        ld a, START_X
        ld (FLY_X), a
        ld a, START_Y
        ld (FLY_Y), a
        xor a
        ld (SCORE), a
        ld (SCORE + 1), a
        ld (FOOD_INDEX), a
        ld (PAD), a
        ld (FRAME), a
        ld (FRAME + 1), a
        call place_food
        call draw

        ld a, LCDC_ON
        ldh (LCDC), a
        ld a, 1                 ; VBlank interrupt only
        ldh (IE), a
        xor a
        ldh (IF), a
        ei

; One iteration per frame: sleep until VBlank, then read, move, eat, draw (all inside VBlank).
loop:
        halt
        call read_pad
        call move_fly
        call eat
        call draw
        ld hl, FRAME
        inc (hl)
        jr nz, loop
        inc hl
        inc (hl)
        jr loop

; PAD <- buttons, 1 = down.
read_pad:
        ld a, $20               ; select the D-pad
        ldh (P1), a
        ldh a, (P1)
        ldh a, (P1)             ; read twice to let the lines settle
        cpl
        and $0f
        ld b, a
        ld a, $10               ; select the buttons
        ldh (P1), a
        ldh a, (P1)
        ldh a, (P1)
        cpl
        and $0f
        swap a
        or b
        ld (PAD), a
        ld a, $30
        ldh (P1), a
        ret

; One pixel per held direction, kept inside the field.
move_fly:
        ld a, (PAD)
        ld b, a
        ld a, (FLY_X)
        bit 0, b
        jr z, .left
        cp MAX_X
        jr nc, .left
        inc a
.left:
        bit 1, b
        jr z, .storex
        or a
        jr z, .storex
        dec a
.storex:
        ld (FLY_X), a
        ld a, (FLY_Y)
        bit 2, b
        jr z, .down
        or a
        jr z, .down
        dec a
.down:
        bit 3, b
        jr z, .storey
        cp MAX_Y
        jr nc, .storey
        inc a
.storey:
        ld (FLY_Y), a
        ret

; When the fly touches the food: score, and move the food to the next table position.
eat:
        ld a, (FOOD_X)
        ld b, a
        ld a, (FLY_X)
        sub b
        jr nc, .dx
        cpl
        inc a
.dx:
        cp REACH
        ret nc
        ld a, (FOOD_Y)
        ld b, a
        ld a, (FLY_Y)
        sub b
        jr nc, .dy
        cpl
        inc a
.dy:
        cp REACH
        ret nc
        ld hl, SCORE
        inc (hl)
        jr nz, .next
        inc hl
        inc (hl)
.next:
        ld hl, FOOD_INDEX
        inc (hl)
        ; fall through

; FOOD_X, FOOD_Y <- food_table[FOOD_INDEX mod 16].
place_food:
        ld a, (FOOD_INDEX)
        and 15
        add a, a
        ld e, a
        ld d, 0
        ld hl, food_table
        add hl, de
        ld a, (hl+)
        ld (FOOD_X), a
        ld a, (hl)
        ld (FOOD_Y), a
        ret

; Object 0 is the fly (tile 1), object 1 the food (tile 2); OAM coordinates are offset (8, 16).
draw:
        ld hl, $fe00
        ld a, (FLY_Y)
        add a, 16
        ld (hl+), a
        ld a, (FLY_X)
        add a, 8
        ld (hl+), a
        ld a, 1
        ld (hl+), a
        xor a
        ld (hl+), a
        ld a, (FOOD_Y)
        add a, 16
        ld (hl+), a
        ld a, (FOOD_X)
        add a, 8
        ld (hl+), a
        ld a, 2
        ld (hl+), a
        xor a
        ld (hl+), a
        ret

; Sixteen food positions (x, y), visited in order; none is within reach of the start position.
food_table:
        db 120, 24
        db 24, 112
        db 136, 120
        db 40, 16
        db 96, 96
        db 8, 56
        db 144, 48
        db 64, 128
        db 112, 64
        db 16, 8
        db 80, 24
        db 128, 96
        db 32, 80
        db 104, 136
        db 56, 40
        db 152, 8

; 2 bits per pixel, two bytes per row (low plane, high plane).
tiles:
        ; 0: field, a faint dot every eight pixels
        db $00, $00, $00, $00, $00, $00, $08, $00
        db $00, $00, $00, $00, $00, $00, $00, $00
        ; 1: the fly, seen from above: dark body, light wings
        db $42, $00, $db, $18, $ff, $3c, $7e, $3c
        db $3c, $3c, $18, $18, $24, $24, $00, $00
        ; 2: food, a round drop in shade 2
        db $00, $3c, $00, $7e, $00, $ff, $00, $ff
        db $00, $ff, $00, $ff, $00, $7e, $00, $3c
tiles_end:

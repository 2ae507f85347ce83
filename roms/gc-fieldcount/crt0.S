/* gc-fieldcount start-up: flysim's own code, no SDK.
 *
 * Dolphin's HLE boot jumps to the ELF entry point with the MMU's BATs mapping cached RAM at
 * 0x80000000, uncached RAM at 0xC0000000 and the hardware registers at 0xCC000000. This sets up
 * a stack, clears .bss and calls fc_main, which never returns. */

	.section .text.start, "ax"
	.globl _start
_start:
	lis	1, 0x80F0		/* stack top: 0x80F00000, grows down */
	li	0, 0
	stwu	0, -16(1)		/* terminate the back chain */

	lis	3, __bss_start@ha
	addi	3, 3, __bss_start@l
	lis	4, __bss_end@ha
	addi	4, 4, __bss_end@l
1:	cmplw	3, 4
	bge	2f
	stw	0, 0(3)
	addi	3, 3, 4
	b	1b

2:	bl	fc_main
3:	b	3b			/* fc_main never returns */

	.section .note.GNU-stack, "", @progbits

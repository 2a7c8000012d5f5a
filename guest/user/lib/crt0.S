/* SPDX-License-Identifier: MIT */
/* Process entry: rsp -> argc, argv[0..argc), NULL (16-byte aligned). */
	.text
	.globl _start
	.type _start, @function
_start:
	xorl %ebp, %ebp			/* end of the frame-pointer chain */
	movq (%rsp), %rdi		/* argc */
	leaq 8(%rsp), %rsi		/* argv */
	andq $-16, %rsp
	call main
	movl %eax, %edi
	call exit
	ud2
	.size _start, . - _start

	.section .note.GNU-stack, "", @progbits

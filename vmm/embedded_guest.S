/* The bundled guest, built into kvmprof-vmm so that it boots with no files around it. */
	.section .rodata
	.balign 64
	.globl kvmprof_guest_kernel, kvmprof_guest_initrd
	.globl kvmprof_guest_kernel_size, kvmprof_guest_initrd_size
kvmprof_guest_kernel:
	.incbin GUEST_KERNEL
1:
	.balign 64
kvmprof_guest_initrd:
	.incbin GUEST_INITRD
2:
	.balign 8
/* Sizes computed by the assembler: C may not subtract pointers to distinct objects. */
kvmprof_guest_kernel_size:
	.quad 1b - kvmprof_guest_kernel
kvmprof_guest_initrd_size:
	.quad 2b - kvmprof_guest_initrd
	.section .note.GNU-stack,"",@progbits

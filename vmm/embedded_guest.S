/* The bundled guest, built into kvmprof-vmm so that it boots with no files around it. */
	.section .rodata
	.balign 64
	.globl kvmprof_guest_kernel, kvmprof_guest_kernel_end
kvmprof_guest_kernel:
	.incbin GUEST_KERNEL
kvmprof_guest_kernel_end:
	.balign 64
	.globl kvmprof_guest_initrd, kvmprof_guest_initrd_end
kvmprof_guest_initrd:
	.incbin GUEST_INITRD
kvmprof_guest_initrd_end:
	.section .note.GNU-stack,"",@progbits

/*
 * A PVH kernel for bench/vpmu.sh: times, with the TSC, N iterations of an
 * empty loop, of RDMSR of AMD PERF_CTR0 (0xc0010004; with the emulated vPMU
 * an MSR exit to the VMM) and of OUTB to port 0x80 (a port I/O exit to the
 * VMM), prints the three TSC deltas on COM1 and powers off. Ratios of the
 * differences are unit-free, so the TSC frequency does not matter.
 */
#define N 2000

	.section .note.Xen, "a", @note
	.balign 4
	.long 4, 4, 18
	.asciz "Xen"
	.long _start

	.text
	.code32
	.globl _start
_start:
	mov $0x200000, %esp
	mov $msg_empty, %ebx
	call measure_empty
	mov $msg_rdmsr, %ebx
	call measure_rdmsr
	mov $msg_outb, %ebx
	call measure_outb
	xor %eax, %eax
	mov $0xf4, %dx
	outl %eax, %dx
1:	hlt
	jmp 1b

/* Each measure_*: edi:ebp = start TSC, loop, then print "<label> <delta hex>\n". */
measure_empty:
	rdtsc
	mov %eax, %edi
	mov %edx, %ebp
	mov $N, %esi
2:	nop
	dec %esi
	jnz 2b
	jmp report
measure_rdmsr:
	rdtsc
	mov %eax, %edi
	mov %edx, %ebp
	mov $N, %esi
3:	mov $0xc0010004, %ecx
	rdmsr
	dec %esi
	jnz 3b
	jmp report
measure_outb:
	rdtsc
	mov %eax, %edi
	mov %edx, %ebp
	mov $N, %esi
4:	mov $0x80, %dx
	outb %al, %dx
	dec %esi
	jnz 4b
report:
	rdtsc
	sub %edi, %eax
	sbb %ebp, %edx
	push %eax
	push %edx
	mov %ebx, %esi
	call puts
	pop %eax
	call hex32
	pop %eax
	call hex32
	mov $0x3f8, %dx
	mov $'\n', %al
	outb %al, %dx
	ret
puts:
	mov $0x3f8, %dx
5:	lodsb
	test %al, %al
	jz 6f
	outb %al, %dx
	jmp 5b
6:	ret
hex32:
	mov $8, %ecx
7:	rol $4, %eax
	push %eax
	and $0xf, %eax
	mov hexdigits(%eax), %al
	mov $0x3f8, %dx
	outb %al, %dx
	pop %eax
	loop 7b
	ret

	.data
msg_empty: .asciz "empty "
msg_rdmsr: .asciz "rdmsr "
msg_outb:  .asciz "outb "
hexdigits: .ascii "0123456789abcdef"
	.section .note.GNU-stack,"",@progbits

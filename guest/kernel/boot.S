/* SPDX-License-Identifier: MIT */
/*
 * PVH entry, static page tables and GDT, the switch to long mode, the trap
 * entry stubs and the AP real-mode trampoline.
 *
 * Everything the boot path needs is initialised at build time: under the
 * paravirtual KVM this kernel targets, every ring-0 instruction is emulated
 * (~1.4 us each), so loops that build tables at run time are expensive.
 */
#include "layout.h"

/* ---- PVH ELF note: XEN_ELFNOTE_PHYS32_ENTRY (18) ---------------------- */
	.section .note.Xen, "a"
	.balign 4
	.long 4			/* namesz: "Xen\0" */
	.long 4			/* descsz */
	.long 18		/* XEN_ELFNOTE_PHYS32_ENTRY */
	.asciz "Xen"
	.balign 4
	.long pvh_start32
	.balign 4

/* ---- 32-bit entry: BSP from PVH, APs from the trampoline ---------------- */
	.section .text.boot, "ax"
	.code32
	.globl pvh_start32
pvh_start32:
	cli
	cld
	movl %ebx, boot_start_info	/* physical address of hvm_start_info */
	.globl ap_entry32
ap_entry32:
	movl $boot_pml4, %eax
	movl %eax, %cr3
	movl %cr4, %eax
	orl $0x120, %eax		/* CR4.PAE; CR4.PCE: RDPMC in ring 3, as Linux allows a task with a perf mmap */
	movl %eax, %cr4
	movl $0xc0000080, %ecx		/* EFER */
	rdmsr
	orl $0x100, %eax		/* EFER.LME */
	wrmsr
	movl %cr0, %eax
	andl $0x9fffffff, %eax		/* clear CD, NW (set after INIT) */
	orl $0x80010001, %eax		/* PG | WP | PE */
	movl %eax, %cr0
	lgdt gdt_ptr
	ljmp $KERNEL_CS, $start64

	.code64
start64:
	movl $KERNEL_DS, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	xorl %eax, %eax
	movl %eax, %fs
	movl %eax, %gs
	movq ap_boot_stack(%rip), %rsp
	testq %rsp, %rsp
	jnz 1f
	leaq cpu_blocks + CPU_BLOCK_SIZE(%rip), %rsp	/* CPU 0 stack top */
	movl boot_start_info(%rip), %edi
	call kmain
	ud2
1:	call ap_main
	ud2

/* ---- trap entry ---------------------------------------------------------- */
	.text
.macro ISR_NOERR n
	.balign 8
isr\n:	pushq $0
	pushq $\n
	jmp trap_common
.endm
.macro ISR_ERR n
	.balign 8
isr\n:	pushq $\n
	jmp trap_common
.endm

ISR_NOERR 0
ISR_NOERR 1
ISR_NOERR 2
ISR_NOERR 3
ISR_NOERR 4
ISR_NOERR 5
ISR_NOERR 6
ISR_NOERR 7
ISR_ERR 8
ISR_NOERR 9
ISR_ERR 10
ISR_ERR 11
ISR_ERR 12
ISR_ERR 13
ISR_ERR 14
ISR_NOERR 15
ISR_NOERR 16
ISR_ERR 17
ISR_NOERR 18
ISR_NOERR 19
ISR_NOERR 20
ISR_ERR 21
ISR_NOERR 22
ISR_NOERR 23
ISR_NOERR 24
ISR_NOERR 25
ISR_NOERR 26
ISR_NOERR 27
ISR_NOERR 28
ISR_ERR 29
ISR_ERR 30
ISR_NOERR 31
ISR_NOERR 32
ISR_NOERR 33

	.globl isr_spurious
	.balign 8
isr_spurious:
	iretq

trap_common:
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, %rdi
	cld
	call trap
	.globl trap_exit
trap_exit:
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	addq $16, %rsp
	iretq

/* void trap_return(struct trapframe *tf): resume a saved frame. */
	.globl trap_return
trap_return:
	movq %rdi, %rsp
	jmp trap_exit

/*
 * void cpu_idle(void): enter the scheduler on a fresh stack below the
 * trap-frame slot at the top of this CPU's stack (which it may fill).
 */
	.globl cpu_idle
cpu_idle:
	movq %rsp, %rax
	andq $~(CPU_BLOCK_SIZE - 1), %rax
	leaq CPU_BLOCK_SIZE - TRAPFRAME_SIZE - 16(%rax), %rsp
	call cpu_idle_body
	ud2

/* void idle_halt(uint64_t stack_top): reset the stack, wait for interrupts. */
	.globl idle_halt
idle_halt:
	movq %rdi, %rsp
1:	sti
	hlt
	jmp 1b

	.section .rodata
	.balign 8
	.globl isr_table
isr_table:
	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33
	.quad isr\n
	.endr

/* ---- AP trampoline, copied to TRAMPOLINE_ADDR ----------------------------- */
	.section .rodata.tramp, "a"
	.code16
	.globl tramp_start, tramp_end
tramp_start:
	cli
	cld
	xorw %ax, %ax
	movw %ax, %ds
	lgdtl TRAMPOLINE_ADDR + (tramp_gdtr - tramp_start)
	movl %cr0, %eax
	orl $1, %eax
	movl %eax, %cr0
	ljmpl $0x08, $(TRAMPOLINE_ADDR + (tramp32 - tramp_start))
	.code32
tramp32:
	movl $0x10, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	movl $ap_entry32, %eax
	jmp *%eax
	.balign 8
tramp_gdt:
	.quad 0
	.quad 0x00cf9a000000ffff	/* 0x08: flat 32-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: flat data */
tramp_gdtr:
	.word 23
	.long TRAMPOLINE_ADDR + (tramp_gdt - tramp_start)
tramp_end:
	.code64

/* ---- static data: page tables, GDT ------------------------------------- */
	.data
	.balign 4096
	.globl boot_pml4, boot_pd_low, boot_pd_apic
boot_pml4:
	.quad boot_pdpt + 0x3		/* present, writable, supervisor */
	.fill 511, 8, 0
boot_pdpt:
	.quad boot_pd_low + 0x3		/* 0-1 GiB: identity, 2 MiB pages */
	.quad 0				/* 1-2 GiB: user space (per process) */
	.quad 0
	.quad boot_pd_apic + 0x3	/* 3-4 GiB: IOAPIC, LAPIC */
	.fill 508, 8, 0
boot_pd_low:
	.set i, 0
	.rept 512
	.quad (i << 21) + 0x83		/* present, writable, 2 MiB */
	.set i, i + 1
	.endr
boot_pd_apic:
	.fill 502, 8, 0
	.quad KVMPROF_IOAPIC_BASE + 0x9b	/* present, rw, PWT, PCD, 2 MiB */
	.quad KVMPROF_LAPIC_BASE + 0x9b
	.fill 8, 8, 0

	.balign 16
	.globl gdt
gdt:
	.quad 0
	.quad 0x00af9a000000ffff	/* 0x08: kernel code, 64-bit */
	.quad 0x00cf92000000ffff	/* 0x10: kernel data */
	.quad 0x00cff2000000ffff	/* 0x18: user data (0x1b) */
	.quad 0x00affa000000ffff	/* 0x20: user code, 64-bit (0x23) */
	.fill 2 * MAX_CPUS, 8, 0	/* 0x28: one TSS descriptor per CPU */
gdt_end:
	.balign 8
	.word 0, 0, 0
	.globl gdt_ptr
gdt_ptr:
	.word gdt_end - gdt - 1
	.quad gdt

	.globl boot_start_info, ap_boot_stack
	.balign 8
boot_start_info:
	.quad 0
ap_boot_stack:
	.quad 0

	.section .note.GNU-stack, "", @progbits

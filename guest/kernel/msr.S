/* SPDX-License-Identifier: MIT */
/*
 * RDMSR/WRMSR and RDPMC that survive a #GP: trap() sees the fault at
 * msr_read_insn, msr_write_insn or rdpmc_insn (pmu_fixup) and resumes at
 * msr_safe_fixup, which returns -EIO (5). Used for PERF_CAPABILITIES
 * probing and the test-only raw MSR and RDPMC system calls.
 */
	.text
/* int msr_read_safe(uint32_t msr, uint64_t *val) */
	.globl msr_read_safe, msr_read_insn
msr_read_safe:
	movl %edi, %ecx
msr_read_insn:
	rdmsr
	shlq $32, %rdx
	orq %rdx, %rax
	movq %rax, (%rsi)
	xorl %eax, %eax
	ret

/* int msr_write_safe(uint32_t msr, uint64_t val) */
	.globl msr_write_safe, msr_write_insn
msr_write_safe:
	movl %edi, %ecx
	movl %esi, %eax
	movq %rsi, %rdx
	shrq $32, %rdx
msr_write_insn:
	wrmsr
	xorl %eax, %eax
	ret

/* int rdpmc_safe(uint32_t ecx, uint64_t *val) */
	.globl rdpmc_safe, rdpmc_insn
rdpmc_safe:
	movl %edi, %ecx
rdpmc_insn:
	rdpmc
	shlq $32, %rdx
	orq %rdx, %rax
	movq %rax, (%rsi)
	xorl %eax, %eax
	ret

	.globl msr_safe_fixup
msr_safe_fixup:
	movl $-5, %eax
	ret

	.section .note.GNU-stack, "", @progbits

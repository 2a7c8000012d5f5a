/* SPDX-License-Identifier: MIT */
/* Constants shared by the assembly and the C of the guest kernel. */
#ifndef GUEST_LAYOUT_H
#define GUEST_LAYOUT_H

#include <kvmprof/platform.h>

#define KERNEL_CS 0x08
#define KERNEL_DS 0x10
#define USER_DS 0x1b
#define USER_CS 0x23
#define TSS_SEL0 0x28

#define MAX_CPUS KVMPROF_MAX_CPUS
/* Per-CPU block, aligned to its size: struct cpu, IST stack, kernel stack. */
#define CPU_BLOCK_SIZE 0x8000
#define CPU_IST_TOP 0x2000

/* AP real-mode trampoline (SIPI vector 0x08). */
#define TRAMPOLINE_ADDR 0x8000

/* The kernel identity-maps (and uses) physical memory below 1 GiB only. */
#define KERNEL_MEM_LIMIT 0x40000000UL

#define TRAPFRAME_SIZE 176 /* sizeof(struct trapframe) */

#define TIMER_VECTOR 32
#define WAKEUP_VECTOR 33 /* IPI: wakes a halted CPU, does nothing else */
#define SPURIOUS_VECTOR 0xff
#define TIMER_HZ 250
#define TICK_NS 4000000UL

#endif

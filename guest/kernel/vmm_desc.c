// SPDX-License-Identifier: MIT
/*
 * The guest descriptor for kvmprof-vmm's guest sampler
 * (include/kvmprof/guest_desc.h): where a CPU's current process is, and
 * where pid, path and text segment sit in struct proc. It is all link-time
 * constants, so registering costs one OUT. Under another hypervisor the OUT
 * goes to an unclaimed port and nothing happens.
 */
#include <kvmprof/guest_desc.h>

#include "kernel.h"

int vmm_desc_test; /* `sampletest=baddesc`: register lies instead (tests the VMM) */

/* Global, so that its symbol (KP_GDESC_SYMBOL) finds it in kernel.elf when no OUT is taken (QEMU). */
const struct kp_guest_desc kvmprof_guest_desc = {
	.magic = KP_GDESC_MAGIC,
	.version = KP_GDESC_VERSION,
	.size = sizeof(struct kp_guest_desc),
	/* CPU ids follow the MP table, APIC ids are what the VMM knows a vCPU by. */
	.cpu_map = KP_GDESC_CPU_BY_APIC_ID,
	.percpu_count = MAX_CPUS,
	.percpu_gva = (uint64_t)cpu_blocks,
	.percpu_stride = CPU_BLOCK_SIZE,
	.cpu_cur_off = offsetof(struct cpu, cur),
	.cpu_apic_id_off = offsetof(struct cpu, apic_id),
	.proc_pid_off = offsetof(struct proc, pid),
	.proc_comm_size = 0, /* the name is the path's last component */
	.proc_path_off = offsetof(struct proc, name),
	.proc_path_size = PROC_NAME_MAX,
	.proc_text_start_off = offsetof(struct proc, text_start),
	.proc_text_end_off = offsetof(struct proc, text_end),
	.proc_text_pgoff_off = offsetof(struct proc, text_offset),
	.kernel_text_start = (uint64_t)_kernel_start,
	.kernel_text_end = (uint64_t)_etext,
	.kernel_path = "/kernel.elf",
};

_Static_assert(sizeof(((struct cpu *)0)->cur) == 8 && sizeof(((struct proc *)0)->pid) == 4, "descriptor field sizes");

/* Test lies: refused ones first, then one that passes the checks but points nowhere useful. */
static const uint64_t bad_percpu[2] = { 0x00007ffffffff000UL, 0x8000000000000000UL };
static const struct kp_guest_desc bad_magic = { .magic = 0x12345678 };
static const struct kp_guest_desc bad_pointers = {
	.magic = KP_GDESC_MAGIC,
	.version = KP_GDESC_VERSION,
	.size = sizeof(struct kp_guest_desc),
	.cpu_map = KP_GDESC_CPU_BY_INDEX,
	.percpu_count = 2,
	.percpu_gva = (uint64_t)bad_percpu,
	.percpu_stride = 8,
	.proc_pid_off = 0xffff0,
	.proc_path_off = 0xfff00,
	.proc_path_size = 256,
	.kernel_text_start = 0x1000,
	.kernel_text_end = 0x2000,
	.kernel_path = "/nonexistent",
};

void vmm_desc_register(void)
{
	if (vmm_desc_test) {
		outl(KVMPROF_GUEST_DESC_PORT, 0xfffff000u); /* outside RAM */
		outl(KVMPROF_GUEST_DESC_PORT, (uint32_t)(uint64_t)&bad_magic);
		outl(KVMPROF_GUEST_DESC_PORT, (uint32_t)(uint64_t)&bad_pointers);
	}
	/* Ignored after bad_pointers: the VMM keeps the first descriptor it accepts. */
	outl(KVMPROF_GUEST_DESC_PORT, (uint32_t)(uint64_t)&kvmprof_guest_desc);
}

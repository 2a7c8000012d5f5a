/* SPDX-License-Identifier: MIT */
/*
 * The guest descriptor: how a guest kernel tells kvmprof-vmm where its
 * current process lives, so that the VMM's guest sampler (docs/guest-sampling.md)
 * can name the process a sample interrupted without any code in the guest's
 * sampling path.
 *
 * At boot the guest kernel fills one struct kp_guest_desc in its own memory
 * and writes the structure's guest-physical address with a 32-bit OUT to
 * KVMPROF_GUEST_DESC_PORT (the structure lies below 4 GiB). The VMM copies
 * the structure at once and checks it (kvmprof-vmm prints why it refuses
 * one); the first valid one is kept for the life of the VM, later writes are
 * ignored. On each sample the VMM then reads, through the sampled vCPU's page
 * tables:
 *
 *   entry = percpu_gva + i * percpu_stride      i: the vCPU's per-CPU entry
 *   proc  = *(u64 *)(entry + cpu_cur_off)       0: no process (idle)
 *   pid   = *(u32 *)(proc + proc_pid_off)
 *   and, the first time it sees a pid, the name, the image path and the
 *   text segment [text_start, text_end) at file offset text_pgoff.
 *
 * With KP_GDESC_CPU_BY_APIC_ID, entry i is the one whose u32 at
 * cpu_apic_id_off equals the vCPU's initial APIC id (kvmprof-vmm gives vCPU n
 * APIC id n); with KP_GDESC_CPU_BY_INDEX, i is the vCPU index.
 *
 * A profiler that cannot take the OUT (kvmprof record --domain, which
 * samples a QEMU guest from outside) finds the structure by its symbol in
 * the guest kernel's ELF file instead: KP_GDESC_SYMBOL, at a guest-virtual
 * address mapped in every address space.
 *
 * Everything the guest wrote is untrusted: a descriptor that lies costs it
 * its own process names (samples get pid 0, comm "[unknown]"), nothing more.
 *
 * Plain types only: included by the freestanding guest.
 */
#ifndef KVMPROF_GUEST_DESC_H
#define KVMPROF_GUEST_DESC_H

#include <stdint.h>

/* The 32-bit OUT port; reads return all ones. */
#define KVMPROF_GUEST_DESC_PORT 0x5d0

/* The descriptor's symbol in the kernel's ELF symbol table. */
#define KP_GDESC_SYMBOL "kvmprof_guest_desc"

#define KP_GDESC_MAGIC 0x4353444bu /* "KDSC" little-endian */
#define KP_GDESC_VERSION 1

enum kp_gdesc_cpu_map {
	KP_GDESC_CPU_BY_INDEX = 0,   /* entry i is vCPU i */
	KP_GDESC_CPU_BY_APIC_ID = 1, /* entry whose APIC id field is the vCPU's APIC id */
};

/* Bounds the VMM enforces (docs/guest-sampling.md). */
#define KP_GDESC_MAX_CPUS 256
#define KP_GDESC_MAX_STRIDE (1u << 20)
#define KP_GDESC_MAX_PROC (1u << 20) /* every proc offset + field size lies below this */
#define KP_GDESC_PATH_MAX 256        /* proc_path_size at most this */
#define KP_GDESC_KPATH_MAX 64

struct kp_guest_desc {
	uint32_t magic;   /* KP_GDESC_MAGIC */
	uint16_t version; /* KP_GDESC_VERSION */
	uint16_t size;    /* sizeof(struct kp_guest_desc) */
	uint32_t cpu_map; /* enum kp_gdesc_cpu_map */
	uint32_t percpu_count; /* entries, 1..KP_GDESC_MAX_CPUS */
	uint64_t percpu_gva;   /* guest-virtual address of entry 0 */
	uint32_t percpu_stride; /* bytes from one entry to the next */
	uint32_t cpu_cur_off;   /* u64: guest-virtual address of the current process, 0 if none */
	uint32_t cpu_apic_id_off; /* u32: the CPU's APIC id (KP_GDESC_CPU_BY_APIC_ID) */
	uint32_t proc_pid_off;    /* u32 */
	uint32_t proc_comm_off, proc_comm_size; /* NUL-terminated name; size 0: the path's last component */
	uint32_t proc_path_off, proc_path_size; /* NUL-terminated image path (within size bytes) */
	uint32_t proc_text_start_off; /* u64: first byte of the executable segment */
	uint32_t proc_text_end_off;   /* u64: one past its last byte */
	uint32_t proc_text_pgoff_off; /* u64: its offset in the image file */
	uint32_t reserved;            /* 0 */
	uint64_t kernel_text_start, kernel_text_end; /* the kernel's text, for its MMAP record */
	char kernel_path[KP_GDESC_KPATH_MAX];        /* its image, e.g. "/kernel.elf" */
};

_Static_assert(sizeof(struct kp_guest_desc) == 152, "guest descriptor layout");

#endif

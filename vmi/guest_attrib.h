/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VMI_GUEST_ATTRIB_H
#define KVMPROF_VMI_GUEST_ATTRIB_H

/*
 * Process attribution for one consumer of a guest's samples: which process
 * a vCPU runs, and the records the consumer must have before a sample of
 * it (the process's COMM and, for the bundled guest, its text MMAP; the
 * guest kernel's MMAP once; what pid 0 stands for), handed to a sink. Both
 * guest samplers go through here, kvmprof-vmm's (a consumer per vCPU ring)
 * and `kvmprof record --domain`'s (one per recording, reading QEMU's guest
 * RAM), so that a guest's processes are named one way.
 */

#include <stdbool.h>
#include <stdint.h>

#include "guest_procs.h"
#include "guest_walk.h"
#include "vmi_mem.h"

/* Where the records go. Each returns false when it could not take one: the news then comes again. */
struct guest_attrib_sink {
	bool (*comm)(void *opaque, uint32_t pid, uint64_t time, const char *comm);
	bool (*mmap)(void *opaque, uint32_t pid, uint64_t time, uint64_t start, uint64_t len, uint64_t pgoff,
		     const char *path);
	void *opaque;
};

/* What one consumer of one vCPU's samples has been told. */
struct guest_attrib {
	struct guest_procs_seen procs;
	int desc_entry;        /* guest_procs_current's cache of this vCPU's descriptor entry */
	int pid0_kind;         /* what pid 0's COMM says: 0 none yet, 1 idle, 2 unknown */
	bool kernel_mmap_sent; /* the bundled guest's kernel MMAP */
};

/* A consumer told nothing yet. 0 or -ENOMEM. */
int guest_attrib_init(struct guest_attrib *a);
void guest_attrib_free(struct guest_attrib *a);

/*
 * The process vCPU cpu (always the same one for a) runs (pid, tid: 0 when idle or unknown), with the
 * sink told what it must know first. pg: the vCPU's paging, NULL when it
 * could not be read (then the process is unknown). os may have neither
 * source (nothing known of the guest): pid 0, "[unknown]".
 */
void guest_attribute(struct guest_attrib *a, const struct guest_os *os, const struct vmi_mem *mem,
		     const struct guest_paging *pg, unsigned int cpu, uint64_t time,
		     const struct guest_attrib_sink *sink, uint32_t *pid, uint32_t *tid);

#endif

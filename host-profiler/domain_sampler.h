/* SPDX-License-Identifier: MIT */
/*
 * Guest samples of a QEMU guest, taken from outside it (`kvmprof record
 * --domain`): QEMU's monitor gives every vCPU's registers (`info registers
 * -a`, one round trip for all vCPUs) at a bounded rate, and vmi's process
 * attribution and stack walk read the guest's memory through QEMU's
 * mapping of it (qemu_ram.h), as kvmprof-vmm's guest sampler does over its
 * own. Each such snapshot is where a vCPU was at one instant.
 *
 * The host's perf samples of QEMU's threads say how much time the guest
 * ran: on a PVM host they land in the hypervisor's guest entry, on
 * hardware-virtualization hosts perf marks them guest mode (with the guest
 * RIP), and under TCG they are in QEMU's translated code. Each such host
 * sample of a vCPU thread becomes one guest sample of the same weight and
 * time, taken from that vCPU's snapshot nearest in time (within a window
 * of a few snapshot periods): the guest's profile has the host's time line
 * and the snapshots' resolution. Where perf gives the guest RIP, the
 * sample keeps it, with the snapshot's process (and its stack only when
 * the snapshot stopped at that same RIP).
 */
#ifndef HOST_DOMAIN_SAMPLER_H
#define HOST_DOMAIN_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "guest_attrib.h"
#include "linux_kernel_fit.h"
#include "kvmprof/guest_desc.h"
#include "kvmprof/sample_format.h"
#include "qemu_hmp.h"
#include "qemu_monitor.h"
#include "qemu_ram.h"
#include "format/sample_file.h"

#define DOMAIN_SAMPLER_HZ_DEFAULT 100
#define DOMAIN_SAMPLER_HZ_MAX 250
/* Snapshots kept per vCPU for the join: over a second at the highest rate. */
#define DOMAIN_SAMPLER_HISTORY 256

struct domain_snapshot {
	uint64_t time; /* CLOCK_MONOTONIC ns: the middle of the monitor's round trip */
	uint64_t ip;
	uint32_t pid, tid;
	uint8_t cpl;
	bool halted;
	uint16_t nr_callchain;
	uint64_t callchain[KP_CALLCHAIN_MAX];
};

struct domain_vcpu {
	pid_t tid; /* the vCPU thread */
	struct guest_attrib attrib;
	struct domain_snapshot hist[DOMAIN_SAMPLER_HISTORY]; /* a ring, oldest overwritten */
	uint64_t count; /* snapshots ever taken */
};

struct domain_sampler {
	const struct qemu_monitor *mon;
	struct kp_writer *w;        /* COMM and MMAP of the guest's processes */
	uint32_t event_id;          /* the guest samples' event: the host samples' */
	bool callgraph;
	unsigned int hz;
	uint64_t window_ns;         /* how far a host sample may be from its snapshot */

	struct qemu_ram *ram;       /* NULL: guest memory not readable (processes unknown, no stacks) */
	struct vmi_mem mem;
	/* What names the guest's processes: the bundled guest's descriptor, or a Linux task layout. */
	uint64_t desc_gva;          /* the descriptor's address (kernel.elf's KP_GDESC_SYMBOL), 0: none */
	int desc_state;             /* 0 not read yet, 1 usable, -1 refused */
	char desc_why[128];
	struct kp_guest_desc desc;
	bool has_lx;
	struct kp_rec_task_layout lx;

	unsigned int nvcpus;
	struct domain_vcpu *vcpu;   /* nvcpus of them */

	/* What happened, for META, the summary and the benchmark. */
	uint64_t rounds, round_failures;   /* monitor round trips, those that failed or did not parse */
	uint64_t rtt_ns, rtt_max_ns;       /* the time of the round trips that answered, */
	uint64_t rtt_rounds;               /* how many */
	uint64_t joined, unjoined;         /* guest-time host samples: became guest samples / had no snapshot near */
	uint64_t perf_guest_ip;            /* of the joined: with perf's guest RIP */
	char last_error[256];
};

/*
 * Sets up sampling of nvcpus vCPUs whose threads are tids[], at hz round
 * trips per second. ram may be NULL (memory not readable). 0 or -ENOMEM.
 */
int domain_sampler_init(struct domain_sampler *ds, const struct qemu_monitor *mon, struct qemu_ram *ram,
			const pid_t *tids, unsigned int nvcpus, unsigned int hz, bool callgraph, struct kp_writer *w,
			uint32_t event_id);
void domain_sampler_free(struct domain_sampler *ds);

/* Names the bundled guest's processes through its descriptor at guest-virtual gva. */
void domain_sampler_use_desc(struct domain_sampler *ds, uint64_t gva);
/*
 * Whether the kernel the guest runs is the one whose symbols is_start
 * knows (linux_kernel_fit.h), from one round of registers: the first vCPU
 * in long mode with an IDT that tells. LINUX_KERNEL_UNKNOWN also when the
 * monitor or guest memory failed.
 */
enum linux_kernel_fit domain_sampler_kernel_fit(struct domain_sampler *ds, linux_symbol_start_fn is_start, void *ctx,
						unsigned int *vec, uint64_t *handler);

/* Names a Linux guest's processes through its task layout (task_layout_check accepted it). */
void domain_sampler_use_linux(struct domain_sampler *ds, const struct kp_rec_task_layout *lx);

/*
 * One round trip: every vCPU's registers, its process (the records it
 * needs written first) and stack. 0, -EIO when the monitor failed (its
 * message in last_error: the domain may be gone), -EBADMSG when the reply
 * did not parse, or the writer's -errno.
 */
int domain_sampler_take(struct domain_sampler *ds);

/*
 * A host sample of guest time (host: as converted from perf). If its
 * thread is a vCPU's and a snapshot of it lies within the window, writes
 * the guest sample it stands for and returns 1; 0 when it cannot be
 * attributed (counted); the writer's -errno. perf_ip: perf gave the
 * guest's RIP and mode in host (hardware-virtualization hosts).
 */
int domain_sampler_join(struct domain_sampler *ds, const struct kp_rec_sample *host, bool perf_ip);

#endif

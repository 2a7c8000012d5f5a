/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_GUEST_SAMPLER_H
#define KVMPROF_GUEST_SAMPLER_H

/*
 * Guest sampling by the VMM, for the host profiler (docs/guest-sampling.md,
 * docs/control-socket.md sample-start / sample-stop). The control thread
 * starts and stops it; each vCPU thread samples itself: a host clock event
 * on the vCPU thread kicks it every period (kick.h), KVM_RUN returns, and at the
 * vm_run_end event (trace.h), to which the sampler subscribes while it
 * samples, the thread writes one SAMPLE record (RIP, CPL, guest pid, optionally the guest
 * call stack) into its own ring of the memfd ring set
 * (include/kvmprof/guest_ring.h) that the profiler drains.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vcpu_hooks.h"
#include "guest_attrib.h"
#include "kvmprof/guest_desc.h"
#include "kvmprof/guest_ring.h"
#include "kvmprof/sample_format.h"
#include "trace.h"

struct vm;
struct vcpu;

#define GUEST_SAMPLER_ERR_MAX 256
/*
 * Ring data bytes per vCPU: with exit records an I/O-heavy guest writes
 * ~150 bytes per exit at ~10^5 exits per second, and kvmprof record drains
 * every 100 ms.
 */
#define GUEST_SAMPLER_DATA_SIZE (4u << 20)
#define GUEST_SAMPLER_PERIOD_MIN 10000ULL       /* 10 us */
#define GUEST_SAMPLER_PERIOD_MAX 10000000000ULL /* 10 s */

/* The record being built: header, sample, the longest call chain. */
#define GUEST_SAMPLER_REC_MAX (sizeof(struct kp_rec_header) + sizeof(struct kp_rec_sample) + \
			       KP_CALLCHAIN_MAX * sizeof(uint64_t))

/* A VM exit record being built: header, record, the longest guest call chain. */
#define GUEST_SAMPLER_XREC_MAX (sizeof(struct kp_rec_header) + sizeof(struct kp_rec_vm_exit) + \
				KP_CALLCHAIN_MAX * sizeof(uint64_t))

/* Per-vCPU state (guest_sampler_vcpu_of). */
struct guest_sampler_vcpu {
	/* Set by the control thread while inactive; published by active. */
	int active; /* atomic: ring and clock are set up, the vCPU thread may sample */
	int perf_fd;
	struct kp_ring_ctl *ctl;
	uint8_t *data;
	struct guest_attrib attrib; /* the guest processes (and kernel) whose COMM/MMAP this ring carries */
	/* vCPU thread only while active; reset by the control thread at start. */
	uint64_t head, written, lost, periods_seen;
	uint64_t samples;                 /* SAMPLE records written */
	uint64_t captures;                /* samples taken, written or lost */
	uint64_t capture_ns, capture_max; /* time spent taking samples, for the overhead figure */
	uint64_t sreg_ioctls;             /* samples that needed KVM_GET_SREGS */
	bool traced_pid_known;  /* traced_pid holds the process of this vCPU's last sample */
	uint32_t traced_pid;    /* for the guest_process_switch event */
	uint8_t rec[GUEST_SAMPLER_REC_MAX] __attribute__((aligned(8)));
	/* VM exit records (sample-start "exits"): the one begun at the last exit, sealed at the next entry. */
	bool exit_pending;
	uint64_t exits;                   /* VM_EXIT records written */
	uint64_t exits_dropped;           /* VM_EXIT records left out: the ring was too full (samples first) */
	uint64_t kick_exits;              /* runs the clock's kick ended while active: each a sample or ... */
	uint64_t kicks_no_period;         /* ... one of these, which found no new period (the count ran ahead) */
	uint8_t xrec[GUEST_SAMPLER_XREC_MAX] __attribute__((aligned(8)));
};

/* Per-VM state (guest_sampler_of). */
struct guest_sampler {
	/* Control thread only. */
	bool running;
	bool callgraph;
	bool exits; /* a VM_EXIT record per exit (issue 14's exit attribution) */
	uint64_t period;
	void *map;
	size_t map_size;
	/* The guest descriptor: registered by a vCPU thread (port write), read by all. */
	pthread_mutex_t desc_lock;
	int desc_valid; /* atomic, set once: desc is final */
	unsigned int desc_rejected, desc_ignored;
	struct kp_guest_desc desc;
	uint32_t sync_mask; /* KVM_CAP_SYNC_REGS: the register sets KVM copies into kvm_run */
	struct trace_subscriber sub; /* vm_run_end while running: where the vCPU threads sample */
	/* A Linux guest's task layout (sample-start "linux"): set before the vCPUs go active, then read-only. */
	bool has_lx;
	struct kp_rec_task_layout lx;
};

/*
 * The events a vCPU thread's sampling clock can be: the two software clocks
 * (the thread's time, by period in ns or by frequency) and the two
 * hardware events every PMU has (by period only), where the host has one.
 */
#define GUEST_SAMPLER_EVENTS "cpu-clock, task-clock (ns), cycles or instructions (a hardware PMU)"

struct guest_sampler_event {
	const char *name;
	uint32_t type;   /* PERF_TYPE_SOFTWARE: a clock */
	uint64_t config;
};

/* The event called name, or NULL. */
const struct guest_sampler_event *guest_sampler_event(const char *name);

struct guest_sampler_request {
	const char *event; /* guest_sampler_event's names */
	uint64_t period;   /* events between samples (ns for a clock) */
	bool callgraph;
	bool exits;        /* also a VM_EXIT record for every exit, with its host interval */
	/* A Linux guest: where its current task lives (checked with task_layout_check); NULL: the descriptor. */
	const struct kp_rec_task_layout *lx;
};

struct guest_sampler_totals {
	uint64_t samples, lost, records, vm_exits, vm_exits_dropped;
	uint64_t kick_exits, kicks_no_period; /* the forced exits: kick_exits = samples + kicks_no_period (+ lost) */
	uint64_t capture_mean_ns, capture_max_ns;
};

/* At VM creation: the descriptor port, the sampling signal. 0 or -errno (message printed). */
int guest_sampler_init(struct vm *vm);

/* The sampler's place in the VM's life (vcpu_hooks.h), and its state there. */
extern const struct vcpu_hooks guest_sampler_hooks;

static inline struct guest_sampler *guest_sampler_of(const struct vm *vm)
{
	return vm_feature(vm, &guest_sampler_hooks);
}

static inline struct guest_sampler_vcpu *guest_sampler_vcpu_of(const struct vcpu *vcpu)
{
	return vcpu_feature(vcpu, &guest_sampler_hooks);
}

/*
 * Control thread: starts sampling every vCPU. On success *memfd is a new
 * descriptor of the ring set (the caller passes it on and closes it) of
 * *ring_size bytes. 0, or -errno with a one-line reason in err.
 */
int guest_sampler_start(struct vm *vm, const struct guest_sampler_request *req, int *memfd,
			size_t *ring_size, char err[GUEST_SAMPLER_ERR_MAX]);
/* Control thread: stops the clocks, waits out samples in progress, frees the rings. -ESRCH if not running. */
int guest_sampler_stop(struct vm *vm, struct guest_sampler_totals *t);
bool guest_sampler_running(const struct vm *vm);
bool guest_sampler_has_desc(struct vm *vm);
/* Where the guest keeps its processes, as far as the VMM knows (a Linux layout, the descriptor, or neither). */
struct guest_os guest_sampler_os(struct vm *vm);

#endif

/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_EXIT_STATS_H
#define KVMPROF_EXIT_STATS_H

/*
 * VM exits by reason, for `kvmprof stat` (control command exit-stats,
 * docs/control-socket.md): per vCPU, how many runs ended for each reason
 * and the host time from that end (the vm_run_end event, right after
 * KVM_RUN returned) to the vCPU's next entry (vm_entry): what the VMM and
 * the host spent handling the exit before the guest ran again. The work
 * KVM does inside KVM_RUN (in-kernel exits, the in-kernel half of this one)
 * is not in it.
 *
 * An internal trace subscriber (trace.h), subscribed only while some
 * control connection holds a reference: nobody pays while no one asks.
 * Each vCPU thread writes only its own slots; the control thread reads them
 * with relaxed atomic loads. The totals only grow (across subscriptions
 * too): a client reads them at its start and at its end and takes the
 * difference.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vcpu_hooks.h"
#include "kvmprof/platform.h"
#include "trace.h"

/*
 * The slots: KVM's exit reasons below EXIT_STATS_KVM_REASONS by number
 * (KVM_EXIT_IO counts the INs, KVM_EXIT_INTR also a KVM_RUN that a signal
 * ended with EINTR), then the ones the number does not tell.
 */
#define EXIT_STATS_KVM_REASONS 64
enum {
	EXIT_STATS_IO_OUT = EXIT_STATS_KVM_REASONS, /* KVM_EXIT_IO, direction out */
	EXIT_STATS_EMULATED,     /* the exact vPMU backend's emulator slice ended (no KVM exit) */
	EXIT_STATS_AP_WAIT,      /* KVM_RUN failed with EAGAIN: a PVM AP waiting for its SIPI */
	EXIT_STATS_RUN_ERROR,    /* KVM_RUN failed otherwise (the VM stops) */
	EXIT_STATS_OTHER_REASON, /* a KVM exit reason from EXIT_STATS_KVM_REASONS up */
	EXIT_STATS_SLOTS
};

struct exit_stats_slot {
	uint64_t count;   /* runs that ended for this reason */
	uint64_t host_ns; /* from those ends to the next entries */
};

/* Per vCPU: its thread alone writes it, while subscribed. */
struct exit_stats_vcpu {
	struct exit_stats_slot slot[EXIT_STATS_SLOTS];
	uint64_t pending_since; /* the open exit's end time, valid when pending */
	unsigned int pending;   /* the open exit's slot + 1; 0: none */
};

struct exit_stats {
	struct trace_subscriber sub;
	unsigned int refs;        /* control thread only: connections holding it */
	uint64_t (*now_ns)(void); /* CLOCK_MONOTONIC; tests put their own clock here before the first start */
	struct exit_stats_vcpu vcpu[KVMPROF_MAX_CPUS];
};

/*
 * Takes a reference; the first subscribes. 0, -ENOSPC (no room among
 * vm_entry's or vm_run_end's subscribers) or -ENOTSUP (trace events
 * compiled out). Control thread only.
 */
int exit_stats_get(struct exit_stats *es);
/* Drops a reference; the last unsubscribes (and waits for running callbacks). Control thread only. */
void exit_stats_put(struct exit_stats *es);
static inline bool exit_stats_counting(const struct exit_stats *es)
{
	return es->refs > 0;
}

/* The slot's name, e.g. "io out", "msr write", "reason 17"; buf holds the numbered ones. */
const char *exit_stats_slot_name(unsigned int slot, char *buf, size_t bufsz);
/* The slot a run's end falls in: vm_run_end's reason, err and emulated, and the IO direction if reason is IO. */
unsigned int exit_stats_slot_of(uint64_t reason, uint64_t err, uint64_t emulated, bool io_out);

/* One vCPU's slot, read from another thread (relaxed atomic loads: each number whole). */
struct exit_stats_slot exit_stats_read(const struct exit_stats *es, unsigned int vcpu, unsigned int slot);

/* The VM's counters (vcpu_hooks.h: a feature with state only). */
extern const struct vcpu_hooks exit_stats_hooks;

static inline struct exit_stats *exit_stats_of(const struct vm *vm)
{
	return vm_feature(vm, &exit_stats_hooks);
}

#endif

// SPDX-License-Identifier: MIT
/*
 * VM exits by reason and the host time each took (exit_stats.h): an
 * internal subscriber of vm_run_end (an exit's end: count it, note the time)
 * and vm_entry (the next entry: add the time since).
 */
#include "vcpu_hooks.h"
#include "exit_stats.h"
#include "common/kvm_exit_name.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static uint64_t exit_stats_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

unsigned int exit_stats_slot_of(uint64_t reason, uint64_t err, uint64_t emulated, bool io_out)
{
	if (emulated)
		return EXIT_STATS_EMULATED;
	if (err == EINTR)
		return KVM_EXIT_INTR; /* a signal, as KVM_EXIT_INTR is */
	if (err == EAGAIN)
		return EXIT_STATS_AP_WAIT;
	if (err)
		return EXIT_STATS_RUN_ERROR;
	if (reason == KVM_EXIT_IO && io_out)
		return EXIT_STATS_IO_OUT;
	return reason < EXIT_STATS_KVM_REASONS ? (unsigned int)reason : EXIT_STATS_OTHER_REASON;
}

const char *exit_stats_slot_name(unsigned int slot, char *buf, size_t bufsz)
{
	const char *name;

	switch (slot) {
	case KVM_EXIT_IO: return "io in"; /* OUTs have a slot of their own */
	case EXIT_STATS_IO_OUT: return "io out";
	case EXIT_STATS_EMULATED: return "emulator slice";
	case EXIT_STATS_AP_WAIT: return "ap wait";
	case EXIT_STATS_RUN_ERROR: return "run error";
	case EXIT_STATS_OTHER_REASON: return "other";
	}
	name = kvm_exit_reason_name(slot);
	if (name)
		return name;
	snprintf(buf, bufsz, "reason %u", slot);
	return buf;
}

static void add(uint64_t *p, uint64_t v)
{
	/* Only this vCPU's thread writes p: a relaxed store keeps each number whole for the reader. */
	__atomic_store_n(p, *p + v, __ATOMIC_RELAXED);
}

static void exit_stats_event(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
			     unsigned int nargs)
{
	struct exit_stats *es = opaque;
	struct exit_stats_vcpu *v;
	uint64_t now;

	(void)nargs;
	if (ctx->vcpu >= KVMPROF_MAX_CPUS)
		return;
	v = &es->vcpu[ctx->vcpu];
	now = es->now_ns();
	if (event == KVMPROF_TRACE_vm_run_end) {
		bool io_out = args[0] == KVM_EXIT_IO && ctx->run && ctx->run->io.direction == KVM_EXIT_IO_OUT;
		unsigned int slot = exit_stats_slot_of(args[0], args[1], args[2], io_out);

		add(&v->slot[slot].count, 1);
		v->pending = slot + 1;
		v->pending_since = now;
	} else if (v->pending) {
		/* vm_entry: the exit is handled. An entry without one is the first after subscribing. */
		add(&v->slot[v->pending - 1].host_ns, now - v->pending_since);
		v->pending = 0;
	}
}

int exit_stats_get(struct exit_stats *es)
{
	int rc;

	if (!TRACE_COMPILED_IN)
		return -ENOTSUP;
	if (es->refs++)
		return 0;
	if (!es->now_ns)
		es->now_ns = exit_stats_clock;
	memset(&es->sub, 0, sizeof(es->sub));
	es->sub.cb = exit_stats_event;
	es->sub.opaque = es;
	es->sub.internal = true;
	es->sub.events[KVMPROF_TRACE_vm_run_end] = true;
	es->sub.events[KVMPROF_TRACE_vm_entry] = true;
	rc = trace_subscribe(&es->sub);
	if (rc)
		es->refs = 0;
	return rc;
}

void exit_stats_put(struct exit_stats *es)
{
	if (!es->refs || --es->refs)
		return;
	trace_unsubscribe(&es->sub);
	/* No callback runs any more: the exits left open would otherwise end at an entry of the next subscription. */
	for (unsigned int i = 0; i < KVMPROF_MAX_CPUS; i++)
		es->vcpu[i].pending = 0;
}

struct exit_stats_slot exit_stats_read(const struct exit_stats *es, unsigned int vcpu, unsigned int slot)
{
	const struct exit_stats_slot *s = &es->vcpu[vcpu].slot[slot];

	return (struct exit_stats_slot){ .count = __atomic_load_n(&s->count, __ATOMIC_RELAXED),
					 .host_ns = __atomic_load_n(&s->host_ns, __ATOMIC_RELAXED) };
}

/* Only state: the counters control connections share (exit_stats_get). */
const struct vcpu_hooks exit_stats_hooks = {
	.name = "exit statistics",
	.vm_size = sizeof(struct exit_stats),
};

/* SPDX-License-Identifier: MIT */
/*
 * Trace event dispatch: the events of include/kvmprof/trace_events.h go to
 * the subscribers registered for them (the --trace file now, plugins later).
 *
 * Emitting costs one predictable branch while no subscriber listens to the
 * event: TRACE() tests the event's listener count before it evaluates its
 * arguments. Callbacks run on the emitting thread (a vCPU, or the control
 * socket's thread): they must not block, and must not subscribe or
 * unsubscribe. Subscribing and unsubscribing wait for running dispatches.
 *
 * A thread emits only after trace_ctx_register, which makes its context
 * (vCPU id, kvm_run) the one its events carry; events of other threads
 * are not emitted.
 *
 * Order: an event's subscribers are called one after the other, the
 * internal ones first (the VMM's own clients: the guest sampler,
 * --vpmu-trace-pmi), then the others (the trace file, plugins); within each
 * group in the order they subscribed to the event. So an event emitted by
 * an internal subscriber's callback (callbacks may emit events; they are
 * dispatched before the emitting callback goes on) precedes, in a trace,
 * the record of the event that caused it.
 *
 * Removal while vCPUs run: every change publishes a new list of the
 * event's subscribers, then waits until no context is inside a dispatch
 * that may still read the old one: each context's generation is odd while
 * it dispatches. When trace_unsubscribe returns, the subscriber's callback
 * never runs again and its memory may go.
 */
#ifndef KVMPROF_TRACE_H
#define KVMPROF_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "kvmprof/platform.h"
#include "kvmprof/trace_events.h"

struct kvm_run;

/* Contexts: the vCPUs, the control socket's thread, and tests. */
#define TRACE_MAX_CTX (KVMPROF_MAX_CPUS + 8)
/* Subscribers per event: the VMM's own clients, the trace file and a handful of plugins. */
#define TRACE_MAX_SUBSCRIBERS 16

struct trace_ctx {
	uint16_t vcpu;              /* KVMPROF_TRACE_NO_VCPU off the vCPUs */
	unsigned int slot;          /* below TRACE_MAX_CTX: indexes a subscriber's per-context state */
	const struct kvm_run *run;  /* the vCPU's run area (registers when KVM synced them), or NULL */
	void *owner;                /* the struct vcpu emitting, or NULL off the vCPUs */
	unsigned long gen;          /* odd while a dispatch runs on this context */
	unsigned int depth;         /* dispatches in progress here: events emitted from callbacks nest */
};

typedef void (*trace_callback)(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
			       unsigned int nargs);

/* Owned by the subscriber; must stay valid until trace_unsubscribe returns. */
struct trace_subscriber {
	trace_callback cb;
	void *opaque;
	bool internal; /* the VMM's own client: called before the trace file and plugins */
	bool events[KVMPROF_TRACE_EVENT_COUNT]; /* the events it listens to */
};

/* Makes ctx this thread's context. 0, or -ENOSPC when TRACE_MAX_CTX are in use. */
int trace_ctx_register(struct trace_ctx *ctx, uint16_t vcpu, const struct kvm_run *run, void *owner);
/* This thread's context, or NULL. */
const struct trace_ctx *trace_self(void);
/* Before the thread ends (or ctx's memory goes). */
void trace_ctx_unregister(struct trace_ctx *ctx);

/* 0, or -ENOSPC when an event of s has TRACE_MAX_SUBSCRIBERS already (nothing is then registered). */
int trace_subscribe(struct trace_subscriber *s);
/* Returns once no callback of s runs or will run. Not from a callback. */
void trace_unsubscribe(struct trace_subscriber *s);
/*
 * Adds or removes one event of a subscribed s (and updates s->events). 0,
 * or -ENOSPC. Turning an event off returns once no callback of s for it
 * runs. Not from a callback.
 */
int trace_subscribe_event(struct trace_subscriber *s, unsigned int event, bool on);

/* Per event: how many subscribers listen. Read by TRACE(); written under the registration lock. */
extern unsigned int trace_listeners[KVMPROF_TRACE_EVENT_COUNT];

static inline bool trace_event_on(unsigned int event)
{
	return __builtin_expect(__atomic_load_n(&trace_listeners[event], __ATOMIC_RELAXED) != 0, 0);
}

/* Calls the event's subscribers on this thread's context. */
void trace_dispatch(unsigned int event, const uint64_t *args, unsigned int nargs);

/*
 * TRACE(vm_exit, reason, rip, cpl): emits an event; the arguments are
 * evaluated only when someone listens, and their count is checked against
 * the event's declaration at compile time.
 */
#define TRACE(name, ...)                                                                              \
	do {                                                                                          \
		if (trace_event_on(KVMPROF_TRACE_##name)) {                                           \
			const uint64_t trace_args_[] = { 0, __VA_ARGS__ };                            \
			_Static_assert(sizeof(trace_args_) / sizeof(uint64_t) - 1 ==                  \
					       KVMPROF_TRACE_NARGS_##name,                            \
				       "TRACE(" #name "): wrong number of arguments");                \
			trace_dispatch(KVMPROF_TRACE_##name, trace_args_ + 1, KVMPROF_TRACE_NARGS_##name); \
		}                                                                                     \
	} while (0)

#endif

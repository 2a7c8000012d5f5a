// SPDX-License-Identifier: MIT
/*
 * Trace event dispatch: per event, a published list of subscribers in
 * dispatch order, replaced whole on every change; contexts with
 * generations say when an old list is no longer read (trace.h).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>

#include "trace.h"

unsigned int trace_listeners[KVMPROF_TRACE_EVENT_COUNT];
bool trace_static_on[KVMPROF_TRACE_EVENT_COUNT];

/* One event's subscribers, in the order dispatch calls them. */
struct trace_list {
	unsigned int n;
	struct trace_subscriber *sub[TRACE_MAX_SUBSCRIBERS];
};

/*
 * Per event two lists: the one live points at (read without a lock), and
 * the spare a change is built in before it is published. The spare is
 * free to build in: every change waits until no dispatch still reads the
 * list it replaced. NULL live: nobody subscribed yet.
 */
static struct trace_list lists[KVMPROF_TRACE_EVENT_COUNT][2];
static struct trace_list *live[KVMPROF_TRACE_EVENT_COUNT];
static struct trace_ctx *contexts[TRACE_MAX_CTX];
/* Serializes (un)subscribing and (un)registering contexts; dispatch never takes it. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread struct trace_ctx *self;

int trace_ctx_register(struct trace_ctx *ctx, uint16_t vcpu, const struct kvm_run *run, void *owner)
{
	int rc = -ENOSPC;

	pthread_mutex_lock(&reg_lock);
	for (unsigned int i = 0; i < TRACE_MAX_CTX; i++) {
		if (!contexts[i]) {
			*ctx = (struct trace_ctx){ .vcpu = vcpu, .slot = i, .run = run, .owner = owner };
			contexts[i] = ctx;
			self = ctx;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

void trace_ctx_unregister(struct trace_ctx *ctx)
{
	pthread_mutex_lock(&reg_lock);
	if (ctx->slot < TRACE_MAX_CTX && contexts[ctx->slot] == ctx)
		contexts[ctx->slot] = NULL;
	if (self == ctx)
		self = NULL;
	pthread_mutex_unlock(&reg_lock);
}

const struct trace_ctx *trace_self(void)
{
	return self;
}

/* With reg_lock held: event e's current subscribers (never NULL). */
static const struct trace_list *current(unsigned int e)
{
	static const struct trace_list empty;

	return live[e] ? live[e] : &empty;
}

/* With reg_lock held: the list e's next version is built in. */
static struct trace_list *spare(unsigned int e)
{
	return live[e] == &lists[e][0] ? &lists[e][1] : &lists[e][0];
}

/* With reg_lock held: makes l event e's list (dispatches from now on read it). */
static void publish(unsigned int e, struct trace_list *l)
{
	__atomic_store_n(&live[e], l, __ATOMIC_SEQ_CST);
	__atomic_store_n(&trace_listeners[e], l->n, __ATOMIC_RELEASE);
}

/* With reg_lock held: e's list without s. */
static void remove_from(unsigned int e, const struct trace_subscriber *s)
{
	const struct trace_list *old = current(e);
	struct trace_list *l = spare(e);

	l->n = 0;
	for (unsigned int i = 0; i < old->n; i++)
		if (old->sub[i] != s)
			l->sub[l->n++] = old->sub[i];
	if (l->n != old->n)
		publish(e, l);
}

/*
 * With reg_lock held: e's list with s added where trace.h's order puts it:
 * after the internal subscribers if it is one, else at the end. -ENOSPC
 * when the event has TRACE_MAX_SUBSCRIBERS.
 */
static int insert_into(unsigned int e, struct trace_subscriber *s)
{
	const struct trace_list *old = current(e);
	struct trace_list *l = spare(e);
	unsigned int at = old->n;

	if (old->n >= TRACE_MAX_SUBSCRIBERS)
		return -ENOSPC;
	if (s->internal)
		for (at = 0; at < old->n && old->sub[at]->internal; at++)
			;
	l->n = 0;
	for (unsigned int i = 0; i < old->n; i++) {
		if (i == at)
			l->sub[l->n++] = s;
		l->sub[l->n++] = old->sub[i];
	}
	if (at == old->n)
		l->sub[l->n++] = s;
	publish(e, l);
	return 0;
}

/*
 * With reg_lock held, after lists were replaced: waits out every dispatch
 * that may still read a replaced list. A dispatch makes its context's
 * generation odd before it loads the list (both sequentially consistent,
 * as the publishing store): a context seen even now will load the new
 * list; one seen odd is waited for until its generation moves on. Then
 * the replaced lists are free to build in again. Contexts cannot go away
 * meanwhile: they unregister under reg_lock.
 */
static void wait_for_dispatches(void)
{
	for (unsigned int c = 0; c < TRACE_MAX_CTX; c++) {
		struct trace_ctx *ctx = contexts[c];
		unsigned long gen;

		if (!ctx || ctx == self)
			continue;
		gen = __atomic_load_n(&ctx->gen, __ATOMIC_SEQ_CST);
		if (!(gen & 1))
			continue;
		while (__atomic_load_n(&ctx->gen, __ATOMIC_ACQUIRE) == gen)
			sched_yield();
	}
}

int trace_subscribe(struct trace_subscriber *s)
{
	int rc = 0;

	pthread_mutex_lock(&reg_lock);
	/* A subscriber is registered whole or not at all: check every event's room first. */
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++)
		if (s->events[e] && current(e)->n >= TRACE_MAX_SUBSCRIBERS)
			rc = -ENOSPC;
	for (unsigned int e = 0; !rc && e < KVMPROF_TRACE_EVENT_COUNT; e++)
		if (s->events[e])
			insert_into(e, s);
	if (!rc)
		wait_for_dispatches();
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

void trace_unsubscribe(struct trace_subscriber *s)
{
	pthread_mutex_lock(&reg_lock);
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++)
		remove_from(e, s);
	wait_for_dispatches();
	pthread_mutex_unlock(&reg_lock);
}

int trace_subscribe_event(struct trace_subscriber *s, unsigned int event, bool on)
{
	int rc = 0;

	if (event >= KVMPROF_TRACE_EVENT_COUNT)
		return -EINVAL;
	pthread_mutex_lock(&reg_lock);
	if (!on) {
		remove_from(event, s);
		s->events[event] = false;
		wait_for_dispatches();
	} else if (!s->events[event]) {
		rc = insert_into(event, s);
		if (!rc) {
			s->events[event] = true;
			wait_for_dispatches();
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

void trace_dispatch(unsigned int event, const uint64_t *args, unsigned int nargs)
{
	struct trace_ctx *ctx = self;
	const struct trace_list *l;

	if (!ctx || event >= KVMPROF_TRACE_EVENT_COUNT)
		return;
	/*
	 * Only this thread writes its generation: plain stores, the first
	 * sequentially consistent (ordered before the list's load). An event
	 * emitted from a callback runs inside the outer dispatch, whose odd
	 * generation covers it.
	 */
	if (!ctx->depth++)
		__atomic_store_n(&ctx->gen, ctx->gen + 1, __ATOMIC_SEQ_CST);
	l = __atomic_load_n(&live[event], __ATOMIC_SEQ_CST);
	for (unsigned int i = 0; l && i < l->n; i++)
		l->sub[i]->cb(l->sub[i]->opaque, ctx, event, args, nargs);
	if (!--ctx->depth)
		__atomic_store_n(&ctx->gen, ctx->gen + 1, __ATOMIC_RELEASE);
}

void trace_static_set(unsigned int event, bool on)
{
	if (event < KVMPROF_TRACE_EVENT_COUNT)
		__atomic_store_n(&trace_static_on[event], on, __ATOMIC_RELEASE);
}

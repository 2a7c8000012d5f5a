// SPDX-License-Identifier: MIT
/* Trace event dispatch: subscriber slots read with atomic loads, contexts with generations (trace.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>

#include "trace.h"

unsigned int trace_listeners[KVMPROF_TRACE_EVENT_COUNT];
bool trace_static_on[KVMPROF_TRACE_EVENT_COUNT];

/* Per event, the subscribers: NULL slots are free. Written under reg_lock, read without it. */
static struct trace_subscriber *slots[KVMPROF_TRACE_EVENT_COUNT][TRACE_MAX_SUBSCRIBERS];
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

int trace_subscribe(struct trace_subscriber *s)
{
	int free_slot[KVMPROF_TRACE_EVENT_COUNT];

	pthread_mutex_lock(&reg_lock);
	/* Find a slot for every event first: a subscriber is registered whole or not at all. */
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++) {
		free_slot[e] = -1;
		if (!s->events[e])
			continue;
		for (int i = 0; i < TRACE_MAX_SUBSCRIBERS && free_slot[e] < 0; i++)
			if (!slots[e][i])
				free_slot[e] = i;
		if (free_slot[e] < 0) {
			pthread_mutex_unlock(&reg_lock);
			return -ENOSPC;
		}
	}
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++) {
		if (free_slot[e] < 0)
			continue;
		__atomic_store_n(&slots[e][free_slot[e]], s, __ATOMIC_RELEASE);
		__atomic_add_fetch(&trace_listeners[e], 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

/*
 * With reg_lock held, after slots were cleared: waits out every dispatch
 * that may have loaded a cleared slot. A dispatch that loaded one made its
 * generation odd before the load (both sequentially consistent, as the
 * clearing store): a context seen even now started after the store and
 * cannot see it; one seen odd is waited for until its generation moves on.
 * Contexts cannot go away meanwhile: they unregister under reg_lock.
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

/* With reg_lock held: takes s off event's slots. */
static void clear_event(struct trace_subscriber *s, unsigned int e)
{
	for (int i = 0; i < TRACE_MAX_SUBSCRIBERS; i++) {
		if (slots[e][i] != s)
			continue;
		__atomic_store_n(&slots[e][i], NULL, __ATOMIC_SEQ_CST);
		__atomic_sub_fetch(&trace_listeners[e], 1, __ATOMIC_RELAXED);
	}
}

void trace_unsubscribe(struct trace_subscriber *s)
{
	pthread_mutex_lock(&reg_lock);
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++)
		clear_event(s, e);
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
		clear_event(s, event);
		s->events[event] = false;
		wait_for_dispatches();
	} else if (!s->events[event]) {
		rc = -ENOSPC;
		for (int i = 0; i < TRACE_MAX_SUBSCRIBERS; i++) {
			if (!slots[event][i]) {
				s->events[event] = true;
				__atomic_store_n(&slots[event][i], s, __ATOMIC_RELEASE);
				__atomic_add_fetch(&trace_listeners[event], 1, __ATOMIC_RELEASE);
				rc = 0;
				break;
			}
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

void trace_dispatch(unsigned int event, const uint64_t *args, unsigned int nargs)
{
	struct trace_ctx *ctx = self;

	if (!ctx || event >= KVMPROF_TRACE_EVENT_COUNT)
		return;
	__atomic_add_fetch(&ctx->gen, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < TRACE_MAX_SUBSCRIBERS; i++) {
		struct trace_subscriber *s = __atomic_load_n(&slots[event][i], __ATOMIC_SEQ_CST);

		if (s)
			s->cb(s->opaque, ctx, event, args, nargs);
	}
	__atomic_add_fetch(&ctx->gen, 1, __ATOMIC_RELEASE);
}

void trace_static_set(unsigned int event, bool on)
{
	if (event < KVMPROF_TRACE_EVENT_COUNT)
		__atomic_store_n(&trace_static_on[event], on, __ATOMIC_RELEASE);
}

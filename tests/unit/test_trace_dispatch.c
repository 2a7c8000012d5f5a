// SPDX-License-Identifier: MIT
/* Trace event dispatch: subscribing, the listener counts TRACE() tests, and unsubscribing while another thread dispatches. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "kvmprof/trace_file.h"
#include "trace.h"

struct seen {
	unsigned int calls;
	unsigned int event, nargs;
	uint64_t args[KVMPROF_TRACE_MAX_ARGS];
	uint16_t vcpu;
};

static void record_cb(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
		      unsigned int nargs)
{
	struct seen *s = opaque;

	s->calls++;
	s->event = event;
	s->nargs = nargs;
	s->vcpu = ctx->vcpu;
	memcpy(s->args, args, nargs * sizeof(*args));
}

static void test_no_listener_no_call(void **state)
{
	struct trace_ctx ctx;

	(void)state;
	assert_int_equal(trace_ctx_register(&ctx, 3, NULL, NULL), 0);
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++)
		assert_false(trace_event_on(e));
	TRACE(pio, 0x3f8, 1, 1, 'a'); /* nothing listens: nothing happens, and nothing crashes */
	trace_ctx_unregister(&ctx);
}

static void test_subscribe_dispatch_unsubscribe(void **state)
{
	struct seen seen = { 0 };
	struct trace_subscriber sub = { .cb = record_cb, .opaque = &seen };
	struct trace_ctx ctx;

	(void)state;
	sub.events[KVMPROF_TRACE_pio] = true;
	assert_int_equal(trace_ctx_register(&ctx, 1, NULL, NULL), 0);
	assert_int_equal(trace_subscribe(&sub), 0);
	assert_true(trace_event_on(KVMPROF_TRACE_pio));
	assert_false(trace_event_on(KVMPROF_TRACE_mmio));
	TRACE(mmio, 0xfee00000, 4, 0, 0); /* not subscribed */
	assert_int_equal(seen.calls, 0);
	TRACE(pio, 0x3f8, 1, 1, 'a');
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.event, KVMPROF_TRACE_pio);
	assert_int_equal(seen.nargs, 4);
	assert_int_equal(seen.vcpu, 1);
	assert_int_equal(seen.args[0], 0x3f8);
	assert_int_equal(seen.args[3], 'a');
	trace_unsubscribe(&sub);
	assert_false(trace_event_on(KVMPROF_TRACE_pio));
	TRACE(pio, 0x3f8, 1, 1, 'b');
	assert_int_equal(seen.calls, 1);
	trace_ctx_unregister(&ctx);
	/* A thread without a context emits nothing, even to a listener. */
	assert_int_equal(trace_subscribe(&sub), 0);
	TRACE(pio, 0x3f8, 1, 1, 'c');
	assert_int_equal(seen.calls, 1);
	trace_unsubscribe(&sub);
}

/* Two subscribers of one event both get it; removing one leaves the other. */
static void test_two_subscribers(void **state)
{
	struct seen a = { 0 }, b = { 0 };
	struct trace_subscriber sa = { .cb = record_cb, .opaque = &a }, sb = { .cb = record_cb, .opaque = &b };
	struct trace_ctx ctx;

	(void)state;
	sa.events[KVMPROF_TRACE_hlt] = sb.events[KVMPROF_TRACE_hlt] = true;
	assert_int_equal(trace_ctx_register(&ctx, KVMPROF_TRACE_NO_VCPU, NULL, NULL), 0);
	assert_int_equal(trace_subscribe(&sa), 0);
	assert_int_equal(trace_subscribe(&sb), 0);
	TRACE(hlt);
	trace_unsubscribe(&sa);
	TRACE(hlt);
	assert_int_equal(a.calls, 1);
	assert_int_equal(b.calls, 2);
	assert_int_equal(b.vcpu, KVMPROF_TRACE_NO_VCPU);
	trace_unsubscribe(&sb);
	trace_ctx_unregister(&ctx);
}

/* A full event refuses a subscriber whole: none of its other events get it either. */
static void test_full_event_refuses(void **state)
{
	struct seen seen = { 0 };
	struct trace_subscriber subs[TRACE_MAX_SUBSCRIBERS], extra = { .cb = record_cb, .opaque = &seen };

	(void)state;
	for (int i = 0; i < TRACE_MAX_SUBSCRIBERS; i++) {
		subs[i] = (struct trace_subscriber){ .cb = record_cb, .opaque = &seen };
		subs[i].events[KVMPROF_TRACE_cpuid] = true;
		assert_int_equal(trace_subscribe(&subs[i]), 0);
	}
	extra.events[KVMPROF_TRACE_cpuid] = extra.events[KVMPROF_TRACE_vm_entry] = true;
	assert_int_equal(trace_subscribe(&extra), -ENOSPC);
	assert_false(trace_event_on(KVMPROF_TRACE_vm_entry));
	for (int i = 0; i < TRACE_MAX_SUBSCRIBERS; i++)
		trace_unsubscribe(&subs[i]);
	assert_false(trace_event_on(KVMPROF_TRACE_cpuid));
}

/* --- unsubscribe while a vCPU-like thread dispatches -------------------------- */

struct slow {
	int inside;        /* the callback runs */
	int finished;      /* calls that returned */
	int after_removal; /* calls that started after trace_unsubscribe returned */
	int removed;
	int stop;
};

static void slow_cb(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
		    unsigned int nargs)
{
	struct slow *s = opaque;
	struct timespec ts = { 0, 2000000 };

	(void)ctx, (void)event, (void)args, (void)nargs;
	if (__atomic_load_n(&s->removed, __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&s->after_removal, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->inside, 1, __ATOMIC_SEQ_CST);
	nanosleep(&ts, NULL); /* long enough that the remover comes while we are here */
	__atomic_add_fetch(&s->finished, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->inside, 0, __ATOMIC_SEQ_CST);
}

static void *dispatcher(void *arg)
{
	struct slow *s = arg;
	struct trace_ctx ctx;

	if (trace_ctx_register(&ctx, 0, NULL, NULL))
		return NULL;
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
		TRACE(vm_exit, 1, 2, 3);
	trace_ctx_unregister(&ctx);
	return NULL;
}

static void test_unsubscribe_waits_for_running_callback(void **state)
{
	struct slow s = { 0 };
	struct trace_subscriber sub = { .cb = slow_cb, .opaque = &s };
	pthread_t t;
	int finished_at_return;

	(void)state;
	sub.events[KVMPROF_TRACE_vm_exit] = true;
	assert_int_equal(trace_subscribe(&sub), 0);
	assert_int_equal(pthread_create(&t, NULL, dispatcher, &s), 0);
	while (!__atomic_load_n(&s.inside, __ATOMIC_SEQ_CST))
		sched_yield();
	/* The dispatcher is inside the callback now: unsubscribe must not return before it leaves. */
	trace_unsubscribe(&sub);
	assert_int_equal(__atomic_load_n(&s.inside, __ATOMIC_SEQ_CST), 0);
	finished_at_return = __atomic_load_n(&s.finished, __ATOMIC_SEQ_CST);
	assert_true(finished_at_return >= 1);
	__atomic_store_n(&s.removed, 1, __ATOMIC_SEQ_CST);
	/* The dispatcher keeps emitting for a while: none of it may reach the removed subscriber. */
	struct timespec ts = { 0, 20000000 };
	nanosleep(&ts, NULL);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	assert_int_equal(s.after_removal, 0);
	assert_int_equal(s.finished, finished_at_return);
}

/* Subscribe and unsubscribe repeatedly while the other thread dispatches: every call is whole, none comes late. */
static void test_repeated_unsubscribe_under_load(void **state)
{
	struct slow s = { 0 };
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, dispatcher, &s), 0);
	for (int round = 0; round < 20; round++) {
		struct trace_subscriber sub = { .cb = slow_cb, .opaque = &s };

		sub.events[KVMPROF_TRACE_vm_exit] = true;
		__atomic_store_n(&s.removed, 0, __ATOMIC_SEQ_CST);
		assert_int_equal(trace_subscribe(&sub), 0);
		struct timespec ts = { 0, 1000000 * (round % 4) };
		nanosleep(&ts, NULL);
		trace_unsubscribe(&sub);
		assert_int_equal(__atomic_load_n(&s.inside, __ATOMIC_SEQ_CST), 0);
		__atomic_store_n(&s.removed, 1, __ATOMIC_SEQ_CST);
	}
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	assert_int_equal(s.after_removal, 0);
}

static void test_context_table_is_bounded(void **state)
{
	static struct trace_ctx ctx[TRACE_MAX_CTX + 1];
	int ok = 0;

	(void)state;
	for (int i = 0; i < TRACE_MAX_CTX + 1; i++)
		ok += trace_ctx_register(&ctx[i], (uint16_t)i, NULL, NULL) == 0;
	assert_int_equal(ok, TRACE_MAX_CTX);
	assert_int_equal(trace_ctx_register(&ctx[TRACE_MAX_CTX], 0, NULL, NULL), -ENOSPC);
	for (int i = 0; i < TRACE_MAX_CTX; i++)
		trace_ctx_unregister(&ctx[i]);
	assert_int_equal(trace_ctx_register(&ctx[0], 0, NULL, NULL), 0);
	trace_ctx_unregister(&ctx[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_listener_no_call),
		cmocka_unit_test(test_subscribe_dispatch_unsubscribe),
		cmocka_unit_test(test_two_subscribers),
		cmocka_unit_test(test_full_event_refuses),
		cmocka_unit_test(test_unsubscribe_waits_for_running_callback),
		cmocka_unit_test(test_repeated_unsubscribe_under_load),
		cmocka_unit_test(test_context_table_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

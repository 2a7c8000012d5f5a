// SPDX-License-Identifier: MIT
/* Trace event dispatch: subscribing, the listener counts TRACE() tests, and unsubscribing while another thread dispatches. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
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

/* --- the order of an event's subscribers -------------------------------------- */

struct order {
	char calls[16];
	unsigned int n;
};

struct tagged {
	struct order *order;
	char tag;
};

static void order_cb(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
		     unsigned int nargs)
{
	struct tagged *t = opaque;

	(void)ctx, (void)event, (void)args, (void)nargs;
	if (t->order->n < sizeof(t->order->calls) - 1)
		t->order->calls[t->order->n++] = t->tag;
}

/* Emits vm_run_end once and returns the order the subscribers were called in. */
static const char *order_of_one_event(struct order *o)
{
	memset(o, 0, sizeof(*o));
	TRACE(vm_run_end, 0, 0, 0);
	return o->calls;
}

/* Internal subscribers first, then the others; each group in the order it subscribed, also after changes. */
static void test_internal_first_then_registration_order(void **state)
{
	struct order o;
	struct tagged ta = { &o, 'a' }, tb = { &o, 'b' }, tx = { &o, 'X' }, ty = { &o, 'Y' };
	struct trace_subscriber a = { .cb = order_cb, .opaque = &ta }, b = { .cb = order_cb, .opaque = &tb };
	struct trace_subscriber x = { .cb = order_cb, .opaque = &tx, .internal = true };
	struct trace_subscriber y = { .cb = order_cb, .opaque = &ty, .internal = true };
	struct trace_ctx ctx;

	(void)state;
	a.events[KVMPROF_TRACE_vm_run_end] = b.events[KVMPROF_TRACE_vm_run_end] = true;
	x.events[KVMPROF_TRACE_vm_run_end] = y.events[KVMPROF_TRACE_vm_run_end] = true;
	assert_int_equal(trace_ctx_register(&ctx, 0, NULL, NULL), 0);
	assert_int_equal(trace_subscribe(&a), 0);
	assert_int_equal(trace_subscribe(&x), 0);
	assert_int_equal(trace_subscribe(&b), 0);
	assert_int_equal(trace_subscribe(&y), 0);
	assert_string_equal(order_of_one_event(&o), "XYab");
	/* Leaving and coming back puts a subscriber at the end of its group. */
	trace_unsubscribe(&x);
	trace_unsubscribe(&a);
	assert_string_equal(order_of_one_event(&o), "Yb");
	assert_int_equal(trace_subscribe(&a), 0);
	assert_int_equal(trace_subscribe(&x), 0);
	assert_string_equal(order_of_one_event(&o), "YXba");
	/* The same for one event turned off and on again (event-set). */
	assert_int_equal(trace_subscribe_event(&b, KVMPROF_TRACE_vm_run_end, false), 0);
	assert_string_equal(order_of_one_event(&o), "YXa");
	assert_int_equal(trace_subscribe_event(&b, KVMPROF_TRACE_vm_run_end, true), 0);
	assert_int_equal(trace_subscribe_event(&y, KVMPROF_TRACE_vm_run_end, false), 0);
	assert_int_equal(trace_subscribe_event(&y, KVMPROF_TRACE_vm_run_end, true), 0);
	assert_string_equal(order_of_one_event(&o), "XYab");
	assert_int_equal(trace_listeners[KVMPROF_TRACE_vm_run_end], 4);
	trace_unsubscribe(&a);
	trace_unsubscribe(&b);
	trace_unsubscribe(&x);
	trace_unsubscribe(&y);
	assert_false(trace_event_on(KVMPROF_TRACE_vm_run_end));
	trace_ctx_unregister(&ctx);
}

/* An event emitted from a callback reaches its subscribers before the emitting callback goes on. */
static void emitting_cb(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
			unsigned int nargs)
{
	order_cb(opaque, ctx, event, args, nargs);
	TRACE(guest_sample, 1, 1, 0x1000, 3, 1, 0);
	order_cb(opaque, ctx, event, args, nargs);
}

static void test_event_emitted_from_a_callback_nests(void **state)
{
	struct order o;
	struct tagged ti = { &o, 'i' }, tf = { &o, 'f' }, ts = { &o, 's' };
	struct trace_subscriber internal = { .cb = emitting_cb, .opaque = &ti, .internal = true };
	struct trace_subscriber file = { .cb = order_cb, .opaque = &tf };
	struct trace_subscriber sample = { .cb = order_cb, .opaque = &ts };
	struct trace_ctx ctx;

	(void)state;
	internal.events[KVMPROF_TRACE_vm_run_end] = true;
	file.events[KVMPROF_TRACE_vm_run_end] = file.events[KVMPROF_TRACE_guest_sample] = true;
	sample.events[KVMPROF_TRACE_guest_sample] = true;
	assert_int_equal(trace_ctx_register(&ctx, 0, NULL, NULL), 0);
	assert_int_equal(trace_subscribe(&file), 0);
	assert_int_equal(trace_subscribe(&sample), 0);
	assert_int_equal(trace_subscribe(&internal), 0);
	/* The internal one starts, its guest_sample goes to the file and the other, it ends, then the file's vm_run_end. */
	assert_string_equal(order_of_one_event(&o), "ifsif");
	assert_int_equal(ctx.gen % 2, 0);
	assert_int_equal(ctx.depth, 0);
	trace_unsubscribe(&internal);
	trace_unsubscribe(&sample);
	trace_unsubscribe(&file);
	trace_ctx_unregister(&ctx);
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

/*
 * A callback that emits an event: while the nested event's callbacks run,
 * the outer dispatch is still in progress, so unsubscribing the outer
 * callback's subscriber must wait for it too.
 */
struct nested {
	struct slow inner; /* the nested event's slow subscriber */
	int outer_after_removal;
	int outer_removed;
};

static void outer_emitting_cb(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
			      unsigned int nargs)
{
	struct nested *n = opaque;

	(void)ctx, (void)event, (void)args, (void)nargs;
	TRACE(guest_sample, 1, 1, 0x1000, 3, 1, 0);
	/* Still inside the outer callback: its subscriber must not be gone. */
	if (__atomic_load_n(&n->outer_removed, __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&n->outer_after_removal, 1, __ATOMIC_SEQ_CST);
}

static void *run_end_dispatcher(void *arg)
{
	struct nested *n = arg;
	struct trace_ctx ctx;

	if (trace_ctx_register(&ctx, 0, NULL, NULL))
		return NULL;
	while (!__atomic_load_n(&n->inner.stop, __ATOMIC_ACQUIRE))
		TRACE(vm_run_end, 0, 0, 0);
	trace_ctx_unregister(&ctx);
	return NULL;
}

static void test_unsubscribe_waits_for_nested_dispatch(void **state)
{
	struct nested n = { 0 };
	struct trace_subscriber outer = { .cb = outer_emitting_cb, .opaque = &n, .internal = true };
	struct trace_subscriber inner = { .cb = slow_cb, .opaque = &n.inner };
	pthread_t t;

	(void)state;
	outer.events[KVMPROF_TRACE_vm_run_end] = true;
	inner.events[KVMPROF_TRACE_guest_sample] = true;
	assert_int_equal(trace_subscribe(&inner), 0);
	assert_int_equal(trace_subscribe(&outer), 0);
	assert_int_equal(pthread_create(&t, NULL, run_end_dispatcher, &n), 0);
	while (!__atomic_load_n(&n.inner.inside, __ATOMIC_SEQ_CST))
		sched_yield();
	/* The dispatcher sleeps in the nested event's callback, inside the outer one. */
	trace_unsubscribe(&outer);
	__atomic_store_n(&n.outer_removed, 1, __ATOMIC_SEQ_CST);
	struct timespec ts = { 0, 10000000 };
	nanosleep(&ts, NULL);
	__atomic_store_n(&n.inner.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	trace_unsubscribe(&inner);
	assert_int_equal(n.outer_after_removal, 0);
}

/* A subscriber that stays never misses an event while others come and go on the same event. */
struct counted {
	unsigned long calls;
	unsigned long emitted;
	int stop;
};

static void count_cb(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
		     unsigned int nargs)
{
	(void)ctx, (void)event, (void)args, (void)nargs;
	__atomic_add_fetch(&((struct counted *)opaque)->calls, 1, __ATOMIC_RELAXED);
}

static void *counting_dispatcher(void *arg)
{
	struct counted *c = arg;
	struct trace_ctx ctx;

	if (trace_ctx_register(&ctx, 0, NULL, NULL))
		return NULL;
	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		TRACE(vm_run_end, 0, 0, 0);
		__atomic_add_fetch(&c->emitted, 1, __ATOMIC_RELAXED);
	}
	trace_ctx_unregister(&ctx);
	return NULL;
}

static void test_steady_subscriber_misses_nothing_while_others_change(void **state)
{
	struct counted steady = { 0 }, other = { 0 };
	struct trace_subscriber s = { .cb = count_cb, .opaque = &steady };
	pthread_t t;

	(void)state;
	s.events[KVMPROF_TRACE_vm_run_end] = true;
	assert_int_equal(trace_subscribe(&s), 0);
	assert_int_equal(pthread_create(&t, NULL, counting_dispatcher, &steady), 0);
	for (int round = 0; round < 300; round++) {
		struct trace_subscriber o = { .cb = count_cb, .opaque = &other, .internal = round % 2 };
		unsigned long before = __atomic_load_n(&steady.emitted, __ATOMIC_RELAXED);

		o.events[KVMPROF_TRACE_vm_run_end] = true;
		assert_int_equal(trace_subscribe(&o), 0);
		/* Each change overlaps the other thread's dispatches. */
		while (__atomic_load_n(&steady.emitted, __ATOMIC_RELAXED) == before)
			sched_yield();
		trace_unsubscribe(&o);
	}
	__atomic_store_n(&steady.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	trace_unsubscribe(&s);
	assert_true(steady.emitted > 0);
	assert_int_equal(steady.calls, steady.emitted);
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
		cmocka_unit_test(test_internal_first_then_registration_order),
		cmocka_unit_test(test_event_emitted_from_a_callback_nests),
		cmocka_unit_test(test_unsubscribe_waits_for_nested_dispatch),
		cmocka_unit_test(test_steady_subscriber_misses_nothing_while_others_change),
		cmocka_unit_test(test_context_table_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * The two build options of TRACE() (vmm/trace.h): a static build's handler
 * called at the site when its event is on (this file is built with
 * KVMPROF_STATIC_PLUGIN and a plugin handling pio only), and a site compiled
 * out (trace_compiled_out_site.c) that evaluates nothing even when a
 * subscriber listens.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#include "trace.h"

static struct {
	unsigned int calls;
	const struct kvmprof_plugin_ctx *ctx;
	uint64_t args[4];
} seen;

/* The built-in plugin's handler: TRACE(pio) calls it by name. No other event has one: those sites must not. */
KVMPROF_PLUGIN_ON(pio)
{
	seen.calls++;
	seen.ctx = ctx;
	memcpy(seen.args, args, sizeof(seen.args));
}

static void count_cb(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
		     unsigned int nargs)
{
	(void)ctx, (void)event, (void)args, (void)nargs;
	++*(unsigned int *)opaque;
}

static void test_static_handler_follows_its_flag(void **state)
{
	struct trace_ctx ctx;

	(void)state;
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(trace_ctx_register(&ctx, 2, NULL, NULL), 0);
	assert_false(TRACE_ON(pio));
	TRACE(pio, 0x3f8, 1, 1, 'a');
	assert_int_equal(seen.calls, 0);

	trace_static_set(KVMPROF_TRACE_pio, true);
	assert_true(TRACE_ON(pio));
	assert_false(TRACE_ON(mmio));
	TRACE(pio, 0x3f8, 1, 1, 'b');
	TRACE(mmio, 0xfee00000, 4, 0, 0); /* no handler: compiled to the dispatch test alone */
	assert_int_equal(seen.calls, 1);
	assert_ptr_equal(seen.ctx, (const struct kvmprof_plugin_ctx *)&ctx);
	assert_int_equal(seen.args[0], 0x3f8);
	assert_int_equal(seen.args[2], 1);
	assert_int_equal(seen.args[3], 'b');

	/* event-set off: the site stops calling it. */
	trace_static_set(KVMPROF_TRACE_pio, false);
	TRACE(pio, 0x3f8, 1, 1, 'c');
	assert_int_equal(seen.calls, 1);
	trace_ctx_unregister(&ctx);
}

/* As trace_dispatch: a thread without a context emits nothing. */
static void test_static_handler_needs_a_context(void **state)
{
	(void)state;
	memset(&seen, 0, sizeof(seen));
	trace_static_set(KVMPROF_TRACE_pio, true);
	TRACE(pio, 0x3f8, 1, 1, 'a');
	trace_static_set(KVMPROF_TRACE_pio, false);
	assert_int_equal(seen.calls, 0);
}

/* Both at once: the handler and a subscriber each see the event once. */
static void test_static_handler_and_subscriber(void **state)
{
	unsigned int dispatched = 0;
	struct trace_subscriber sub = { .cb = count_cb, .opaque = &dispatched };
	struct trace_ctx ctx;

	(void)state;
	memset(&seen, 0, sizeof(seen));
	sub.events[KVMPROF_TRACE_pio] = true;
	assert_int_equal(trace_ctx_register(&ctx, 0, NULL, NULL), 0);
	assert_int_equal(trace_subscribe(&sub), 0);
	trace_static_set(KVMPROF_TRACE_pio, true);
	TRACE(pio, 0x3f8, 1, 1, 'a');
	trace_static_set(KVMPROF_TRACE_pio, false);
	TRACE(pio, 0x3f8, 1, 1, 'b');
	assert_int_equal(seen.calls, 1);
	assert_int_equal(dispatched, 2);
	trace_unsubscribe(&sub);
	trace_ctx_unregister(&ctx);
}

uint64_t compiled_out_arg(unsigned int *evaluated);
void compiled_out_site(unsigned int *evaluated);
int compiled_out_on(void);

uint64_t compiled_out_arg(unsigned int *evaluated)
{
	++*evaluated;
	return 0;
}

static void test_compiled_out_site_does_nothing(void **state)
{
	unsigned int dispatched = 0, evaluated = 0;
	struct trace_subscriber sub = { .cb = count_cb, .opaque = &dispatched };
	struct trace_ctx ctx;

	(void)state;
	sub.events[KVMPROF_TRACE_pio] = true;
	assert_int_equal(trace_ctx_register(&ctx, 0, NULL, NULL), 0);
	assert_int_equal(trace_subscribe(&sub), 0);
	TRACE(pio, 0x3f8, 1, 1, compiled_out_arg(&evaluated)); /* this file's site: evaluated, dispatched */
	assert_int_equal(evaluated, 1);
	assert_int_equal(dispatched, 1);
	compiled_out_site(&evaluated);
	assert_false(compiled_out_on());
	assert_int_equal(evaluated, 1);
	assert_int_equal(dispatched, 1);
	trace_unsubscribe(&sub);
	trace_ctx_unregister(&ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_handler_follows_its_flag),
		cmocka_unit_test(test_static_handler_needs_a_context),
		cmocka_unit_test(test_static_handler_and_subscriber),
		cmocka_unit_test(test_compiled_out_site_does_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

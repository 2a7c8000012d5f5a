// SPDX-License-Identifier: MIT
/*
 * A static build's built-in plugin in the registry (vmm/plugin_host.c):
 * started with its arguments, listed, its handlers switched by event-set
 * (trace_static_on), never unloaded by request, finished at the VMM's end.
 * The test stands in for plugin_api.c, which needs a VM.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "plugin_api.h"
#include "plugin_host.h"
#include "trace.h"

void plugin_api_set_vm(struct vm *vm)
{
	(void)vm;
}

void plugin_api_fill(struct kvmprof_plugin_api *api)
{
	memset(api, 0, sizeof(*api));
	api->version = KVMPROF_PLUGIN_VERSION;
	api->size = sizeof(*api);
}

static struct {
	int argc;
	char argv1[64];
	unsigned int finis;
	const struct kvmprof_plugin_api *api;
} plugin;

static int builtin_init(const struct kvmprof_plugin_api *api, int argc, char **argv)
{
	plugin.api = api;
	plugin.argc = argc;
	snprintf(plugin.argv1, sizeof(plugin.argv1), "%s", argc > 1 ? argv[1] : "");
	return 0;
}

static void builtin_fini(void)
{
	plugin.finis++;
	plugin.api->output(plugin.api->id, "bye\n");
}

static const struct plugin_builtin builtin = {
	.name = "fixture",
	.init = builtin_init,
	.fini = builtin_fini,
	.handles = { [KVMPROF_TRACE_pio] = true },
};

static void test_builtin_lifecycle(void **state)
{
	char *argv[] = { "k=v" };
	struct plugin_unload_result res;
	struct plugin_info info[2];
	unsigned int changed;
	char err[PLUGIN_ERR_MAX];
	int id;

	(void)state;
	id = plugin_load_builtin(&builtin, 1, argv, err, sizeof(err));
	assert_true(id > 0);
	assert_int_equal(plugin.argc, 2);
	assert_string_equal(plugin.argv1, "k=v");
	assert_true(trace_static_on[KVMPROF_TRACE_pio]);
	assert_false(trace_static_on[KVMPROF_TRACE_mmio]);
	/* Its handler is called at the sites, not dispatched: nothing subscribed. */
	assert_false(trace_event_on(KVMPROF_TRACE_pio));

	assert_int_equal(plugin_list(info, 2), 1);
	assert_string_equal(info[0].name, "fixture");
	assert_string_equal(info[0].path, "(built in)");
	assert_true(info[0].handles[KVMPROF_TRACE_pio] && info[0].events[KVMPROF_TRACE_pio]);
	assert_false(info[0].handles[KVMPROF_TRACE_mmio]);

	assert_int_equal(plugin_load_builtin(&builtin, 0, NULL, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "loaded already"));

	/* event-set: off and on again, at the sites. */
	assert_int_equal(plugin_set_events((unsigned int)id, "pio", false, &changed, err, sizeof(err)), 0);
	assert_int_equal(changed, 1);
	assert_false(trace_static_on[KVMPROF_TRACE_pio]);
	plugin_list(info, 2);
	assert_false(info[0].events[KVMPROF_TRACE_pio]);
	assert_int_equal(plugin_set_events((unsigned int)id, "p*", true, &changed, err, sizeof(err)), 0);
	assert_int_equal(changed, 1);
	assert_true(trace_static_on[KVMPROF_TRACE_pio]);
	assert_int_equal(plugin_set_events((unsigned int)id, "mmio", true, &changed, err, sizeof(err)), -EINVAL);

	/* Never unloaded on request: it stays, and keeps its events. */
	assert_int_equal(plugin_unload((unsigned int)id, &res, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "cannot be unloaded"));
	assert_int_equal(plugin.finis, 0);
	assert_int_equal(plugin_list(info, 2), 1);
	assert_true(trace_static_on[KVMPROF_TRACE_pio]);

	/* The VMM's end: fini runs, the sites stop calling it. */
	plugin_unload_all();
	assert_int_equal(plugin.finis, 1);
	assert_false(trace_static_on[KVMPROF_TRACE_pio]);
	assert_int_equal(plugin_list(info, 2), 0);
}

/* "builtin" names the built-in plugin; this build (the ordinary one) has none. */
static void test_no_builtin_in_the_ordinary_build(void **state)
{
	char err[PLUGIN_ERR_MAX];

	(void)state;
	assert_int_equal(plugin_load_spec("builtin,k=v", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no built-in plugin"));
	assert_int_equal(plugin_load_start(NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(plugin_list(NULL, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin_lifecycle),
		cmocka_unit_test(test_no_builtin_in_the_ordinary_build),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

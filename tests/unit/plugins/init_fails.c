// SPDX-License-Identifier: MIT
/* An init that refuses: the plugin is not loaded, fini never runs. */
#include "kvmprof/plugin.h"

KVMPROF_PLUGIN_DECLARE;

int kvmprof_plugin_init(const struct kvmprof_plugin_api *api, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	api->output(api->id, "refusing\n");
	return 3;
}

void kvmprof_plugin_fini(void)
{
	__builtin_trap(); /* never called for a refused plugin */
}

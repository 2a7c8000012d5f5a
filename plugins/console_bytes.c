// SPDX-License-Identifier: MIT
/* Counts the bytes the guest writes to COM1 (its console); docs/plugins.md's example. */
#include <kvmprof/plugin.h>

#define COM1_DATA 0x3f8
KVMPROF_PLUGIN_DECLARE;

static const struct kvmprof_plugin_api *api;
static uint64_t bytes; /* vCPUs run in parallel: atomic adds */

/* args: port, size, out, value. A string OUTS comes as one event per byte. */
KVMPROF_PLUGIN_ON(pio)
{
	if (args[0] == COM1_DATA && args[2])
		__atomic_add_fetch(&bytes, 1, __ATOMIC_RELAXED);
}

int kvmprof_plugin_init(const struct kvmprof_plugin_api *a, int argc, char **argv)
{
	(void)argc, (void)argv;
	api = a;
	return 0;
}

void kvmprof_plugin_fini(void)
{
	api->output(api->id, "console bytes %llu\n", (unsigned long long)__atomic_load_n(&bytes, __ATOMIC_RELAXED));
}

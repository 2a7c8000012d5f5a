// SPDX-License-Identifier: MIT
/* Built against another plugin API version: refused before init runs. */
#include "kvmprof/plugin.h"

const unsigned int kvmprof_plugin_version = KVMPROF_PLUGIN_VERSION + 41;

int kvmprof_plugin_init(const struct kvmprof_plugin_api *api, int argc, char **argv)
{
	(void)api;
	(void)argc;
	(void)argv;
	__builtin_trap(); /* never called */
}

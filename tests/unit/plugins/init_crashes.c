// SPDX-License-Identifier: MIT
/* An init that crashes: how=segv (default) dereferences NULL, how=abort aborts, how=fpe divides by zero. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "kvmprof/plugin.h"

KVMPROF_PLUGIN_DECLARE;

int kvmprof_plugin_init(const struct kvmprof_plugin_api *api, int argc, char **argv)
{
	volatile int *volatile nowhere = NULL;

	(void)api;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "how=abort"))
			abort();
		if (!strcmp(argv[i], "how=fpe"))
			raise(SIGFPE);
	}
	return *nowhere;
}

/* SPDX-License-Identifier: MIT */
/* What the test plugins report to test_plugin_host.c: it passes a probe's address as probe=0x... */
#ifndef KVMPROF_TEST_PLUGIN_PROBE_H
#define KVMPROF_TEST_PLUGIN_PROBE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct plugin_probe {
	long pio_calls, msr_calls;   /* callbacks run */
	int inside;                  /* a callback is running */
	int regs_rc, read_rc, proc_rc; /* what the api answered off the vCPUs */
	unsigned int last_vcpu;
	uint64_t last_args[6];
};

/* The probe named by a "probe=0x..." argument, or NULL. */
static inline struct plugin_probe *probe_from_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "probe=", 6))
			return (struct plugin_probe *)(uintptr_t)strtoull(argv[i] + 6, NULL, 0);
	return NULL;
}

/*
 * Where the test plugins are: $KVMPROF_TEST_PLUGINS, else build/tests/plugins
 * found from this test's own path (build/tests/X or build/asan/tests/X).
 * 0, or -1.
 */
static inline int test_plugins_dir(char *dir, size_t size)
{
	const char *env = getenv("KVMPROF_TEST_PLUGINS");
	char self[512], *cut;
	ssize_t n;

	if (env) {
		snprintf(dir, size, "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	cut = strstr(self, "/asan/tests/");
	if (!cut)
		cut = strstr(self, "/tests/");
	if (!cut)
		return -1;
	*cut = '\0';
	if (strlen(self) + sizeof("/tests/plugins") > size)
		return -1;
	strcpy(dir, self);
	strcat(dir, "/tests/plugins");
	return 0;
}

#endif

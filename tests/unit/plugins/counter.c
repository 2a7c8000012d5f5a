// SPDX-License-Identifier: MIT
/*
 * A test plugin for real vCPUs (tests/e2e/plugin-host.sh): counts the bytes
 * written to COM1 and, at each of them, asks the api for the vCPU's
 * registers, the guest byte at RIP and the guest process; prints the tallies
 * at fini. Arguments: noisy=N prints N output lines from every 1000th
 * COM1 byte's callback (output from a callback, to fill a full disk).
 */
#include <stdlib.h>
#include <string.h>

#include "kvmprof/plugin.h"

KVMPROF_PLUGIN_DECLARE;

static const struct kvmprof_plugin_api *api;
static unsigned long com1, regs_ok, read_ok, proc_ok, spam_seen, bad_vcpu;
static long noisy;

KVMPROF_PLUGIN_ON(pio)
{
	struct kvmprof_plugin_regs regs;
	struct kvmprof_plugin_process proc;
	unsigned char byte;
	unsigned long n;

	if (args[0] != 0x3f8 || !args[2])
		return;
	n = __atomic_add_fetch(&com1, 1, __ATOMIC_RELAXED);
	if (api->ctx_vcpu(ctx) >= api->vcpu_count)
		__atomic_add_fetch(&bad_vcpu, 1, __ATOMIC_RELAXED);
	if (api->ctx_regs(ctx, &regs) == 0 && regs.rip) {
		__atomic_add_fetch(&regs_ok, 1, __ATOMIC_RELAXED);
		if (api->ctx_read_virt(ctx, regs.rip, &byte, 1) == 0)
			__atomic_add_fetch(&read_ok, 1, __ATOMIC_RELAXED);
	}
	if (api->ctx_process(ctx, &proc) == 0) {
		__atomic_add_fetch(&proc_ok, 1, __ATOMIC_RELAXED);
		if (!strcmp(proc.comm, "spam"))
			__atomic_add_fetch(&spam_seen, 1, __ATOMIC_RELAXED);
	}
	if (noisy && n % 1000 == 0)
		for (long i = 0; i < noisy; i++)
			api->output(api->id, "noise %lu %ld\n", n, i);
}

int kvmprof_plugin_init(const struct kvmprof_plugin_api *a, int argc, char **argv)
{
	api = a;
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "noisy=", 6)) {
			noisy = strtol(argv[i] + 6, NULL, 10);
		} else {
			api->output(api->id, "counter: unknown argument '%s'\n", argv[i]);
			return 1;
		}
	}
	return 0;
}

void kvmprof_plugin_fini(void)
{
	api->output(api->id, "com1 %lu\nregs_ok %lu\nread_ok %lu\nproc_ok %lu\nspam %lu\nbad_vcpu %lu\n", com1, regs_ok,
		    read_ok, proc_ok, spam_seen, bad_vcpu);
}

// SPDX-License-Identifier: MIT
/*
 * A well-behaved test plugin: a pio handler by name, one callback for msr_*
 * by pattern; checks subscribe's refusals in init; big=N prints N bytes at
 * fini; slow=1 makes each pio callback take ~200 us (unload must wait).
 */
#include <errno.h>
#include <time.h>

#include "kvmprof/plugin.h"
#include "probe.h"

KVMPROF_PLUGIN_DECLARE;

static const struct kvmprof_plugin_api *api;
static struct plugin_probe *probe;
static long big;
static int slow;

KVMPROF_PLUGIN_ON(pio)
{
	struct kvmprof_plugin_regs regs;
	struct kvmprof_plugin_process proc;
	char byte;

	__atomic_store_n(&probe->inside, 1, __ATOMIC_SEQ_CST);
	probe->regs_rc = api->ctx_regs(ctx, &regs);
	probe->read_rc = api->ctx_read_virt(ctx, 0x1000, &byte, 1);
	probe->proc_rc = api->ctx_process(ctx, &proc);
	probe->last_vcpu = api->ctx_vcpu(ctx);
	for (int i = 0; i < 4; i++)
		probe->last_args[i] = args[i];
	if (slow) {
		struct timespec ts = { 0, 200000 };

		nanosleep(&ts, NULL);
	}
	__atomic_add_fetch(&probe->pio_calls, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&probe->inside, 0, __ATOMIC_SEQ_CST);
}

static void on_msr(void *data, const struct kvmprof_plugin_ctx *ctx, unsigned int event, const uint64_t *args,
		   unsigned int nargs)
{
	(void)ctx;
	(void)args;
	if (data == &big && event == (unsigned int)api->event_find("msr_write") && nargs == 3)
		__atomic_add_fetch(&probe->msr_calls, 1, __ATOMIC_SEQ_CST);
}

int kvmprof_plugin_init(const struct kvmprof_plugin_api *a, int argc, char **argv)
{
	int n;

	api = a;
	probe = probe_from_args(argc, argv);
	if (!probe)
		return 1;
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "big=", 4))
			big = strtol(argv[i] + 4, NULL, 0);
		if (!strcmp(argv[i], "slow=1"))
			slow = 1;
	}
	n = api->subscribe(api->id, "msr_*", on_msr, &big);
	if (n != 2 || api->subscribe(api->id, "msr_read", on_msr, NULL) != -EEXIST ||
	    api->subscribe(api->id, "no_such_event", on_msr, NULL) != -EINVAL ||
	    api->subscribe(api->id, "pio", NULL, NULL) != -EINVAL)
		return 2;
	api->output(api->id, "init %s with %d args, %u events\n", api->name, argc - 1, api->event_count);
	return 0;
}

void kvmprof_plugin_fini(void)
{
	api->output(api->id, "fini pio %ld msr %ld\n", probe->pio_calls, probe->msr_calls);
	for (long i = 0; i < big; i++)
		api->output(api->id, "x");
	/* subscribe outside init is refused */
	if (api->subscribe(api->id, "pio", on_msr, NULL) != -EBUSY)
		api->output(api->id, "subscribe after init was accepted\n");
}

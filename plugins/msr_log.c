// SPDX-License-Identifier: MIT
/*
 * msr_log: one line per MSR access that exits to the VMM (the PMU's MSRs),
 * in the columns of `kvmprof trace -i`: seconds since the plugin was loaded,
 * vCPU, msr_read or msr_write, index, value, gp (1: the guest got #GP).
 *
 *   kvmprof-vmm --plugin build/plugins/msr_log.so[,msr=0xc0010004][,msr=0xc0010000-0xc0010007][,out=FILE]
 *
 * msr= (repeatable, up to 8) keeps only those MSRs: one index or an
 * inclusive range FIRST-LAST. Lines go straight to api->output (its lock is
 * held for one line's copy); a line the output could not take is counted
 * and the count printed at unload.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <kvmprof/plugin.h>

#include "plugin_args.h"

KVMPROF_PLUGIN_DECLARE;

#define RANGES_MAX 8

struct msr_range {
	uint64_t first, last;
};

static const struct kvmprof_plugin_api *api;
static struct msr_range ranges[RANGES_MAX];
static unsigned int nranges;
static uint64_t start_ns;
static uint64_t logged, filtered, lost;

static bool wanted(uint64_t index)
{
	if (!nranges)
		return true;
	for (unsigned int i = 0; i < nranges; i++)
		if (index >= ranges[i].first && index <= ranges[i].last)
			return true;
	return false;
}

static void log_access(const struct kvmprof_plugin_ctx *ctx, const char *event, const uint64_t *args)
{
	uint64_t t;

	if (!wanted(args[0])) {
		__atomic_add_fetch(&filtered, 1, __ATOMIC_RELAXED);
		return;
	}
	t = api->time_ns() - start_ns;
	if (api->output(api->id, "%llu.%09llu %u %s index=0x%llx value=0x%llx gp=%llu\n",
			(unsigned long long)(t / 1000000000u), (unsigned long long)(t % 1000000000u),
			api->ctx_vcpu(ctx), event, (unsigned long long)args[0], (unsigned long long)args[1],
			(unsigned long long)args[2]))
		__atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&logged, 1, __ATOMIC_RELAXED);
}

KVMPROF_PLUGIN_ON(msr_read)
{
	log_access(ctx, "msr_read", args);
}

KVMPROF_PLUGIN_ON(msr_write)
{
	log_access(ctx, "msr_write", args);
}

/* "INDEX" or "FIRST-LAST" (each decimal or 0x hex, at most 32 bits: an MSR index). */
static bool parse_range(const char *s, struct msr_range *r)
{
	char first[32];
	const char *dash = strchr(s, '-');

	if (!dash) {
		if (!plugin_parse_u64(s, &r->first))
			return false;
		r->last = r->first;
	} else {
		if ((size_t)(dash - s) >= sizeof(first))
			return false;
		memcpy(first, s, (size_t)(dash - s));
		first[dash - s] = '\0';
		if (!plugin_parse_u64(first, &r->first) || !plugin_parse_u64(dash + 1, &r->last))
			return false;
	}
	return r->first <= r->last && r->last <= UINT32_MAX;
}

int kvmprof_plugin_init(const struct kvmprof_plugin_api *a, int argc, char **argv)
{
	api = a;
	nranges = 0;
	logged = filtered = lost = 0;
	for (int i = 1; i < argc; i++) {
		const char *v = plugin_arg_value(argv[i], "msr");

		if (!v) {
			api->output(api->id, "msr_log: unknown argument '%s' (it takes msr=INDEX or msr=FIRST-LAST)\n",
				    argv[i]);
			return 1;
		}
		if (nranges == RANGES_MAX) {
			api->output(api->id, "msr_log: more than %d msr= arguments\n", RANGES_MAX);
			return 1;
		}
		if (!parse_range(v, &ranges[nranges])) {
			api->output(api->id,
				    "msr_log: msr=%s is not an MSR index or range (e.g. msr=0xc0010004 or "
				    "msr=0xc0010000-0xc0010007)\n",
				    v);
			return 1;
		}
		nranges++;
	}
	start_ns = api->time_ns();
	return 0;
}

void kvmprof_plugin_fini(void)
{
	api->output(api->id, "msr_log: %llu accesses logged, %llu filtered out, %llu lines lost (output full)\n",
		    (unsigned long long)logged, (unsigned long long)filtered, (unsigned long long)lost);
}

// SPDX-License-Identifier: MIT
/*
 * io_latency: for each port OUT the guest does, the time from the VMM's pio
 * event to the same vCPU's next vm_exit (how long the guest ran on after
 * the write: device emulation, re-entry and the guest's work until it exits
 * again). A histogram per port (log2 buckets in ns; count, min, mean, max),
 * printed at unload.
 *
 *   kvmprof-vmm --plugin build/plugins/io_latency.so[,port=0x3f8][,out=FILE]
 *
 * port= keeps one port. All state is per vCPU (only its thread writes it);
 * fini merges. An OUT still waiting for its exit when the vCPU stops is
 * counted as unfinished; ports beyond the table's size go to "other".
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kvmprof/plugin.h>

#include "plugin_args.h"

KVMPROF_PLUGIN_DECLARE;

#define PORTS_MAX 64    /* ports with their own histogram, per vCPU */
#define OTHER PORTS_MAX /* the histogram of the ports that did not fit */
#define BUCKETS 48      /* bucket b: [2^b, 2^(b+1)) ns; 2^48 ns is 3 days */
/* OUTs of one exit: a REP OUTS gives one event per element, and KVM hands the VMM up to a page of them. */
#define PENDING_MAX 4096
#define NO_PORT UINT32_MAX

struct hist {
	uint32_t port; /* NO_PORT: unused */
	uint64_t count, sum, min, max;
	uint64_t bucket[BUCKETS];
};

struct vcpu_state {
	struct hist h[PORTS_MAX + 1];
	uint64_t pending_t[PENDING_MAX]; /* the OUTs since the last exit: when, */
	uint16_t pending_port[PENDING_MAX]; /* and to which port */
	unsigned int npending;
	uint64_t outs;         /* OUTs seen */
	uint64_t unmeasured;   /* OUTs past PENDING_MAX in one exit */
	uint64_t unfinished;   /* OUTs without an exit after them */
};

static const struct kvmprof_plugin_api *api;
static struct vcpu_state *vcpus;
static bool one_port;
static uint64_t port_filter;

static struct hist *hist_of(struct vcpu_state *s, uint32_t port)
{
	for (unsigned int i = 0; i < PORTS_MAX; i++) {
		if (s->h[i].port == port)
			return &s->h[i];
		if (s->h[i].port == NO_PORT) {
			s->h[i].port = port;
			return &s->h[i];
		}
	}
	return &s->h[OTHER];
}

static void hist_add(struct hist *h, uint64_t ns)
{
	unsigned int b = ns ? 63 - (unsigned int)__builtin_clzll(ns) : 0;

	h->bucket[b < BUCKETS ? b : BUCKETS - 1]++;
	if (!h->count || ns < h->min)
		h->min = ns;
	if (ns > h->max)
		h->max = ns;
	h->count++;
	h->sum += ns;
}

static struct vcpu_state *state(const struct kvmprof_plugin_ctx *ctx)
{
	unsigned int v = api->ctx_vcpu(ctx);

	return v < api->vcpu_count ? &vcpus[v] : NULL;
}

KVMPROF_PLUGIN_ON(pio)
{
	struct vcpu_state *s = state(ctx);

	if (!s || !args[2] || (one_port && args[0] != port_filter))
		return;
	s->outs++;
	if (s->npending == PENDING_MAX) {
		s->unmeasured++;
		return;
	}
	s->pending_port[s->npending] = (uint16_t)args[0];
	s->pending_t[s->npending++] = api->time_ns();
}

KVMPROF_PLUGIN_ON(vm_exit)
{
	struct vcpu_state *s = state(ctx);
	uint64_t now;

	if (!s || !s->npending)
		return;
	now = api->time_ns();
	for (unsigned int i = 0; i < s->npending; i++)
		hist_add(hist_of(s, s->pending_port[i]), now - s->pending_t[i]);
	s->npending = 0;
}

KVMPROF_PLUGIN_ON(vcpu_stop)
{
	struct vcpu_state *s = state(ctx);

	if (!s)
		return;
	s->unfinished += s->npending;
	s->npending = 0;
}

int kvmprof_plugin_init(const struct kvmprof_plugin_api *a, int argc, char **argv)
{
	api = a;
	one_port = false;
	for (int i = 1; i < argc; i++) {
		const char *v = plugin_arg_value(argv[i], "port");

		if (!v) {
			api->output(api->id, "io_latency: unknown argument '%s' (it takes port=PORT)\n", argv[i]);
			return 1;
		}
		if (one_port || !plugin_parse_u64(v, &port_filter) || port_filter > 0xffff) {
			api->output(api->id, "io_latency: port=%s: %s\n", v,
				    one_port ? "only one port= argument" : "not a port number (0 to 0xffff)");
			return 1;
		}
		one_port = true;
	}
	vcpus = calloc(api->vcpu_count ? api->vcpu_count : 1, sizeof(*vcpus));
	if (!vcpus) {
		api->output(api->id, "io_latency: out of memory for %u vCPUs\n", api->vcpu_count);
		return 1;
	}
	for (unsigned int v = 0; v < api->vcpu_count; v++)
		for (unsigned int i = 0; i <= PORTS_MAX; i++)
			vcpus[v].h[i].port = NO_PORT;
	return 0;
}

/* --- the histograms at fini ------------------------------------------------ */

static void hist_merge(struct hist *into, const struct hist *h)
{
	if (!h->count)
		return;
	if (!into->count || h->min < into->min)
		into->min = h->min;
	if (h->max > into->max)
		into->max = h->max;
	into->count += h->count;
	into->sum += h->sum;
	for (unsigned int b = 0; b < BUCKETS; b++)
		into->bucket[b] += h->bucket[b];
}

static int by_count_desc(const void *a, const void *b)
{
	const struct hist *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->port < y->port ? -1 : x->port > y->port;
}

static void print_hist(const struct hist *h)
{
	char name[16];
	uint64_t peak = 0;

	if (h->port == NO_PORT)
		strcpy(name, "other");
	else
		snprintf(name, sizeof(name), "0x%x", h->port);
	api->output(api->id, "port %s: count %llu min %llu mean %llu max %llu ns\n", name,
		    (unsigned long long)h->count, (unsigned long long)h->min,
		    (unsigned long long)(h->sum / h->count), (unsigned long long)h->max);
	for (unsigned int b = 0; b < BUCKETS; b++)
		if (h->bucket[b] > peak)
			peak = h->bucket[b];
	for (unsigned int b = 0; b < BUCKETS; b++) {
		char bar[41];
		unsigned int w;

		if (!h->bucket[b])
			continue;
		w = (unsigned int)((h->bucket[b] * 40 + peak - 1) / peak);
		memset(bar, '#', w);
		bar[w] = '\0';
		api->output(api->id, "  [%llu, %llu) ns %10llu %s\n", b ? 1ULL << b : 0ULL, 1ULL << (b + 1),
			    (unsigned long long)h->bucket[b], bar);
	}
}

void kvmprof_plugin_fini(void)
{
	struct hist *all = calloc((size_t)api->vcpu_count * PORTS_MAX + 1, sizeof(*all));
	unsigned int n = 0;
	uint64_t outs = 0, measured = 0, unmeasured = 0, unfinished = 0;
	struct hist other = { .port = NO_PORT };

	if (!all) {
		api->output(api->id, "io_latency: out of memory for the histograms\n");
		goto out;
	}
	for (unsigned int v = 0; v < api->vcpu_count; v++) {
		struct vcpu_state *s = &vcpus[v];

		outs += s->outs;
		unmeasured += s->unmeasured;
		unfinished += s->unfinished + s->npending;
		hist_merge(&other, &s->h[OTHER]);
		for (unsigned int i = 0; i < PORTS_MAX && s->h[i].port != NO_PORT; i++) {
			unsigned int j = 0;

			while (j < n && all[j].port != s->h[i].port)
				j++;
			if (j == n) /* at most vcpu_count * PORTS_MAX ports */
				all[n++] = (struct hist){ .port = s->h[i].port };
			hist_merge(&all[j], &s->h[i]);
		}
	}
	if (other.count)
		all[n++] = other;
	for (unsigned int i = 0; i < n; i++)
		measured += all[i].count;
	qsort(all, n, sizeof(*all), by_count_desc);
	api->output(api->id,
		    "io_latency: %llu pio outs, %llu measured, %llu unfinished (the vCPU stopped before its next "
		    "exit), %llu unmeasured (over %d in one exit)\n",
		    (unsigned long long)outs, (unsigned long long)measured, (unsigned long long)unfinished,
		    (unsigned long long)unmeasured, PENDING_MAX);
	for (unsigned int i = 0; i < n; i++)
		print_hist(&all[i]);
	free(all);
out:
	free(vcpus);
	vcpus = NULL;
}

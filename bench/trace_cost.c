// SPDX-License-Identifier: MIT
/*
 * trace-cost [PLUGIN.so...]: what an event costs on the host, without a VM's
 * noise, through the VMM's own dispatch and plugin loader (bench/trace.sh's
 * third table). The event loop (trace_cost_loop.c) runs alternately with
 * nothing listening and with one plugin loaded, ROUNDS times; a plugin's
 * cost per event is the extra time over the events it received. Also: a
 * TRACE site with nothing listening against the same loop compiled out, and
 * console_bytes compiled in (its handler called at the sites) against the
 * same sites with its event off.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin_api.h"
#include "plugin_host.h"
#include "trace.h"
#include "trace_cost.h"
#include "common/trace_event_table.h"
#include "vm.h"

#define ITERATIONS 1000000ul
#define ROUNDS 5

static const unsigned int per_iteration[KVMPROF_TRACE_EVENT_COUNT] = TRACE_COST_PER_ITERATION;

static double cpu_ns(void)
{
	struct timespec ts;

	/* The thread's CPU time: other load on a shared host disturbs it far less than the clock. */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double time_loop(void (*loop)(unsigned long))
{
	double t0 = cpu_ns();

	loop(ITERATIONS);
	return cpu_ns() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Events per loop run that plugin id is on for, and their names. */
static unsigned long events_received(unsigned int id, char *names, size_t size)
{
	struct plugin_info info[PLUGIN_MAX];
	unsigned int n = plugin_list(info, PLUGIN_MAX);
	unsigned long total = 0;
	size_t len = 0;

	names[0] = '\0';
	for (unsigned int i = 0; i < n && i < PLUGIN_MAX; i++) {
		if (info[i].id != id)
			continue;
		for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++) {
			if (!info[i].events[e])
				continue;
			total += per_iteration[e] * ITERATIONS;
			if (len < size)
				len += (size_t)snprintf(names + len, size - len, "%s%s", len ? "," : "",
							trace_event_info(e)->name);
		}
	}
	return total;
}

static void row(const char *what, const char *events, unsigned long n, double with, double without, double *pair,
		unsigned int npairs)
{
	double lo = pair[0], hi = pair[0];

	for (unsigned int i = 1; i < npairs; i++) {
		lo = pair[i] < lo ? pair[i] : lo;
		hi = pair[i] > hi ? pair[i] : hi;
	}
	printf("| %s | %s | %lu | %.1f | %.1f–%.1f |\n", what, events, n, (with - without) / (double)n, lo, hi);
}

/* One plugin: loaded for each measured round, unloaded in between. */
static int bench_plugin(const char *path)
{
	char *argv[] = { "out=/dev/null" };
	double with[ROUNDS], without[ROUNDS], pair[ROUNDS];
	char err[PLUGIN_ERR_MAX], names[256] = "";
	unsigned long n = 0;

	for (unsigned int r = 0; r < ROUNDS; r++) {
		struct plugin_unload_result res;
		int id;

		without[r] = time_loop(trace_cost_loop);
		id = plugin_load(path, 1, argv, err, sizeof(err));
		if (id < 0) {
			fprintf(stderr, "trace-cost: %s\n", err);
			return 1;
		}
		n = events_received((unsigned int)id, names, sizeof(names));
		with[r] = time_loop(trace_cost_loop);
		plugin_unload((unsigned int)id, &res, err, sizeof(err));
		plugin_unload_result_free(&res);
		pair[r] = n ? (with[r] - without[r]) / (double)n : 0;
	}
	if (!n) {
		printf("| %s | (none of the loop's events) | 0 | | |\n", path);
		return 0;
	}
	row(path, names, n, median(with, ROUNDS), median(without, ROUNDS), pair, ROUNDS);
	return 0;
}

#pragma weak kvmprof_plugin_fini
#define STATIC_HANDLES(id, name, nargs, argspec, desc) [KVMPROF_TRACE_##name] = TRACE_STATIC_HANDLES(name),
static const struct plugin_builtin builtin = {
	.name = "console_bytes",
	.init = kvmprof_plugin_init,
	.fini = kvmprof_plugin_fini,
	.handles = { KVMPROF_TRACE_EVENTS(STATIC_HANDLES) },
};

int main(int argc, char **argv)
{
	static struct vm_config cfg = { .ncpus = 1 };
	static struct vm vm = { .cfg = &cfg };
	double in[ROUNDS], out[ROUNDS], on[ROUNDS], off[ROUNDS], pair[ROUNDS];
	char *bargv[] = { "out=/dev/null" };
	char err[PLUGIN_ERR_MAX], names[256];
	struct trace_ctx ctx;
	unsigned int changed;
	unsigned long n;
	int id, rc = 0;

	plugin_host_init(&vm);
	if (trace_ctx_register(&ctx, 0, NULL, NULL)) {
		fprintf(stderr, "trace-cost: no trace context\n");
		return 1;
	}
	printf("Per event on the host (%lu iterations of %s's loop, %d alternating rounds, medians; no vCPU, so\n"
	       "api calls that need one, registers, guest memory, the guest process, fail at once here):\n\n",
	       ITERATIONS, argv[0], ROUNDS);
	printf("| what | events | events per run | ns per event | rounds (min–max) |\n|---|---|---|---|---|\n");

	for (unsigned int r = 0; r < ROUNDS; r++) {
		in[r] = time_loop(trace_cost_loop);
		out[r] = time_loop(trace_cost_loop_out);
		pair[r] = (in[r] - out[r]) / (6.0 * ITERATIONS);
	}
	row("a TRACE site, nothing listening, against compiled out", "all 6 of the loop", 6 * ITERATIONS,
	    median(in, ROUNDS), median(out, ROUNDS), pair, ROUNDS);

	id = plugin_load_builtin(&builtin, 1, bargv, err, sizeof(err));
	if (id < 0) {
		fprintf(stderr, "trace-cost: %s\n", err);
		return 1;
	}
	n = events_received((unsigned int)id, names, sizeof(names));
	for (unsigned int r = 0; r < ROUNDS; r++) {
		plugin_set_events((unsigned int)id, "*", false, &changed, err, sizeof(err));
		off[r] = time_loop(trace_cost_loop_static);
		plugin_set_events((unsigned int)id, "*", true, &changed, err, sizeof(err));
		on[r] = time_loop(trace_cost_loop_static);
		pair[r] = (on[r] - off[r]) / (double)n;
	}
	row("console_bytes compiled in (static build), against its event off", names, n, median(on, ROUNDS),
	    median(off, ROUNDS), pair, ROUNDS);

	for (int i = 1; i < argc; i++)
		rc |= bench_plugin(argv[i]);
	trace_ctx_unregister(&ctx);
	plugin_unload_all();
	return rc;
}

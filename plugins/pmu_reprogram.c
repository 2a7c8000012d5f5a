// SPDX-License-Identifier: MIT
/*
 * pmu_reprogram: how often the vPMU reprogrammed its counters for the
 * guest's new settings, per guest process (the one running on the vCPU when
 * the VMM reprogrammed, before the entry). The total equals --vpmu-stats'
 * "counter reprogrammings". Printed at unload, most first.
 *
 *   kvmprof-vmm --plugin build/plugins/pmu_reprogram.so[,out=FILE]
 *
 * Each vCPU counts into its own fixed table (only its thread writes it);
 * processes past the table's size are counted in an "other" row.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kvmprof/plugin.h>

KVMPROF_PLUGIN_DECLARE;

#define PROCS_MAX 64 /* per vCPU */
#define PID_UNKNOWN UINT32_MAX

struct proc_count {
	uint32_t pid; /* PID_UNKNOWN: the VMM could not tell */
	char comm[KVMPROF_PLUGIN_COMM_MAX];
	uint64_t events, reprograms;
};

struct vcpu_table {
	struct proc_count procs[PROCS_MAX];
	unsigned int n;
	struct proc_count other;
};

static const struct kvmprof_plugin_api *api;
static struct vcpu_table *tables;
static uint64_t off_vcpu;

KVMPROF_PLUGIN_ON(pmu_counter_program)
{
	unsigned int v = api->ctx_vcpu(ctx), i;
	struct kvmprof_plugin_process proc;
	struct vcpu_table *t;
	struct proc_count *c;

	if (v >= api->vcpu_count) {
		__atomic_add_fetch(&off_vcpu, args[0], __ATOMIC_RELAXED);
		return;
	}
	t = &tables[v];
	if (api->ctx_process(ctx, &proc)) {
		proc.pid = PID_UNKNOWN;
		strcpy(proc.comm, "-");
	}
	for (i = 0; i < t->n && t->procs[i].pid != proc.pid; i++)
		;
	if (i < t->n) {
		c = &t->procs[i];
	} else if (t->n < PROCS_MAX) {
		c = &t->procs[t->n++];
		c->pid = proc.pid;
		memcpy(c->comm, proc.comm, sizeof(c->comm));
	} else {
		c = &t->other;
	}
	c->events++;
	c->reprograms += args[0];
}

int kvmprof_plugin_init(const struct kvmprof_plugin_api *a, int argc, char **argv)
{
	api = a;
	off_vcpu = 0;
	if (argc > 1) {
		api->output(api->id, "pmu_reprogram: unknown argument '%s' (it takes none but out=FILE)\n", argv[1]);
		return 1;
	}
	tables = calloc(api->vcpu_count ? api->vcpu_count : 1, sizeof(*tables));
	if (!tables) {
		api->output(api->id, "pmu_reprogram: out of memory for %u vCPU tables\n", api->vcpu_count);
		return 1;
	}
	return 0;
}

static int by_reprograms_desc(const void *a, const void *b)
{
	const struct proc_count *x = a, *y = b;

	if (x->reprograms != y->reprograms)
		return x->reprograms > y->reprograms ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void print_proc(const struct proc_count *c, const char *pid)
{
	char comm[KVMPROF_PLUGIN_COMM_MAX];

	/* The name comes from guest memory: one printable word. */
	memcpy(comm, c->comm, sizeof(comm));
	comm[sizeof(comm) - 1] = '\0';
	for (char *ch = comm; *ch; ch++)
		if (*ch <= ' ' || *ch > '~')
			*ch = '?';
	api->output(api->id, "%12llu %10llu %7s  %s\n", (unsigned long long)c->reprograms,
		    (unsigned long long)c->events, pid, comm[0] ? comm : "-");
}

void kvmprof_plugin_fini(void)
{
	struct proc_count *all = calloc((size_t)api->vcpu_count * PROCS_MAX + 1, sizeof(*all)), other = { 0 };
	uint64_t total = off_vcpu;
	unsigned int n = 0;

	if (!all) {
		api->output(api->id, "pmu_reprogram: out of memory for the table\n");
		goto out;
	}
	for (unsigned int v = 0; v < api->vcpu_count; v++) {
		const struct vcpu_table *t = &tables[v];

		other.events += t->other.events;
		other.reprograms += t->other.reprograms;
		for (unsigned int i = 0; i < t->n; i++) {
			unsigned int j = 0;

			while (j < n && all[j].pid != t->procs[i].pid)
				j++;
			if (j == n) /* at most vcpu_count * PROCS_MAX processes */
				all[n++] = t->procs[i];
			else {
				all[j].events += t->procs[i].events;
				all[j].reprograms += t->procs[i].reprograms;
			}
		}
	}
	qsort(all, n, sizeof(*all), by_reprograms_desc);
	api->output(api->id, "pmu_reprogram: counter reprogrammings per guest process (pid - where the VMM "
			     "does not know it)\n");
	api->output(api->id, "%12s %10s %7s  %s\n", "# reprograms", "events", "pid", "process");
	for (unsigned int i = 0; i < n; i++) {
		char pid[16];

		if (all[i].pid == PID_UNKNOWN)
			strcpy(pid, "-");
		else
			snprintf(pid, sizeof(pid), "%u", all[i].pid);
		print_proc(&all[i], pid);
		total += all[i].reprograms;
	}
	if (other.events) {
		strcpy(other.comm, "(table full)");
		print_proc(&other, "other");
		total += other.reprograms;
	}
	if (off_vcpu)
		api->output(api->id, "%12llu %10s %7s  %s\n", (unsigned long long)off_vcpu, "-", "-", "(not on a vCPU)");
	api->output(api->id, "total %llu counter reprogrammings\n", (unsigned long long)total);
	free(all);
out:
	free(tables);
	tables = NULL;
}

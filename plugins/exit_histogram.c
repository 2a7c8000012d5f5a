// SPDX-License-Identifier: MIT
/*
 * exit_histogram: how often the guest exits, by KVM exit reason, and for
 * port I/O by port, for MMIO by address, for MSR accesses by MSR index,
 * each split by the guest process that ran (where the VMM knows it).
 * Printed at unload, most frequent first.
 *
 *   kvmprof-vmm --plugin build/plugins/exit_histogram.so[,process=no][,out=FILE]
 *
 * Each vCPU counts into its own fixed table (only its thread writes it, so
 * no locks or atomics); fini merges them. A table that fills up counts the
 * rest in its event's "other" row: totals stay exact.
 */
#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kvmprof/plugin.h>

#include "plugin_args.h"

KVMPROF_PLUGIN_DECLARE;

enum kind { K_EXIT, K_PIO_IN, K_PIO_OUT, K_MMIO_READ, K_MMIO_WRITE, K_MSR_READ, K_MSR_WRITE, K_COUNT };

static const char *const kind_event[K_COUNT] = { "vm_exit", "pio", "pio", "mmio", "mmio", "msr_read", "msr_write" };

#define PID_UNKNOWN UINT32_MAX
#define TABLE_SLOTS 1024u       /* per vCPU, a power of two */
#define TABLE_FILL (TABLE_SLOTS * 3 / 4) /* keeps probe sequences short */

struct row {
	uint64_t count;
	uint64_t what; /* exit reason, port, address or MSR index */
	uint32_t pid;
	uint8_t kind;
	bool used;
	char comm[KVMPROF_PLUGIN_COMM_MAX];
};

struct vcpu_table {
	struct row rows[TABLE_SLOTS];
	unsigned int used;
	uint64_t other[K_COUNT]; /* what did not fit */
	struct kvmprof_plugin_process cur; /* the process at this vCPU's last vm_exit */
};

static const struct kvmprof_plugin_api *api;
static struct vcpu_table *tables;
static bool by_process = true;
static uint64_t off_vcpu; /* events from no vCPU (none of ours should be) */

static uint64_t hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static void count(const struct kvmprof_plugin_ctx *ctx, enum kind kind, uint64_t what)
{
	unsigned int vcpu = api->ctx_vcpu(ctx);
	struct vcpu_table *t;
	uint32_t pid;

	if (vcpu >= api->vcpu_count) {
		__atomic_add_fetch(&off_vcpu, 1, __ATOMIC_RELAXED);
		return;
	}
	t = &tables[vcpu];
	pid = t->cur.pid;
	for (uint64_t i = hash(what ^ ((uint64_t)pid << 32) ^ ((uint64_t)kind << 60)), n = 0; n < TABLE_SLOTS; i++, n++) {
		struct row *r = &t->rows[i & (TABLE_SLOTS - 1)];

		if (r->used && r->kind == kind && r->what == what && r->pid == pid) {
			r->count++;
			return;
		}
		if (!r->used) {
			if (t->used >= TABLE_FILL)
				break;
			*r = (struct row){ .count = 1, .what = what, .pid = pid, .kind = (uint8_t)kind, .used = true };
			memcpy(r->comm, t->cur.comm, sizeof(r->comm));
			t->used++;
			return;
		}
	}
	t->other[kind]++;
}

/* The events of one exit follow its vm_exit on the same vCPU: one process lookup per exit. */
KVMPROF_PLUGIN_ON(vm_exit)
{
	unsigned int vcpu = api->ctx_vcpu(ctx);

	if (by_process && vcpu < api->vcpu_count) {
		struct kvmprof_plugin_process *cur = &tables[vcpu].cur;

		if (api->ctx_process(ctx, cur)) {
			cur->pid = PID_UNKNOWN;
			strcpy(cur->comm, "-");
		}
	}
	count(ctx, K_EXIT, args[0]);
}

KVMPROF_PLUGIN_ON(pio)
{
	count(ctx, args[2] ? K_PIO_OUT : K_PIO_IN, args[0]);
}

KVMPROF_PLUGIN_ON(mmio)
{
	count(ctx, args[2] ? K_MMIO_WRITE : K_MMIO_READ, args[0]);
}

KVMPROF_PLUGIN_ON(msr_read)
{
	count(ctx, K_MSR_READ, args[0]);
}

KVMPROF_PLUGIN_ON(msr_write)
{
	count(ctx, K_MSR_WRITE, args[0]);
}

int kvmprof_plugin_init(const struct kvmprof_plugin_api *a, int argc, char **argv)
{
	api = a;
	by_process = true;
	off_vcpu = 0;
	for (int i = 1; i < argc; i++) {
		const char *v = plugin_arg_value(argv[i], "process");

		if (!v) {
			api->output(api->id, "exit_histogram: unknown argument '%s' (it takes process=yes|no)\n", argv[i]);
			return 1;
		}
		if (!plugin_parse_bool(v, &by_process)) {
			api->output(api->id, "exit_histogram: process=%s: not yes or no\n", v);
			return 1;
		}
	}
	tables = calloc(api->vcpu_count ? api->vcpu_count : 1, sizeof(*tables));
	if (!tables) {
		api->output(api->id, "exit_histogram: out of memory for %u vCPU tables\n", api->vcpu_count);
		return 1;
	}
	for (unsigned int v = 0; v < api->vcpu_count; v++) {
		tables[v].cur.pid = PID_UNKNOWN;
		strcpy(tables[v].cur.comm, "-");
	}
	return 0;
}

/* --- the table at fini ------------------------------------------------------- */

static const char *exit_reason_name(uint64_t reason)
{
	static const char *const names[] = {
		[KVM_EXIT_UNKNOWN] = "UNKNOWN",   [KVM_EXIT_EXCEPTION] = "EXCEPTION",
		[KVM_EXIT_IO] = "IO",             [KVM_EXIT_HYPERCALL] = "HYPERCALL",
		[KVM_EXIT_DEBUG] = "DEBUG",       [KVM_EXIT_HLT] = "HLT",
		[KVM_EXIT_MMIO] = "MMIO",         [KVM_EXIT_IRQ_WINDOW_OPEN] = "IRQ_WINDOW_OPEN",
		[KVM_EXIT_SHUTDOWN] = "SHUTDOWN", [KVM_EXIT_FAIL_ENTRY] = "FAIL_ENTRY",
		[KVM_EXIT_INTR] = "INTR",         [KVM_EXIT_SET_TPR] = "SET_TPR",
		[KVM_EXIT_TPR_ACCESS] = "TPR_ACCESS", [KVM_EXIT_NMI] = "NMI",
		[KVM_EXIT_INTERNAL_ERROR] = "INTERNAL_ERROR", [KVM_EXIT_SYSTEM_EVENT] = "SYSTEM_EVENT",
		[KVM_EXIT_IOAPIC_EOI] = "IOAPIC_EOI", [29] = "X86_RDMSR", [30] = "X86_WRMSR",
	};

	return reason < sizeof(names) / sizeof(names[0]) && names[reason] ? names[reason] : "?";
}

static int by_key(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->what != y->what)
		return x->what < y->what ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int by_count_desc(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return by_key(a, b);
}

static void print_row(const struct row *r)
{
	char what[40], pid[16], comm[KVMPROF_PLUGIN_COMM_MAX];
	static const char *const dir[K_COUNT] = { [K_PIO_IN] = "in", [K_PIO_OUT] = "out",
						  [K_MMIO_READ] = "read", [K_MMIO_WRITE] = "write" };

	if (r->kind == K_EXIT)
		snprintf(what, sizeof(what), "%llu:%s", (unsigned long long)r->what, exit_reason_name(r->what));
	else if (dir[r->kind])
		snprintf(what, sizeof(what), "%s:0x%llx", dir[r->kind], (unsigned long long)r->what);
	else
		snprintf(what, sizeof(what), "0x%llx", (unsigned long long)r->what);
	if (r->pid == PID_UNKNOWN)
		strcpy(pid, "-");
	else
		snprintf(pid, sizeof(pid), "%u", r->pid);
	/* The name comes from guest memory: one printable word. */
	memcpy(comm, r->comm, sizeof(comm));
	comm[sizeof(comm) - 1] = '\0';
	for (char *c = comm; *c; c++)
		if (*c <= ' ' || *c > '~')
			*c = '?';
	api->output(api->id, "%12llu  %-9s  %-22s %7s  %s\n", (unsigned long long)r->count, kind_event[r->kind], what,
		    pid, comm[0] ? comm : "-");
}

void kvmprof_plugin_fini(void)
{
	unsigned int nv = api->vcpu_count, n = 0, m = 0;
	uint64_t other[K_COUNT] = { 0 }, total[K_COUNT] = { 0 };
	struct row *all;

	all = malloc((size_t)(nv ? nv : 1) * TABLE_FILL * sizeof(*all));
	if (!all) {
		api->output(api->id, "exit_histogram: out of memory for the table\n");
		goto out;
	}
	for (unsigned int v = 0; v < nv; v++) {
		for (unsigned int i = 0; i < TABLE_SLOTS; i++)
			if (tables[v].rows[i].used)
				all[n++] = tables[v].rows[i];
		for (int k = 0; k < K_COUNT; k++)
			other[k] += tables[v].other[k];
	}
	/* The same key on several vCPUs: one row. */
	qsort(all, n, sizeof(*all), by_key);
	for (unsigned int i = 0; i < n; i++) {
		if (m && !by_key(&all[m - 1], &all[i]))
			all[m - 1].count += all[i].count;
		else
			all[m++] = all[i];
	}
	qsort(all, m, sizeof(*all), by_count_desc);

	api->output(api->id, "exit_histogram: %u vCPU%s, %s\n", nv, nv == 1 ? "" : "s",
		    by_process ? "by guest process (pid - where the VMM does not know it)" : "not by process");
	api->output(api->id, "%12s  %-9s  %-22s %7s  %s\n", "# count", "event", "what", "pid", "process");
	for (unsigned int i = 0; i < m; i++) {
		print_row(&all[i]);
		total[all[i].kind] += all[i].count;
	}
	for (int k = 0; k < K_COUNT; k++)
		if (other[k]) {
			api->output(api->id, "%12llu  %-9s  %-22s %7s  %s\n", (unsigned long long)other[k],
				    kind_event[k], "other", "-", "(table full)");
			total[k] += other[k];
		}
	api->output(api->id, "total vm_exit %llu\ntotal pio %llu\ntotal mmio %llu\ntotal msr_read %llu\n"
			     "total msr_write %llu\n",
		    (unsigned long long)total[K_EXIT], (unsigned long long)(total[K_PIO_IN] + total[K_PIO_OUT]),
		    (unsigned long long)(total[K_MMIO_READ] + total[K_MMIO_WRITE]),
		    (unsigned long long)total[K_MSR_READ], (unsigned long long)total[K_MSR_WRITE]);
	if (off_vcpu)
		api->output(api->id, "exit_histogram: %llu events not from a vCPU, not counted\n",
			    (unsigned long long)off_vcpu);
	free(all);
out:
	free(tables);
	tables = NULL;
}

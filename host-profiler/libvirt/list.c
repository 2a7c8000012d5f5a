/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof list domains [--connect URI]`: each running domain with its QEMU pid,
 * vCPU threads and RAM, and what kvmprof can do with it, each with the
 * reason when it cannot: the host side (perf on QEMU's threads), guest
 * samples (the monitor's registers), guest memory (processes and stacks),
 * what names the guest's processes, the in-guest agent (a guest PMU), and
 * perf's own guest-mode samples. Every answer is tried, not assumed.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "collection/emit.h"
#include "host_list.h"
#include "kvmprof/guest_desc.h"
#include "common/perf_open.h"
#include "qemu_hmp.h"
#include "qemu_ram.h"
#include "symbols/symtab.h"
#include "virt.h"

static const char usage[] = "usage: kvmprof list domains [--connect URI]\n";
static const char help[] =
	"\n"
	"The running libvirt domains: QEMU's pid, the vCPU threads, guest RAM, the\n"
	"guest's PMU, and which kvmprof features work for each and why not.\n"
	"\n"
	"  -c, --connect URI   libvirt's connection (default qemu:///system)\n";

static void say(const char *what, const char *answer)
{
	printf("  %-34s %s\n", what, answer);
}

/* perf on QEMU's main thread, as record opens it (cpu-clock, which every host has). */
static void check_host_side(const struct virt_domain *d)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK,
				     .disabled = 1, .exclude_guest = 0 };
	char buf[160];
	int fd = perf_open(&a, d->qemu_pid, -1, -1);

	if (fd >= 0) {
		close(fd);
		say("host side (QEMU's threads, kernel):", "yes");
		return;
	}
	snprintf(buf, sizeof(buf), "no: perf_event_open on QEMU pid %d: %s%s", (int)d->qemu_pid, strerror(-fd),
		 fd == -EACCES || fd == -EPERM ? " (kernel.perf_event_paranoid, or run as root)" : "");
	say("host side (QEMU's threads, kernel):", buf);
}

/* One round trip of the monitor's registers: what record --domain does at every guest sample. */
static bool check_registers(struct virt_domain *d)
{
	struct qemu_vcpu_regs regs[QEMU_HMP_MAX_VCPUS];
	char *reply = NULL, err[320], buf[400];
	uint64_t t0 = emit_now_ns(), t1;
	int n;

	if (d->monitor.hmp(d->monitor.ctx, "info registers -a", &reply, err, sizeof(err))) {
		snprintf(buf, sizeof(buf), "no: %s", err);
		say("guest samples (QEMU's monitor):", buf);
		return false;
	}
	t1 = emit_now_ns();
	n = qemu_hmp_parse_registers(reply, regs, QEMU_HMP_MAX_VCPUS);
	free(reply);
	if (n <= 0)
		snprintf(buf, sizeof(buf), "no: the registers QEMU gives (info registers -a) do not parse (a vCPU "
					   "outside 64-bit mode?)");
	else
		snprintf(buf, sizeof(buf), "yes (the registers of %d vCPU%s in %.1f ms)", n, n == 1 ? "" : "s",
			 (double)(t1 - t0) / 1e6);
	say("guest samples (QEMU's monitor):", buf);
	return n > 0;
}

static bool check_memory(struct virt_domain *d)
{
	static struct qemu_ram ram;
	char err[320], buf[400];
	int r = qemu_ram_map(&ram, &d->monitor, d->qemu_pid, err, sizeof(err));

	if (!r)
		r = qemu_ram_probe(&ram, err, sizeof(err));
	if (r)
		snprintf(buf, sizeof(buf), "no: %s", err);
	else
		snprintf(buf, sizeof(buf), "yes (%llu MiB in %d ranges, read through QEMU's mapping)",
			 (unsigned long long)(qemu_ram_bytes(&ram) >> 20), ram.nranges);
	say("guest memory (processes, stacks):", buf);
	return !r;
}

static void check_processes(const struct virt_domain *d, bool memory)
{
	uint64_t addr, size;
	char buf[4200];

	if (!memory) {
		say("guest processes:", "no: guest memory not readable");
		return;
	}
	if (d->kernel[0] && !symtab_find_symbol(d->kernel, KP_GDESC_SYMBOL, &addr, &size)) {
		snprintf(buf, sizeof(buf), "yes: the bundled guest (%s)", d->kernel);
		say("guest processes:", buf);
		return;
	}
	say("guest processes:", "with --guest-export FILE (a Linux guest's `kvmprof-agent export`), or "
				"--guest-kernel ELF for the bundled guest");
}

/* Whether the host's KVM offers a vPMU (kvm.enable_pmu), "" when it does not say. */
static char kvm_enable_pmu(void)
{
	char c = 0;
	FILE *f = fopen("/sys/module/kvm/parameters/enable_pmu", "re");

	if (f) {
		if (fread(&c, 1, 1, f) != 1)
			c = 0;
		fclose(f);
	}
	return c;
}

static void check_guest_pmu(const struct virt_domain *d)
{
	char host = kvm_enable_pmu();

	if (d->pmu == 1 && host == 'N')
		say("guest PMU (the in-guest agent):", "asked for (<pmu state='on'/>), but this host's KVM has none "
						       "(kvm.enable_pmu=N): the agent samples cpu-clock");
	else if (d->pmu == 1)
		say("guest PMU (the in-guest agent):", "yes (<pmu state='on'/>): kvmprof-agent record inside the guest");
	else if (d->pmu == 0)
		say("guest PMU (the in-guest agent):", "no: <pmu state='off'/> in the domain XML");
	else
		say("guest PMU (the in-guest agent):", "no: the domain XML does not ask for one (<features><pmu "
						       "state='on'/>); QEMU's CPU models have none");
}

/* Whether perf here marks samples taken in a guest as guest mode: a hardware PMU on a hardware-virtualization host. */
static void check_perf_guest(const struct virt_domain *d)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_HARDWARE, .config = PERF_COUNT_HW_CPU_CYCLES,
				     .disabled = 1 };
	int fd = perf_open(&a, 0, -1, -1);

	if (strcmp(d->type, "kvm")) {
		say("perf's guest-mode samples:", "no: a TCG domain runs its guest as QEMU's translated code (its samples "
						  "there count as guest time)");
	} else if (fd < 0) {
		say("perf's guest-mode samples:", "no: this host's perf has no hardware PMU (guest time is found "
						  "by where host samples land)");
	} else {
		say("perf's guest-mode samples:", access("/sys/module/kvm_pvm", F_OK)
							  ? "yes: perf gives the guest's RIP in guest mode"
							  : "no: a PVM host (kvm_pvm) does not mark them");
	}
	if (fd >= 0)
		close(fd);
}

static void list_domain(struct virt_conn *c, const char *name)
{
	static struct virt_domain d;
	char err[768];
	bool memory;

	if (virt_domain_open(c, name, &d, err, sizeof(err))) {
		printf("%s: %s\n\n", name, err);
		return;
	}
	printf("%s: %s (%s), QEMU pid %d, %u vCPU%s (thread%s", d.name, !strcmp(d.type, "kvm") ? "KVM" : "TCG",
	       d.machine[0] ? d.machine : "?", (int)d.qemu_pid, d.nvcpus, d.nvcpus == 1 ? "" : "s",
	       d.nvcpus == 1 ? "" : "s");
	for (unsigned int i = 0; i < d.nvcpus; i++)
		printf("%s%d", i ? ", " : " ", (int)d.vcpu_tid[i]);
	printf("), %llu MiB%s%s\n", (unsigned long long)(d.memory_kib >> 10), d.kernel[0] ? ", kernel " : "",
	       d.kernel);
	check_host_side(&d);
	check_registers(&d);
	memory = check_memory(&d);
	check_processes(&d, memory);
	check_guest_pmu(&d);
	check_perf_guest(&d);
	printf("\n");
	virt_domain_close(&d);
}

int host_list_domains_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "connect", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct virt_conn conn;
	const char *uri = NULL;
	char err[512], **names;
	int c, n;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			uri = optarg;
			break;
		case 'h':
			printf("%s%s", usage, help);
			return 0;
		case ':':
			return cli_usage_error("kvmprof list domains", usage, "option %s needs an argument", argv[optind - 1]);
		default:
			return cli_usage_error("kvmprof list domains", usage, "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("kvmprof list domains", usage, "unexpected argument '%s'", argv[optind]);
	if (virt_connect(&conn, uri, err, sizeof(err)) || virt_running_names(&conn, &names, &n, err, sizeof(err))) {
		fprintf(stderr, "kvmprof: %s\n", err);
		virt_disconnect(&conn);
		return 1;
	}
	printf("%d running domain%s at %s\n\n", n, n == 1 ? "" : "s", conn.uri);
	for (int i = 0; i < n; i++)
		list_domain(&conn, names[i]);
	virt_free_names(names, n);
	virt_disconnect(&conn);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof record --vm SOCKET | --domain NAME | --all-domains`:
 * system-wide sampling of a running VM. Host side: perf_event_open on every
 * thread of the VM's process (VMM user code and the host kernel). Guest
 * side: kvmprof-vmm's own guest sampler, or for a libvirt domain the vCPUs'
 * registers through QEMU's monitor (vm_target.h); both go into the same file.
 */
#ifndef HOST_RECORD_H
#define HOST_RECORD_H

#include <stdbool.h>

#include "record_cli.h"

struct host_record_opts {
	/* -e, -F, -c, -g, -o, -q; one event (events[0] when nevents is 1), else cycles, or cpu-clock without a PMU */
	struct record_opts rec;
	const char *vm;      /* --vm: the control socket */
	const char *domain;  /* --domain: a libvirt domain's name */
	bool all_domains;    /* --all-domains: every running domain, a file each (-o names a directory) */
	const char *connect; /* --connect: libvirt's URI (NULL: qemu:///system) */
	unsigned int guest_hz; /* --guest-hz: a domain's register samples per second and vCPU (0: the default) */
	const char *guest_kernel; /* --guest-kernel: the bundled guest's kernel.elf, when the domain XML names none */
	double duration;     /* --duration seconds; 0: until Ctrl-C or the VM exits */
	const char *guest_export; /* --guest-export: a Linux guest's `kvmprof-agent export`, for its task layout */
	bool no_exits;       /* --no-exits: no VM_EXIT records (when their cost, docs/benchmarks.md, is not wanted) */
};

/* Prints its own messages. Returns the exit status: 0, or 1 when nothing usable was recorded. */
int host_record_run(const struct host_record_opts *o);

/* --all-domains: one recording per running domain, side by side. Its exit status. */
int host_record_all_domains(const struct host_record_opts *o);

#endif

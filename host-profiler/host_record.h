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
#include <stdint.h>

#include "cli/record_cli.h"
#include "vm_target_kind.h"

struct host_record_opts {
	/* -e, -F, -c, -g, -o, -q; one event (events[0] when nevents is 1), else cycles, or cpu-clock without a PMU */
	struct record_opts rec;
	struct vm_target_choice target; /* --vm, --domain, ...: the VM (vm_target.h) */
	bool all_domains;    /* --all-domains: every running domain, a file each (-o names a directory) */
	const char *connect; /* --connect: libvirt's URI (NULL: qemu:///system) */
	unsigned int guest_hz; /* --guest-hz: a domain's register samples per second and vCPU (0: the default) */
	const char *guest_kernel; /* --guest-kernel: the bundled guest's kernel.elf, when the domain XML names none */
	double duration;     /* --duration seconds; 0: until Ctrl-C or the VM exits */
	const char *guest_export; /* --guest-export: a Linux guest's `kvmprof-agent export`, for its task layout */
	bool no_exits;       /* --no-exits: no VM_EXIT records (when their cost, docs/benchmarks.md, is not wanted) */
	/* Asked after each drain of the rings: true ends the window (kvmprof top's 'q'). NULL: never. */
	bool (*should_stop)(void *ctx);
	void *should_stop_ctx;
};

/* Prints its own messages. Returns the exit status: 0, or 1 when nothing usable was recorded. */
int host_record_run(const struct host_record_opts *o);

/*
 * The same recording in steps, for commands that look at it while it runs
 * (kvmprof top) as well as for record itself:
 *
 *   host_record_open   the VM answered and its host events are open; 0, or
 *                      1 after a one-line message (nothing to close then)
 *   host_record_start  the sample stream goes to fd (preamble first), the
 *                      host events are enabled, the guest sampler started;
 *                      0, 1 after a message, or HOST_START_REFUSED (the VM
 *                      refused what was asked: said)
 *   host_record_window samples until end_ns (CLOCK_MONOTONIC; 0: no end),
 *                      Ctrl-C, should_stop or the VM leaving (the caller
 *                      says so: host_record_gone_why): HOST_WINDOW_*, or
 *                      -errno
 *   host_record_stop   disables sampling and writes the rest of both sides'
 *                      samples; 0 or -errno
 *   host_record_close  frees everything (an unfinished stream is left
 *                      without its END); fd is the caller's to close
 */
struct host_recording;

#define HOST_START_REFUSED 2
enum { HOST_WINDOW_DONE = 0, HOST_WINDOW_STOPPED = 1, HOST_WINDOW_VM_GONE = 2 };

int host_record_open(struct host_recording **out, const struct host_record_opts *o);
int host_record_start(struct host_recording *R, int fd, const char *name);
int host_record_window(struct host_recording *R, uint64_t end_ns);
int host_record_stop(struct host_recording *R);
void host_record_close(struct host_recording *R);
/* After HOST_WINDOW_VM_GONE: what happened, "the VM went away (...) after 2.1 s". */
const char *host_record_gone_why(const struct host_recording *R);
/* The stream's writer (to flush it before reading what it wrote). */
struct kp_writer *host_record_writer(struct host_recording *R);

/* What a live view says in its header. */
struct host_record_status {
	const char *event; /* the host's event as sampled (cpu-clock when it stands in for cycles) */
	uint64_t rate;     /* Hz when freq, else the period */
	bool freq, clock;  /* clock: a period is in ns */
	uint64_t lost;     /* host and guest records lost so far */
	const char *guest_status; /* the guest sampler's state, as META guest_sampling says it */
};
void host_record_status(const struct host_recording *R, struct host_record_status *st);

/* --all-domains: one recording per running domain, side by side. Its exit status. */
int host_record_all_domains(const struct host_record_opts *o);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The virtual machine `kvmprof record` and `kvmprof stat` profile. The host
 * side is the same for every VM: perf on every thread of the process that
 * runs it (record.c). What differs is found through here:
 *
 *  - kvmprof-vmm (--vm SOCKET, vm_target_vmm.c): its control socket gives
 *    the pid and vCPU threads, and its own guest sampler writes guest
 *    samples (and VM exit records) into shared rings;
 *  - a libvirt domain (--domain NAME, libvirt/vm_target_domain.c): QEMU,
 *    found through libvirt, its vCPUs' registers read through the monitor
 *    and its guest RAM through QEMU's mapping (domain_sampler.h).
 *
 * Host samples taken while guest code ran are guest time. record.c tells
 * them apart (perf's guest cpumode, the PVM host's guest entry, or the
 * target's own rule: TCG's translated code) and hands them to the target,
 * which has the guest's side of them: kvmprof-vmm's sampler took its own
 * samples of that time (they are dropped), a domain's become guest samples.
 */
#ifndef HOST_VM_TARGET_H
#define HOST_VM_TARGET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "host_record.h"
#include "kvmprof/sample_format.h"
#include "format/sample_file.h"
#include "vm_target_kind.h"

struct kallsyms;

#define VM_TARGET_MAX_VCPUS 64

/* What a target's guest side needs of the recording. */
struct record_session {
	const struct host_record_opts *o;
	struct kp_writer *w;
	uint32_t event_id;   /* the host samples' event, which guest samples share */
	const char *event;   /* its name as kvmprof-vmm's sample-start takes it */
	bool freq;           /* rate is in Hz, else a period */
	uint64_t rate;
	const struct kp_rec_task_layout *layout; /* a Linux guest's (--guest-export), or NULL */
	const struct kallsyms *layout_ksyms;     /* that export's kernel symbols, when it had them */
	uint64_t t_start;    /* CLOCK_MONOTONIC ns when sampling began */
};

struct vm_target;
struct vm_client;

struct vm_target_ops {
	/*
	 * Starts the guest's samples. Not having them for want of a way to
	 * take them is no failure (the host side is still worth recording):
	 * guest_status says why, once said on stderr. A VM that refuses what
	 * was asked (another recorder has its sampler, an event it cannot
	 * sample) is: -ECANCELED after a one-line message. 0, or the writer's
	 * -errno.
	 */
	int (*start)(struct vm_target *t, struct record_session *s);
	/*
	 * After each drain of the host's rings; it may shorten the next poll's
	 * timeout (ms) to when its own work is due. 0: go on; > 0: the VM went
	 * away (what to tell the user in gone_why); < 0: -errno.
	 */
	int (*step)(struct vm_target *t, struct record_session *s, short poll_revents, int *next_poll_ms);
	/* Whether host sample s (no guest mark from perf or the host kernel) is guest time by the target's rule. */
	bool (*guest_code)(const struct vm_target *t, const struct kp_rec_sample *s);
	/* A host sample of guest time (perf_ip: perf gave the guest's RIP in s). 0 or -errno. */
	int (*guest_time)(struct vm_target *t, const struct kp_rec_sample *s, bool perf_ip);
	/* Stops the guest's samples and writes the rest of them. 0 or -errno. */
	int (*stop)(struct vm_target *t, struct record_session *s);
	/* The guest side's META records (status, counts) and LOST records. 0 or -errno. */
	int (*epilogue)(struct vm_target *t, struct record_session *s);
	/* Guest samples written, and lost, so far. */
	uint64_t (*guest_samples)(const struct vm_target *t);
	uint64_t (*guest_lost)(const struct vm_target *t);
	/* Lines for the end of the recording's summary on stderr. */
	void (*summary)(const struct vm_target *t);
	/* For stat: whether poll_revents (on poll_fd) say the VM went away. */
	bool (*gone)(struct vm_target *t, short poll_revents);
	void (*close)(struct vm_target *t);
};

struct vm_target {
	const struct vm_target_ops *ops;
	pid_t pid;                     /* the VM's process: kvmprof-vmm, QEMU */
	unsigned int nvcpus;
	pid_t vcpu_tid[VM_TARGET_MAX_VCPUS]; /* by vCPU index; 0: not known yet */
	char vmm[32];                  /* "kvmprof-vmm", "qemu" */
	char what[640];                /* META command: what was recorded */
	char label[640];               /* for titles: "VM 'SOCKET' (kvmprof-vmm", "libvirt domain 'NAME' (URI, QEMU" */
	bool samples_event;            /* the VM samples its guest itself with the recording's event (kvmprof-vmm) */
	char domain[256];              /* a libvirt domain's name, "" */
	char uri[256];                 /* its connection */
	int poll_fd;                   /* readable or hung up when the VM goes away; -1 */
	int poll_ms;                   /* step runs at least this often */
	char guest_status[640];        /* META guest_sampling */
	char gone_why[320];            /* why step stopped the recording: "the VM went away (...) after 1.0 s" */
	void *priv;
};

/* kvmprof-vmm behind its control socket (for record: with its vCPU threads). 0, or 1 after a one-line message. */
int vm_target_open_vmm(struct vm_target *t, const char *socket, bool for_record);

/*
 * The running libvirt domain name at uri (NULL: qemu:///system), and for
 * record its guest sampler's settings (o; NULL for stat). 0, or 1 after
 * a one-line message. Without libvirt (the static build) always 1.
 */
int vm_target_open_domain(struct vm_target *t, const char *uri, const char *name, const struct host_record_opts *o);

void vm_target_close(struct vm_target *t);

/* kvmprof-vmm's control connection (for stat's vPMU figures and exits), or NULL for another VM. */
struct vm_client *vm_target_vmm_client(struct vm_target *t);

#endif

/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VM_H
#define KVMPROF_VM_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "acpi_pm.h"
#include "boot.h"
#include "exit_timer.h"
#include "guest_mem.h"
#include "ioport.h"
#include "kvmprof/platform.h"
#include "rtc.h"
#include "serial.h"
#include "trace.h"
#include "vcpu_hooks.h"
#include "vpmu_names.h"

/* Exit codes of kvmprof-vmm other than the guest's own power-off status. */
#define VMM_EXIT_SETUP 1        /* the VM could not be set up */
#define VMM_EXIT_USAGE 2        /* bad options */
#define VMM_EXIT_TIMEOUT 124    /* --timeout expired, as timeout(1) */
#define VMM_EXIT_GUEST_CRASH 125 /* triple fault, unhandled exit, emulation failure */
#define VMM_EXIT_INTERRUPTED 130 /* SIGINT / SIGTERM */

#define VMM_PLUGINS_MAX 8 /* --plugin: PLUGIN_MAX (plugin_host.h) */

/* --vpmu-*: the vPMU's options (the vPMU itself: pmu.h). */
struct vmm_vpmu_options {
	int model;                /* enum vpmu_model, or -1: the host's vendor */
	unsigned int counters;    /* 0: the model's maximum */
	enum vpmu_backend_choice backend;
	enum vpmu_mode mode;
	const char *filter_path;
	bool stats;
};

struct vm_config {
	const char *kernel_path;   /* NULL: the embedded bundled guest */
	const char *initrd_path;   /* NULL: no initrd, or the embedded one */
	bool initrd_embedded;
	const char *cmdline;
	const char *console_path;  /* NULL: stdout */
	const char *agent_path;    /* NULL: COM2 output is discarded */
	const char *control_path;  /* --control: the control socket (vmm/profiling/control.h); NULL: none */
	const char *kvm_device;    /* normally /dev/kvm */
	uint64_t mem_size;
	unsigned int ncpus;
	double timeout_s;          /* 0: none */
	struct vmm_vpmu_options vpmu;
	bool trace_pmi_on, trace_tick_on; /* --vpmu-trace-pmi / -tick N given (vmm/profiling/pmi_trace.h) */
	unsigned int trace_pmi, trace_tick; /* N: handlers to single-step */
	const char *trace_path;    /* --trace: the trace file (vmm/trace_file_writer.h); NULL: none */
	const char *trace_events;  /* --trace-events: globs; NULL: every event */
	bool trace_enabled[KVMPROF_TRACE_EVENT_COUNT]; /* the events --trace-events chose */
	const char *plugins[VMM_PLUGINS_MAX]; /* --plugin FILE.so[,KEY=VALUE...] (vmm/plugin_host.h) */
	unsigned int nplugins;
};

struct vm;

struct vcpu {
	struct vm *vm;
	unsigned int id;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool started;
	pid_t tid;  /* the vCPU thread's id, for the control socket: 0 until it runs */
	void *feature[VM_FEATURES_MAX];    /* each feature's state (vcpu_hooks.h: vcpu_feature) */
	struct trace_ctx trace_ctx;        /* what this vCPU's trace events carry (trace.h) */
	uint32_t sync_regs;                /* atomic: KVM_SYNC_X86_* sets wanted in kvm_run at exits, set before each entry */
	unsigned int kicks;                /* vCPU thread: the kicks (kick.h KICK_*) that ended the last run */
	struct exit_timer exit_timer;      /* forces an exit by the soonest deadline a feature asked for */
};

struct vm {
	const struct vm_config *cfg;
	int kvm_fd;
	int vm_fd;
	size_t run_size;
	struct guest_mem mem;
	struct boot_entry entry;
	struct kvm_cpuid2 *cpuid;
	const struct vcpu_hooks *const *hooks; /* the features' tables (vcpu_hooks.h), NULL-terminated */
	void *feature[VM_FEATURES_MAX];        /* their states (vm_feature) */
	struct vcpu vcpu[KVMPROF_MAX_CPUS];
	struct ioport_bus io;
	struct serial com1, com2;
	struct rtc rtc;
	struct acpi_pm acpi_pm;
	int console_fd, agent_fd;
	pthread_t main_thread;
	struct control *control; /* NULL without --control; served while vm_run runs */
	uint32_t sync_regs_cap; /* KVM_CAP_SYNC_REGS: the register sets KVM can copy into kvm_run */
	bool ran; /* vm_run was called: there are statistics to print */

	/* Stopping: the first reason wins; later ones are ignored. */
	pthread_mutex_t stop_lock;
	bool stopping;
	int exit_code;
};

/* Sets up KVM, the VM, its memory and devices; prints why on failure. */
int vm_create(struct vm *vm, const struct vm_config *cfg);
void vm_destroy(struct vm *vm);

/* Runs the vCPUs until the guest powers off, crashes, times out or is interrupted. */
int vm_run(struct vm *vm);

/* Asks every vCPU to stop; the first caller's exit code is kept. */
void vm_request_stop(struct vm *vm, int exit_code);
bool vm_stopping(struct vm *vm);

int vcpu_create(struct vm *vm, unsigned int id);
void vcpu_destroy(struct vcpu *vcpu);
void *vcpu_thread(void *arg);
void vcpu_kick(struct vcpu *vcpu);
void vcpu_dump_state(struct vcpu *vcpu);
/*
 * The registers at this exit, on the vCPU's own thread: KVM's synced copy in
 * kvm_run where it made one (kvm_valid_regs, set before the entry), else
 * KVM_GET_REGS / KVM_GET_SREGS into rbuf / sbuf. A NULL regs or sregs is not
 * read. false (errno set) when an ioctl failed.
 */
bool vcpu_exit_regs(struct vcpu *vcpu, struct kvm_regs *rbuf, struct kvm_sregs *sbuf,
		    const struct kvm_regs **regs, const struct kvm_sregs **sregs);

/* The CPL: CS.RPL in protected and long mode (CR0.PE); real mode runs at 0. */
static inline unsigned int vcpu_cpl(const struct kvm_sregs *s)
{
	return (s->cr0 & 1) ? s->cs.selector & 3 : 0;
}

int cpuid_get_supported(int kvm_fd, struct kvm_cpuid2 **out);
void cpuid_adjust_for_vcpu(struct kvm_cpuid2 *cpuid, unsigned int id, unsigned int ncpus);

#endif

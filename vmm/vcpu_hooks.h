/* SPDX-License-Identifier: MIT */
/*
 * What a feature (the vPMU, the exact backend's engine, the PMI tracer,
 * the guest sampler, ...) does in a VM's and each vCPU's life, as one
 * table of hooks. The VM takes its features' tables when it is created
 * (vm_features.c lists them, kvmtool's dev_init lists in spirit); vm.c,
 * vcpu.c and vcpu_exit.c call the hooks in table order and name no
 * feature. Every hook may be NULL. A feature's state is its own: the core
 * allocates vm_size bytes for the VM and vcpu_size for each vCPU, zeroed,
 * before vm_setup and init, frees them after the VM and each vCPU, and
 * the feature finds them with vm_feature / vcpu_feature.
 */
#ifndef KVMPROF_VCPU_HOOKS_H
#define KVMPROF_VCPU_HOOKS_H

#include <stdbool.h>
#include <stddef.h>

struct kvm_cpuid2;
struct vcpu;
struct vm;

/* The most features one VM takes. */
#define VM_FEATURES_MAX 8

struct vcpu_hooks {
	const char *name;
	size_t vm_size, vcpu_size; /* the feature's state: 0 for none */
	/* Once, after the devices and before the vCPUs: 0 or -errno (having said why). */
	int (*vm_setup)(struct vm *vm);
	/* Once every feature's vm_setup succeeded: what the feature will do, on stderr. */
	void (*announce)(const struct vm *vm);
	/* A vCPU's CPUID before KVM_SET_CPUID2: the same or a larger copy, NULL when out of memory (cpuid freed). */
	struct kvm_cpuid2 *(*cpuid)(const struct vm *vm, struct kvm_cpuid2 *cpuid);
	/* At vCPU creation: 0 or -errno (the core names the feature and the vCPU with it). */
	int (*init)(struct vcpu *vcpu);
	/* At vCPU teardown, also after a failed or missing init. */
	void (*destroy)(struct vcpu *vcpu);
	/* On the vCPU's thread, around each run. */
	void (*before_run)(struct vcpu *vcpu);
	void (*after_run)(struct vcpu *vcpu);
	/*
	 * Runs the vCPU itself instead of KVM_RUN (an engine): true if it did,
	 * with *rc KVM_RUN's result (errno set) and *kvm_ran false when no
	 * KVM exit is to be handled. The first feature that takes a run has it.
	 */
	bool (*run)(struct vcpu *vcpu, int *rc, bool *kvm_ran);
	/* After each KVM exit but a debug exit, once it is handled (also a KVM_RUN ended by a signal). */
	void (*after_exit)(struct vcpu *vcpu);
	/* A KVM_EXIT_DEBUG: true if it is this feature's (handled). The first that claims it has it. */
	bool (*debug_exit)(struct vcpu *vcpu);
	/* A KVM_EXIT_X86_RDMSR or _WRMSR: true if handled. */
	bool (*msr_exit)(struct vcpu *vcpu);
	/* When the VM ends after running: statistics on stderr. */
	void (*print_stats)(struct vm *vm);
};

/* The table the VM takes at creation: NULL-terminated, in calling order. */
extern const struct vcpu_hooks *const vm_features[];

/* vm->hooks' states: vm_hooks_alloc before vm_hooks_setup, vm_hooks_free at the end. 0 or -ENOMEM. */
int vm_hooks_alloc(struct vm *vm);
void vm_hooks_free(struct vm *vm);
/* A vCPU's: before vcpu_hooks_init, and after vcpu_hooks_destroy. 0 or -ENOMEM. */
int vcpu_hooks_alloc(struct vcpu *vcpu);
void vcpu_hooks_free(struct vcpu *vcpu);
/* The feature h's state in this VM or vCPU; NULL when the VM has no such feature or state. */
void *vm_feature(const struct vm *vm, const struct vcpu_hooks *h);
void *vcpu_feature(const struct vcpu *vcpu, const struct vcpu_hooks *h);

/* Every feature's vm_setup in order, up to a failure (0 or its -errno); then, if all succeeded, their announce. */
int vm_hooks_setup(struct vm *vm);
struct kvm_cpuid2 *vm_hooks_cpuid(const struct vm *vm, struct kvm_cpuid2 *cpuid);
void vm_hooks_print_stats(struct vm *vm);
/* Every feature's init in order, up to a failure: 0 or its -errno (vcpu_hooks_destroy tears down). */
int vcpu_hooks_init(struct vcpu *vcpu);
void vcpu_hooks_destroy(struct vcpu *vcpu);
void vcpu_hooks_before_run(struct vcpu *vcpu);
void vcpu_hooks_after_run(struct vcpu *vcpu);
bool vcpu_hooks_run(struct vcpu *vcpu, int *rc, bool *kvm_ran);
void vcpu_hooks_after_exit(struct vcpu *vcpu);
bool vcpu_hooks_debug_exit(struct vcpu *vcpu);
bool vcpu_hooks_msr_exit(struct vcpu *vcpu);

#endif

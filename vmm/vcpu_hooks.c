/* SPDX-License-Identifier: MIT */
/* Calling the VM's features' hooks (vcpu_hooks.h) in table order. */
#include "vcpu_hooks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm.h"

#define EACH(h, vm) for (const struct vcpu_hooks *const *h = (vm)->hooks; h && *h; h++)

/* h's place in the VM's table, or -1. A handful of entries: a scan costs less than a KVM exit's noise. */
static int slot_of(const struct vm *vm, const struct vcpu_hooks *h)
{
	for (int i = 0; vm->hooks && vm->hooks[i] && i < VM_FEATURES_MAX; i++)
		if (vm->hooks[i] == h)
			return i;
	return -1;
}

void *vm_feature(const struct vm *vm, const struct vcpu_hooks *h)
{
	int i = slot_of(vm, h);

	return i < 0 ? NULL : vm->feature[i];
}

void *vcpu_feature(const struct vcpu *vcpu, const struct vcpu_hooks *h)
{
	int i = vcpu->vm ? slot_of(vcpu->vm, h) : -1;

	return i < 0 ? NULL : vcpu->feature[i];
}

/* Zeroed blocks of each feature's size (vcpu_size or vm_size) into state[]. */
static int alloc_states(const struct vm *vm, void **state, bool per_vcpu)
{
	int i = 0;

	EACH(h, vm) {
		size_t size = per_vcpu ? (*h)->vcpu_size : (*h)->vm_size;

		if (i == VM_FEATURES_MAX)
			return -E2BIG;
		if (size && !state[i] && !(state[i] = calloc(1, size)))
			return -ENOMEM;
		i++;
	}
	return 0;
}

static void free_states(void **state)
{
	for (int i = 0; i < VM_FEATURES_MAX; i++) {
		free(state[i]);
		state[i] = NULL;
	}
}

int vm_hooks_alloc(struct vm *vm)
{
	return alloc_states(vm, vm->feature, false);
}

void vm_hooks_free(struct vm *vm)
{
	free_states(vm->feature);
}

int vcpu_hooks_alloc(struct vcpu *vcpu)
{
	return alloc_states(vcpu->vm, vcpu->feature, true);
}

void vcpu_hooks_free(struct vcpu *vcpu)
{
	free_states(vcpu->feature);
}

int vm_hooks_setup(struct vm *vm)
{
	EACH(h, vm) {
		int rc = (*h)->vm_setup ? (*h)->vm_setup(vm) : 0;

		if (rc)
			return rc;
	}
	EACH(h, vm) {
		if ((*h)->announce)
			(*h)->announce(vm);
	}
	return 0;
}

struct kvm_cpuid2 *vm_hooks_cpuid(const struct vm *vm, struct kvm_cpuid2 *cpuid)
{
	EACH(h, vm) {
		if (cpuid && (*h)->cpuid)
			cpuid = (*h)->cpuid(vm, cpuid);
	}
	return cpuid;
}

void vm_hooks_print_stats(struct vm *vm)
{
	EACH(h, vm) {
		if ((*h)->print_stats)
			(*h)->print_stats(vm);
	}
}

int vcpu_hooks_init(struct vcpu *vcpu)
{
	EACH(h, vcpu->vm) {
		int rc = (*h)->init ? (*h)->init(vcpu) : 0;

		if (rc) {
			fprintf(stderr, "kvmprof-vmm: vCPU %u: %s: %s\n", vcpu->id, (*h)->name, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

void vcpu_hooks_destroy(struct vcpu *vcpu)
{
	int i = 0;

	EACH(h, vcpu->vm) {
		/* A state that was never allocated (creation failed first) has nothing to tear down. */
		if ((*h)->destroy && (!(*h)->vcpu_size || vcpu->feature[i]))
			(*h)->destroy(vcpu);
		i++;
	}
}

void vcpu_hooks_before_run(struct vcpu *vcpu)
{
	EACH(h, vcpu->vm) {
		if ((*h)->before_run)
			(*h)->before_run(vcpu);
	}
}

void vcpu_hooks_after_run(struct vcpu *vcpu)
{
	EACH(h, vcpu->vm) {
		if ((*h)->after_run)
			(*h)->after_run(vcpu);
	}
}

bool vcpu_hooks_run(struct vcpu *vcpu, int *rc, bool *kvm_ran)
{
	EACH(h, vcpu->vm) {
		if ((*h)->run && (*h)->run(vcpu, rc, kvm_ran))
			return true;
	}
	return false;
}

void vcpu_hooks_after_exit(struct vcpu *vcpu)
{
	EACH(h, vcpu->vm) {
		if ((*h)->after_exit)
			(*h)->after_exit(vcpu);
	}
}

bool vcpu_hooks_debug_exit(struct vcpu *vcpu)
{
	EACH(h, vcpu->vm) {
		if ((*h)->debug_exit && (*h)->debug_exit(vcpu))
			return true;
	}
	return false;
}

bool vcpu_hooks_msr_exit(struct vcpu *vcpu)
{
	EACH(h, vcpu->vm) {
		if ((*h)->msr_exit && (*h)->msr_exit(vcpu))
			return true;
	}
	return false;
}

/* SPDX-License-Identifier: MIT */
/* Calling the VM's features' hooks (vcpu_hooks.h) in table order. */
#include "vcpu_hooks.h"

#include "vm.h"

#define EACH(h, vm) for (const struct vcpu_hooks *const *h = (vm)->hooks; h && *h; h++)

int vm_hooks_setup(struct vm *vm)
{
	EACH(h, vm) {
		int rc = (*h)->vm_setup ? (*h)->vm_setup(vm) : 0;

		if (rc)
			return rc;
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

		if (rc)
			return rc;
	}
	return 0;
}

void vcpu_hooks_destroy(struct vcpu *vcpu)
{
	EACH(h, vcpu->vm) {
		if ((*h)->destroy)
			(*h)->destroy(vcpu);
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

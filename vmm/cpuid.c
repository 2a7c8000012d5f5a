// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#include "vm.h"

int cpuid_get_supported(int kvm_fd, struct kvm_cpuid2 **out)
{
	/* The number of entries differs between hosts: grow until KVM stops saying E2BIG. */
	for (unsigned int nent = 64; nent <= 4096; nent *= 2) {
		struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + nent * sizeof(c->entries[0]));

		if (!c)
			return -ENOMEM;
		c->nent = nent;
		if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			*out = c;
			return 0;
		}
		free(c);
		if (errno != E2BIG)
			return -errno;
	}
	return -E2BIG;
}

void cpuid_adjust_for_vcpu(struct kvm_cpuid2 *cpuid, unsigned int id, unsigned int ncpus)
{
	for (unsigned int i = 0; i < cpuid->nent; i++) {
		struct kvm_cpuid_entry2 *e = &cpuid->entries[i];

		switch (e->function) {
		case 1:
			/* Initial APIC ID and logical processor count, as the MP table says. */
			e->ebx = (e->ebx & 0x0000ffff) | (id << 24) | ((ncpus & 0xff) << 16);
			e->ecx |= 1u << 31; /* running under a hypervisor */
			break;
		case 0xb:
		case 0x1f:
			e->edx = id;
			break;
		default:
			break;
		}
	}
}

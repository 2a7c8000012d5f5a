// SPDX-License-Identifier: MIT
/*
 * The `kvm` backend: KVM's in-kernel vPMU, configured rather than emulated.
 * KVM then serves the guest's PMU MSRs and RDPMC itself (no MSR exits), with
 * KVM_CAP_PMU_CAPABILITY to turn it off and KVM_SET_PMU_EVENT_FILTER to
 * filter events. Where KVM's vPMU does not work (the PVM host, see
 * docs/platform.md) vpmu_kvm_probe says so and the emulated backend is used.
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "backend_kvm.h"
#include "backends.h"
#include "vpmu_names.h"

#define PROBE_VALUE 0x1234ULL
#define CPUID_MAX_ENTRIES 256



/* The kvm module's enable_pmu parameter: "Y", "N", or "?" when it cannot be read. */
static const char *enable_pmu_param(void)
{
	char c = '?';
	int fd = open("/sys/module/kvm/parameters/enable_pmu", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = '?';
		close(fd);
	}
	return c == 'Y' ? "Y" : c == 'N' ? "N" : "?";
}

static const struct kvm_cpuid_entry2 *cpuid_find(const struct kvm_cpuid2 *c, uint32_t fn)
{
	for (uint32_t i = 0; i < c->nent; i++)
		if (c->entries[i].function == fn && c->entries[i].index == 0)
			return &c->entries[i];
	return NULL;
}

/* What KVM_GET_SUPPORTED_CPUID advertises about the PMU, for the probe's reason. */
static void describe_cpuid_pmu(const struct kvm_cpuid2 *c, enum vpmu_host_vendor host, char *buf,
			       size_t size)
{
	const struct kvm_cpuid_entry2 *e;

	if (host == VPMU_HOST_INTEL) {
		e = cpuid_find(c, 0xa);
		snprintf(buf, size, "supported CPUID 0xA: version %u, %u GP counters",
			 e ? e->eax & 0xff : 0, e ? (e->eax >> 8) & 0xff : 0);
		return;
	}
	e = cpuid_find(c, 0x80000001);
	const struct kvm_cpuid_entry2 *v2 = cpuid_find(c, 0x80000022);
	snprintf(buf, size, "supported CPUID: PerfCtrCore %s, PerfMonV2 %s",
		 e && (e->ecx >> 23) & 1 ? "yes" : "no", v2 && (v2->eax & 1) ? "yes" : "no");
}

int vpmu_kvm_probe(char reason[VPMU_ERR_MAX])
{
	enum vpmu_host_vendor host = vpmu_host_vendor();
	struct {
		struct kvm_msrs m;
		struct kvm_msr_entry e[1];
	} ms;
	struct kvm_cpuid2 *cpuid = NULL;
	int kvm = -1, vm = -1, vcpu = -1, cap, r = -ENODEV, nset, nget;
	uint32_t msr;
	const char *msr_name;
	char cpuid_desc[96], cap_desc[64];

	if (host == VPMU_HOST_OTHER) {
		vpmu_set_err(reason, "host CPU is neither AMD nor Intel: no KVM vPMU to probe");
		return -ENODEV;
	}
	msr = host == VPMU_HOST_AMD ? MSR_K7_PERFCTR0 : MSR_IA32_PMC0;
	msr_name = host == VPMU_HOST_AMD ? "AMD PERF_CTR0" : "Intel IA32_PMC0";

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		vpmu_set_err(reason, "cannot open /dev/kvm: %s", strerror(errno));
		return -ENODEV;
	}
	/* 0 when kvm.enable_pmu is off (or before Linux 5.18): evidence, not yet the verdict. */
	cap = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_PMU_CAPABILITY);
	snprintf(cap_desc, sizeof cap_desc, "KVM_CAP_PMU_CAPABILITY %d, kvm.enable_pmu %s", cap < 0 ? 0 : cap,
		 enable_pmu_param());
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0) {
		vpmu_set_err(reason, "KVM_CREATE_VM: %s", strerror(errno));
		goto out;
	}
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0) {
		vpmu_set_err(reason, "KVM_CREATE_VCPU: %s", strerror(errno));
		goto out;
	}
	cpuid = calloc(1, sizeof *cpuid + CPUID_MAX_ENTRIES * sizeof cpuid->entries[0]);
	if (!cpuid) {
		vpmu_set_err(reason, "out of memory");
		r = -ENOMEM;
		goto out;
	}
	cpuid->nent = CPUID_MAX_ENTRIES;
	if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, cpuid) < 0) {
		vpmu_set_err(reason, "KVM_GET_SUPPORTED_CPUID: %s", strerror(errno));
		goto out;
	}
	describe_cpuid_pmu(cpuid, host, cpuid_desc, sizeof cpuid_desc);
	if (host == VPMU_HOST_INTEL) {
		const struct kvm_cpuid_entry2 *e = cpuid_find(cpuid, 0xa);

		if (!e || !(e->eax & 0xff) || !((e->eax >> 8) & 0xff)) {
			vpmu_set_err(reason, "KVM advertises no guest PMU (%s)", cpuid_desc);
			goto out;
		}
	}
	if (ioctl(vcpu, KVM_SET_CPUID2, cpuid) < 0) {
		vpmu_set_err(reason, "KVM_SET_CPUID2: %s", strerror(errno));
		goto out;
	}

	/* A host-initiated write of a counter MSR must stick in a working vPMU. */
	memset(&ms, 0, sizeof ms);
	ms.m.nmsrs = 1;
	ms.e[0].index = msr;
	ms.e[0].data = PROBE_VALUE;
	nset = ioctl(vcpu, KVM_SET_MSRS, &ms);
	ms.e[0].data = 0;
	nget = ioctl(vcpu, KVM_GET_MSRS, &ms);
	if (nset != 1)
		vpmu_set_err(reason, "in-kernel vPMU not functional: KVM_SET_MSRS of MSR %#x (%s) = %#llx %s (%s; %s)",
			msr, msr_name, PROBE_VALUE, nset < 0 ? strerror(errno) : "was refused", cap_desc,
			cpuid_desc);
	else if (nget != 1)
		vpmu_set_err(reason, "in-kernel vPMU not functional: KVM_GET_MSRS of MSR %#x (%s) %s (%s; %s)", msr,
			msr_name, nget < 0 ? strerror(errno) : "was refused", cap_desc, cpuid_desc);
	else if (ms.e[0].data != PROBE_VALUE)
		vpmu_set_err(reason,
			"in-kernel vPMU not functional: KVM_SET_MSRS accepted %#llx for MSR %#x (%s) "
			"but KVM_GET_MSRS reads back 0x%llx, writes are dropped (%s; %s)",
			PROBE_VALUE, msr, msr_name, (unsigned long long)ms.e[0].data, cap_desc, cpuid_desc);
	else {
		vpmu_set_err(reason, "in-kernel vPMU works: MSR %#x (%s) reads back %#llx (%s; %s)", msr, msr_name,
			PROBE_VALUE, cap_desc, cpuid_desc);
		r = 0;
	}
out:
	free(cpuid);
	if (vcpu >= 0)
		close(vcpu);
	if (vm >= 0)
		close(vm);
	close(kvm);
	return r;
}

int vpmu_kvm_build_filter(const struct vpmu_filter *f, enum vpmu_host_vendor host,
			  struct kvm_pmu_event_filter **out)
{
	struct kvm_pmu_event_filter *k;

	if (!f || !out || f->nevents > VPMU_FILTER_MAX_EVENTS ||
	    (f->action != VPMU_FILTER_ALLOW && f->action != VPMU_FILTER_DENY))
		return -EINVAL;
	k = calloc(1, sizeof *k + f->nevents * sizeof k->events[0]);
	if (!k)
		return -ENOMEM;
	k->action = f->action == VPMU_FILTER_ALLOW ? KVM_PMU_EVENT_ALLOW : KVM_PMU_EVENT_DENY;
	k->nevents = f->nevents;
	k->fixed_counter_bitmap = f->fixed_bitmap;
	k->flags = 0;
	for (unsigned int i = 0; i < f->nevents; i++) {
		uint64_t sel = f->events[i].select;

		if (sel > 0xfff || (sel > 0xff && host != VPMU_HOST_AMD)) {
			free(k);
			return -EINVAL; /* only AMD has event select bits 11:8 */
		}
		k->events[i] = (sel & 0xff) | (uint64_t)f->events[i].umask << 8 | (sel >> 8) << 32;
	}
	*out = k;
	return 0;
}

int vpmu_kvm_setup(int vm_fd, const struct vpmu_config *cfg, const struct vpmu_filter *filter,
		   char err[VPMU_ERR_MAX])
{
	struct kvm_pmu_event_filter *k;
	int cap, r;

	if (vm_fd < 0 || !cfg) {
		vpmu_set_err(err, "kvm vPMU: no VM");
		return -EINVAL;
	}
	if (!filter)
		filter = cfg->filter;

	if (cfg->model == VPMU_MODEL_OFF) {
		struct kvm_enable_cap ec = { .cap = KVM_CAP_PMU_CAPABILITY,
					     .args = { KVM_PMU_CAP_DISABLE } };

		cap = ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_PMU_CAPABILITY);
		if (cap <= 0 && !strcmp(enable_pmu_param(), "N"))
			return 0; /* kvm.enable_pmu=N: no VM has an in-kernel vPMU */
		if (cap <= 0 || !(cap & KVM_PMU_CAP_DISABLE)) {
			vpmu_set_err(err,
				"kvm vPMU: KVM cannot disable its vPMU (no KVM_CAP_PMU_CAPABILITY "
				"DISABLE: a kernel before 5.18?)");
			return -EOPNOTSUPP;
		}
		if (ioctl(vm_fd, KVM_ENABLE_CAP, &ec) < 0) {
			r = -errno;
			vpmu_set_err(err, "kvm vPMU: KVM_ENABLE_CAP(KVM_CAP_PMU_CAPABILITY, DISABLE): %s%s",
				strerror(-r),
				r == -EINVAL ? " (it must be set before any vCPU is created)" : "");
			return r;
		}
		return 0;
	}

	if ((cfg->model == VPMU_MODEL_AMD) != (cfg->host == VPMU_HOST_AMD) ||
	    (cfg->model == VPMU_MODEL_INTEL) != (cfg->host == VPMU_HOST_INTEL)) {
		vpmu_set_err(err,
			"kvm vPMU: KVM's vPMU offers the host's own PMU: model '%s' needs a %s host",
			vpmu_model_name(cfg->model), cfg->model == VPMU_MODEL_AMD ? "AMD" : "Intel");
		return -EINVAL;
	}
	if (!filter)
		return 0;

	cap = ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_PMU_EVENT_FILTER);
	if (cap <= 0) {
		vpmu_set_err(err, "kvm vPMU: KVM does not offer KVM_CAP_PMU_EVENT_FILTER");
		return -EOPNOTSUPP;
	}
	r = vpmu_kvm_build_filter(filter, cfg->host, &k);
	if (r) {
		vpmu_set_err(err, "kvm vPMU: %s", r == -ENOMEM ? "out of memory"
						     : "the event filter has event selects above 0xff, which only AMD has");
		return r;
	}
	if (ioctl(vm_fd, KVM_SET_PMU_EVENT_FILTER, k) < 0) {
		r = -errno;
		vpmu_set_err(err, "kvm vPMU: KVM_SET_PMU_EVENT_FILTER (%s, %u events, fixed %#x): %s",
			filter->action == VPMU_FILTER_ALLOW ? "allow" : "deny", filter->nevents,
			filter->fixed_bitmap, strerror(-r));
		free(k);
		return r;
	}
	free(k);
	return 0;
}

static int kvm_vm_setup(int vm_fd, const struct vpmu_config *cfg, char err[VPMU_ERR_MAX])
{
	return vpmu_kvm_setup(vm_fd, cfg, cfg->filter, err);
}

const struct vpmu_backend_desc vpmu_backend_kvm = {
	.choice = VPMU_BACKEND_KVM,
	.what = "kvm backend (in-kernel vPMU)",
	.probe = vpmu_kvm_probe,
	.unavailable = "the in-kernel vPMU is unavailable: ",
	.auto_pick = true,
	.in_kernel = true,
	.vm_setup = kvm_vm_setup,
};

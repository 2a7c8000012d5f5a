// SPDX-License-Identifier: MIT
/* The guest-visible PMU models: counter counts, CPUID leaves, the MSR ranges each owns. */
#include <cpuid.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kvmprof/vpmu_sbuf.h"
#include "vpmu.h"
#include "vpmu_names.h"

void vpmu_set_err(char *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err, VPMU_ERR_MAX, fmt, ap);
	va_end(ap);
}

enum vpmu_host_vendor vpmu_host_vendor(void)
{
	unsigned int eax, ebx, ecx, edx;
	char v[13];

	if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx))
		return VPMU_HOST_OTHER;
	memcpy(v, &ebx, 4);
	memcpy(v + 4, &edx, 4);
	memcpy(v + 8, &ecx, 4);
	v[12] = '\0';
	if (!strcmp(v, "AuthenticAMD") || !strcmp(v, "HygonGenuine"))
		return VPMU_HOST_AMD;
	if (!strcmp(v, "GenuineIntel"))
		return VPMU_HOST_INTEL;
	return VPMU_HOST_OTHER;
}

int vpmu_config_init(struct vpmu_config *cfg, enum vpmu_model model, unsigned int requested_gp,
		     enum vpmu_mode mode, enum vpmu_host_vendor host, char err[VPMU_ERR_MAX])
{
	unsigned int max = model == VPMU_MODEL_AMD ? VPMU_AMD_MAX_GP :
			   model == VPMU_MODEL_INTEL ? VPMU_INTEL_MAX_GP : 0;

	*cfg = (struct vpmu_config){ .model = model, .mode = mode, .host = host };
	if (model == VPMU_MODEL_OFF)
		return 0;
	if (requested_gp > max) {
		snprintf(err, VPMU_ERR_MAX, "--vpmu-counters %u: the %s model has at most %u counters",
			 requested_gp, vpmu_model_name(model), max);
		return -EINVAL;
	}
	cfg->n_gp = requested_gp ? requested_gp : max;
	cfg->n_fixed = model == VPMU_MODEL_INTEL ? VPMU_MAX_FIXED : 0;
	return 0;
}

void vpmu_cpuid_adjust(const struct vpmu_config *cfg, struct vpmu_cpuid_leaf *leaf)
{
	bool intel = cfg->model == VPMU_MODEL_INTEL, amd = cfg->model == VPMU_MODEL_AMD;

	switch (leaf->function) {
	case 0x1:
		/* PDCM: IA32_PERF_CAPABILITIES exists (and says full-width writes work). */
		if (intel)
			leaf->ecx |= 1u << 15;
		else
			leaf->ecx &= ~(1u << 15);
		break;
	case 0xa:
		if (intel) {
			leaf->eax = 2 | (cfg->n_gp << 8) | (VPMU_WIDTH << 16) | (7u << 24);
			/*
			 * EBX: a set bit marks an architectural event unavailable. All
			 * seven, except under the exact backend, which counts cycles,
			 * instructions, reference cycles and branches, and not LLC
			 * references (bit 3), LLC misses (4) or branch mispredicts (6).
			 */
			leaf->ebx = cfg->exact ? (1u << 3 | 1u << 4 | 1u << 6) : 0;
			leaf->ecx = 0;
			leaf->edx = cfg->n_fixed | (VPMU_WIDTH << 5);
		} else {
			leaf->eax = leaf->ebx = leaf->ecx = leaf->edx = 0;
		}
		break;
	case 0x80000001:
		if (amd)
			leaf->ecx |= 1u << 23; /* PerfCtrExtCore */
		else
			leaf->ecx &= ~(1u << 23);
		break;
	case 0x80000022:
		leaf->eax = leaf->ebx = leaf->ecx = leaf->edx = 0;
		if (amd) {
			leaf->eax = 1;          /* PerfMonV2 */
			leaf->ebx = cfg->n_gp;  /* NumPerfCtrCore */
		}
		break;
	case KP_CPUID_LEAF:
		*leaf = (struct vpmu_cpuid_leaf){ .function = KP_CPUID_LEAF };
		if (cfg->sbuf)
			*leaf = (struct vpmu_cpuid_leaf){ KP_CPUID_LEAF, KP_CPUID_FEATURES, KP_CPUID_SIG_EBX,
							  KP_CPUID_SIG_ECX, KP_CPUID_SIG_EDX };
		break;
	case KP_CPUID_FEATURES:
		*leaf = (struct vpmu_cpuid_leaf){ .function = KP_CPUID_FEATURES };
		if (cfg->sbuf)
			*leaf = (struct vpmu_cpuid_leaf){ KP_CPUID_FEATURES, KP_CPUID_SBUF, KP_MSR_SBUF_CTL, 0, 0 };
		break;
	default:
		break;
	}
}

/*
 * Both vendors' registers are taken whatever the model, so that a guest
 * probing the other vendor's MSRs gets what that CPU would give it (#GP or
 * nothing), never KVM's half-working in-kernel vPMU.
 */
static const struct vpmu_msr_range pmu_msr_ranges[] = {
	/* AMD */
	{ MSR_K7_EVNTSEL0, 8 },
	{ MSR_F15H_PERF_CTL0, 2 * VPMU_AMD_MAX_GP },
	{ MSR_AMD64_PERF_CNTR_GLOBAL_STATUS, 4 },
	/* Intel */
	{ MSR_IA32_PMC0, VPMU_INTEL_MAX_GP },
	{ MSR_IA32_PERFEVTSEL0, VPMU_INTEL_MAX_GP },
	{ MSR_CORE_PERF_FIXED_CTR0, VPMU_MAX_FIXED },
	{ MSR_IA32_PERF_CAPABILITIES, 1 },
	{ MSR_CORE_PERF_FIXED_CTR_CTRL, 4 },
	{ MSR_IA32_PMC0_FULL, VPMU_INTEL_MAX_GP },
};
#define PMU_MSR_RANGES (sizeof(pmu_msr_ranges) / sizeof(pmu_msr_ranges[0]))
_Static_assert(PMU_MSR_RANGES + 1 <= VPMU_MAX_MSR_RANGES, "VPMU_MAX_MSR_RANGES too small (the sample buffer's range too)");

unsigned int vpmu_msr_ranges(const struct vpmu_config *cfg, struct vpmu_msr_range *out)
{
	if (cfg->model == VPMU_MODEL_OFF)
		return 0;
	for (unsigned int i = 0; i < PMU_MSR_RANGES; i++)
		out[i] = pmu_msr_ranges[i];
	if (!cfg->sbuf)
		return PMU_MSR_RANGES;
	out[PMU_MSR_RANGES] = (struct vpmu_msr_range){ KP_MSR_SBUF_CTL, KP_SBUF_MSRS };
	return PMU_MSR_RANGES + 1;
}

bool vpmu_msr_owned(const struct vpmu_config *cfg, uint32_t msr)
{
	if (cfg->model == VPMU_MODEL_OFF)
		return false;
	for (unsigned int i = 0; i < PMU_MSR_RANGES; i++)
		if (msr >= pmu_msr_ranges[i].base && msr - pmu_msr_ranges[i].base < pmu_msr_ranges[i].count)
			return true;
	return vpmu_sbuf_msr(cfg, msr);
}

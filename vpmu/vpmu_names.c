// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vpmu_names.h"

#define NAMES(rows) { rows, sizeof(rows) / sizeof(rows[0]) }

static const struct vpmu_name model_rows[] = {
	{ "off", VPMU_MODEL_OFF, NULL },
	{ "amd", VPMU_MODEL_AMD, NULL },
	{ "intel", VPMU_MODEL_INTEL, NULL },
};

static const struct vpmu_name backend_rows[] = {
	{ "emulated", VPMU_BACKEND_EMULATED, "a host perf_event per counter" },
	{ "kvm", VPMU_BACKEND_KVM, "KVM's in-kernel vPMU" },
	{ "exact", VPMU_BACKEND_EXACT,
	  "instructions and branches counted by\n"
	  "running counting vCPUs in an emulator,\n"
	  "cycles from run time; for hosts without\n"
	  "hardware counters" },
	{ "clock", VPMU_BACKEND_CLOCK, "cycles from the vCPU thread's run time\nat 1 GHz, other events 0" },
	{ "auto", VPMU_BACKEND_AUTO, "kvm if it works, else emulated, else\nexact (the default)" },
};

static const struct vpmu_name mode_rows[] = {
	{ "cpu-switch", VPMU_MODE_CPU_SWITCH, NULL },
	{ "domain-switch", VPMU_MODE_DOMAIN_SWITCH, NULL },
};

const struct vpmu_names vpmu_model_names = NAMES(model_rows);
const struct vpmu_names vpmu_backend_names = NAMES(backend_rows);
const struct vpmu_names vpmu_mode_names = NAMES(mode_rows);

const char *vpmu_name_of(const struct vpmu_names *t, int value)
{
	for (size_t i = 0; i < t->count; i++)
		if (t->row[i].value == value)
			return t->row[i].name;
	return "?";
}

int vpmu_name_parse(const struct vpmu_names *t, const char *s, int *value)
{
	for (size_t i = 0; i < t->count; i++) {
		if (!strcmp(t->row[i].name, s)) {
			*value = t->row[i].value;
			return 0;
		}
	}
	return -EINVAL;
}

void vpmu_name_choices(const struct vpmu_names *t, char *buf, size_t size)
{
	size_t used = 0;

	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < t->count && used < size; i++) {
		const char *sep = i == 0 ? "" : i + 1 == t->count ? " or " : ", ";
		int n = snprintf(buf + used, size - used, "%s%s", sep, t->row[i].name);

		if (n < 0)
			return;
		used += (size_t)n;
	}
}

void vpmu_name_help(const struct vpmu_names *t, FILE *out, int indent)
{
	int width = 0;

	for (size_t i = 0; i < t->count; i++)
		if (t->row[i].help && (int)strlen(t->row[i].name) > width)
			width = (int)strlen(t->row[i].name);
	for (size_t i = 0; i < t->count; i++) {
		const char *h = t->row[i].help;

		if (!h)
			continue;
		fprintf(out, "%*s%-*s  ", indent, "", width, t->row[i].name);
		for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
			fprintf(out, "%.*s\n%*s", (int)(nl - h), h, indent + width + 2, "");
		fprintf(out, "%s\n", h);
	}
}

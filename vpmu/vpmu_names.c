// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vpmu_names.h"

#define NAMES(rows) { rows, sizeof(rows) / sizeof(rows[0]) }

static const struct vpmu_name model_rows[] = {
	{ "off", VPMU_MODEL_OFF },
	{ "amd", VPMU_MODEL_AMD },
	{ "intel", VPMU_MODEL_INTEL },
};

static const struct vpmu_name backend_rows[] = {
	{ "emulated", VPMU_BACKEND_EMULATED },
	{ "kvm", VPMU_BACKEND_KVM },
	{ "exact", VPMU_BACKEND_EXACT },
	{ "clock", VPMU_BACKEND_CLOCK },
	{ "auto", VPMU_BACKEND_AUTO },
};

static const struct vpmu_name mode_rows[] = {
	{ "cpu-switch", VPMU_MODE_CPU_SWITCH },
	{ "domain-switch", VPMU_MODE_DOMAIN_SWITCH },
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

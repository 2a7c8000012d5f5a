/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VPMU_NAMES_H
#define KVMPROF_VPMU_NAMES_H

#include <stddef.h>
#include <stdio.h>

#include "vpmu.h"

/* Which implementation of the vPMU a VM gets: asked for on the command line, then resolved. */
enum vpmu_backend_choice {
	VPMU_BACKEND_AUTO,     /* asked for only: resolves to one of the others */
	VPMU_BACKEND_EMULATED, /* a host perf_event per guest counter */
	VPMU_BACKEND_KVM,      /* KVM's in-kernel vPMU */
	VPMU_BACKEND_CLOCK,    /* cycles from the vCPU thread's run time */
	VPMU_BACKEND_EXACT,    /* instructions and branches counted in an emulator */
};

/*
 * The one table of the names the VMM accepts and prints for the vPMU's
 * model, backend and mode: options, messages, statistics and the control
 * socket all go through it. Rows are in the order messages list them.
 */
struct vpmu_name {
	const char *name;
	int value;
	const char *help; /* what --help says of it (lines split by \n), or NULL */
};

struct vpmu_names {
	const struct vpmu_name *row;
	size_t count;
};

extern const struct vpmu_names vpmu_model_names;   /* enum vpmu_model */
extern const struct vpmu_names vpmu_backend_names; /* enum vpmu_backend_choice */
extern const struct vpmu_names vpmu_mode_names;    /* enum vpmu_mode */

/* The name of value, or "?" for a value the table lacks. */
const char *vpmu_name_of(const struct vpmu_names *t, int value);
/* The value named s: 0, or -EINVAL if no row has that name. */
int vpmu_name_parse(const struct vpmu_names *t, const char *s, int *value);
/* Every row with a help text, for --help: "  NAME  HELP" lines, each indent spaces in. */
void vpmu_name_help(const struct vpmu_names *t, FILE *out, int indent);
/* Every name, for a message: "off, amd or intel". */
void vpmu_name_choices(const struct vpmu_names *t, char *buf, size_t size);

static inline const char *vpmu_model_name(enum vpmu_model m)
{
	return vpmu_name_of(&vpmu_model_names, (int)m);
}

static inline const char *vpmu_backend_name(enum vpmu_backend_choice b)
{
	return vpmu_name_of(&vpmu_backend_names, (int)b);
}

static inline const char *vpmu_mode_name(enum vpmu_mode m)
{
	return vpmu_name_of(&vpmu_mode_names, (int)m);
}

#endif

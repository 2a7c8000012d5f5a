/* SPDX-License-Identifier: MIT */
/*
 * Argument parsing shared by the example plugins: each argument is
 * key=value (the loader guarantees the '='), parsed whole or refused.
 * Header-only so each plugin stays one .so built from one .c.
 */
#ifndef PLUGIN_ARGS_H
#define PLUGIN_ARGS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The value of arg when its key is key, else NULL. */
static inline const char *plugin_arg_value(const char *arg, const char *key)
{
	size_t n = strlen(key);

	return !strncmp(arg, key, n) && arg[n] == '=' ? arg + n + 1 : NULL;
}

/* A whole unsigned number (decimal, or 0x hex) into *out: true, or false for anything else. */
static inline bool plugin_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

/* "yes"/"on"/"1" or "no"/"off"/"0" into *out: true, or false for anything else. */
static inline bool plugin_parse_bool(const char *s, bool *out)
{
	if (!strcmp(s, "yes") || !strcmp(s, "on") || !strcmp(s, "1"))
		*out = true;
	else if (!strcmp(s, "no") || !strcmp(s, "off") || !strcmp(s, "0"))
		*out = false;
	else
		return false;
	return true;
}

#endif

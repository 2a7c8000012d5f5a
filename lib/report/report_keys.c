/* SPDX-License-Identifier: MIT */
/* --sort KEYS: perf report's key names and the two aliases (image, symbol) kvmprof has always used. */
#include "report/report_keys.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct {
	const char *name, *alias;
} key_names[REPORT_KEY_COUNT] = {
	[REPORT_KEY_COMM] = { "comm", NULL },
	[REPORT_KEY_PID] = { "pid", NULL },
	[REPORT_KEY_TID] = { "tid", NULL },
	[REPORT_KEY_DSO] = { "dso", "image" },
	[REPORT_KEY_SYM] = { "sym", "symbol" },
	[REPORT_KEY_DOMAIN] = { "domain", NULL },
	[REPORT_KEY_PROCESS] = { "process", NULL },
};

const char *report_key_name(enum report_key key)
{
	return key < REPORT_KEY_COUNT ? key_names[key].name : "?";
}

bool report_keys_has(const struct report_keys *k, enum report_key key)
{
	for (unsigned i = 0; i < k->nr; i++)
		if (k->key[i] == key)
			return true;
	return false;
}

void report_keys_valid(char *buf, size_t len, unsigned accepted)
{
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	for (int k = 0; k < REPORT_KEY_COUNT && n < len; k++) {
		int w;

		if (!(accepted & REPORT_KEY_BIT(k)))
			continue;
		w = snprintf(buf + n, len - n, "%s%s%s%s%s", n ? ", " : "", key_names[k].name,
			     key_names[k].alias ? " (or " : "", key_names[k].alias ? key_names[k].alias : "",
			     key_names[k].alias ? ")" : "");
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

int report_keys_parse(const char *s, unsigned accepted, struct report_keys *out, char *err, size_t errlen)
{
	char valid[200];
	const char *p = s;

	out->nr = 0;
	report_keys_valid(valid, sizeof(valid), accepted);
	for (;;) {
		size_t n = strcspn(p, ",");
		int found = -1;

		for (int k = 0; k < REPORT_KEY_COUNT && found < 0; k++)
			if ((accepted & REPORT_KEY_BIT(k)) &&
			    ((strlen(key_names[k].name) == n && !strncmp(p, key_names[k].name, n)) ||
			     (key_names[k].alias && strlen(key_names[k].alias) == n && !strncmp(p, key_names[k].alias, n))))
				found = k;
		if (found < 0) {
			if (n)
				snprintf(err, errlen, "unknown sort key '%.*s' in '%s' (valid keys: %s)", (int)n, p, s, valid);
			else
				snprintf(err, errlen, "empty sort key in '%s' (valid keys: %s)", s, valid);
			return -EINVAL;
		}
		if (report_keys_has(out, (enum report_key)found)) {
			snprintf(err, errlen, "sort key '%s' given twice in '%s'", key_names[found].name, s);
			return -EINVAL;
		}
		out->key[out->nr++] = (enum report_key)found;
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

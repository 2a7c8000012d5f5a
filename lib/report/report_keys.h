/* SPDX-License-Identifier: MIT */
/*
 * perf report's --sort keys, shared by both report commands: a comma list
 * of keys in any order ("comm,dso", "pid,sym"), whose order is the table's
 * column order and whose values group samples into rows. Which keys a
 * program accepts is its own: `process` (the guest process of a
 * system-wide recording) is kvmprof's.
 */
#ifndef KVMPROF_REPORT_KEYS_H
#define KVMPROF_REPORT_KEYS_H

#include <stdbool.h>
#include <stddef.h>

enum report_key {
	REPORT_KEY_COMM,    /* the command */
	REPORT_KEY_PID,     /* the process: pid and its command (perf's pid key is per thread: tid here) */
	REPORT_KEY_TID,     /* the thread: tid and its command, as perf's pid key */
	REPORT_KEY_DSO,     /* the image (alias image) */
	REPORT_KEY_SYM,     /* the sampled function (alias symbol); its image shows with it unless dso is a key */
	REPORT_KEY_DOMAIN,  /* where the sample ran: user or kernel, or the host profiler's four layers */
	REPORT_KEY_PROCESS, /* kvmprof: the guest process (or VMM thread) as "command [pid]" */
	REPORT_KEY_COUNT,
};

#define REPORT_KEY_BIT(k) (1u << (k))
/* The keys every report command accepts. */
#define REPORT_KEYS_COMMON                                                                              \
	(REPORT_KEY_BIT(REPORT_KEY_COMM) | REPORT_KEY_BIT(REPORT_KEY_PID) | REPORT_KEY_BIT(REPORT_KEY_TID) | \
	 REPORT_KEY_BIT(REPORT_KEY_DSO) | REPORT_KEY_BIT(REPORT_KEY_SYM) | REPORT_KEY_BIT(REPORT_KEY_DOMAIN))

struct report_keys {
	enum report_key key[REPORT_KEY_COUNT]; /* in the order given */
	unsigned nr;
};

/*
 * Parses "KEY[,KEY...]" with the keys in `accepted` (REPORT_KEY_BIT mask).
 * 0, or -EINVAL with a one-line reason in err naming the valid keys
 * (an unknown or repeated key, an empty list).
 */
int report_keys_parse(const char *s, unsigned accepted, struct report_keys *out, char *err, size_t errlen);
bool report_keys_has(const struct report_keys *k, enum report_key key);
/* The key's name as --sort takes it ("dso"). */
const char *report_key_name(enum report_key key);
/* "comm, pid, dso (or image), ..." for messages and --help. */
void report_keys_valid(char *buf, size_t len, unsigned accepted);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The hottest symbols of a system-wide profile: samples counted by
 * (domain, process, function) where the sample's own address is, sorted
 * hottest first. kvmprof report's table and kvmprof top's refreshes are
 * both this table.
 */
#ifndef HOST_HOT_TABLE_H
#define HOST_HOT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "host_report.h"
#include "keymap.h"
#include "profile.h"

struct hot_row {
	uint32_t layer; /* enum host_layer */
	uint32_t pid, comm, func;
	uint64_t count;
};

struct hot_table {
	struct hot_row *rows; /* hottest first; ties by domain, symbol, process, pid */
	size_t nr, cap;
	uint64_t total;       /* samples counted: the rows' counts add up to it */
	uint64_t by_layer[HOST_LAYER_COUNT];
	struct keymap index;
};

/*
 * Counts p's samples into t (emptied first; t zeroed before the first
 * call). by_process: a row per process too, else per domain and function
 * only. 0 or -ENOMEM.
 */
int hot_table_build(struct hot_table *t, const struct profile *p, bool by_process);
void hot_table_free(struct hot_table *t);

/* The domain's name as the tables show it: "guest user", "guest kernel", "VMM user", "host kernel". */
const char *hot_layer_name(uint32_t layer);

/*
 * One row as a line (no newline), "samples % domain [process] image symbol",
 * in the widths of hot_table_print_heading; names from the recorded system
 * are made safe for a terminal. width: at most that many bytes (0: no limit).
 */
void hot_table_print_heading(FILE *out, bool by_process);
void hot_table_print_row(FILE *out, const struct profile *p, const struct hot_table *t, const struct hot_row *r,
			 bool by_process, size_t width);

#endif

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

/* Which columns a table shows, how wide. */
struct hot_columns {
	bool process, image;  /* the process ("matmul [1]") and image columns */
	int process_width, image_width; /* names are padded to these; cut to them when cut is set */
	bool cut;
	size_t width;         /* a line's most bytes (a terminal's width); 0: no limit */
};
/* kvmprof report's: every column, nothing cut. */
#define HOT_COLUMNS_REPORT(by_process) ((struct hot_columns){ (by_process), true, 28, 20, false, 0 })

/*
 * The heading, and one row as a line (no newline): "samples % domain
 * [process] [image] symbol". Names from the recorded system are made safe
 * for a terminal.
 */
void hot_table_print_heading(FILE *out, const struct hot_columns *c);
void hot_table_print_row(FILE *out, const struct profile *p, const struct hot_table *t, const struct hot_row *r,
			 const struct hot_columns *c);

#endif

/* SPDX-License-Identifier: MIT */
/* `kvmprof top --vm SOCKET`: a running VM's hottest guest and host symbols, refreshed (top.c). */
#ifndef HOST_TOP_H
#define HOST_TOP_H

#include <stdbool.h>

#include "host_record.h"
#include "report/report_table.h"

#define HOST_TOP_DELAY_DEFAULT 2.0

struct host_top_opts {
	struct host_record_opts rec; /* --vm, -e, -F, -c: as kvmprof record takes them */
	double delay;                /* -d: seconds between refreshes */
	unsigned long iterations;    /* -n: refreshes before exiting; 0: until q, Ctrl-C or the VM exits */
	bool stdio;                  /* --stdio: plain text blocks even on a terminal */
	const char *guest_root;      /* --guest-root: the guest's files, as for kvmprof report */
	const char *guest_kernel;    /* --guest-kernel: the guest's kernel ELF, as for kvmprof report */
	bool no_demangle;            /* --no-demangle: C++ and Rust names as mangled, as for kvmprof report */
	/* The table: kvmprof report's (host_report_table_defaults), with --sort, --percent-limit and the filters */
	struct report_table_options table;
};

/* Prints its own messages. The exit status: 0 (q, Ctrl-C, -n reached, the VM exited), or 1. */
int host_top_run(const struct host_top_opts *o);

#endif

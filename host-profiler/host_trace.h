/* SPDX-License-Identifier: MIT */
/* `kvmprof trace -i FILE [--counts]`: prints a kvmprof-vmm --trace file (docs/trace.md). */
#ifndef KVMPROF_HOST_TRACE_H
#define KVMPROF_HOST_TRACE_H

/* argv[0] is "trace". Exit code: 0 done, 1 a bad or unreadable file, 2 bad usage. */
int host_trace_main(int argc, char **argv);

#endif

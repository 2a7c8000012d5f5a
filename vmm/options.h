/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_OPTIONS_H
#define KVMPROF_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "vm.h"

#define OPTIONS_ERR_MAX 256

/*
 * Parses the command line into cfg. Returns 0 to run, 1 if --help or
 * --version was printed, or -EINVAL with a one-line message in err.
 */
int vmm_options_parse(int argc, char **argv, struct vm_config *cfg, char err[OPTIONS_ERR_MAX]);

/* "256M", "1G", "512" (MiB, as QEMU's -m): bytes, or -EINVAL. */
int parse_mem_size(const char *s, uint64_t *bytes);

#endif

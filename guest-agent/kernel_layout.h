/* SPDX-License-Identifier: MIT */
/*
 * Where this Linux kernel keeps each CPU's current task, and the
 * task_struct offsets that name it (struct kp_rec_task_layout in
 * include/kvmprof/sample_format.h): from kallsyms (the per-CPU variable
 * current_task or pcpu_hot, and __per_cpu_offset) and from the kernel's BTF
 * (/sys/kernel/btf/vmlinux, parsed with libbpf). `kvmprof-agent export`
 * sends it so that a VMM can name the guest's processes from outside.
 */
#ifndef AGENT_KERNEL_LAYOUT_H
#define AGENT_KERNEL_LAYOUT_H

#include <stddef.h>

#include "kvmprof/sample_format.h"

#define LAYOUT_WHY_MAX 256
#define LAYOUT_BTF_PATH "/sys/kernel/btf/vmlinux"

/*
 * From a kallsyms text (all symbols, data included: not the text-only
 * subset the export sends) and a BTF file (raw, as in /sys/kernel/btf, or
 * an ELF with a .BTF section such as vmlinux). 0 and *out filled, or a
 * negative errno with the first reason in why.
 */
int layout_from(const char *kallsyms, size_t len, const char *btf_path, struct kp_rec_task_layout *out,
		char why[LAYOUT_WHY_MAX]);

/* The running kernel's: /proc/kallsyms and LAYOUT_BTF_PATH. */
int layout_read(struct kp_rec_task_layout *out, char why[LAYOUT_WHY_MAX]);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The task layout a VMM needs to name a Linux guest's processes from
 * outside (layout.h). Addresses come from kallsyms, structure offsets from
 * BTF through libbpf: the kernel describes its own structures there, so
 * nothing here hard-codes a kernel version's task_struct.
 */
#include "kernel_layout.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/kallsyms.h"
#include "collection/procfs.h"
#include "common/task_layout.h"

static int layout_fail(char why[LAYOUT_WHY_MAX], int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, LAYOUT_WHY_MAX, fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * The address of a symbol of the kernel image (not a module's). Per-CPU
 * variables appear with their per-CPU offsets as addresses on x86-64.
 */
static bool layout_symbol(const struct kallsyms *ks, const char *name, uint64_t *addr)
{
	struct kallsyms_sym s;

	if (!kallsyms_find(ks, name, KALLSYMS_IMAGE, &s))
		return false;
	*addr = s.addr;
	return true;
}

/*
 * The byte offset and size of member `name` of the struct or union type
 * `id`, looking into anonymous struct and union members too (task_struct
 * keeps its fields in one when the kernel randomizes its layout). depth
 * bounds the recursion: BTF is the kernel's, but a file given on the
 * command line could be anything.
 */
static int btf_member(const struct btf *btf, uint32_t id, const char *name, uint64_t *off, int64_t *size,
		      int depth)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const struct btf_member *m;
	unsigned int n;

	if (!t || depth > 8 || !btf_is_composite(t))
		return -ENOENT;
	m = btf_members(t);
	n = btf_vlen(t);
	for (unsigned int i = 0; i < n; i++, m++) {
		uint32_t bits = btf_member_bit_offset(t, i);
		const char *mname = btf__name_by_offset(btf, m->name_off);
		uint64_t inner;
		int32_t inner_id;

		if (btf_member_bitfield_size(t, i))
			continue; /* a bit field is never one of ours */
		if (mname && *mname) {
			if (strcmp(mname, name))
				continue;
			if (bits % 8)
				return -EINVAL;
			*off = bits / 8;
			*size = btf__resolve_size(btf, m->type);
			return *size > 0 ? 0 : -EINVAL;
		}
		/* Anonymous: its members are the parent's, at its offset. */
		inner_id = btf__resolve_type(btf, m->type);
		if (bits % 8 || inner_id < 0)
			continue;
		if (!btf_member(btf, (uint32_t)inner_id, name, &inner, size, depth + 1)) {
			*off = bits / 8 + inner;
			return 0;
		}
	}
	return -ENOENT;
}

/* libbpf reports parse problems on stderr by default: the reason goes into why instead. */
static int layout_libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static int layout_from_symbols(const struct kallsyms *ks, const char *btf_path, struct kp_rec_task_layout *out,
			       char why[LAYOUT_WHY_MAX])
{
	uint64_t current_task = 0, pcpu_hot = 0, per_cpu_offset = 0, off, pid, tgid, comm;
	int64_t size, pid_size, tgid_size, comm_size, task_size;
	uint32_t flags = 0;
	char refused[LAYOUT_WHY_MAX];
	struct btf *btf;
	int32_t task_id, hot_id;
	libbpf_print_fn_t old;
	int rc;

	memset(out, 0, sizeof(*out));
	why[0] = '\0';
	if (!layout_symbol(ks, "__per_cpu_offset", &per_cpu_offset))
		return layout_fail(why, -ENOENT, "no __per_cpu_offset in kallsyms (a kernel without SMP, or "
						 "kallsyms without data symbols: CONFIG_KALLSYMS_ALL)");
	/* A real array address: the kernel's upper half. A zero says kptr_restrict hid the addresses. */
	if (per_cpu_offset < 0xffff800000000000ULL)
		return layout_fail(why, -EINVAL, "__per_cpu_offset at 0x%" PRIx64 " is not a kernel address "
						 "(kallsyms hides addresses from this user?)", per_cpu_offset);
	old = libbpf_set_print(layout_libbpf_quiet);
	btf = btf__parse(btf_path, NULL);
	libbpf_set_print(old);
	if (!btf)
		return layout_fail(why, -errno ? -errno : -EINVAL, "cannot read BTF from %s: %s (a kernel "
				   "without CONFIG_DEBUG_INFO_BTF?)", btf_path, strerror(errno ? errno : EINVAL));
	task_id = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
	if (task_id < 0) {
		rc = layout_fail(why, -ENOENT, "%s: no struct task_struct", btf_path);
		goto out;
	}
	task_size = btf__resolve_size(btf, (uint32_t)task_id);
	if (btf_member(btf, (uint32_t)task_id, "pid", &pid, &pid_size, 0) ||
	    btf_member(btf, (uint32_t)task_id, "tgid", &tgid, &tgid_size, 0) ||
	    btf_member(btf, (uint32_t)task_id, "comm", &comm, &comm_size, 0)) {
		rc = layout_fail(why, -ENOENT, "%s: task_struct lacks pid, tgid or comm at a byte offset", btf_path);
		goto out;
	}
	if (pid_size != 4 || tgid_size != 4 || comm_size < 1 || comm_size > KP_LAYOUT_COMM_MAX ||
	    task_size <= 0 || task_size > (1 << 20) || pid + 4 > (uint64_t)task_size ||
	    tgid + 4 > (uint64_t)task_size || comm + (uint64_t)comm_size > (uint64_t)task_size) {
		rc = layout_fail(why, -EINVAL, "%s: task_struct fields of unexpected sizes (pid %" PRId64 ", tgid %" PRId64
				 ", comm %" PRId64 " bytes; task_struct %" PRId64 ")", btf_path, pid_size, tgid_size,
				 comm_size, task_size);
		goto out;
	}
	/*
	 * The current task: the per-CPU variable current_task (to 6.1 and
	 * again from 6.15), else the member of the per-CPU pcpu_hot (6.2-6.14).
	 */
	if (!layout_symbol(ks, "current_task", &current_task)) {
		hot_id = btf__find_by_name_kind(btf, "pcpu_hot", BTF_KIND_STRUCT);
		if (!layout_symbol(ks, "pcpu_hot", &pcpu_hot) || hot_id < 0) {
			rc = layout_fail(why, -ENOENT, "neither current_task nor pcpu_hot (with its BTF type) found");
			goto out;
		}
		if (btf_member(btf, (uint32_t)hot_id, "current_task", &off, &size, 0) || size != 8) {
			rc = layout_fail(why, -ENOENT, "%s: struct pcpu_hot has no 8-byte current_task", btf_path);
			goto out;
		}
		current_task = pcpu_hot + off;
		flags |= KP_LAYOUT_PCPU_HOT;
	}
	*out = (struct kp_rec_task_layout){
		.kind = KP_LAYOUT_LINUX_X86_64, .flags = flags,
		.current_task = current_task, .per_cpu_offset = per_cpu_offset,
		.task_pid = (uint32_t)pid, .task_tgid = (uint32_t)tgid,
		.task_comm = (uint32_t)comm, .task_comm_size = (uint32_t)comm_size,
		.task_size = (uint32_t)task_size,
	};
	/* The VMM checks the layout again at sample-start; one it would refuse is not sent. */
	rc = task_layout_check(out, refused, sizeof(refused));
	if (rc) {
		memset(out, 0, sizeof(*out));
		layout_fail(why, rc, "kallsyms and %s give a layout no VMM can use: %s", btf_path, refused);
	}
out:
	btf__free(btf);
	return rc;
}

int layout_from(const char *kallsyms, size_t len, const char *btf_path, struct kp_rec_task_layout *out,
		char why[LAYOUT_WHY_MAX])
{
	struct kallsyms *ks;
	int rc = kallsyms_parse(&ks, kallsyms, len);

	if (rc)
		return layout_fail(why, rc, "kallsyms: %s", strerror(-rc));
	rc = layout_from_symbols(ks, btf_path, out, why);
	kallsyms_free(ks);
	return rc;
}

int layout_read(struct kp_rec_task_layout *out, char why[LAYOUT_WHY_MAX])
{
	char *text;
	size_t len;
	bool hidden;
	int rc = procfs_read_kallsyms(&text, &len, &hidden);

	if (rc)
		return layout_fail(why, rc, "/proc/kallsyms: %s", strerror(-rc));
	if (hidden)
		rc = layout_fail(why, -EACCES, "/proc/kallsyms shows only zero addresses to this user");
	else
		rc = layout_from(text, len, LAYOUT_BTF_PATH, out, why);
	free(text);
	return rc;
}

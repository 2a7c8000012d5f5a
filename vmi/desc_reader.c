// SPDX-License-Identifier: MIT
/*
 * The guest descriptor: what a guest kernel says about where its current
 * process lives. The guest wrote all of it, so every number is bounded here
 * before it is used and every pointer goes through guest_walk: a lying
 * descriptor ends in pid 0 and "[unknown]", never in a read outside guest RAM.
 */
#include "desc_reader.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int why_fail(char why[GUEST_DESC_WHY_MAX], const char *fmt, unsigned long long v)
{
	snprintf(why, GUEST_DESC_WHY_MAX, fmt, v);
	return -EINVAL;
}

/* A field of size bytes at off lies within limit. */
static bool field_ok(uint32_t off, uint32_t size, uint32_t limit)
{
	return size <= limit && off <= limit - size;
}

int guest_desc_check(const struct kp_guest_desc *d, char why[GUEST_DESC_WHY_MAX])
{
	if (d->magic != KP_GDESC_MAGIC)
		return why_fail(why, "bad magic 0x%llx", d->magic);
	if (d->version != KP_GDESC_VERSION)
		return why_fail(why, "version %llu, this VMM reads version 1", d->version);
	if (d->size != sizeof(*d))
		return why_fail(why, "size %llu, expected 152", d->size);
	if (d->cpu_map != KP_GDESC_CPU_BY_INDEX && d->cpu_map != KP_GDESC_CPU_BY_APIC_ID)
		return why_fail(why, "unknown CPU mapping %llu", d->cpu_map);
	if (d->percpu_count < 1 || d->percpu_count > KP_GDESC_MAX_CPUS)
		return why_fail(why, "%llu per-CPU entries (1 to 256)", d->percpu_count);
	if (d->percpu_stride < 8 || d->percpu_stride > KP_GDESC_MAX_STRIDE)
		return why_fail(why, "per-CPU stride %llu (8 bytes to 1 MiB)", d->percpu_stride);
	if (d->percpu_gva > UINT64_MAX - (uint64_t)d->percpu_count * d->percpu_stride)
		return why_fail(why, "per-CPU array at 0x%llx wraps around", d->percpu_gva);
	if (!field_ok(d->cpu_cur_off, 8, d->percpu_stride))
		return why_fail(why, "current-process offset %llu outside the per-CPU entry", d->cpu_cur_off);
	if (d->cpu_map == KP_GDESC_CPU_BY_APIC_ID && !field_ok(d->cpu_apic_id_off, 4, d->percpu_stride))
		return why_fail(why, "APIC id offset %llu outside the per-CPU entry", d->cpu_apic_id_off);
	if (!field_ok(d->proc_pid_off, 4, KP_GDESC_MAX_PROC))
		return why_fail(why, "pid offset %llu too large", d->proc_pid_off);
	if (d->proc_comm_size > 64 || !field_ok(d->proc_comm_off, d->proc_comm_size, KP_GDESC_MAX_PROC))
		return why_fail(why, "name field (offset %llu) too large", d->proc_comm_off);
	if (d->proc_path_size < 2 || d->proc_path_size > KP_GDESC_PATH_MAX ||
	    !field_ok(d->proc_path_off, d->proc_path_size, KP_GDESC_MAX_PROC))
		return why_fail(why, "path field (offset %llu) empty or too large", d->proc_path_off);
	if (!field_ok(d->proc_text_start_off, 8, KP_GDESC_MAX_PROC) ||
	    !field_ok(d->proc_text_end_off, 8, KP_GDESC_MAX_PROC) ||
	    !field_ok(d->proc_text_pgoff_off, 8, KP_GDESC_MAX_PROC))
		return why_fail(why, "text segment offsets (%llu...) too large", d->proc_text_start_off);
	if (d->reserved)
		return why_fail(why, "reserved field is 0x%llx, not 0", d->reserved);
	if (d->kernel_text_end < d->kernel_text_start ||
	    d->kernel_text_end - d->kernel_text_start > (1ULL << 32))
		return why_fail(why, "kernel text at 0x%llx: end before start or larger than 4 GiB",
				d->kernel_text_start);
	if (!memchr(d->kernel_path, '\0', sizeof(d->kernel_path)) || d->kernel_path[0] != '/')
		return why_fail(why, "kernel path is not an absolute NUL-terminated string%.0llu", 0);
	return 0;
}

static int read_u32(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva, uint32_t *v)
{
	return guest_read_virt(mem, pg, gva, v, sizeof(*v));
}

static int read_u64(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva, uint64_t *v)
{
	return guest_read_virt(mem, pg, gva, v, sizeof(*v));
}

static bool entry_is(const struct kp_guest_desc *d, const struct vmi_mem *mem,
		     const struct guest_paging *pg, unsigned int i, unsigned int cpu)
{
	uint32_t apic;

	if (d->cpu_map == KP_GDESC_CPU_BY_INDEX)
		return i == cpu;
	return read_u32(mem, pg, d->percpu_gva + (uint64_t)i * d->percpu_stride + d->cpu_apic_id_off, &apic) == 0 &&
	       apic == cpu;
}

int guest_desc_current(const struct kp_guest_desc *d, const struct vmi_mem *mem,
		       const struct guest_paging *pg, unsigned int cpu, int *entry,
		       uint64_t *proc_gva, uint32_t *pid)
{
	uint64_t p;

	*proc_gva = 0;
	*pid = 0;
	if (*entry < 0 || (unsigned int)*entry >= d->percpu_count || !entry_is(d, mem, pg, (unsigned int)*entry, cpu)) {
		*entry = -1;
		/* At most KP_GDESC_MAX_CPUS reads, and only until the entry is found again. */
		for (unsigned int i = 0; i < d->percpu_count && *entry < 0; i++)
			if (entry_is(d, mem, pg, i, cpu))
				*entry = (int)i;
		if (*entry < 0)
			return -ENOENT;
	}
	if (read_u64(mem, pg, d->percpu_gva + (uint64_t)*entry * d->percpu_stride + d->cpu_cur_off, &p))
		return -EFAULT;
	if (!p)
		return 0; /* idle */
	if (p > UINT64_MAX - KP_GDESC_MAX_PROC || read_u32(mem, pg, p + d->proc_pid_off, pid)) {
		*pid = 0;
		return -EFAULT;
	}
	*proc_gva = p;
	return 0;
}

/* Copies at most size bytes of a guest string; false unless it ends within them and is not empty. */
static bool read_str(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva, uint32_t size,
		     char *out, size_t outsz)
{
	char buf[KP_GDESC_PATH_MAX];
	size_t n;

	if (size > sizeof(buf) || guest_read_virt(mem, pg, gva, buf, size))
		return false;
	n = strnlen(buf, size);
	if (n == size || n == 0)
		return false;
	if (n >= outsz)
		n = outsz - 1;
	memcpy(out, buf, n);
	out[n] = '\0';
	/* Control bytes would only garble reports: replace them. */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			out[i] = '?';
	return true;
}

int guest_desc_proc_info(const struct kp_guest_desc *d, const struct vmi_mem *mem,
			 const struct guest_paging *pg, uint64_t proc_gva, struct guest_desc_proc *out)
{
	bool ok = true;

	memset(out, 0, sizeof(*out));
	if (!proc_gva || proc_gva > UINT64_MAX - KP_GDESC_MAX_PROC) {
		strcpy(out->comm, "[unknown]");
		return -EFAULT;
	}
	if (!read_str(mem, pg, proc_gva + d->proc_path_off, d->proc_path_size, out->path, sizeof(out->path))) {
		out->path[0] = '\0';
		ok = false;
	}
	if (d->proc_comm_size) {
		if (!read_str(mem, pg, proc_gva + d->proc_comm_off, d->proc_comm_size, out->comm, sizeof(out->comm)))
			out->comm[0] = '\0';
	} else if (out->path[0]) {
		const char *base = strrchr(out->path, '/');

		base = base ? base + 1 : out->path;
		snprintf(out->comm, sizeof(out->comm), "%.*s", KP_COMM_MAX - 1, base);
	}
	if (!out->comm[0]) {
		strcpy(out->comm, "[unknown]");
		ok = false;
	}
	if (read_u64(mem, pg, proc_gva + d->proc_text_start_off, &out->text_start) ||
	    read_u64(mem, pg, proc_gva + d->proc_text_end_off, &out->text_end) ||
	    read_u64(mem, pg, proc_gva + d->proc_text_pgoff_off, &out->text_pgoff) ||
	    out->text_end <= out->text_start || out->text_end - out->text_start > (1ULL << 40)) {
		out->text_start = out->text_end = out->text_pgoff = 0;
		ok = false;
	}
	return ok ? 0 : -EFAULT;
}

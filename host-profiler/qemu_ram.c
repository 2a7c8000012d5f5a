/* SPDX-License-Identifier: MIT */
#include "qemu_ram.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

int qemu_ram_map(struct qemu_ram *r, const struct qemu_monitor *m, pid_t pid, char *err, size_t errlen)
{
	char *reply = NULL, cmd[64];
	int n, rc;

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	rc = m->hmp(m->ctx, "info mtree -f", &reply, err, errlen);
	if (rc)
		return rc;
	n = qemu_hmp_parse_mtree(reply, r->range, QEMU_HMP_MAX_RANGES);
	free(reply);
	if (n <= 0) {
		snprintf(err, errlen, "QEMU's memory map (info mtree -f) does not parse");
		return -EBADMSG;
	}
	r->nranges = n;
	for (int i = 0; i < n; i++) {
		snprintf(cmd, sizeof(cmd), "gpa2hva 0x%llx", (unsigned long long)r->range[i].gpa);
		rc = m->hmp(m->ctx, cmd, &reply, err, errlen);
		if (rc)
			return rc;
		rc = qemu_hmp_parse_gpa2hva(reply, &r->range[i].hva);
		if (rc || r->range[i].hva + r->range[i].size < r->range[i].hva) {
			snprintf(err, errlen, "QEMU does not say where guest-physical 0x%llx (%s) is: %.80s",
				 (unsigned long long)r->range[i].gpa, r->range[i].name, reply);
			free(reply);
			return -EBADMSG;
		}
		free(reply);
	}
	r->size = r->range[n - 1].gpa + r->range[n - 1].size;
	return 0;
}

uint64_t qemu_ram_bytes(const struct qemu_ram *r)
{
	uint64_t b = 0;

	for (int i = 0; i < r->nranges; i++)
		b += r->range[i].size;
	return b;
}

/* The range holding gpa, or NULL (a hole: MMIO, nothing). */
static const struct qemu_ram_range *range_at(const struct qemu_ram *r, uint64_t gpa)
{
	int lo = 0, hi = r->nranges;

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		const struct qemu_ram_range *q = &r->range[mid];

		if (gpa < q->gpa)
			hi = mid;
		else if (gpa - q->gpa >= q->size)
			lo = mid + 1;
		else
			return q;
	}
	return NULL;
}

static int ram_read(void *opaque, uint64_t gpa, void *dst, uint64_t len)
{
	struct qemu_ram *r = opaque;
	uint8_t *out = dst;

	/* vmi_mem checked [gpa, gpa + len) against size; a read may still cross from one range into the next. */
	while (len) {
		const struct qemu_ram_range *q = range_at(r, gpa);
		uint64_t n = q ? q->size - (gpa - q->gpa) : 0;
		struct iovec local, remote;

		if (!q)
			return -EFAULT;
		if (n > len)
			n = len;
		local = (struct iovec){ .iov_base = out, .iov_len = n };
		remote = (struct iovec){ .iov_base = (void *)(uintptr_t)(q->hva + (gpa - q->gpa)), .iov_len = n };
		r->reads++;
		if (process_vm_readv(r->pid, &local, 1, &remote, 1, 0) != (ssize_t)n) {
			r->failed++;
			return -EFAULT;
		}
		gpa += n;
		out += n;
		len -= n;
	}
	return 0;
}

int qemu_ram_probe(struct qemu_ram *r, char *err, size_t errlen)
{
	struct iovec local, remote;
	uint8_t page[64];
	int e;

	if (!r->nranges) {
		snprintf(err, errlen, "QEMU lists no guest RAM");
		return -ENOENT;
	}
	local = (struct iovec){ .iov_base = page, .iov_len = sizeof(page) };
	remote = (struct iovec){ .iov_base = (void *)(uintptr_t)r->range[0].hva, .iov_len = sizeof(page) };
	if (process_vm_readv(r->pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(page))
		return 0;
	e = errno ? errno : EIO;
	if (e == EPERM)
		snprintf(err, errlen, "guest memory not readable: process_vm_readv of QEMU (pid %d): %s (it takes "
				      "ptrace rights over QEMU: root with CAP_SYS_PTRACE, and Yama's ptrace_scope below 3)",
			 (int)r->pid, strerror(e));
	else
		snprintf(err, errlen, "guest memory not readable: process_vm_readv of QEMU (pid %d): %s", (int)r->pid,
			 strerror(e));
	return -e;
}

struct vmi_mem qemu_ram_vmi(struct qemu_ram *r)
{
	return (struct vmi_mem){ .size = r->size, .read = ram_read, .opaque = r };
}

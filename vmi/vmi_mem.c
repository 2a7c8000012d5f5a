// SPDX-License-Identifier: MIT
#include "vmi_mem.h"

#include <errno.h>
#include <string.h>

int vmi_mem_read(const struct vmi_mem *m, uint64_t gpa, void *dst, uint64_t len)
{
	if (!vmi_mem_contains(m, gpa, len))
		return -EFAULT;
	if (len == 0)
		return 0;
	if (m->base) {
		memcpy(dst, m->base + gpa, len);
		return 0;
	}
	if (!m->read || m->read(m->opaque, gpa, dst, len))
		return -EFAULT;
	return 0;
}

int vmi_mem_load64(const struct vmi_mem *m, uint64_t gpa, uint64_t *val)
{
	if ((gpa & 7) || !vmi_mem_contains(m, gpa, sizeof(*val)))
		return -EFAULT;
	/* Guest RAM is mapped page-aligned, so an aligned gpa is an aligned load: one atomic 8-byte read. */
	if (m->base) {
		*val = __atomic_load_n((const uint64_t *)(m->base + gpa), __ATOMIC_RELAXED);
		return 0;
	}
	/* A copy into a local: whatever the guest does meanwhile, the caller sees one value. */
	if (!m->read || m->read(m->opaque, gpa, val, sizeof(*val)))
		return -EFAULT;
	return 0;
}

bool vmi_mem_can_set_bits(const struct vmi_mem *m)
{
	return m->base || m->set_bits64;
}

int vmi_mem_set_bits64(const struct vmi_mem *m, uint64_t gpa, uint64_t bits)
{
	if ((gpa & 7) || !vmi_mem_contains(m, gpa, sizeof(uint64_t)))
		return -EFAULT;
	if (m->base) {
		__atomic_fetch_or((uint64_t *)(m->base + gpa), bits, __ATOMIC_RELAXED);
		return 0;
	}
	if (!m->set_bits64)
		return -EOPNOTSUPP;
	return m->set_bits64(m->opaque, gpa, bits) ? -EFAULT : 0;
}

void *vmi_mem_ptr(const struct vmi_mem *m, uint64_t gpa, uint64_t len)
{
	if (!m->base || !vmi_mem_contains(m, gpa, len))
		return NULL;
	return m->base + gpa;
}

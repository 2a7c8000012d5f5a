// SPDX-License-Identifier: MIT
#include "guest_mem.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

int guest_mem_alloc(struct guest_mem *mem, uint64_t size)
{
	/* Anonymous memory reads as zero, which the boot protocols rely on. */
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	mem->host = p;
	mem->size = size;
	return 0;
}

void guest_mem_free(struct guest_mem *mem)
{
	if (mem->host)
		munmap(mem->host, mem->size);
	mem->host = NULL;
	mem->size = 0;
}

void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	const struct vmi_mem ram = guest_mem_vmi(mem);

	return vmi_mem_ptr(&ram, gpa, len);
}

int guest_mem_read(const struct guest_mem *mem, uint64_t gpa, void *dst, uint64_t len)
{
	const struct vmi_mem ram = guest_mem_vmi(mem);

	return vmi_mem_read(&ram, gpa, dst, len);
}

int guest_mem_write(const struct guest_mem *mem, uint64_t gpa, const void *src, uint64_t len)
{
	void *dst = guest_mem_ptr(mem, gpa, len);

	if (!dst)
		return -EFAULT;
	memcpy(dst, src, len);
	return 0;
}

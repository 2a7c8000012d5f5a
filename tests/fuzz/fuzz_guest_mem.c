// SPDX-License-Identifier: MIT
/*
 * Everything the VMM reads in a hostile guest's memory while it samples it:
 * the page walker (4- and 5-level, large pages), bounded reads across
 * pages, the frame-pointer stack walker, the bundled guest's descriptor
 * and process records, and a Linux task layout. The input is the control
 * registers, the stack pointers, a descriptor and a task layout, then the
 * guest's RAM (64 KiB, zero beyond the input).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../vmm/guest_desc.h"
#include "../../vmm/guest_mem.h"
#include "../../vmm/guest_stack.h"
#include "../../vmm/guest_walk.h"

#define RAM_SIZE (64u << 10)

struct params {
	uint64_t cr0, cr3, cr4, efer, rsp, rbp, gva;
	uint32_t cpu;
	uint32_t flags;
	struct kp_guest_desc desc;
	struct kp_rec_task_layout lx;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t ram[RAM_SIZE];
	struct guest_mem mem = { ram, RAM_SIZE };
	struct guest_paging pg;
	struct guest_translation tr;
	struct guest_desc_proc proc;
	struct params p = { 0 };
	uint64_t callers[64], proc_gva, task;
	uint32_t pid, tgid;
	char why[GUEST_DESC_WHY_MAX], comm[KP_COMM_MAX + 1];
	uint8_t buf[256];
	int entry = -1;

	memcpy(&p, data, size < sizeof(p) ? size : sizeof(p));
	memset(ram, 0, sizeof(ram));
	if (size > sizeof(p))
		memcpy(ram, data + sizeof(p), size - sizeof(p) < RAM_SIZE ? size - sizeof(p) : RAM_SIZE);
	/* Mostly page tables inside the RAM: the walker's interesting paths need them. */
	if (!(p.flags & 1))
		p.cr3 &= RAM_SIZE - 1;
	if (guest_paging_init(&pg, p.cr0, p.cr3, p.cr4, p.efer))
		return 0;
	guest_walk_translate(&mem, &pg, p.gva, &tr);
	guest_walk_canonical(&pg, p.gva);
	guest_read_virt(&mem, &pg, p.gva, buf, 1 + (p.flags >> 8) % sizeof(buf));
	guest_stack_walk(&mem, &pg, p.flags & 2, p.rsp, p.rbp, callers, 64);
	if (!guest_desc_check(&p.desc, why) &&
	    !guest_desc_current(&p.desc, &mem, &pg, p.cpu % 8, &entry, &proc_gva, &pid) && proc_gva) {
		guest_desc_proc_info(&p.desc, &mem, &pg, proc_gva, &proc);
		guest_desc_current(&p.desc, &mem, &pg, p.cpu % 8, &entry, &proc_gva, &pid);
	}
	if (!task_layout_check(&p.lx, why, sizeof(why)) &&
	    !guest_linux_current(&p.lx, &mem, &pg, p.cpu % 8, &task, &tgid, &pid) && task)
		guest_linux_comm(&p.lx, &mem, &pg, task, comm);
	return 0;
}

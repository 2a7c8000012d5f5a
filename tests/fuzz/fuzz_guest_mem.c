// SPDX-License-Identifier: MIT
/*
 * Everything guest introspection (vmi/) reads in a hostile guest's memory:
 * the page walker (4- and 5-level, large pages; also the emulator's walk
 * that sets accessed and dirty bits), bounded reads across pages, the
 * frame-pointer stack walker and its step into user code through the TSS
 * (at the gva), an IDT gate, the bundled guest's descriptor and process
 * records, a Linux task layout, and process attribution over both. The
 * input is the control registers, the stack pointers, a descriptor and a
 * task layout, then the guest's RAM (64 KiB, zero beyond the input), read
 * either as a mapping or through a read function (flag 4), the two ways
 * vmi_mem offers.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "desc_reader.h"
#include "guest_idt.h"
#include "guest_procs.h"
#include "guest_stack.h"
#include "guest_walk.h"
#include "linux_task.h"
#include "common/task_layout.h"
#include "vmi_mem.h"

#define RAM_SIZE (64u << 10)

struct params {
	uint64_t cr0, cr3, cr4, efer, rsp, rbp, gva;
	uint32_t cpu;
	uint32_t flags;
	struct kp_guest_desc desc;
	struct kp_rec_task_layout lx;
};

static uint8_t ram[RAM_SIZE];
static struct guest_procs_seen seen;

/* A reader of another process's RAM would copy; this one also checks what vmi_mem promised it. */
static int read_ram(void *opaque, uint64_t gpa, void *dst, uint64_t len)
{
	(void)opaque;
	if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
		__builtin_trap(); /* vmi_mem let an out-of-range read through */
	memcpy(dst, ram + gpa, len);
	return 0;
}

/* Process attribution as the sampler uses it: who runs, what to tell, told. */
static void attribute(const struct params *p, const struct vmi_mem *mem, const struct guest_paging *pg)
{
	char why[GUEST_DESC_WHY_MAX];
	struct guest_os os = { 0 };
	struct guest_task task;
	struct guest_proc_news news;
	int entry = -1;

	if (p->flags & 8) {
		if (task_layout_check(&p->lx, why, sizeof(why)))
			return;
		os.linux_layout = &p->lx;
	} else {
		if (guest_desc_check(&p->desc, why))
			return;
		os.desc = &p->desc;
	}
	if (!seen.key && guest_procs_seen_init(&seen))
		return;
	for (unsigned int i = 0; i < 2; i++)
		if (!guest_procs_current(&os, mem, pg, p->cpu % 8, &entry, &task) && task.pid &&
		    guest_procs_news(&seen, &os, mem, pg, &task, &news))
			guest_procs_told(&seen, &news);
}

/*
 * The walk on into user code, the TSS at gva (RSP0 at gva + 4) and a depth
 * bound from the flags (64 when they are 0). Its promises: nothing past the
 * bound, and after the user-context marker the RIP and only lower-half
 * addresses.
 */
static void callchain(const struct params *p, const struct vmi_mem *mem, const struct guest_paging *pg)
{
	uint64_t chain[65];
	unsigned int max = 64 - (p->flags >> 16) % 65, n, i = 0;

	chain[max] = 0x5a5a5a5a5a5a5a5aULL;
	n = guest_callchain(mem, pg, p->flags & 2, p->rsp, p->rbp, p->gva, chain, max);
	if (n > max || chain[max] != 0x5a5a5a5a5a5a5a5aULL)
		__builtin_trap();
	while (i < n && chain[i] != GUEST_STACK_CONTEXT_USER)
		i++;
	if (i < n && i + 2 > n)
		__builtin_trap();
	while (++i < n)
		if (chain[i] >> 63 || !chain[i])
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmi_mem mem = vmi_mem_mapped(ram, RAM_SIZE);
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
	if (p.flags & 4)
		mem = (struct vmi_mem){ .size = RAM_SIZE, .read = read_ram };
	if (guest_paging_init(&pg, p.cr0, p.cr3, p.cr4, p.efer))
		return 0;
	guest_walk_translate(&mem, &pg, p.gva, &tr);
	guest_walk_canonical(&pg, p.gva);
	guest_read_virt(&mem, &pg, p.gva, buf, 1 + (p.flags >> 8) % sizeof(buf));
	guest_stack_walk(&mem, &pg, p.flags & 2, p.rsp, p.rbp, callers, 64);
	callchain(&p, &mem, &pg);
	guest_idt_handler(&mem, &pg, p.rsp, (uint16_t)p.rbp, p.cpu & 0x1ff);
	/* Last of the walks: it sets bits in the tables the others read. Without a mapping it must refuse. */
	if (guest_walk_touch(&mem, &pg, p.gva, p.flags & 16, &tr) == -EOPNOTSUPP && mem.base)
		__builtin_trap();
	if (!guest_desc_check(&p.desc, why) &&
	    !guest_desc_current(&p.desc, &mem, &pg, p.cpu % 8, &entry, &proc_gva, &pid) && proc_gva) {
		guest_desc_proc_info(&p.desc, &mem, &pg, proc_gva, &proc);
		guest_desc_current(&p.desc, &mem, &pg, p.cpu % 8, &entry, &proc_gva, &pid);
	}
	if (!task_layout_check(&p.lx, why, sizeof(why)) &&
	    !guest_linux_current(&p.lx, &mem, &pg, p.cpu % 8, &task, &tgid, &pid) && task)
		guest_linux_comm(&p.lx, &mem, &pg, task, comm);
	attribute(&p, &mem, &pg);
	return 0;
}

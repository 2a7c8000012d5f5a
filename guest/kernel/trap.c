/* SPDX-License-Identifier: MIT */
/* IDT, the trap dispatcher and the reporting of unexpected exceptions. */
#include "kernel.h"

char idt[256 * 16] __attribute__((aligned(16)));

static void set_gate(int vec, uint64_t handler, int ist)
{
	uint64_t *g = (uint64_t *)(idt + 16 * vec);
	g[0] = (handler & 0xffff) | ((uint64_t)KERNEL_CS << 16) | ((uint64_t)ist << 32) |
	       (0x8eUL << 40) /* present, DPL 0, interrupt gate */ |
	       (((handler >> 16) & 0xffff) << 48);
	g[1] = handler >> 32;
}

void idt_init(void)
{
	for (int v = 0; v <= WAKEUP_VECTOR; v++)
		set_gate(v, isr_table[v], (v == 2 || v == 8 || v == 18) ? 1 : 0);
	set_gate(SPURIOUS_VECTOR, (uint64_t)isr_spurious, 0);
}

static const char *const exc_names[32] = {
	"#DE divide error", "#DB debug", "NMI", "#BP breakpoint", "#OF overflow",
	"#BR bound range", "#UD invalid opcode", "#NM device not available",
	"#DF double fault", "coprocessor overrun", "#TS invalid TSS",
	"#NP segment not present", "#SS stack fault", "#GP general protection",
	"#PF page fault", "reserved 15", "#MF x87 error", "#AC alignment check",
	"#MC machine check", "#XM SIMD error", "#VE virtualization", "#CP control protection",
};

static const char *exc_name(uint64_t v)
{
	return v < 32 && exc_names[v] ? exc_names[v] : "unknown vector";
}

/* Exit status of a process killed by an exception, as a shell shows it. */
static int kill_status(uint64_t v)
{
	switch (v) {
	case 0: return 128 + 8;   /* SIGFPE */
	case 1: case 3: return 128 + 5; /* SIGTRAP */
	case 6: return 128 + 4;   /* SIGILL */
	case 17: return 128 + 7;  /* SIGBUS */
	default: return 128 + 11; /* SIGSEGV */
	}
}

static void user_fault(struct cpu *c, struct trapframe *tf)
{
	struct proc *p = c->cur;
	int status = kill_status(tf->vector);
	kprintf("kvmprof guest: pid %d (%s) killed: %s (vector %lu) err=0x%lx rip=0x%lx "
		"rsp=0x%lx cr2=0x%lx cpu %d, status %d\n",
		p->pid, p->name, exc_name(tf->vector), tf->vector, tf->err, tf->rip, tf->rsp,
		read_cr2(), c->id, status);
	sched_exit(c, status);
}

static int is_ud2(struct proc *p, uint64_t rip)
{
	if (!user_range_ok(p, rip, 2))
		return 0;
	const unsigned char *ip = (const unsigned char *)rip; /* on p's CR3 */
	return ip[0] == 0x0f && ip[1] == 0x0b;
}

void trap(struct trapframe *tf)
{
	struct cpu *c = this_cpu();
	int user = (tf->cs & 3) == 3;

	if (tf->vector == TIMER_VECTOR) {
		c->ticks++;
		lapic_eoi();
		pmu_all_poll(c); /* in case the wake-up IPI was missed */
		pmu_all_tick(c, tf);
		if (user) {
			c->user_ticks++;
			sched_tick(c, tf);
		}
		else if (!c->cur)
			sched_idle_tick(c, tf);
		return;
	}
	if (tf->vector == WAKEUP_VECTOR) {
		lapic_eoi();
		pmu_all_poll(c); /* system-wide sampling started or stopped */
		return;
	}
	if (tf->vector == 2) { /* PMIs arrive as NMIs */
		pmu_nmi(c, tf);
		return;
	}
	if (tf->vector == 13 && !user && pmu_fixup(tf))
		return; /* #GP of a safe RDMSR/WRMSR: it returns -EIO */
	if (user && c->cur) {
		if (tf->vector == 6 && is_ud2(c->cur, tf->rip)) {
			syscall_dispatch(c, tf);
			return;
		}
		user_fault(c, tf);
	}
	panic("%s (vector %lu) in kernel mode: err=0x%lx rip=0x%lx rsp=0x%lx cr2=0x%lx "
	      "cpu %d pid %d\n",
	      exc_name(tf->vector), tf->vector, tf->err, tf->rip, tf->rsp, read_cr2(), c->id,
	      c->cur ? c->cur->pid : 0);
}

/* SPDX-License-Identifier: MIT */
/*
 * Processes and the scheduler: one shared run queue (the process table,
 * scanned round-robin) under one lock, all CPUs preemptive at 250 Hz.
 *
 * There are no kernel threads and no per-process kernel stacks: a process
 * is entirely described by its saved trap frame and its address space.
 * Each CPU takes traps on its own stack; switching process means copying
 * the next process's frame over the current one and reloading CR3.
 */
#include <guest/syscall.h>

#include "kernel.h"

static struct proc procs[MAX_PROCS];
static volatile int sched_lock;
static int nslots;   /* procs[0..nslots) have been used */
static int rr;       /* round-robin position */
static int nrunnable; /* P_RUNNABLE (waiting for a CPU) */
static int nsleeping;
static uint64_t next_wake = ~0UL;
static int nlive;
static int next_pid = 1;
/*
 * The power-off status: the non-zero status of the earliest started
 * process (lowest pid) that failed, so that it does not depend on timing.
 */
static int first_status;
static int first_status_pid;
/*
 * What the agent needs of processes that may have exited already: the
 * last PROC_HISTORY pids, at hist[pid % PROC_HISTORY], under sched_lock.
 */
static struct proc_info hist[PROC_HISTORY];

static void hist_start_locked(const struct proc *p, uint64_t now)
{
	struct proc_info *h = &hist[p->pid % PROC_HISTORY];
	memset(h, 0, sizeof(*h));
	h->pid = (unsigned int)p->pid;
	h->state = PROC_RUNNING;
	h->start_ns = now;
	h->text_start = p->text_start;
	h->text_end = p->text_end;
	h->text_offset = p->text_offset;
	memcpy(h->path, p->name, PROC_PATH_MAX); /* p->name: the path, NUL-terminated */
	const char *base = p->name;
	for (const char *s = p->name; *s; s++)
		if (*s == '/')
			base = s + 1;
	size_t n = strlen(base);
	memcpy(h->comm, base, n < PROC_COMM_MAX ? n : PROC_COMM_MAX - 1);
}

static void hist_exit_locked(int pid, int status, uint64_t now)
{
	struct proc_info *h = &hist[pid % PROC_HISTORY];
	if (h->pid != (unsigned int)pid)
		return;
	h->state = PROC_EXITED;
	h->status = status;
	h->exit_ns = now ? now : 1;
}

int proc_wait(int pid, int *status)
{
	int r = -GUEST_ESRCH;
	if (pid <= 0)
		return r;
	spin_lock(&sched_lock);
	const struct proc_info *h = &hist[pid % PROC_HISTORY];
	if (h->pid == (unsigned int)pid) {
		r = h->state == PROC_EXITED;
		*status = h->status;
	}
	spin_unlock(&sched_lock);
	return r;
}

int proc_list(struct proc_info *out, int max)
{
	int n = 0;
	if (max < 1)
		return 0;
	memset(out, 0, sizeof(*out)); /* entry 0: the kernel */
	out->state = PROC_RUNNING;
	out->text_start = (uint64_t)_kernel_start;
	out->text_end = (uint64_t)_etext;
	memcpy(out->comm, "kernel", 7);
	memcpy(out->path, "/kernel.elf", 12);
	n = 1;
	spin_lock(&sched_lock);
	int last = __atomic_load_n(&next_pid, __ATOMIC_RELAXED) - 1;
	for (int pid = last >= PROC_HISTORY ? last - PROC_HISTORY + 1 : 1; pid <= last && n < max; pid++)
		if (hist[pid % PROC_HISTORY].pid == (unsigned int)pid)
			memcpy(&out[n++], &hist[pid % PROC_HISTORY], sizeof(*out));
	spin_unlock(&sched_lock);
	return n;
}

static void record_status_locked(int pid, int status)
{
	if (status && (!first_status || pid < first_status_pid)) {
		first_status = status;
		first_status_pid = pid;
	}
}

int sched_nlive(void)
{
	return nlive;
}

void proc_record_failure(int pid, int status)
{
	spin_lock(&sched_lock);
	record_status_locked(pid, status);
	spin_unlock(&sched_lock);
}

/* ---- process creation ------------------------------------------------ */

/* Copies argv onto the top stack page; returns the initial user RSP. */
static int setup_stack(struct proc *p, int argc, char *const *argv, uint64_t *rsp)
{
	uint64_t top = GUEST_USER_STACK_TOP, bottom = top - GUEST_USER_STACK_SIZE;
	char *page = NULL;
	for (uint64_t va = bottom; va < top; va += PAGE_SIZE)
		if (!(page = as_map_page(p, va)))
			return -1;
	/* page: the top page, at user address top - PAGE_SIZE */
	uint64_t ptrs[16];
	uint64_t off = PAGE_SIZE;
	if (argc > 15)
		return -1;
	for (int i = argc - 1; i >= 0; i--) {
		size_t n = strlen(argv[i]) + 1;
		if (n > off - 512)
			return -1;
		off -= n;
		memcpy(page + off, argv[i], n);
		ptrs[i] = top - PAGE_SIZE + off;
	}
	/* argc, argv[], NULL, envp NULL, auxv AT_NULL: 16-byte aligned argc */
	int words = 1 + argc + 1 + 1 + 2;
	off = (off - (uint64_t)words * 8) & ~15UL;
	uint64_t *sp = (uint64_t *)(page + off);
	sp[0] = (uint64_t)argc;
	for (int i = 0; i < argc; i++)
		sp[1 + i] = ptrs[i];
	sp[1 + argc] = 0;
	sp[2 + argc] = 0;
	sp[3 + argc] = 0;
	sp[4 + argc] = 0;
	*rsp = top - PAGE_SIZE + off;
	p->regions[p->nregions].start = bottom;
	p->regions[p->nregions].end = top;
	p->nregions++;
	return 0;
}

int proc_alloc_pid(void)
{
	return __atomic_fetch_add(&next_pid, 1, __ATOMIC_RELAXED);
}

/* Returns the new pid, or minus the pid it would have had. */
int proc_spawn(const char *path, int argc, char *const *argv)
{
	int pid = proc_alloc_pid();
	const void *image;
	size_t size;
	struct proc *p = NULL;
	uint64_t entry, rsp;

	if (initrd_find(path, &image, &size)) {
		kprintf("kvmprof guest: %s: not found in the initrd\n", path);
		return -pid;
	}
	spin_lock(&sched_lock);
	for (int i = 0; i < MAX_PROCS; i++) {
		if (procs[i].state == P_UNUSED && !procs[i].cr3) {
			p = &procs[i];
			p->state = P_SLEEPING; /* reserved, not yet counted */
			p->wake_ns = ~0UL;
			if (i >= nslots)
				nslots = i + 1;
			break;
		}
	}
	spin_unlock(&sched_lock);
	if (!p) {
		kprintf("kvmprof guest: %s: too many processes\n", path);
		return -pid;
	}
	if (as_create(p)) {
		kprintf("kvmprof guest: %s: out of memory\n", path);
		goto fail;
	}
	p->text_start = p->text_end = p->text_offset = 0;
	if (elf_load(p, image, size, &entry)) {
		kprintf("kvmprof guest: %s: not a valid static x86-64 executable\n", path);
		goto fail;
	}
	if (p->nregions == MAX_REGIONS || setup_stack(p, argc, argv, &rsp)) {
		kprintf("kvmprof guest: %s: cannot set up the stack\n", path);
		goto fail;
	}
	size_t n = strlen(path);
	if (n >= PROC_NAME_MAX)
		n = PROC_NAME_MAX - 1;
	memcpy(p->name, path, n);
	p->name[n] = '\0';
	memset(&p->tf, 0, sizeof(p->tf));
	pmu_proc_reset(p);
	p->tf.rip = entry;
	p->tf.cs = USER_CS;
	p->tf.rflags = 0x202; /* IF */
	p->tf.rsp = rsp;
	p->tf.ss = USER_DS;
	p->tf.rdi = (uint64_t)argc;
	p->tf.rsi = rsp + 8;

	uint64_t now = clock_ns();
	spin_lock(&sched_lock);
	p->pid = pid;
	hist_start_locked(p, now);
	p->state = P_RUNNABLE;
	nrunnable++;
	nlive++;
	spin_unlock(&sched_lock);
	return p->pid;
fail:
	as_destroy(p);
	spin_lock(&sched_lock);
	p->state = P_UNUSED;
	spin_unlock(&sched_lock);
	return -pid;
}

/* ---- scheduling ---------------------------------------------------------- */

static void wake_sleepers_locked(void)
{
	uint64_t now = clock_ns(), next = ~0UL;
	for (int i = 0; i < nslots; i++) {
		struct proc *p = &procs[i];
		if (p->state != P_SLEEPING || !p->pid)
			continue;
		if (p->wake_ns <= now) {
			p->state = P_RUNNABLE;
			nsleeping--;
			nrunnable++;
		} else if (p->wake_ns < next) {
			next = p->wake_ns;
		}
	}
	next_wake = next;
}

static struct proc *pick_locked(void)
{
	if (nsleeping)
		wake_sleepers_locked();
	if (!nrunnable)
		return NULL;
	for (int i = 1; i <= nslots; i++) {
		int idx = (rr + i) % nslots;
		if (procs[idx].state == P_RUNNABLE) {
			rr = idx;
			procs[idx].state = P_RUNNING;
			nrunnable--;
			return &procs[idx];
		}
	}
	return NULL;
}

/*
 * Make `next` (picked under the lock, which is still held) the current
 * process of c, with tf being c's trap frame. Switches CR3 before the lock
 * is dropped, so that no CPU runs on an address space being freed.
 */
static void switch_to_locked(struct cpu *c, struct proc *prev, struct proc *next,
			     struct trapframe *tf)
{
	c->cur = next;
	if (next && next != prev) {
		memcpy(tf, &next->tf, sizeof(*tf));
		write_cr3(next->cr3);
	} else if (!next && prev) {
		write_cr3((uint64_t)boot_pml4);
	}
	spin_unlock(&sched_lock);
	if (!next)
		idle_halt(cpu_stack_top(c));
	pmu_switch_in(c, next);
}

static int work_pending(struct cpu *c)
{
	return nrunnable || (nsleeping && c->ticks * TICK_NS >= next_wake);
}

/* Current process goes to `st`; c picks the next one (maybe the same). */
static void reschedule(struct cpu *c, struct trapframe *tf, enum proc_state st)
{
	struct proc *p = c->cur;
	pmu_switch_out(c, p, (tf->cs & 3) == 3 ? tf->rip : 0);
	spin_lock(&sched_lock);
	memcpy(&p->tf, tf, sizeof(*tf));
	p->state = st;
	if (st == P_RUNNABLE) {
		nrunnable++;
	} else {
		nsleeping++;
		if (p->wake_ns < next_wake)
			next_wake = p->wake_ns;
	}
	switch_to_locked(c, p, pick_locked(), tf);
}

void sched_tick(struct cpu *c, struct trapframe *tf)
{
	if (work_pending(c))
		reschedule(c, tf, P_RUNNABLE);
}

void sched_idle_tick(struct cpu *c, struct trapframe *tf)
{
	if (!work_pending(c))
		return;
	spin_lock(&sched_lock);
	struct proc *next = pick_locked();
	if (!next) {
		spin_unlock(&sched_lock);
		return;
	}
	switch_to_locked(c, NULL, next, tf);
}

void sched_yield(struct cpu *c, struct trapframe *tf)
{
	reschedule(c, tf, P_RUNNABLE);
}

void sched_sleep(struct cpu *c, struct trapframe *tf, uint64_t ns)
{
	c->cur->wake_ns = clock_ns() + ns;
	reschedule(c, tf, P_SLEEPING);
}

/* First entry into the scheduler of a CPU (IF=0); see cpu_idle in boot.S. */
void cpu_idle_body(void)
{
	struct cpu *c = this_cpu();
	struct trapframe *tf = (struct trapframe *)(cpu_stack_top(c) - sizeof(*tf));
	spin_lock(&sched_lock);
	struct proc *next = pick_locked();
	switch_to_locked(c, NULL, next, tf); /* idles if there is nothing */
	trap_return(tf);
}

void sched_exit(struct cpu *c, int status)
{
	struct proc *p = c->cur;
	if (status)
		kprintf("kvmprof guest: pid %d (%s) exited with status %d\n", p->pid, p->name,
			status);
	int pid = p->pid;
	pmu_exit(c, p);
	write_cr3((uint64_t)boot_pml4);
	as_destroy(p);
	uint64_t now = clock_ns();
	spin_lock(&sched_lock);
	hist_exit_locked(pid, status, now);
	p->state = P_UNUSED;
	p->pid = 0;
	nlive--;
	record_status_locked(pid, status);
	if (nlive == 0) {
		int s = first_status;
		spin_unlock(&sched_lock);
		kinfo("kvmprof guest: all processes exited, status %d\n", s);
		for (int i = 0; i < ncpus_online(); i++)
			kinfo("kvmprof guest: cpu %d: %lu ticks, %lu in user mode\n", i,
			      cpu_get(i)->ticks, cpu_get(i)->user_ticks);
		poweroff((uint32_t)s);
	}
	c->cur = NULL;
	struct trapframe *tf = (struct trapframe *)(cpu_stack_top(c) - sizeof(*tf));
	switch_to_locked(c, NULL, pick_locked(), tf);
	trap_return(tf);
}

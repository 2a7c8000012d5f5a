// SPDX-License-Identifier: MIT
/*
 * Guest sampling by the VMM. A host clock event (perf_event_open on the vCPU
 * thread) signals the thread every period: a kick (kick.h), so KVM_RUN
 * returns, and the thread takes one sample whose weight is the number of
 * periods that passed since its last one (signals coalesce; the count
 * does not). Registers come from kvm_run's
 * synced registers (KVM_CAP_SYNC_REGS) where KVM offers them; the current
 * guest process and its name through vmi's process attribution
 * (guest_attrib.h); the call stack through guest_stack. Nothing on the
 * sample path allocates or blocks.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "guest_sampler.h"
#include "vcpu_hooks.h"
#include "desc_reader.h"
#include "guest_attrib.h"
#include "guest_stack.h"
#include "guest_walk.h"
#include "kick.h"
#include "common/perf_open.h"
#include "common/ring_append.h"
#include "common/task_layout.h"
#include "vm.h"

#define GS_DESC_REJECTS_SHOWN 4

static uint64_t gs_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* --- the descriptor port ---------------------------------------------------- */

static void gs_desc_write(void *opaque, uint16_t offset, uint8_t *data, unsigned int size, bool is_write)
{
	struct vm *vm = opaque;
	struct guest_sampler *gs = guest_sampler_of(vm);
	struct kp_guest_desc d;
	char why[GUEST_DESC_WHY_MAX] = "";
	uint32_t gpa = 0;

	(void)offset;
	if (!is_write) {
		memset(data, 0xff, size);
		return;
	}
	memcpy(&gpa, data, size < 4 ? size : 4);
	pthread_mutex_lock(&gs->desc_lock);
	if (__atomic_load_n(&gs->desc_valid, __ATOMIC_RELAXED)) {
		gs->desc_ignored++; /* the first valid one is final: readers use it without a lock */
	} else if (size != 4) {
		snprintf(why, sizeof(why), "a %u-byte OUT: the address is written with a 32-bit OUT", size);
	} else if (guest_mem_read(&vm->mem, gpa, &d, sizeof(d))) {
		snprintf(why, sizeof(why), "not in guest RAM");
	} else if (!guest_desc_check(&d, why)) {
		gs->desc = d;
		__atomic_store_n(&gs->desc_valid, 1, __ATOMIC_RELEASE);
	}
	if (why[0] && gs->desc_rejected++ < GS_DESC_REJECTS_SHOWN)
		fprintf(stderr, "kvmprof-vmm: guest descriptor at 0x%x refused: %s (samples get pid 0)\n", gpa, why);
	pthread_mutex_unlock(&gs->desc_lock);
}

static struct vcpu_outcome gs_desc_port(void *opaque, uint16_t offset, uint8_t *data, unsigned int size,
					bool is_write)
{
	gs_desc_write(opaque, offset, data, size, is_write);
	return vcpu_continue();
}

int guest_sampler_init(struct vm *vm)
{
	struct guest_sampler *gs = guest_sampler_of(vm);

	pthread_mutex_init(&gs->desc_lock, NULL);
	gs->sync_mask = vm->sync_regs_cap & (KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS);
	return ioport_register(&vm->io, KVMPROF_GUEST_DESC_PORT, 4, gs_desc_port, vm);
}

bool guest_sampler_has_desc(struct vm *vm)
{
	return __atomic_load_n(&guest_sampler_of(vm)->desc_valid, __ATOMIC_ACQUIRE);
}

struct guest_os guest_sampler_os(struct vm *vm)
{
	struct guest_sampler *gs = guest_sampler_of(vm);
	struct guest_os os = { 0 };

	/* Linux: kernel addresses are mapped in every process's tables, so the sampled CR3 reaches them. */
	if (gs->has_lx)
		os.linux_layout = &gs->lx;
	else if (guest_sampler_has_desc(vm))
		os.desc = &gs->desc;
	return os;
}

bool guest_sampler_running(const struct vm *vm)
{
	return guest_sampler_of(vm)->running;
}

/* --- the ring --------------------------------------------------------------- */

static void gs_publish(struct guest_sampler_vcpu *s)
{
	__atomic_store_n(&s->ctl->lost, s->lost, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ctl->written, s->written, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ctl->head, s->head, __ATOMIC_RELEASE);
}

/*
 * Appends a record; false (counted in lost) if it does not fit. `keep`:
 * bytes that must stay free after it, for records of a lower priority.
 */
static bool gs_put_keep(struct guest_sampler_vcpu *s, const uint8_t *rec, uint32_t size, uint64_t keep)
{
	if (!ring_append(s->ctl, s->data, GUEST_SAMPLER_DATA_SIZE, &s->head, rec, size, keep)) {
		if (keep)
			return false; /* the caller counts what it left out */
		s->lost++;
		gs_publish(s);
		return false;
	}
	s->written++;
	gs_publish(s);
	return true;
}

static bool gs_put(struct guest_sampler_vcpu *s, const uint8_t *rec, uint32_t size)
{
	return gs_put_keep(s, rec, size, 0);
}

static bool gs_put_comm(struct guest_sampler_vcpu *s, uint32_t pid, uint64_t time, const char *comm)
{
	struct kp_rec_comm *c = (struct kp_rec_comm *)(s->rec + sizeof(struct kp_rec_header));
	uint32_t size = (uint32_t)(sizeof(struct kp_rec_header) + sizeof(*c));

	memset(c, 0, sizeof(*c));
	c->pid = c->tid = pid;
	c->time = time;
	c->flags = KP_COMM_GUEST;
	snprintf(c->comm, sizeof(c->comm), "%.*s", KP_COMM_MAX - 1, comm);
	ring_seal(s->rec, KP_REC_COMM, size);
	return gs_put(s, s->rec, size);
}

static bool gs_put_mmap(struct guest_sampler_vcpu *s, uint32_t pid, uint64_t time, uint64_t start,
			uint64_t len, uint64_t pgoff, const char *path)
{
	struct kp_rec_mmap *m = (struct kp_rec_mmap *)(s->rec + sizeof(struct kp_rec_header));
	size_t plen = strlen(path) + 1;
	uint32_t size = (uint32_t)((sizeof(struct kp_rec_header) + sizeof(*m) + plen + 7) & ~(size_t)7);

	_Static_assert(sizeof(struct kp_rec_header) + sizeof(struct kp_rec_mmap) + KP_GDESC_PATH_MAX + 8 <=
		       GUEST_SAMPLER_REC_MAX, "an MMAP record fits the record buffer");
	memset(m, 0, size - sizeof(struct kp_rec_header));
	*m = (struct kp_rec_mmap){
		.pid = pid, .tid = pid, .time = time, .start = start, .len = len, .pgoff = pgoff,
		.prot = 5, /* PROT_READ | PROT_EXEC */
		.domain = KP_DOMAIN_GUEST,
	};
	memcpy(m->filename, path, plen);
	ring_seal(s->rec, KP_REC_MMAP, size);
	return gs_put(s, s->rec, size);
}

/* --- taking a sample -------------------------------------------------------- */

/* The attribution's sink (vmi/guest_attrib.h): this vCPU's ring. */
static bool gs_sink_comm(void *opaque, uint32_t pid, uint64_t time, const char *comm)
{
	return gs_put_comm(opaque, pid, time, comm);
}

static bool gs_sink_mmap(void *opaque, uint32_t pid, uint64_t time, uint64_t start, uint64_t len, uint64_t pgoff,
			 const char *path)
{
	return gs_put_mmap(opaque, pid, time, start, len, pgoff, path);
}

/* The registers at this exit (vcpu_exit_regs), counting the special registers' ioctls for sample-stop. */
static bool gs_regs(struct vcpu *vcpu, struct guest_sampler_vcpu *s, struct kvm_regs *rbuf, struct kvm_sregs *sbuf,
		    const struct kvm_regs **regs, const struct kvm_sregs **sregs)
{
	if (!vcpu_exit_regs(vcpu, rbuf, sbuf, regs, sregs))
		return false;
	s->sreg_ioctls += *sregs == sbuf;
	return true;
}

/*
 * The guest process on this vCPU, for a sample or an exit record: its pid
 * and tid (0: idle or unknown), with the ring told its name (and the
 * bundled guest's text mapping) first. *pg_ok: the paging could be read.
 */
static void gs_attribute(struct vcpu *vcpu, struct guest_sampler_vcpu *s, const struct kvm_sregs *sregs,
			 struct guest_paging *pg, bool *pg_ok, uint64_t t0, uint32_t *pid, uint32_t *tid)
{
	struct vm *vm = vcpu->vm;
	const struct vmi_mem ram = guest_mem_vmi(&vm->mem);
	const struct guest_attrib_sink sink = { .comm = gs_sink_comm, .mmap = gs_sink_mmap, .opaque = s };
	struct guest_os os = guest_sampler_os(vm);

	*pg_ok = guest_paging_init(pg, sregs->cr0, sregs->cr3, sregs->cr4, sregs->efer) == 0;
	guest_attribute(&s->attrib, &os, &ram, *pg_ok ? pg : NULL, vcpu->id, t0, &sink, pid, tid);
}

/*
 * One sample at this run's end. x: the exit record begun at this same
 * exit (NULL: none), whose registers, process and stack the sample takes
 * rather than reading and walking them a second time.
 */
static void gs_sample(struct vcpu *vcpu, struct guest_sampler_vcpu *s, uint64_t weight,
		      const struct kp_rec_vm_exit *x)
{
	struct vm *vm = vcpu->vm;
	struct guest_sampler *gs = guest_sampler_of(vm);
	struct kvm_regs regs_buf;
	struct kvm_sregs sregs_buf;
	const struct kvm_regs *regs;
	const struct kvm_sregs *sregs;
	const struct vmi_mem ram = guest_mem_vmi(&vm->mem);
	struct guest_paging pg;
	struct kp_rec_sample *smp;
	uint64_t t0 = gs_now(), dt;
	uint32_t pid, tid, size;
	bool pg_ok;

	smp = (struct kp_rec_sample *)(s->rec + sizeof(struct kp_rec_header));
	if (x) {
		pid = x->pid;
		tid = x->tid;
		*smp = (struct kp_rec_sample){ .pid = pid, .tid = tid, .cpu = vcpu->id, .time = t0, .ip = x->ip,
					       .period = weight * gs->period, .cpl = x->cpl, .domain = KP_DOMAIN_GUEST,
					       .nr_callchain = x->nr_callchain };
		memcpy(smp->callchain, x->callchain, x->nr_callchain * sizeof(uint64_t));
	} else {
		if (!gs_regs(vcpu, s, &regs_buf, &sregs_buf, &regs, &sregs))
			return;
		gs_attribute(vcpu, s, sregs, &pg, &pg_ok, t0, &pid, &tid);
		*smp = (struct kp_rec_sample){
			.pid = pid, .tid = tid, .cpu = vcpu->id, .time = t0, .ip = regs->rip,
			.period = weight * gs->period,
			/* CS.RPL is the CPL in protected and long mode; real mode runs at 0. */
			.cpl = vcpu_cpl(sregs) == 3 ? KP_CPL_USER : KP_CPL_KERNEL,
			.domain = KP_DOMAIN_GUEST,
		};
		if (gs->callgraph && pg_ok)
			smp->nr_callchain = (uint16_t)guest_callchain(&ram, &pg, smp->cpl == KP_CPL_USER, regs->rsp,
								      regs->rbp, sregs->tr.base, smp->callchain,
								      KP_CALLCHAIN_MAX);
	}
	size = (uint32_t)(sizeof(struct kp_rec_header) + sizeof(*smp) + smp->nr_callchain * sizeof(uint64_t));
	ring_seal(s->rec, KP_REC_SAMPLE, size);
	if (gs_put(s, s->rec, size))
		__atomic_store_n(&s->samples, s->samples + 1, __ATOMIC_RELAXED);
	TRACE(guest_sample, pid, tid, smp->ip, smp->cpl == KP_CPL_USER ? 3 : 0, smp->period, smp->nr_callchain);
	/* The process attribution at this exit; a vCPU's first sample has nothing to switch from. */
	if (s->traced_pid_known && s->traced_pid != pid)
		TRACE(guest_process_switch, s->traced_pid, pid, tid);
	s->traced_pid = pid;
	s->traced_pid_known = true;
	dt = gs_now() - t0;
	s->captures++;
	__atomic_store_n(&s->capture_ns, s->capture_ns + dt, __ATOMIC_RELAXED);
	if (dt > s->capture_max)
		__atomic_store_n(&s->capture_max, dt, __ATOMIC_RELAXED);
}

/* --- VM exit records ---------------------------------------------------------- */

/* What made the guest exit, from kvm_run (err: KVM_RUN's errno, which makes exit_reason stale). */
static void gs_exit_kind(const struct kvm_run *run, uint64_t err, struct kp_rec_vm_exit *x)
{
	if (err == EINTR) {
		x->kind = KP_EXIT_SIGNAL;
		return;
	}
	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		x->kind = run->io.direction == KVM_EXIT_IO_OUT ? KP_EXIT_IO_OUT : KP_EXIT_IO_IN;
		x->detail = run->io.port;
		x->size = run->io.size;
		break;
	case KVM_EXIT_MMIO:
		x->kind = run->mmio.is_write ? KP_EXIT_MMIO_WRITE : KP_EXIT_MMIO_READ;
		x->detail = run->mmio.phys_addr;
		x->size = (uint8_t)run->mmio.len;
		break;
	case KVM_EXIT_X86_RDMSR:
	case KVM_EXIT_X86_WRMSR:
		x->kind = run->exit_reason == KVM_EXIT_X86_RDMSR ? KP_EXIT_MSR_READ : KP_EXIT_MSR_WRITE;
		x->detail = run->msr.index;
		break;
	case KVM_EXIT_HLT:
		x->kind = KP_EXIT_HLT;
		break;
	case KVM_EXIT_INTR:
		x->kind = KP_EXIT_SIGNAL;
		break;
	default:
		x->kind = KP_EXIT_OTHER;
		x->detail = run->exit_reason;
	}
}

/*
 * At the end of a run: begins the record of this exit (where the guest
 * was, which process, its stack), to be sealed at the next entry with the
 * interval's end. A run that did not end in an exit (the exact backend's
 * emulator slices, a PVM AP's EAGAIN) records nothing.
 */
static void gs_exit_begin(struct vcpu *vcpu, struct guest_sampler_vcpu *s, const uint64_t *args)
{
	struct vm *vm = vcpu->vm;
	struct kvm_regs regs_buf;
	struct kvm_sregs sregs_buf;
	const struct kvm_regs *regs;
	const struct kvm_sregs *sregs;
	const struct vmi_mem ram = guest_mem_vmi(&vm->mem);
	struct kp_rec_vm_exit *x = (struct kp_rec_vm_exit *)(s->xrec + sizeof(struct kp_rec_header));
	struct guest_paging pg;
	uint64_t t0 = gs_now();
	bool pg_ok;

	s->exit_pending = false;
	/* vm_run_end's arguments: reason, err, emulated. */
	if (args[2] || (args[1] && args[1] != EINTR))
		return;
	if (!gs_regs(vcpu, s, &regs_buf, &sregs_buf, &regs, &sregs))
		return;
	*x = (struct kp_rec_vm_exit){ .cpu = vcpu->id, .host_tid = (uint32_t)vcpu->tid, .time = t0, .ip = regs->rip,
				      .cpl = vcpu_cpl(sregs) == 3 ? KP_CPL_USER : KP_CPL_KERNEL };
	gs_exit_kind(vcpu->run, args[1], x);
	gs_attribute(vcpu, s, sregs, &pg, &pg_ok, t0, &x->pid, &x->tid);
	if (guest_sampler_of(vm)->callgraph && pg_ok)
		x->nr_callchain = (uint16_t)guest_callchain(&ram, &pg, x->cpl == KP_CPL_USER, regs->rsp, regs->rbp,
							    sregs->tr.base, x->callchain, KP_CALLCHAIN_MAX);
	s->exit_pending = true;
}

/* At the next entry: the exit's interval ends; the record goes to the ring (or is counted lost there). */
static void gs_exit_end(struct guest_sampler_vcpu *s)
{
	struct kp_rec_vm_exit *x = (struct kp_rec_vm_exit *)(s->xrec + sizeof(struct kp_rec_header));
	uint32_t size = (uint32_t)(sizeof(struct kp_rec_header) + sizeof(*x) + x->nr_callchain * sizeof(uint64_t));

	if (!s->exit_pending)
		return;
	s->exit_pending = false;
	x->end = gs_now();
	ring_seal(s->xrec, KP_REC_VM_EXIT, size);
	/*
	 * Exits come far faster than samples: an exit record leaves a quarter
	 * of the ring free, so that a flood of them (a guest writing to a
	 * serial port) never costs a sample; what it leaves out is counted.
	 */
	if (gs_put_keep(s, s->xrec, size, GUEST_SAMPLER_DATA_SIZE / 4))
		__atomic_store_n(&s->exits, s->exits + 1, __ATOMIC_RELAXED);
	else {
		__atomic_store_n(&s->exits_dropped, s->exits_dropped + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&s->ctl->exits_dropped, s->exits_dropped, __ATOMIC_RELAXED);
	}
}

/*
 * vm_run_end, subscribed while sampling: takes a sample when the clock's
 * kick ended the run. Reads the clock's count, so one sample stands for
 * however many periods passed: never a loop of them. With "exits", also
 * vm_entry: each exit's record spans the exit to the entry. One reading of
 * active decides both this exit's record and its sample.
 */
static void gs_run_end(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
		       unsigned int nargs)
{
	struct vcpu *vcpu = ctx->owner;
	struct guest_sampler_vcpu *s;
	uint64_t count, periods;
	bool active;

	(void)opaque, (void)nargs;
	if (!vcpu)
		return;
	s = guest_sampler_vcpu_of(vcpu);
	if (event == KVMPROF_TRACE_vm_entry) {
		gs_exit_end(s); /* the record begun at the exit, if any: sealed even if stop came in between */
		return;
	}
	/* stop clears active before it unsubscribes: a run that ends in between takes no record and no sample. */
	active = __atomic_load_n(&s->active, __ATOMIC_ACQUIRE);
	if (!active)
		return;
	if (guest_sampler_of(vcpu->vm)->exits)
		gs_exit_begin(vcpu, s, args);
	if (!(vcpu->kicks & KICK_SAMPLER))
		return;
	__atomic_store_n(&s->kick_exits, s->kick_exits + 1, __ATOMIC_RELAXED);
	if (read(s->perf_fd, &count, sizeof(count)) != (ssize_t)sizeof(count))
		return;
	periods = count / guest_sampler_of(vcpu->vm)->period;
	if (periods > s->periods_seen) {
		gs_sample(vcpu, s, periods - s->periods_seen,
			  s->exit_pending ? (const struct kp_rec_vm_exit *)(s->xrec + sizeof(struct kp_rec_header)) : NULL);
		s->periods_seen = periods;
	} else {
		/* The clock's count ran ahead of its signals: an earlier sample already took this period. */
		__atomic_store_n(&s->kicks_no_period, s->kicks_no_period + 1, __ATOMIC_RELAXED);
	}
}

/* --- start and stop (control thread) ---------------------------------------- */

static int gs_fail(char err[GUEST_SAMPLER_ERR_MAX], int rc, const char *fmt, const char *arg)
{
	snprintf(err, GUEST_SAMPLER_ERR_MAX, fmt, arg);
	return rc;
}

static int gs_open_clock(pid_t tid, uint32_t type, uint64_t config, uint64_t period)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = type,
		.config = config,
		.sample_period = period,
		/* Not exclude_kernel: on a non-PVM KVM the guest runs in the thread's kernel context. */
		.exclude_hv = 1,
		.wakeup_events = 1,
	};
	int fd = perf_open(&attr, tid, -1, -1);
	int rc;

	if (fd < 0)
		return fd;
	rc = perf_open_signal_thread(fd, tid, kick_sampler_signo());
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

/* Frees what start set up; no vCPU samples (gs_run_end is not subscribed). */
static void gs_release(struct vm *vm)
{
	struct guest_sampler *gs = guest_sampler_of(vm);

	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		struct guest_sampler_vcpu *s = guest_sampler_vcpu_of(&vm->vcpu[i]);

		if (s->perf_fd >= 0)
			close(s->perf_fd);
		s->perf_fd = -1;
		guest_attrib_free(&s->attrib);
		s->ctl = NULL;
		s->data = NULL;
	}
	if (gs->map)
		munmap(gs->map, gs->map_size);
	gs->map = NULL;
	gs->running = false;
}

/* The memfd, sealed against resizing: a client that truncates it cannot make the VMM fault. */
static int gs_create_rings(struct vm *vm, int *memfd)
{
	struct guest_sampler *gs = guest_sampler_of(vm);
	unsigned int n = vm->cfg->ncpus;
	uint64_t stride = KP_RING_PAGE + GUEST_SAMPLER_DATA_SIZE;
	size_t size = KP_RING_PAGE + n * stride;
	struct kp_ring_header *h;
	int fd = memfd_create("kvmprof-guest-samples", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		int err = errno;
		close(fd);
		return -err;
	}
	gs->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (gs->map == MAP_FAILED) {
		int err = errno;
		gs->map = NULL;
		close(fd);
		return -err;
	}
	gs->map_size = size;
	h = gs->map;
	memcpy(h->magic, KP_RING_MAGIC, sizeof(h->magic));
	h->version = KP_RING_VERSION;
	h->nr_rings = n;
	h->data_size = GUEST_SAMPLER_DATA_SIZE;
	h->stride = stride;
	h->file_version_major = KP_FILE_VERSION_MAJOR;
	h->file_version_minor = KP_FILE_VERSION_MINOR;
	for (unsigned int i = 0; i < n; i++) {
		struct guest_sampler_vcpu *s = guest_sampler_vcpu_of(&vm->vcpu[i]);

		s->ctl = (struct kp_ring_ctl *)((uint8_t *)gs->map + KP_RING_PAGE + i * stride);
		s->data = (uint8_t *)s->ctl + KP_RING_PAGE;
	}
	*memfd = fd;
	return 0;
}

/* The vCPU thread ids; they appear microseconds after the threads start. */
static bool gs_wait_tids(struct vm *vm)
{
	for (int tries = 0; tries < 1000; tries++) {
		unsigned int ready = 0;

		for (unsigned int i = 0; i < vm->cfg->ncpus; i++)
			ready += __atomic_load_n(&vm->vcpu[i].tid, __ATOMIC_ACQUIRE) > 0;
		if (ready == vm->cfg->ncpus)
			return true;
		usleep(1000);
	}
	return false;
}

int guest_sampler_start(struct vm *vm, const struct guest_sampler_request *req, int *memfd,
			size_t *ring_size, char err[GUEST_SAMPLER_ERR_MAX])
{
	struct guest_sampler *gs = guest_sampler_of(vm);
	const struct guest_sampler_event *ev = guest_sampler_event(req->event);
	uint32_t type;
	uint64_t config;
	int fd = -1, rc;

	*memfd = -1;
	if (gs->running)
		return gs_fail(err, -EBUSY, "guest sampling is already running%s", "");
	if (!ev)
		return gs_fail(err, -EINVAL, "unknown event '%.64s': " GUEST_SAMPLER_EVENTS, req->event);
	type = ev->type;
	config = ev->config;
	if (req->period < (type == PERF_TYPE_SOFTWARE ? GUEST_SAMPLER_PERIOD_MIN : 1000) ||
	    req->period > GUEST_SAMPLER_PERIOD_MAX)
		return gs_fail(err, -EINVAL, "period out of range: %s", type == PERF_TYPE_SOFTWARE ?
			       "10000 to 10^10 ns for a clock" : "1000 to 10^10 events");
	if (req->lx) {
		char why[GUEST_DESC_WHY_MAX];

		if (task_layout_check(req->lx, why, sizeof(why)))
			return gs_fail(err, -EINVAL, "linux layout refused: %s", why);
	}
	if (!gs_wait_tids(vm))
		return gs_fail(err, -EAGAIN, "the vCPU threads are not running yet%s", "");
	rc = gs_create_rings(vm, &fd);
	if (rc)
		return gs_fail(err, rc, "cannot create the sample rings: %s", strerror(-rc));
	gs->period = req->period;
	gs->callgraph = req->callgraph;
	gs->exits = req->exits;
	/* Published to the vCPU threads by the SEQ_CST store of each one's active flag below. */
	gs->has_lx = req->lx != NULL;
	if (req->lx)
		gs->lx = *req->lx;
	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		struct vcpu *v = &vm->vcpu[i];
		struct guest_sampler_vcpu *s = guest_sampler_vcpu_of(v);

		s->head = s->written = s->lost = s->periods_seen = s->samples = 0;
		s->capture_ns = s->capture_max = s->sreg_ioctls = s->captures = 0;
		s->traced_pid_known = false;
		s->exit_pending = false;
		s->exits = 0;
		s->exits_dropped = 0;
		s->kick_exits = s->kicks_no_period = 0;
		if (guest_attrib_init(&s->attrib)) {
			rc = gs_fail(err, -ENOMEM, "cannot allocate the sampler's pid tables%s", "");
			break;
		}
		s->perf_fd = gs_open_clock(v->tid, type, config, req->period);
		if (s->perf_fd < 0) {
			rc = s->perf_fd;
			s->perf_fd = -1;
			if (perf_open_no_pmu(&(struct perf_event_attr){ .type = type }, -rc))
				snprintf(err, GUEST_SAMPLER_ERR_MAX, "event %s: this host has no hardware PMU perf can "
					 "use (perf_event_open: %s); use cpu-clock", ev->name, strerror(-rc));
			else
				snprintf(err, GUEST_SAMPLER_ERR_MAX, "perf_event_open of %s on a vCPU thread: %s",
					 ev->name, strerror(-rc));
			break;
		}
	}
	if (rc) {
		gs_release(vm);
		close(fd);
		return rc;
	}
	/* The vCPU threads see the rings and clocks set up above from their first dispatch to gs_run_end on. */
	gs->sub = (struct trace_subscriber){ .cb = gs_run_end, .internal = true };
	gs->sub.events[KVMPROF_TRACE_vm_run_end] = true;
	gs->sub.events[KVMPROF_TRACE_vm_entry] = req->exits;
	rc = trace_subscribe(&gs->sub);
	if (rc) {
		gs_release(vm);
		close(fd);
		return gs_fail(err, rc, "cannot subscribe to vm_run_end: %s", strerror(-rc));
	}
	gs->running = true;
	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		/* Synced registers cost KVM a copy per exit: only while sampling. */
		__atomic_store_n(&vm->vcpu[i].sync_regs, gs->sync_mask, __ATOMIC_RELAXED);
		__atomic_store_n(&guest_sampler_vcpu_of(&vm->vcpu[i])->active, 1, __ATOMIC_SEQ_CST);
	}
	*memfd = fd;
	*ring_size = gs->map_size;
	return 0;
}

int guest_sampler_stop(struct vm *vm, struct guest_sampler_totals *t)
{
	struct guest_sampler *gs = guest_sampler_of(vm);
	uint64_t ns = 0, nsamples = 0;

	memset(t, 0, sizeof(*t));
	if (!gs->running)
		return -ESRCH;
	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		__atomic_store_n(&guest_sampler_vcpu_of(&vm->vcpu[i])->active, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&vm->vcpu[i].sync_regs, 0, __ATOMIC_RELAXED);
	}
	/* Waits out samples in progress: they take microseconds and never block. */
	trace_unsubscribe(&gs->sub);
	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		struct guest_sampler_vcpu *s = guest_sampler_vcpu_of(&vm->vcpu[i]);

		/* The exit in progress at the stop: its record ends now (the vCPU no longer writes the ring). */
		gs_exit_end(s);
		t->samples += s->samples;
		t->lost += s->lost;
		t->records += s->written;
		t->vm_exits += s->exits;
		t->vm_exits_dropped += s->exits_dropped;
		t->kick_exits += s->kick_exits;
		t->kicks_no_period += s->kicks_no_period;
		ns += s->capture_ns;
		nsamples += s->captures;
		if (s->capture_max > t->capture_max_ns)
			t->capture_max_ns = s->capture_max;
	}
	t->capture_mean_ns = nsamples ? ns / nsamples : 0;
	gs_release(vm);
	return 0;
}

static int guest_sampler_vcpu_init(struct vcpu *vcpu)
{
	guest_sampler_vcpu_of(vcpu)->perf_fd = -1;
	return 0;
}

const struct vcpu_hooks guest_sampler_hooks = {
	.name = "guest sampler",
	.vm_size = sizeof(struct guest_sampler),
	.vcpu_size = sizeof(struct guest_sampler_vcpu),
	.vm_setup = guest_sampler_init,
	.init = guest_sampler_vcpu_init,
};

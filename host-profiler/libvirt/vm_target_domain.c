/* SPDX-License-Identifier: MIT */
/*
 * A libvirt domain as a recording's VM (vm_target.h): QEMU's process and
 * vCPU threads from libvirt (virt.h), guest samples from the vCPUs'
 * registers through QEMU's monitor and the guest's memory through QEMU's
 * mapping of it (domain_sampler.h, qemu_ram.h). What names the guest's
 * processes: a Linux guest's task layout (--guest-export), or the bundled
 * guest's descriptor, found by its symbol in the kernel.elf the domain XML
 * boots (or --guest-kernel). The domain going away (QEMU exiting) is seen
 * on a pidfd.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "domain_sampler.h"
#include "collection/emit.h"
#include "symbols/kallsyms.h"
#include "collection/procfs.h"
#include "qemu_ram.h"
#include "symbols/symtab.h"
#include "virt.h"
#include "vm_target.h"

#define MAX_JIT 128
#define MONITOR_FAILURES_MAX 100 /* a second of them at the default rate */

struct domain_target {
	const struct host_record_opts *o;
	struct virt_conn conn;
	struct virt_domain dom;
	int pidfd;
	struct qemu_ram ram;
	bool ram_ok;
	char ram_why[320];
	char procs_how[320];
	struct domain_sampler ds;
	bool sampling;
	uint64_t interval_ns, next_take;
	bool monitor_said;
	int failures_in_a_row;
	/* QEMU's CPU time (the kernel's accounting, ticks): host CPU per domain */
	uint64_t cpu0, cpu_last, cpu_read_at;
	bool cpu_known;
	/* TCG: QEMU's translated code, where a vCPU thread's samples are guest time */
	bool tcg;
	struct {
		uint64_t lo, hi;
	} jit[MAX_JIT];
	int njit;
};

/* ---- what is guest time ---- */

static int add_jit(const struct procfs_map *m, void *ctx)
{
	struct domain_target *d = ctx;

	/* TCG's code buffer: anonymous (or its memfd "tcg-jit") and executable; QEMU's own code is its file's. */
	if ((m->prot & PROT_EXEC) && (!m->path[0] || strstr(m->path, "tcg-jit")) && d->njit < MAX_JIT) {
		d->jit[d->njit].lo = m->start;
		d->jit[d->njit].hi = m->end;
		d->njit++;
	}
	return 0;
}

static bool domain_guest_code(const struct vm_target *t, const struct kp_rec_sample *s)
{
	const struct domain_target *d = t->priv;

	if (!d->tcg || s->cpl != KP_CPL_USER)
		return false;
	for (int i = 0; i < d->njit; i++)
		if (s->ip >= d->jit[i].lo && s->ip < d->jit[i].hi)
			return true;
	return false;
}

static int domain_guest_time(struct vm_target *t, const struct kp_rec_sample *s, bool perf_ip)
{
	struct domain_target *d = t->priv;
	/* Also once register sampling has ended: what it cannot attribute is counted. */
	int r = d->ds.vcpu ? domain_sampler_join(&d->ds, s, perf_ip) : 0;

	return r < 0 ? r : 0;
}

/* ---- starting ---- */

/* QEMU's user and system time so far, in ticks; false once it is gone. */
static bool qemu_cpu(struct domain_target *d, uint64_t *ticks)
{
	uint64_t ut, st, gt;

	if (procfs_cpu_times(d->dom.qemu_pid, 0, &ut, &st, &gt))
		return false;
	*ticks = ut + st;
	return true;
}


/* What names the guest's processes, said in guest_status and META. */
static void pick_process_source(struct domain_target *d, struct record_session *s)
{
	const char *kernel = d->o->guest_kernel ? d->o->guest_kernel : d->dom.kernel;
	uint64_t addr, size;
	int r;

	if (!d->ram_ok) {
		snprintf(d->procs_how, sizeof(d->procs_how), "none (guest memory not readable)");
		return;
	}
	if (s->layout) {
		domain_sampler_use_linux(&d->ds, s->layout);
		snprintf(d->procs_how, sizeof(d->procs_how), "Linux task layout from the guest's export");
		return;
	}
	if (!kernel[0]) {
		snprintf(d->procs_how, sizeof(d->procs_how), "none (no --guest-export for a Linux guest, and no "
							     "direct-boot kernel in the domain XML or --guest-kernel)");
		return;
	}
	r = symtab_find_symbol(kernel, KP_GDESC_SYMBOL, &addr, &size);
	if (!r && size >= sizeof(struct kp_guest_desc)) {
		domain_sampler_use_desc(&d->ds, addr);
		snprintf(d->procs_how, sizeof(d->procs_how), "the bundled guest's descriptor (%.200s's %s)", kernel,
			 KP_GDESC_SYMBOL);
		return;
	}
	snprintf(d->procs_how, sizeof(d->procs_how), "none (%.160s: %s; a Linux guest needs --guest-export)", kernel,
		 r == -ENOENT || !r ? "not the bundled guest's kernel (no " KP_GDESC_SYMBOL ")" : strerror(-r));
	if (d->o->guest_kernel)
		fprintf(stderr, "kvmprof: --guest-kernel %s: %s\n", kernel,
			r == -ENOENT || !r ? "no " KP_GDESC_SYMBOL " in it: not the bundled guest's kernel" : strerror(-r));
}

static bool export_symbol_start(uint64_t addr, void *ctx)
{
	struct kallsyms_sym k;

	return kallsyms_lookup(ctx, addr, &k) && k.addr == addr && !k.module;
}

/*
 * An export of another boot names no process (KASLR moved the kernel):
 * refused here, in one line, rather than a recording of "[unknown]"s whose
 * header says the export named them. -ECANCELED when refused.
 */
static int check_export_boot(struct domain_target *d, const struct record_session *s)
{
	struct kallsyms_sym k;
	bool found = false;
	const char *name;
	unsigned int vec = 0;
	uint64_t handler = 0;
	char was[160] = "";

	if (!s->layout_ksyms || kallsyms_hidden(s->layout_ksyms) ||
	    domain_sampler_kernel_fit(&d->ds, export_symbol_start, (void *)s->layout_ksyms, &vec, &handler) !=
		    LINUX_KERNEL_MOVED)
		return 0;
	for (unsigned int era = 0; !found && (name = linux_kernel_fit_handler_name(vec, era)); era++)
		found = kallsyms_find(s->layout_ksyms, name, KALLSYMS_IMAGE, &k);
	if (found)
		snprintf(was, sizeof(was), ", the export's %s at 0x%" PRIx64 " (moved by %s0x%" PRIx64 ")", k.name, k.addr,
			 handler >= k.addr ? "+" : "-", handler >= k.addr ? handler - k.addr : k.addr - handler);
	fprintf(stderr, "kvmprof: --guest-export %s is not of the boot domain '%s' runs now: its vector %u handler is at "
			"0x%" PRIx64 ", where the export has no function%s; the kernel moves at every boot (KASLR): run "
			"kvmprof-agent export in the guest again\n",
		d->o->guest_export, d->dom.name, vec, handler, was);
	return -ECANCELED;
}

static int domain_start(struct vm_target *t, struct record_session *s)
{
	struct domain_target *d = t->priv;
	unsigned int hz = d->o->guest_hz ? d->o->guest_hz : DOMAIN_SAMPLER_HZ_DEFAULT;
	char err[320];
	int r;

	r = qemu_ram_map(&d->ram, &d->dom.monitor, d->dom.qemu_pid, err, sizeof(err));
	if (!r)
		r = qemu_ram_probe(&d->ram, err, sizeof(err));
	d->ram_ok = !r;
	if (r) {
		snprintf(d->ram_why, sizeof(d->ram_why), "%s", err);
		fprintf(stderr, "kvmprof: domain '%s': %s: guest samples get no processes or stacks (host-side profile "
				"and guest RIPs only)\n", d->dom.name, err);
	}
	if (domain_sampler_init(&d->ds, &d->dom.monitor, d->ram_ok ? &d->ram : NULL, d->dom.vcpu_tid, d->dom.nvcpus,
				hz, s->o->rec.callgraph, s->w, s->event_id))
		return -ENOMEM;
	pick_process_source(d, s);
	if (s->layout && d->ram_ok && (r = check_export_boot(d, s)))
		return r;
	if (s->layout) {
		r = kp_writer_add(s->w, KP_REC_TASK_LAYOUT, s->layout, sizeof(*s->layout));
		if (r)
			return r;
	}
	if (d->tcg)
		procfs_read_maps(d->dom.qemu_pid, add_jit, d);
	d->interval_ns = 1000000000ull / hz;
	d->cpu_known = qemu_cpu(d, &d->cpu0);
	d->cpu_last = d->cpu0;
	d->cpu_read_at = emit_now_ns();
	/*
	 * The first round trip says whether the monitor answers at all. Registers
	 * that do not parse are no reason to stop: a vCPU still booting in 32-bit
	 * mode gives EIP, not RIP, and the next ones will.
	 */
	r = domain_sampler_take(&d->ds);
	if (r == -EIO) {
		fprintf(stderr, "kvmprof: domain '%s': no guest samples (%s): recording QEMU's threads from the host only\n",
			d->dom.name, d->ds.last_error);
		snprintf(t->guest_status, sizeof(t->guest_status), "unavailable: %s", d->ds.last_error);
		return 0;
	}
	if (r && r != -EBADMSG)
		return r;
	d->sampling = true;
	d->next_take = emit_now_ns() + d->interval_ns;
	snprintf(t->guest_status, sizeof(t->guest_status),
		 "on: QEMU's monitor, the vCPUs' registers %u times a second; processes: %.300s; guest memory: %.200s", hz,
		 d->procs_how, d->ram_ok ? "read through QEMU's mapping" : d->ram_why);
	return 0;
}

/* ---- the loop ---- */

/* Whether QEMU still runs: its pidfd not yet readable (or, without pidfds, the process there). */
static bool qemu_alive(const struct domain_target *d)
{
	struct pollfd p = { .fd = d->pidfd, .events = POLLIN };

	if (d->pidfd >= 0)
		return poll(&p, 1, 0) == 0;
	return kill(d->dom.qemu_pid, 0) == 0;
}

static bool domain_gone(struct vm_target *t, short revents)
{
	(void)t;
	return revents & (POLLIN | POLLHUP | POLLERR);
}

static int say_gone(struct vm_target *t, struct record_session *s)
{
	struct domain_target *d = t->priv;

	snprintf(t->gone_why, sizeof(t->gone_why),
		 "domain '%.200s' stopped (QEMU pid %d exited) after %.1f s", d->dom.name,
		 (int)d->dom.qemu_pid, (double)(emit_now_ns() - s->t_start) / 1e9);
	d->sampling = false;
	return 1;
}

static int domain_step(struct vm_target *t, struct record_session *s, short revents, int *next_poll_ms)
{
	struct domain_target *d = t->priv;
	uint64_t now = emit_now_ns();
	int r;

	if (domain_gone(t, revents))
		return say_gone(t, s);
	/* Once a second: what QEMU has used, kept for when it is gone at the end. */
	if (d->cpu_known && now - d->cpu_read_at >= 1000000000ull) {
		qemu_cpu(d, &d->cpu_last);
		d->cpu_read_at = now;
	}
	if (d->sampling && now < d->next_take) {
		*next_poll_ms = (int)((d->next_take - now + 999999) / 1000000);
		return 0;
	}
	if (!d->sampling)
		return 0;
	r = domain_sampler_take(&d->ds);
	/* A monitor that fails because QEMU is exiting: the pidfd may not have fired yet. */
	if (r == -EIO && !qemu_alive(d))
		return say_gone(t, s);
	d->failures_in_a_row = r == -EIO ? d->failures_in_a_row + 1 : 0;
	if (r == -EIO || r == -EBADMSG) {
		if (!d->monitor_said)
			fprintf(stderr, "kvmprof: domain '%s': %s (said once; counted in META guest_register_failures)\n",
				d->dom.name, d->ds.last_error);
		d->monitor_said = true;
	} else if (r) {
		return r;
	}
	/* QEMU runs but its monitor has stopped answering (libvirtd gone, say): the host side goes on alone. */
	if (d->failures_in_a_row >= MONITOR_FAILURES_MAX) {
		fprintf(stderr, "kvmprof: domain '%s': the monitor failed %d times in a row: no more guest samples; "
				"the host side goes on\n", d->dom.name, MONITOR_FAILURES_MAX);
		d->sampling = false;
		return 0;
	}
	/* Keep the rate: the next one a period after this one was due, or after now when far behind. */
	d->next_take += d->interval_ns;
	now = emit_now_ns();
	if (d->next_take < now)
		d->next_take = now + d->interval_ns;
	*next_poll_ms = (int)((d->next_take - now + 999999) / 1000000);
	return 0;
}

static int domain_stop(struct vm_target *t, struct record_session *s)
{
	(void)t, (void)s;
	return 0;
}

static int domain_epilogue(struct vm_target *t, struct record_session *s)
{
	struct domain_target *d = t->priv;
	const struct domain_sampler *ds = &d->ds;
	uint64_t good = ds->rounds - ds->round_failures;
	int r;

	r = kp_writer_meta_u64(s->w, "guest_samples", ds->joined);
	if (!r)
		r = kp_writer_meta_u64(s->w, "guest_register_samples", good);
	if (!r)
		r = kp_writer_meta_u64(s->w, "guest_register_failures", ds->round_failures);
	if (!r)
		r = kp_writer_meta_u64(s->w, "guest_register_hz", ds->hz);
	if (!r && ds->rtt_rounds)
		r = kp_writer_meta_u64(s->w, "guest_monitor_rtt_mean_ns", ds->rtt_ns / ds->rtt_rounds);
	if (!r && ds->rtt_rounds)
		r = kp_writer_meta_u64(s->w, "guest_monitor_rtt_max_ns", ds->rtt_max_ns);
	if (!r)
		r = kp_writer_meta_u64(s->w, "guest_time_unattributed", ds->unjoined);
	if (!r)
		r = kp_writer_meta(s->w, "guest_processes", d->procs_how[0] ? d->procs_how : "none");
	if (!r)
		r = kp_writer_meta(s->w, "guest_memory", d->ram_ok ? "read through QEMU's mapping" : d->ram_why);
	if (!r)
		r = kp_writer_meta(s->w, "domain_type", d->dom.type);
	if (d->cpu_known)
		qemu_cpu(d, &d->cpu_last);
	if (!r && d->cpu_known)
		r = kp_writer_meta_u64(s->w, "vmm_cpu_ms", (d->cpu_last - d->cpu0) * 1000 / (uint64_t)sysconf(_SC_CLK_TCK));
	return r;
}

static uint64_t domain_guest_samples(const struct vm_target *t)
{
	const struct domain_target *d = t->priv;

	return d->ds.joined;
}

static uint64_t domain_guest_lost(const struct vm_target *t)
{
	(void)t;
	return 0;
}

static void domain_summary(const struct vm_target *t)
{
	const struct domain_target *d = t->priv;
	const struct domain_sampler *ds = &d->ds;

	if (!ds->rounds)
		return;
	fprintf(stderr, "kvmprof: QEMU's monitor gave the registers of %u vCPU%s %" PRIu64 " times (%" PRIu64
		" failed), %.2f ms a round trip on average (max %.2f ms); %" PRIu64 " of %" PRIu64
		" guest-time host samples had a register sample within %.0f ms\n",
		ds->nvcpus, ds->nvcpus == 1 ? "" : "s", ds->rounds - ds->round_failures, ds->round_failures,
		ds->rtt_rounds ? (double)ds->rtt_ns / (double)ds->rtt_rounds / 1e6 : 0.0,
		(double)ds->rtt_max_ns / 1e6, ds->joined, ds->joined + ds->unjoined, (double)ds->window_ns / 1e6);
}

static void domain_close(struct vm_target *t)
{
	struct domain_target *d = t->priv;

	domain_sampler_free(&d->ds);
	virt_domain_close(&d->dom);
	virt_disconnect(&d->conn);
	if (d->pidfd >= 0)
		close(d->pidfd);
	free(d);
	t->priv = NULL;
}

static const struct vm_target_ops domain_ops = {
	.start = domain_start,
	.step = domain_step,
	.guest_code = domain_guest_code,
	.guest_time = domain_guest_time,
	.stop = domain_stop,
	.epilogue = domain_epilogue,
	.guest_samples = domain_guest_samples,
	.guest_lost = domain_guest_lost,
	.summary = domain_summary,
	.gone = domain_gone,
	.close = domain_close,
};

int vm_target_open_domain(struct vm_target *t, const char *uri, const char *name, const struct host_record_opts *o)
{
	static const struct host_record_opts none;
	struct domain_target *d = calloc(1, sizeof(*d));
	char err[768];
	unsigned int hz;

	memset(t, 0, sizeof(*t));
	t->poll_fd = -1;
	if (!d) {
		fprintf(stderr, "kvmprof: out of memory\n");
		return 1;
	}
	d->o = o ? o : &none;
	d->pidfd = -1;
	t->ops = &domain_ops;
	t->priv = d;
	if (virt_connect(&d->conn, uri, err, sizeof(err)) || virt_domain_open(&d->conn, name, &d->dom, err, sizeof(err))) {
		fprintf(stderr, "kvmprof: %s\n", err);
		vm_target_close(t);
		return 1;
	}
	t->pid = d->dom.qemu_pid;
	t->nvcpus = d->dom.nvcpus;
	memcpy(t->vcpu_tid, d->dom.vcpu_tid, sizeof(t->vcpu_tid[0]) * d->dom.nvcpus);
	snprintf(t->vmm, sizeof(t->vmm), "qemu");
	snprintf(t->domain, sizeof(t->domain), "%s", d->dom.name);
	snprintf(t->uri, sizeof(t->uri), "%s", d->conn.uri);
	snprintf(t->label, sizeof(t->label), "libvirt domain '%s' (%s, QEMU", d->dom.name, d->conn.uri);
	snprintf(t->what, sizeof(t->what), "system-wide: libvirt domain %s (%s, %s), QEMU pid %d", d->dom.name,
		 d->conn.uri, !strcmp(d->dom.type, "kvm") ? "KVM" : "TCG", (int)t->pid);
	snprintf(t->guest_status, sizeof(t->guest_status), "not asked");
	d->tcg = !strcmp(d->dom.type, "qemu");
	/* QEMU exiting makes its pidfd readable: the domain is gone. */
	d->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	t->poll_fd = d->pidfd;
	hz = d->o->guest_hz ? d->o->guest_hz : DOMAIN_SAMPLER_HZ_DEFAULT;
	t->poll_ms = (int)(1000 / hz) > 0 ? (int)(1000 / hz) : 1;
	return 0;
}

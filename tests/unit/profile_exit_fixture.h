/* SPDX-License-Identifier: MIT */
/*
 * Shared by the cross-layer tests (test_lib_profile_exits.c,
 * test_report_drill.c): records built in memory and fed straight to the
 * profile model, as a reader would hand them out (no file in between, so a
 * record may say what the reader would refuse), and one small system-wide
 * world both tests use:
 *
 *   host (native): kernel symbols host_entry, handle_io; the VMM, pid 100,
 *     with the lib_fixture ELF mapped at 0x40000000 (alpha, beta); a native
 *     pid 7 "host7" that must never name the guest's pid 7.
 *   guest: kernel symbols guest_syscall, console_write, at the same
 *     addresses as the host's; processes 7 "spam" and 8 "pmu", each with
 *     /bin/fx (the fixture, under the guest root) at 0x40000000.
 *
 * Include after <cmocka.h>: the helpers assert that each record went in.
 */
#ifndef KVMPROF_TEST_PROFILE_EXIT_FIXTURE_H
#define KVMPROF_TEST_PROFILE_EXIT_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib_fixture.h"
#include "profile/profile.h"

/* Kernel addresses: the host's and the guest's kernels use the same ones. */
#define PF_HOST_ENTRY 0xffffffff81000000ull
#define PF_HANDLE_IO 0xffffffff81001000ull
#define PF_GUEST_SYSCALL 0xffffffff81000000ull
#define PF_CONSOLE_WRITE 0xffffffff81001000ull

#define PF_VMM_PID 100u
#define PF_SPAM_PID 7u
#define PF_PMU_PID 8u

/* The group's files: the fixture's ELF tree (a native program, the guest's), made once. */
static char *pf_dir;
static char pf_native_elf[600];

static int pf_setup(void **state)
{
	(void)state;
	pf_dir = fx_mkdir();
	if (!pf_dir || fx_build(pf_dir, NULL))
		return -1;
	snprintf(pf_native_elf, sizeof(pf_native_elf), "%s/bin/fx", pf_dir);
	return 0;
}

static int pf_teardown(void **state)
{
	(void)state;
	fx_rmdir(pf_dir);
	return 0;
}

static inline void pf_add(struct profile *p, uint32_t type, const void *payload, size_t len, bool guest)
{
	struct kp_record rec = { .type = type, .payload_len = (uint32_t)len, .payload = payload };

	assert_int_equal(guest ? profile_add_guest_record(p, &rec) : profile_add_record(p, &rec), 0);
}

static inline void pf_ksyms(struct profile *p, const char *text, bool guest)
{
	size_t n = strlen(text);
	struct kp_rec_ksyms *k = calloc(1, sizeof(*k) + n);

	assert_non_null(k);
	k->len = (uint32_t)n;
	memcpy(k->text, text, n);
	pf_add(p, KP_REC_KSYMS, k, sizeof(*k) + n, guest);
	free(k);
}

static inline void pf_comm(struct profile *p, uint32_t pid, const char *name, bool guest)
{
	struct kp_rec_comm c = { .pid = pid, .tid = pid, .time = 1, .flags = guest ? KP_COMM_GUEST : 0 };

	snprintf(c.comm, sizeof(c.comm), "%s", name);
	pf_add(p, KP_REC_COMM, &c, sizeof(c), false);
}

static inline void pf_mmap(struct profile *p, uint32_t pid, const char *filename, bool guest)
{
	size_t n = strlen(filename) + 1;
	struct kp_rec_mmap *m = calloc(1, sizeof(*m) + n);

	assert_non_null(m);
	*m = (struct kp_rec_mmap){ .pid = pid, .tid = pid, .time = 1, .start = 0x40000000, .len = 0x40000, .prot = 5,
				   .domain = guest ? KP_DOMAIN_GUEST : KP_DOMAIN_NATIVE };
	memcpy(m->filename, filename, n);
	pf_add(p, KP_REC_MMAP, m, sizeof(*m) + n, false);
	free(m);
}

static inline void pf_event(struct profile *p, uint32_t id, uint32_t type, uint64_t config, uint64_t period,
			    uint32_t flags)
{
	struct kp_rec_event e = { .id = id, .type = type, .config = config, .period = period, .flags = flags };

	snprintf(e.name, sizeof(e.name), "ev%u", id);
	pf_add(p, KP_REC_EVENT, &e, sizeof(e), false);
}

/* One sample of event 0; chain: n return addresses, innermost first. */
static inline void pf_sample(struct profile *p, uint8_t domain, uint32_t pid, uint32_t tid, uint64_t time,
			     uint64_t period, uint64_t ip, uint8_t cpl, const uint64_t *chain, uint16_t n)
{
	struct kp_rec_sample *s = calloc(1, sizeof(*s) + n * sizeof(uint64_t));

	assert_non_null(s);
	*s = (struct kp_rec_sample){ .pid = pid, .tid = tid, .time = time, .ip = ip, .period = period, .cpl = cpl,
				     .domain = domain, .nr_callchain = n };
	if (n)
		memcpy(s->callchain, chain, n * sizeof(uint64_t));
	pf_add(p, KP_REC_SAMPLE, s, sizeof(*s) + n * sizeof(uint64_t), false);
	free(s);
}

/* A host sample of the VMM's thread tid (pid 100). */
static inline void pf_host_sample(struct profile *p, uint32_t tid, uint64_t time, uint64_t ip, uint8_t cpl,
				  const uint64_t *chain, uint16_t n)
{
	pf_sample(p, KP_DOMAIN_NATIVE, PF_VMM_PID, tid, time, 1000000, ip, cpl, chain, n);
}

/* A VM exit of guest process pid (its tid the same) handled by vCPU thread host_tid in [time, end). */
struct pf_exit {
	uint32_t host_tid, pid;
	uint64_t time, end, ip, detail;
	uint8_t kind, cpl;
	const uint64_t *chain; /* guest return addresses, innermost first */
	uint16_t chain_len;    /* entries in chain: the record's nr_callchain (may exceed KP_CALLCHAIN_MAX) */
};

static inline void pf_vm_exit(struct profile *p, const struct pf_exit *e)
{
	const struct kp_rec_vm_exit head = { .pid = e->pid, .tid = e->pid, .host_tid = e->host_tid, .time = e->time,
					     .end = e->end, .ip = e->ip, .detail = e->detail, .kind = e->kind,
					     .cpl = e->cpl, .size = 1, .nr_callchain = e->chain_len };
	size_t chain_bytes = e->chain_len * sizeof(uint64_t);
	/* Bytes, not the struct with its callchain[]: the ASan build's -Warray-bounds misreads that copy. */
	unsigned char *x = calloc(1, sizeof(head) + chain_bytes);

	assert_non_null(x);
	memcpy(x, &head, sizeof(head));
	if (chain_bytes)
		memcpy(x + sizeof(head), e->chain, chain_bytes);
	pf_add(p, KP_REC_VM_EXIT, x, sizeof(head) + chain_bytes, false);
	free(x);
}

/* The world above; native_elf: the fixture's host path (the guest's is /bin/fx under the guest root). */
static inline void pf_world(struct profile *p, const char *native_elf)
{
	pf_ksyms(p, "ffffffff81000000 T host_entry\nffffffff81001000 T handle_io\nffffffff81002000 T host_end\n", false);
	pf_ksyms(p, "ffffffff81000000 T guest_syscall\nffffffff81001000 T console_write\nffffffff81002000 T guest_end\n",
		 true);
	pf_comm(p, PF_VMM_PID, "vmm", false);
	pf_mmap(p, PF_VMM_PID, native_elf, false);
	pf_comm(p, PF_SPAM_PID, "host7", false);
	pf_comm(p, PF_SPAM_PID, "spam", true);
	pf_mmap(p, PF_SPAM_PID, "/bin/fx", true);
	pf_comm(p, PF_PMU_PID, "pmu", true);
	pf_mmap(p, PF_PMU_PID, "/bin/fx", true);
}

/*
 * A frame list, innermost first, as "image`function" joined by ';' (a VM
 * exit's frame by its name alone, as folded stacks print it).
 */
static inline void pf_frames(char *buf, size_t len, const struct profile *p, const uint32_t *frames, uint32_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < n && off < len; i++) {
		const struct profile_func *f = &p->funcs[p->locs[frames[i]].func];
		const struct profile_image *im = &p->images[f->image];

		off += (size_t)snprintf(buf + off, len - off, "%s%s%s%s", i ? ";" : "", im->vm_exit ? "" : im->name,
					im->vm_exit ? "" : "`", f->name ? f->name : "[unknown]");
	}
}

#endif

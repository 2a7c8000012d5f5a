/* SPDX-License-Identifier: MIT */
/*
 * Shared by the libkvmprof symbolizer/profile/report tests: an ELF fixture
 * compiled at test time with functions at known addresses, and helpers that
 * write sample-file records with the library's writer.
 *
 * The fixture is static and non-PIE, linked at 0x40000000 like the bundled
 * guest's programs; each function sits in its own section at a fixed address:
 *   _start 0x40001000, alpha 0x40010000 (C, sized), beta 0x40020000 (C, calls
 *   alpha), gamma_label 0x40030000 (assembly label, no type, no size).
 */
#ifndef KVMPROF_TEST_LIB_FIXTURE_H
#define KVMPROF_TEST_LIB_FIXTURE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/profile.h"
#include "format/sample_file.h"

#define FX_START 0x40001000ull
#define FX_ALPHA 0x40010000ull
#define FX_BETA 0x40020000ull
#define FX_GAMMA 0x40030000ull

static const char fx_source[] =
	"__attribute__((section(\"alpha_text\"), noinline, used)) int alpha(int x) { return x * 3 + 1; }\n"
	"__attribute__((section(\"beta_text\"), noinline, used)) int beta(int x) { return alpha(x) + 2; }\n"
	"void _start(void) { for (;;) beta(1); }\n"
	"__asm__(\".section gamma_text,\\\"ax\\\",@progbits\\n.globl gamma_label\\ngamma_label:\\n"
	" nop\\n nop\\n ret\\n.previous\\n\");\n";

/* A fresh directory under /tmp; the caller removes it with fx_rmdir. */
static inline char *fx_mkdir(void)
{
	char *dir = strdup("/tmp/kvmprof-test-XXXXXX");

	if (!dir || !mkdtemp(dir)) {
		free(dir);
		return NULL;
	}
	return dir;
}

static inline void fx_rmdir(char *dir)
{
	char cmd[256];

	if (!dir)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	free(dir);
}

/* Compiles the fixture to DIR/bin/fx (extra: more gcc flags, e.g. a build-id style). 0 on success. */
static inline int fx_build(const char *dir, const char *extra)
{
	char src[256], cmd[1024];
	FILE *f;

	snprintf(src, sizeof(src), "%s/fx.c", dir);
	f = fopen(src, "w");
	if (!f)
		return -1;
	fputs(fx_source, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/bin' && gcc -O1 -static -nostdlib -no-pie -fno-pic "
		 "-fno-asynchronous-unwind-tables -Wl,-Ttext-segment=0x40000000 "
		 "-Wl,--section-start=alpha_text=0x40010000 -Wl,--section-start=beta_text=0x40020000 "
		 "-Wl,--section-start=gamma_text=0x40030000 -Wl,--no-warn-rwx-segments %s "
		 "-o '%s/bin/fx' '%s'",
		 dir, extra ? extra : "-Wl,--build-id=sha1", dir, src);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- writing sample files ---- */

/* Opens a sample file for writing; *fd is closed by fx_close (the writer leaves it open). */
static inline struct kp_writer *fx_writer(const char *path, int *fd)
{
	struct kp_writer *w = NULL;

	*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (*fd < 0 || kp_writer_open(&w, *fd, KP_SOURCE_BUNDLED_GUEST)) {
		if (*fd >= 0)
			close(*fd);
		return NULL;
	}
	return w;
}

static inline int fx_close(struct kp_writer *w, int fd)
{
	int rc = kp_writer_close(w, 0, 1000);

	close(fd);
	return rc;
}

static inline int fx_event(struct kp_writer *w, uint32_t id, const char *name, uint64_t period, uint32_t flags)
{
	struct kp_rec_event e = { .id = id, .type = 0, .period = period, .flags = flags };

	snprintf(e.name, sizeof(e.name), "%s", name);
	return kp_writer_add(w, KP_REC_EVENT, &e, sizeof(e));
}

static inline int fx_comm(struct kp_writer *w, uint32_t pid, uint32_t tid, uint64_t time, uint32_t flags,
			  const char *name)
{
	struct kp_rec_comm c = { .pid = pid, .tid = tid, .time = time, .flags = flags };

	snprintf(c.comm, sizeof(c.comm), "%s", name);
	return kp_writer_add(w, KP_REC_COMM, &c, sizeof(c));
}

static inline int fx_mmap(struct kp_writer *w, uint32_t pid, uint64_t time, uint64_t start, uint64_t len,
			  uint64_t pgoff, const char *filename, const uint8_t *bid, uint8_t bid_size)
{
	size_t n = strlen(filename) + 1;
	struct kp_rec_mmap *m = calloc(1, sizeof(*m) + n);
	int rc;

	if (!m)
		return -1;
	*m = (struct kp_rec_mmap){ .pid = pid, .tid = pid, .time = time, .start = start, .len = len,
				   .pgoff = pgoff, .prot = 5, .build_id_size = bid_size };
	if (bid_size)
		memcpy(m->build_id, bid, bid_size);
	memcpy(m->filename, filename, n);
	rc = kp_writer_add(w, KP_REC_MMAP, m, sizeof(*m) + n);
	free(m);
	return rc;
}

static inline int fx_task(struct kp_writer *w, uint32_t type, uint32_t pid, uint32_t ppid, uint64_t time)
{
	struct kp_rec_task t = { .pid = pid, .ppid = ppid, .tid = pid, .ptid = ppid, .time = time };

	return kp_writer_add(w, type, &t, sizeof(t));
}

static inline int fx_sample(struct kp_writer *w, uint32_t ev, uint32_t pid, uint64_t time, uint64_t ip, uint8_t cpl,
			    const uint64_t *chain, uint16_t n)
{
	struct kp_rec_sample *s = calloc(1, sizeof(*s) + n * sizeof(uint64_t));
	int rc;

	if (!s)
		return -1;
	*s = (struct kp_rec_sample){ .event_id = ev, .pid = pid, .tid = pid, .time = time, .ip = ip,
				     .period = 1000, .cpl = cpl, .nr_callchain = n };
	if (n)
		memcpy(s->callchain, chain, n * sizeof(uint64_t));
	rc = kp_writer_add(w, KP_REC_SAMPLE, s, sizeof(*s) + n * sizeof(uint64_t));
	free(s);
	return rc;
}

/*
 * The report tests' recording, loaded: in dir (made, and the fixture
 * program built there) a file `name` with kernel symbols kfunc and kfunc2,
 * process 10 "matmul" running /bin/fx (alpha three times and beta once,
 * with their callers; kfunc twice) and process 11 "a b;c" with one sample
 * nowhere. 0, or -1 (the caller's teardown still frees what was made).
 */
static inline int fx_report_profile(const char *name, char **dir, struct profile **prof)
{
	static const char ksyms[] = "ffffffff81000000 T kfunc\nffffffff81001000 T kfunc2\n";
	const uint64_t alpha_chain[] = { FX_BETA + 5, FX_START + 1 };
	const uint64_t beta_chain[] = { FX_START + 1 };
	const uint64_t kernel_chain[] = { FX_BETA + 5 };
	struct profile_options opt = { 0 };
	struct kp_writer *w;
	char path[600], err[512];
	int fd, i, rc = 0;

	*dir = fx_mkdir();
	if (!*dir || fx_build(*dir, NULL))
		return -1;
	snprintf(path, sizeof(path), "%s/%s", *dir, name);
	w = fx_writer(path, &fd);
	if (!w)
		return -1;
	rc |= fx_event(w, 1, "cycles", 1000, 0);
	rc |= kp_writer_ksyms(w, ksyms, strlen(ksyms));
	rc |= fx_comm(w, 10, 10, 1, 0, "matmul");
	rc |= fx_mmap(w, 10, 2, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0);
	rc |= fx_comm(w, 11, 11, 1, 0, "a b;c");
	for (i = 0; i < 3; i++)
		rc |= fx_sample(w, 1, 10, 10 + i, FX_ALPHA + 1, KP_CPL_USER, alpha_chain, 2);
	rc |= fx_sample(w, 1, 10, 20, FX_BETA + 1, KP_CPL_USER, beta_chain, 1);
	for (i = 0; i < 2; i++)
		rc |= fx_sample(w, 1, 10, 30 + i, 0xffffffff81000010, KP_CPL_KERNEL, kernel_chain, 1);
	rc |= fx_sample(w, 1, 11, 40, 0x1234, KP_CPL_USER, NULL, 0);
	rc |= fx_close(w, fd);
	opt.root = *dir;
	if (rc || profile_load(prof, path, &opt, err, sizeof(err)))
		return -1;
	return 0;
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof report -i DIR` of a `kvmprof record --all-domains` directory:
 * first where the host's CPU went, domain by domain (QEMU's CPU time as the
 * kernel accounted it during the recording, and the samples by layer),
 * then each domain's own table, as `kvmprof report -i DIR/NAME.data`
 * prints it.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "host_report.h"
#include "common/utf8.h"

struct domain_file {
	char path[4200];
	char name[256];
	struct profile *p;
	char err[512];
	uint64_t cpu_ms;
	bool cpu_known;
	uint64_t by_layer[HOST_LAYER_COUNT], total;
};

static int cmp_files(const void *a, const void *b)
{
	return strcmp(((const struct domain_file *)a)->path, ((const struct domain_file *)b)->path);
}

/* DIR's *.data files, sorted by name. */
static int list_files(const char *dir, struct domain_file **files, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t cap = 0;

	*files = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len <= 5 || strcmp(de->d_name + len - 5, ".data"))
			continue;
		if (grow_array(files, &cap, *n + 1, sizeof(**files))) {
			closedir(d);
			return -ENOMEM;
		}
		memset(&(*files)[*n], 0, sizeof(**files));
		snprintf((*files)[*n].path, sizeof((*files)[*n].path), "%s/%s", dir, de->d_name);
		snprintf((*files)[*n].name, sizeof((*files)[*n].name), "%.*s", (int)(len - 5), de->d_name);
		(*n)++;
	}
	closedir(d);
	if (*n > 1)
		qsort(*files, *n, sizeof(**files), cmp_files);
	return 0;
}

static void summarize(struct domain_file *f)
{
	const char *v = profile_meta(f->p, "domain"), *cpu = profile_meta(f->p, "vmm_cpu_ms");

	if (v)
		snprintf(f->name, sizeof(f->name), "%s", v);
	utf8_sanitize(f->name, '?', NULL);
	if (cpu) {
		f->cpu_ms = strtoull(cpu, NULL, 10);
		f->cpu_known = true;
	}
	for (size_t i = 0; i < f->p->nr_samples; i++)
		f->by_layer[host_layer_of(&f->p->samples[i])]++;
	f->total = f->p->nr_samples;
}

static void print_summary(FILE *out, const char *dir, const struct domain_file *files, size_t n)
{
	uint64_t cpu_all = 0;
	bool unknown = false; /* a guest unknown column, as the header's row: only where some domain has such time */

	for (size_t i = 0; i < n; i++) {
		cpu_all += files[i].cpu_ms;
		unknown |= files[i].p && files[i].by_layer[HOST_LAYER_GUEST_UNKNOWN];
	}
	fprintf(out, "kvmprof all-domains profile: %s, %zu domain%s\n\n", dir, n, n == 1 ? "" : "s");
	fprintf(out, "host CPU per domain (QEMU's user and system time while recording, as the kernel accounts it;\n"
		     "samples by where their time went):\n\n");
	fprintf(out, "%-24s %12s %7s %10s %11s %13s", "domain", "QEMU CPU s", "%", "samples", "guest user",
		"guest kernel");
	if (unknown)
		fprintf(out, " %14s", "guest unknown");
	fprintf(out, " %9s %12s\n", "VMM user", "host kernel");
	for (size_t i = 0; i < n; i++) {
		const struct domain_file *f = &files[i];

		if (!f->p) {
			fprintf(out, "%-24s (unreadable: %s)\n", f->name, f->err);
			continue;
		}
		if (f->cpu_known)
			fprintf(out, "%-24s %12.2f %6.1f%%", f->name, (double)f->cpu_ms / 1e3,
				cpu_all ? 100.0 * (double)f->cpu_ms / (double)cpu_all : 0.0);
		else
			fprintf(out, "%-24s %12s %7s", f->name, "?", "");
		fprintf(out, " %10" PRIu64 " %11" PRIu64 " %13" PRIu64, f->total, f->by_layer[HOST_LAYER_GUEST_USER],
			f->by_layer[HOST_LAYER_GUEST_KERNEL]);
		if (unknown)
			fprintf(out, " %14" PRIu64, f->by_layer[HOST_LAYER_GUEST_UNKNOWN]);
		fprintf(out, " %9" PRIu64 " %12" PRIu64 "\n", f->by_layer[HOST_LAYER_VMM_USER],
			f->by_layer[HOST_LAYER_HOST_KERNEL]);
	}
	fprintf(out, "%-24s %12.2f\n", "all", (double)cpu_all / 1e3);
}

int host_report_domains(FILE *out, const char *dir, const struct profile_options *popt,
			const struct report_options *opt)
{
	struct domain_file *files;
	size_t n;
	int rc = list_files(dir, &files, &n), bad = 0;

	if (rc)
		return rc;
	if (!n) {
		fprintf(stderr, "kvmprof report: %s holds no recordings (*.data): not a kvmprof record --all-domains "
				"directory\n", dir);
		free(files);
		return -ECANCELED;
	}
	for (size_t i = 0; i < n; i++) {
		if (profile_load(&files[i].p, files[i].path, popt, files[i].err, sizeof(files[i].err))) {
			files[i].p = NULL;
			fprintf(stderr, "kvmprof report: %s\n", files[i].err);
			bad++;
			continue;
		}
		/* Its guest time with no register sample near it counts in its total and its table, as in one domain's report. */
		rc = host_report_add_unsampled(files[i].p);
		if (rc)
			goto out;
		summarize(&files[i]);
	}
	print_summary(out, dir, files, n);
	for (size_t i = 0; i < n && !rc; i++) {
		if (!files[i].p)
			continue;
		fprintf(out, "\n== domain %s (%s)\n", files[i].name, files[i].path);
		rc = host_report_text(out, files[i].p, files[i].path, opt);
	}
out:
	for (size_t i = 0; i < n; i++)
		if (files[i].p)
			profile_free(files[i].p);
	free(files);
	if (!rc && bad)
		rc = -ECANCELED; /* each unreadable one was said */
	return rc;
}

// SPDX-License-Identifier: MIT
/*
 * Checks what `kvmprof-agent export` sent from L2 through the VMM's agent
 * channel and L1's second serial port: the stream must read cleanly through
 * the project's checked reader (magic, version, every CRC, END present and
 * its counts right), its KSYMS records must carry a kallsyms text with real
 * (non-zero) addresses and the named symbols, and its MMAP records must name
 * the named files.
 *
 * Usage: agent-check [-s SYMBOL]... [-m FILE]... STREAM
 *   -s SYMBOL  a kernel symbol that must appear in the KSYMS text
 *   -m FILE    a file (compared by base name) some MMAP record must map
 *
 * Prints one line: "ok: ..." with what it found, or "FILE: what is wrong";
 * exits 0 when everything asked for is there, 1 otherwise.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/sample_file.h"

#define MAX_WANT 32
#define MAX_FILES 64

struct want {
	const char *name;
	bool found;
};

struct seen {
	uint64_t records[KP_REC_END + 1];
	uint64_t ksyms_bytes, ksyms_lines, ksyms_nonzero;
	uint32_t ksyms_next_seq;
	const char *files[MAX_FILES];
	unsigned nfiles;
	uint32_t pids[MAX_FILES];
	unsigned npids;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* One kallsyms line: "ADDRESS TYPE NAME[\t[MODULE]]". */
static void ksyms_line(struct seen *seen, const char *line, size_t len, struct want *syms, unsigned nsyms)
{
	const char *p = line, *end = line + len;
	bool nonzero = false;

	seen->ksyms_lines++;
	for (; p < end && *p != ' '; p++)
		if (*p != '0')
			nonzero = true;
	seen->ksyms_nonzero += nonzero;
	/* Skip " T " to the name, which ends at a tab (module) or the line end. */
	if (end - p < 3)
		return;
	p += 3;
	size_t n = 0;
	while (p + n < end && p[n] != '\t' && p[n] != ' ')
		n++;
	for (unsigned i = 0; i < nsyms; i++)
		if (!syms[i].found && strlen(syms[i].name) == n && memcmp(syms[i].name, p, n) == 0)
			syms[i].found = true;
}

static void ksyms_chunk(struct seen *seen, const struct kp_rec_ksyms *k, struct want *syms, unsigned nsyms)
{
	const char *t = k->text, *end = k->text + k->len;

	seen->ksyms_bytes += k->len;
	while (t < end) {
		const char *nl = memchr(t, '\n', (size_t)(end - t));
		size_t len = nl ? (size_t)(nl - t) : (size_t)(end - t);
		if (len)
			ksyms_line(seen, t, len, syms, nsyms);
		t += len + 1;
	}
}

static void note_mmap(struct seen *seen, const struct kp_rec_mmap *m, struct want *maps, unsigned nmaps)
{
	const char *b = base_name(m->filename);
	bool known = false;

	for (unsigned i = 0; i < nmaps; i++)
		if (strcmp(base_name(maps[i].name), b) == 0)
			maps[i].found = true;
	for (unsigned i = 0; i < seen->nfiles; i++)
		if (strcmp(seen->files[i], m->filename) == 0)
			known = true;
	if (!known && seen->nfiles < MAX_FILES)
		seen->files[seen->nfiles++] = strdup(m->filename);
	known = false;
	for (unsigned i = 0; i < seen->npids; i++)
		if (seen->pids[i] == m->pid)
			known = true;
	if (!known && seen->npids < MAX_FILES)
		seen->pids[seen->npids++] = m->pid;
}

static void usage(void)
{
	fprintf(stderr, "usage: agent-check [-s SYMBOL]... [-m FILE]... STREAM\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct want syms[MAX_WANT], maps[MAX_WANT];
	unsigned nsyms = 0, nmaps = 0;
	int opt;

	while ((opt = getopt(argc, argv, "s:m:")) != -1) {
		if (opt == 's' && nsyms < MAX_WANT)
			syms[nsyms++] = (struct want){ .name = optarg };
		else if (opt == 'm' && nmaps < MAX_WANT)
			maps[nmaps++] = (struct want){ .name = optarg };
		else
			usage();
	}
	if (optind != argc - 1)
		usage();
	const char *path = argv[optind];

	char err[512];
	struct kp_reader *r;
	int rc = kp_reader_open(&r, path, err, sizeof(err));
	if (rc < 0) {
		printf("%s\n", err);
		return 1;
	}
	uint32_t source = kp_reader_header(r)->source;
	struct seen seen = { 0 };
	struct kp_record rec;
	bool ok = true;
	while ((rc = kp_reader_next(r, &rec, err, sizeof(err))) > 0) {
		if (rec.type <= KP_REC_END)
			seen.records[rec.type]++;
		if (rec.type == KP_REC_KSYMS) {
			if (rec.ksyms->seq != seen.ksyms_next_seq) {
				printf("%s: offset %llu: KSYMS chunk %u where %u was due\n", path,
				       (unsigned long long)rec.offset, rec.ksyms->seq, seen.ksyms_next_seq);
				ok = false;
			}
			seen.ksyms_next_seq = rec.ksyms->seq + 1;
			ksyms_chunk(&seen, rec.ksyms, syms, nsyms);
		} else if (rec.type == KP_REC_MMAP) {
			note_mmap(&seen, rec.mmap, maps, nmaps);
		}
	}
	kp_reader_close(r);
	if (rc < 0) {
		/* Truncated, a bad CRC, a bad record: the reader's message says which. */
		printf("%s\n", err);
		return 1;
	}
	seen.records[KP_REC_END]++;

	char missing[1024] = "";
	size_t m = 0;
	for (unsigned i = 0; i < nsyms; i++)
		if (!syms[i].found)
			m += (size_t)snprintf(missing + m, m < sizeof(missing) ? sizeof(missing) - m : 0,
					      " symbol %s;", syms[i].name);
	for (unsigned i = 0; i < nmaps; i++)
		if (!maps[i].found && m < sizeof(missing))
			m += (size_t)snprintf(missing + m, m < sizeof(missing) ? sizeof(missing) - m : 0,
					      " mapping of %s;", maps[i].name);
	if (source != KP_SOURCE_LINUX_AGENT) {
		printf("%s: written by source %u, not the Linux agent (%u)\n", path, source, KP_SOURCE_LINUX_AGENT);
		ok = false;
	}
	if (seen.ksyms_lines == 0) {
		printf("%s: no kallsyms lines in %llu KSYMS records\n", path,
		       (unsigned long long)seen.records[KP_REC_KSYMS]);
		ok = false;
	} else if (seen.ksyms_nonzero * 2 < seen.ksyms_lines) {
		/* kptr_restrict hides addresses as zeros: useless to a host symbolizer. */
		printf("%s: %llu of %llu kallsyms lines have a zero address (kptr_restrict?)\n", path,
		       (unsigned long long)(seen.ksyms_lines - seen.ksyms_nonzero),
		       (unsigned long long)seen.ksyms_lines);
		ok = false;
	}
	if (m) {
		printf("%s: missing:%s\n", path, missing);
		ok = false;
	}

	printf("%s: %s: %llu records (%llu KSYMS: %llu lines, %llu bytes; %llu MMAP of %u pids; %llu COMM; "
	       "%llu META; END); files:",
	       ok ? "ok" : "incomplete", path,
	       (unsigned long long)(seen.records[KP_REC_META] + seen.records[KP_REC_EVENT] +
				    seen.records[KP_REC_COMM] + seen.records[KP_REC_MMAP] +
				    seen.records[KP_REC_FORK] + seen.records[KP_REC_EXIT] +
				    seen.records[KP_REC_SAMPLE] + seen.records[KP_REC_KSYMS] +
				    seen.records[KP_REC_LOST] + seen.records[KP_REC_END]),
	       (unsigned long long)seen.records[KP_REC_KSYMS], (unsigned long long)seen.ksyms_lines,
	       (unsigned long long)seen.ksyms_bytes, (unsigned long long)seen.records[KP_REC_MMAP], seen.npids,
	       (unsigned long long)seen.records[KP_REC_COMM], (unsigned long long)seen.records[KP_REC_META]);
	for (unsigned i = 0; i < seen.nfiles; i++)
		printf(" %s", seen.files[i]);
	printf("\n");
	return ok ? 0 : 1;
}

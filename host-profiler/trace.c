// SPDX-License-Identifier: MIT
/*
 * kvmprof trace: the trace file as text, one line per record, or per-event
 * counts. The whole file is checked before anything is printed: a damaged
 * file gets one error line (with its offset) and no partial output.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "host_trace.h"
#include "common/trace_event_table.h"
#include "format/trace_read.h"

static const char trace_usage[] = "usage: kvmprof trace -i FILE [--counts]\n";
static const char trace_help[] =
	"\n"
	"Prints a trace file written by kvmprof-vmm --trace FILE (docs/trace.md).\n"
	"  -i, --input FILE  the trace file\n"
	"  -c, --counts      per-event record counts and the lost records, instead of\n"
	"                    the records (one line each: SECONDS VCPU EVENT NAME=VALUE...,\n"
	"                    seconds since tracing started, VCPU '-' for the control socket)\n"
	"Exit code: 0 done, 1 the file is damaged or unreadable, 2 bad usage.\n";

__attribute__((format(printf, 1, 2)))
static int trace_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("kvmprof trace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see kvmprof trace --help)\n", stderr);
	return 2;
}

static void print_arg(const char *name, char type, uint64_t v)
{
	if (type == 'x') {
		printf(" %s=0x%" PRIx64, name, v);
	} else if (type == 's') {
		char text[9];
		unsigned int n = 0;

		/* Hostile bytes are text here only if printable: anything else shows as '?'. */
		for (; n < 8 && (v >> (8 * n)) & 0xff; n++) {
			unsigned char c = (unsigned char)(v >> (8 * n));
			text[n] = isprint(c) && c != ' ' ? (char)c : '?';
		}
		text[n] = '\0';
		printf(" %s=%s", name, text);
	} else {
		printf(" %s=%" PRIu64, name, v);
	}
}

static void print_record(const struct kvmprof_trace_header *h, const struct kvmprof_trace_record *rec)
{
	const struct trace_event_info *e = trace_event_info(rec->event);
	/* Unsigned both ways: a hostile time far from the start must not overflow a signed difference. */
	bool before = rec->time_ns < h->start_ns;
	uint64_t dt = before ? h->start_ns - rec->time_ns : rec->time_ns - h->start_ns;
	char name[32], type;

	printf("%s%" PRIu64 ".%09" PRIu64 " ", before ? "-" : "", dt / 1000000000, dt % 1000000000);
	if (rec->vcpu == KVMPROF_TRACE_NO_VCPU)
		printf("- ");
	else
		printf("%u ", rec->vcpu);
	printf("%s", e->name);
	for (unsigned int i = 0; trace_event_arg(e, i, name, &type); i++)
		print_arg(name, type, rec->args[i]);
	putchar('\n');
}

/* One pass over the file: checks it, and prints or counts when asked. 0, or -1 with err set. */
static int trace_pass(FILE *f, const char *path, bool print, uint64_t counts[KVMPROF_TRACE_EVENT_COUNT],
		      struct kvmprof_trace_trailer *trailer, char err[TRACE_READ_ERR_MAX])
{
	struct trace_reader r;
	struct kvmprof_trace_record rec;
	int rc;

	if (trace_read_open(&r, f, path, err))
		return -1;
	while ((rc = trace_read_next(&r, &rec, err)) == 1) {
		if (print)
			print_record(&r.header, &rec);
		if (counts)
			counts[rec.event]++;
	}
	if (rc < 0)
		return -1;
	*trailer = r.trailer;
	return 0;
}

static void print_counts(const uint64_t counts[KVMPROF_TRACE_EVENT_COUNT], const struct kvmprof_trace_trailer *t)
{
	for (unsigned int i = 0; i < KVMPROF_TRACE_EVENT_COUNT; i++)
		if (counts[i])
			printf("%-22s %" PRIu64 "\n", trace_event_info(i)->name, counts[i]);
	printf("%-22s %" PRIu64 "\n", "records", t->records);
	printf("%-22s %" PRIu64 " (%" PRIu64 " buffer full, %" PRIu64 " write errors)\n", "lost",
	       t->lost_full + t->lost_write, t->lost_full, t->lost_write);
}

int host_trace_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "counts", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t counts[KVMPROF_TRACE_EVENT_COUNT] = { 0 };
	struct kvmprof_trace_trailer trailer;
	char err[TRACE_READ_ERR_MAX];
	const char *path = NULL;
	bool want_counts = false;
	FILE *f;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:ch", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			path = optarg;
			break;
		case 'c':
			want_counts = true;
			break;
		case 'h':
			printf("%s%s", trace_usage, trace_help);
			return 0;
		case ':':
			return trace_usage_error("option %s needs an argument", argv[optind - 1]);
		default:
			return trace_usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return trace_usage_error("unexpected argument '%s'", argv[optind]);
	if (!path)
		return trace_usage_error("-i FILE is required");
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "kvmprof trace: %s: %s\n", path, strerror(errno));
		return 1;
	}
	/* Check everything first, so that a damaged file prints nothing but its error. */
	rc = trace_pass(f, path, false, counts, &trailer, err);
	if (!rc && !want_counts) {
		rewind(f);
		rc = trace_pass(f, path, true, NULL, &trailer, err);
	}
	fclose(f);
	if (rc) {
		fprintf(stderr, "kvmprof trace: %s\n", err);
		return 1;
	}
	if (want_counts)
		print_counts(counts, &trailer);
	else if (trailer.lost_full + trailer.lost_write)
		fprintf(stderr, "kvmprof trace: %s: %" PRIu64 " records were lost while tracing (%" PRIu64
			" buffer full, %" PRIu64 " write errors)\n", path, trailer.lost_full + trailer.lost_write,
			trailer.lost_full, trailer.lost_write);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof-agent report`: the command line over the profile model and the
 * renderers in lib/. Messages for the user are made here, nowhere deeper.
 */
#include "report.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The library's report.h: a plain "report.h" here is this directory's. */
#include "../lib/report.h"
#include "profile.h"

static const char report_usage[] =
	"usage: kvmprof-agent report [-i FILE] [--sort image,symbol|pid,image,symbol] [--callgraph]\n"
	"                            [--format text|folded|pprof|svg] [-o OUT] [--guest-root DIR]\n"
	"                            [--kallsyms FILE]\n";

static const char report_help[] =
	"\n"
	"Reads a kvmprof sample file and prints where the samples fell.\n"
	"\n"
	"  -i, --input FILE    sample file (default kvmprof.data; '-' is standard input)\n"
	"  -s, --sort KEYS     image,symbol (default): one row per symbol;\n"
	"                      pid,image,symbol: one row per process and symbol\n"
	"  -g, --callgraph     text: the caller chains of the top symbols\n"
	"  -f, --format FMT    text (default): a table per event, like opreport;\n"
	"                      folded: 'comm;image`outer;...;image`inner count' lines for\n"
	"                      flame graphs (the first event with samples);\n"
	"                      pprof: gzipped protobuf for pprof (needs -o or a non-terminal);\n"
	"                      svg: a flame graph to open in a browser (the first event with\n"
	"                      samples; click a frame to zoom, 'all' to zoom out)\n"
	"  -o, --output OUT    write there instead of standard output\n"
	"  -r, --guest-root DIR  look up the recorded files as DIR/path (a guest's files on\n"
	"                      the host, e.g. build/guest for the bundled guest)\n"
	"  -k, --kallsyms FILE  kernel symbols when the sample file carries none\n"
	"\n"
	"Kernel symbols come from the kallsyms captured at record time, else --kallsyms,\n"
	"else the kernel ELF the sample file names. A file whose build-id differs from\n"
	"the recorded one is not used. Samples without a symbol show as [unknown].\n";

enum { FMT_TEXT, FMT_FOLDED, FMT_PPROF, FMT_SVG };

struct report_args {
	const char *input, *output, *root, *kallsyms;
	int format;
	struct report_options opt;
};

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "kvmprof-agent report: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s", report_usage);
	return 2;
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct report_args *a)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "sort", required_argument, NULL, 's' },
		{ "callgraph", no_argument, NULL, 'g' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "guest-root", required_argument, NULL, 'r' },
		{ "kallsyms", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*a = (struct report_args){ .input = "kvmprof.data", .format = FMT_TEXT };
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:s:gf:o:r:k:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			a->input = optarg;
			break;
		case 's':
			if (!strcmp(optarg, "image,symbol"))
				a->opt.sort = REPORT_SORT_IMAGE_SYMBOL;
			else if (!strcmp(optarg, "pid,image,symbol"))
				a->opt.sort = REPORT_SORT_PID_IMAGE_SYMBOL;
			else
				return usage_error("unknown sort keys '%s' (image,symbol or pid,image,symbol)", optarg);
			break;
		case 'g':
			a->opt.callgraph = true;
			break;
		case 'f':
			if (!strcmp(optarg, "text"))
				a->format = FMT_TEXT;
			else if (!strcmp(optarg, "folded"))
				a->format = FMT_FOLDED;
			else if (!strcmp(optarg, "pprof"))
				a->format = FMT_PPROF;
			else if (!strcmp(optarg, "svg"))
				a->format = FMT_SVG;
			else
				return usage_error("unknown format '%s' (text, folded, pprof or svg)", optarg);
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'r':
			a->root = optarg;
			break;
		case 'k':
			a->kallsyms = optarg;
			break;
		case 'h':
			printf("%s%s", report_usage, report_help);
			return 0;
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return -1;
}

static void print_warning(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "kvmprof-agent: warning: %s\n", msg);
}

static int render(FILE *out, const struct profile *p, const struct report_args *a)
{
	uint32_t ev;
	size_t i, others = 0;

	switch (a->format) {
	case FMT_FOLDED:
	case FMT_SVG:
		ev = report_folded_event(p);
		for (i = 0; i < p->nr_events; i++)
			others += i != ev && p->events[i].samples;
		if (others)
			fprintf(stderr, "kvmprof-agent: %s of event %s only (%zu more events have samples)\n",
				a->format == FMT_SVG ? "flame graph" : "folded stacks", p->events[ev].name, others);
		return a->format == FMT_SVG ? report_svg(out, p, ev, NULL) : report_folded(out, p, ev);
	case FMT_PPROF:
		return report_pprof(out, p);
	default:
		return report_text(out, p, &a->opt);
	}
}

int agent_report_main(int argc, char **argv)
{
	struct profile_options popt = { .warn = print_warning };
	struct report_args a;
	struct profile *p;
	char err[512];
	FILE *out = stdout;
	int rc, status = 0;

	rc = parse_args(argc, argv, &a);
	if (rc >= 0)
		return rc;
	if (a.format == FMT_PPROF && !a.output && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "kvmprof-agent report: pprof output is binary: give -o FILE or redirect it\n");
		return 2;
	}
	popt.root = a.root;
	popt.kallsyms_path = a.kallsyms;
	rc = profile_load(&p, a.input, &popt, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "kvmprof-agent: %s\n", err);
		return 1;
	}
	if (a.output) {
		out = fopen(a.output, a.format == FMT_PPROF ? "wb" : "w");
		if (!out) {
			fprintf(stderr, "kvmprof-agent: %s: %s\n", a.output, strerror(errno));
			profile_free(p);
			return 1;
		}
	}
	rc = render(out, p, &a);
	if (rc) {
		fprintf(stderr, "kvmprof-agent: %s: %s\n", a.output ? a.output : "standard output", strerror(-rc));
		status = 1;
	}
	if (out != stdout && fclose(out) && !status) {
		fprintf(stderr, "kvmprof-agent: %s: %s\n", a.output, strerror(errno));
		status = 1;
	}
	/* The table has its own footer; the other formats say it here. */
	if (!status && a.format != FMT_TEXT && p->unresolved)
		fprintf(stderr, "kvmprof-agent: %" PRIu64 " of %zu samples have no symbol\n", p->unresolved,
			p->nr_samples);
	profile_free(p);
	return status;
}

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

/* The library's report.h: a plain "report.h" here is this directory's. */
#include "../lib/report.h"
#include "cli.h"
#include "profile.h"

static const char report_usage[] =
	"usage: kvmprof-agent report [-i FILE] [--sort image,symbol|pid,image,symbol] [--callgraph]\n"
	"                            [--format text|folded|pprof|svg] [-o OUT] [--guest-root DIR]\n"
	"                            [--kallsyms FILE] [--recover]\n";

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
	"      --recover       read a damaged file (cut short by a crash, kill -9 or a full\n"
	"                      disk; a corrupt record; data after END) up to the damage,\n"
	"                      and say where it is and how much was lost\n"
	"\n"
	"Kernel symbols come from the kallsyms captured at record time, else --kallsyms,\n"
	"else the kernel ELF the sample file names. A file whose build-id differs from\n"
	"the recorded one is not used. Samples without a symbol show as [unknown].\n";

struct report_args {
	const char *input, *output, *root, *kallsyms;
	bool recover;
	enum report_format format;
	struct report_options opt;
};

static int usage_error(const char *fmt, const char *arg)
{
	return cli_usage_error("kvmprof-agent report", report_usage, fmt, arg);
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
		{ "recover", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*a = (struct report_args){ .input = "kvmprof.data", .format = REPORT_FORMAT_TEXT };
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
			if (report_parse_format(optarg, &a->format))
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
		case 'R':
			a->recover = true;
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

struct render_ctx {
	const struct profile *p;
	const struct report_args *a;
};

static int render(FILE *out, void *ctx)
{
	const struct render_ctx *rctx = ctx;
	const struct profile *p = rctx->p;
	const struct report_args *a = rctx->a;
	uint32_t ev;
	size_t i, others = 0;

	switch (a->format) {
	case REPORT_FORMAT_FOLDED:
	case REPORT_FORMAT_SVG:
		ev = report_folded_event(p);
		for (i = 0; i < p->nr_events; i++)
			others += i != ev && p->events[i].samples;
		if (others)
			fprintf(stderr, "kvmprof-agent: %s of event %s only (%zu more events have samples)\n",
				a->format == REPORT_FORMAT_SVG ? "flame graph" : "folded stacks", p->events[ev].name, others);
		return a->format == REPORT_FORMAT_SVG ? report_svg(out, p, ev, NULL) : report_folded(out, p, ev);
	case REPORT_FORMAT_PPROF:
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
	int rc, status;

	rc = parse_args(argc, argv, &a);
	if (rc >= 0)
		return rc;
	rc = report_check_output("kvmprof-agent report", a.format, a.output);
	if (rc)
		return rc;
	popt.root = a.root;
	popt.kallsyms_path = a.kallsyms;
	popt.recover = a.recover;
	rc = profile_load(&p, a.input, &popt, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "kvmprof-agent: %s%s\n", err,
			rc == -EBADMSG ? " (`kvmprof-agent report --recover` reads what precedes the damage)" : "");
		return 1;
	}
	status = report_write("kvmprof-agent", a.output, a.format, render, &(struct render_ctx){ p, &a });
	/* The table has its own footer; the other formats say it here. */
	if (!status && a.format != REPORT_FORMAT_TEXT && p->unresolved)
		fprintf(stderr, "kvmprof-agent: %" PRIu64 " of %zu samples have no symbol\n", p->unresolved,
			p->nr_samples);
	profile_free(p);
	return status;
}

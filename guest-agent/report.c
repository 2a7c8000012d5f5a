/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof-agent report`: its own options (sort keys, caller chains,
 * --kallsyms) and renderers over the report command in lib/cli/report_cli.c.
 */
#include "agent_report.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "report/report.h"
#include "cli/report_cli.h"
#include "cli/report_table_cli.h"

static const char report_usage[] =
	"usage: kvmprof-agent report [-i FILE] [--sort KEYS] [--percent-limit P] [-n] [--callgraph]\n"
	"                            [--percentage absolute|relative] [--comms LIST] [--pids LIST]\n"
	"                            [--tids LIST] [--dsos LIST] [--symbols LIST]\n"
	"                            [--format FMT] [-o OUT] [--guest-root DIR]\n"
	"                            [--kallsyms FILE] [--recover] [--no-demangle]\n";

static const char report_help[] =
	"\n"
	"Reads a kvmprof sample file and prints where the samples fell.\n"
	"\n"
	"  -i, --input FILE    sample file (default kvmprof.data; '-' is standard input)\n"
	"  -s, --sort KEYS     text: rows by these keys, comma-separated, columns in their\n"
	"                      order, as perf report's: comm, pid (pid and command),\n"
	"                      tid (a thread: tid and its process's command; perf's pid),\n"
	"                      dso (or image), sym (or symbol; shows its image unless\n"
	"                      dso is a key), domain (user or kernel). Default\n"
	"                      image,symbol; pid,image,symbol: per process and symbol\n"
	"      --percent-limit P  text: rows under P% of the samples are not shown (a line\n"
	"                      says how many rows and samples)\n"
	"  -n, --show-nr-samples  accepted for perf's sake: the samples column is always shown\n"
	"      --comms LIST    only the samples of these commands (comma-separated; also --comm)\n"
	"      --pids LIST     only the samples of these pids (also --pid)\n"
	"      --tids LIST     only the samples of these threads (also --tid)\n"
	"      --dsos LIST     only the samples in these images, by name or path (also --dso)\n"
	"      --symbols LIST  only the samples in these functions (also --symbol);\n"
	"                      the filters apply to every format; a line says how many\n"
	"                      samples they kept\n"
	"      --percentage absolute|relative  under a filter, the table's shares are of\n"
	"                      all samples (absolute, the default, as perf's) or of those\n"
	"                      kept (relative: the rows add up to 100%)\n"
	"  -g, --callgraph     text: the caller chains of the top rows\n"
	"  -f, --format FMT    the output's format, one of those below (default text)\n"
	"  -o, --output OUT    write there instead of standard output; without -f, the\n"
	"                      name's ending picks the format (below)\n"
	"  -r, --guest-root DIR  look up the recorded files as DIR/path (a guest's files on\n"
	"                      the host, e.g. build/guest for the bundled guest)\n"
	"  -k, --kallsyms FILE  kernel symbols when the sample file carries none\n"
	"      --recover       read a damaged file (cut short by a crash, kill -9 or a full\n"
	"                      disk; a corrupt record; data after END) up to the damage,\n"
	"                      and say where it is and how much was lost\n"
	"      --no-demangle   C++ and Rust function names as the files have them\n"
	"                      (_ZN2ns3fooEv); by default they are demangled (ns::foo)\n"
	"\n"
	"Kernel symbols come from the kallsyms captured at record time, else --kallsyms,\n"
	"else the kernel ELF the sample file names. A file whose build-id differs from\n"
	"the recorded one is not used. Samples without a symbol show as [unknown].\n";

int agent_report_option(int c, const char *arg, void *ctx)
{
	struct agent_report_args *a = ctx;
	int r = report_table_option(c, arg, &a->opt.table, REPORT_KEYS_COMMON, "kvmprof-agent report", report_usage);

	if (r >= 0)
		return r;
	switch (c) {
	case 'g':
		a->opt.callgraph = true;
		return 0;
	case 'k':
		a->kallsyms = arg;
		return 0;
	}
	return -1;
}

/* The recorded system's files under --guest-root; its kernel symbols from --kallsyms when the file has none. */
void agent_report_profile_options(const struct report_cli_args *a, struct profile_options *popt, void *ctx)
{
	const struct agent_report_args *own = ctx;

	popt->root = a->root;
	popt->kallsyms_path = own->kallsyms;
}

/*
 * The report's own: a flat text table needs no sample's time, order or
 * chain, so samples it cannot tell apart are held once with a count
 * (profile_options.aggregate). Every sample is held for --callgraph (each
 * sample's chain), folded, svg and pprof (stacks), and in script and
 * annotate, which do not come here.
 */
static void report_profile_options(const struct report_cli_args *a, struct profile_options *popt, void *ctx)
{
	const struct agent_report_args *own = ctx;

	agent_report_profile_options(a, popt, ctx);
	popt->aggregate = !a->format->stacks && !own->opt.callgraph;
}

/* Stacks show the first event with samples, and say so when others had some. */
static uint32_t stack_event(struct profile *p, const struct report_format *f, void *ctx)
{
	uint32_t ev = report_folded_event(p);
	size_t others = 0;

	(void)ctx;
	for (size_t i = 0; i < p->nr_events; i++)
		others += i != ev && p->events[i].samples;
	if (others)
		fprintf(stderr, "kvmprof-agent: %s of event %s only (%zu more events have samples)\n", f->what,
			p->events[ev].name, others);
	return ev;
}

static int text(FILE *out, struct profile *p, void *ctx)
{
	const struct agent_report_args *own = ctx;

	return report_text(out, p, &own->opt);
}

static const struct report_format_words words[] = {
	{ "text", "a table per event, like opreport (the default)" },
	{ "folded", "'comm;image`outer;...;image`inner count' lines for flame graph tools (the first event with samples)" },
	{ "svg", "a flame graph to open in a browser (the first event with samples; click a frame to zoom, 'all' to "
		 "zoom out)" },
	{ 0 },
};

/* kvmprof-agent's view of every format: report_svg's and report_pprof's defaults. */
static const struct report_view view = { .stack_event = stack_event, .text = text, .words = words };

static int render(FILE *out, struct profile *p, const struct report_cli_args *a, void *ctx)
{
	const struct agent_report_args *own = ctx;

	if (a->format->stacks)
		report_filter_profile(p, &own->opt.table.filter);
	return a->format->render(out, p, a->format, &view, ctx);
}

int agent_report_main(int argc, char **argv)
{
	static const struct option own_longopts[] = {
		REPORT_TABLE_LONGOPTS,
		{ "callgraph", no_argument, NULL, 'g' },
		{ "kallsyms", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	struct agent_report_args own = { 0 };
	char err[200];

	/* image,symbol: what the table has always been by default. */
	if (report_keys_parse("dso,sym", REPORT_KEYS_COMMON, &own.opt.table.keys, err, sizeof(err)))
		return 1;
	const struct report_cli cli = {
		.prog = "kvmprof-agent", .cmd = "kvmprof-agent report", .usage = report_usage, .help = report_help,
		.own_shortopts = REPORT_TABLE_SHORTOPTS "gk:", .own_longopts = own_longopts, .own_option = agent_report_option,
		.profile_options = report_profile_options, .render = render, .note_unresolved = true, .view = &view,
		.ctx = &own,
	};

	return report_cli_main(&cli, argc, argv);
}

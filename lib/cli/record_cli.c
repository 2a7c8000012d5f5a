/* SPDX-License-Identifier: MIT */
#include "cli/record_cli.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "kvmprof/sample_format.h"

/* Long-only options: values no program's own short option can take. */
enum { OPT_CALL_GRAPH = 0x200 };

/* The command usage errors name: "record", or the one that parses record's options for itself ("top"). */
static const char *cmd_name(const struct record_cli *cli)
{
	return cli->cmd_name ? cli->cmd_name : "record";
}

static const struct option shared_longopts[] = {
	{ "event", required_argument, NULL, 'e' },  { "freq", required_argument, NULL, 'F' },
	{ "count", required_argument, NULL, 'c' },  { "callgraph", no_argument, NULL, 'g' },
	{ "call-graph", required_argument, NULL, OPT_CALL_GRAPH }, { "output", required_argument, NULL, 'o' },
	{ "quiet", no_argument, NULL, 'q' },	    { "help", no_argument, NULL, 'h' },
};
#define NR_SHARED (sizeof(shared_longopts) / sizeof(shared_longopts[0]))

static int add_event(const struct record_cli *cli, struct record_opts *o, const char *spec)
{
	int r;

	if (cli->max_events == 1) {
		r = cli_parse_event(cli->prog, spec, &o->events[0]);
		if (!r)
			o->nevents = 1;
		return r;
	}
	if (o->nevents == cli->max_events) {
		fprintf(stderr, "%s: at most %d events\n", cli->prog, cli->max_events);
		return 2;
	}
	r = cli_parse_event(cli->prog, spec, &o->events[o->nevents]);
	if (!r)
		o->nevents++;
	return r;
}

/* perf's --call-graph argument: fp, or dwarf with an optional stack copy size. */
static int parse_callgraph(const struct record_cli *cli, const char *arg, struct record_opts *o)
{
	const char *comma = strchr(arg, ',');
	size_t mode_len = comma ? (size_t)(comma - arg) : strlen(arg);
	unsigned long long v;

	if (mode_len == 2 && !strncmp(arg, "fp", 2) && !comma) {
		o->callgraph = RECORD_CALLGRAPH_FP;
		return 0;
	}
	if (mode_len == 5 && !strncmp(arg, "dwarf", 5)) {
		o->callgraph = RECORD_CALLGRAPH_DWARF;
		o->dwarf_stack = RECORD_DWARF_STACK_DEFAULT;
		if (!comma)
			return 0;
		/* perf rounds the size up to 8 bytes and caps it at what sample_stack_user (a u16) takes. */
		if (cli_parse_num(comma + 1, 8, KP_USER_STACK_MAX, &v))
			return cli_usage_error(cli->prog, cli->usage,
					       "%s: --call-graph dwarf,%s: the stack size must be 8 to %u bytes",
					       cmd_name(cli), comma + 1, KP_USER_STACK_MAX);
		o->dwarf_stack = (uint32_t)((v + 7) & ~7ull);
		return 0;
	}
	if (mode_len == 3 && !strncmp(arg, "lbr", 3))
		return cli_usage_error(cli->prog, cli->usage,
				       "%s: --call-graph lbr needs Intel's last-branch records, which kvmprof "
				       "does not read; use fp or dwarf", cmd_name(cli));
	return cli_usage_error(cli->prog, cli->usage,
			       "%s: --call-graph '%s': the mode is fp or dwarf[,SIZE]", cmd_name(cli), arg);
}

static int shared_option(const struct record_cli *cli, int c, struct record_opts *o)
{
	char what[64];
	unsigned long long v;

	switch (c) {
	case 'e':
		return add_event(cli, o, optarg);
	case 'F':
		if (cli_parse_num(optarg, 1, cli->max_freq, &v)) {
			snprintf(what, sizeof(what), "a sampling frequency of 1 to %llu Hz", cli->max_freq);
			return cli_bad_number(cli->prog, cli->usage, 'F', optarg, what);
		}
		o->freq = v;
		return 0;
	case 'c':
		if (cli_parse_num(optarg, 1, ULLONG_MAX, &v))
			return cli_bad_number(cli->prog, cli->usage, 'c', optarg, "a sampling period of at least 1 event");
		o->period = v;
		return 0;
	case 'g':
		o->callgraph = RECORD_CALLGRAPH_FP; /* perf's -g */
		return 0;
	case OPT_CALL_GRAPH:
		return parse_callgraph(cli, optarg, o);
	case 'o':
		if (!*optarg)
			return cli_usage_error(cli->prog, cli->usage, "-o needs a file name");
		o->output = optarg;
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	}
	return -1;
}

int record_cli_parse(const struct record_cli *cli, int argc, char **argv, struct record_opts *o)
{
	struct option longopts[NR_SHARED + CLI_OWN_LONGOPTS_MAX + 1];
	char shortopts[128];
	int c, r;

	cli_merge_longopts(longopts, shared_longopts, NR_SHARED, cli->own_longopts);
	snprintf(shortopts, sizeof(shortopts), "%s:e:F:c:go:qh%s", cli->stop_at_command ? "+" : "",
		 cli->own_shortopts ? cli->own_shortopts : "");
	memset(o, 0, sizeof(*o));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("%s%s", cli->usage, cli->help);
			if (cli->help_more)
				cli->help_more(stdout);
			return 0;
		case ':':
			return cli_usage_error(cli->prog, cli->usage, "%s: option %s needs an argument",
					       cmd_name(cli), argv[optind - 1]);
		case '?':
			return cli_usage_error(cli->prog, cli->usage, "%s: unknown option %s", cmd_name(cli), argv[optind - 1]);
		}
		r = shared_option(cli, c, o);
		if (r < 0)
			r = cli->own_option ? cli->own_option(c, optarg, cli->ctx) : -1;
		if (r < 0)
			return cli_usage_error(cli->prog, cli->usage, "%s: unknown option %s", cmd_name(cli), argv[optind - 1]);
		if (r)
			return r;
	}
	return -1;
}

int record_cli_check_rate(const struct record_cli *cli, const struct record_opts *o)
{
	if (o->freq && o->period)
		return cli_usage_error(cli->prog, cli->usage, "%s: -F and -c exclude each other", cmd_name(cli));
	return -1;
}

/* SPDX-License-Identifier: MIT */
#include "cli/stat_cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

enum { OPT_NO_BIG_NUM = 0x100 };

static const struct option shared_longopts[] = {
	{ "event", required_argument, NULL, 'e' },    { "repeat", required_argument, NULL, 'r' },
	{ "field-separator", required_argument, NULL, 'x' }, { "output", required_argument, NULL, 'o' },
	{ "big-num", no_argument, NULL, 'B' },         { "no-big-num", no_argument, NULL, OPT_NO_BIG_NUM },
	{ "all-cpus", no_argument, NULL, 'a' },        { "pid", required_argument, NULL, 'p' },
	{ "help", no_argument, NULL, 'h' },
};
#define NR_SHARED (sizeof(shared_longopts) / sizeof(shared_longopts[0]))

/* -e a,b,c: each name as record's -e takes it; repeatable. 0 or 2. */
static int parse_events(const struct stat_cli *cli, const char *arg, struct stat_opts *o)
{
	char *list = strdup(arg), *save = NULL;
	int r = 0;

	if (!list) {
		fprintf(stderr, "%s: out of memory\n", cli->prog);
		return 1;
	}
	for (char *tok = strtok_r(list, ",", &save); tok && !r; tok = strtok_r(NULL, ",", &save)) {
		if (o->nevents == STAT_MAX_EVENTS)
			r = cli_usage_error(cli->prog, cli->usage, "stat: at most %d events", STAT_MAX_EVENTS);
		else if (!(r = cli_parse_event(cli->prog, tok, &o->events[o->nevents])))
			o->nevents++;
	}
	if (!r && !o->nevents)
		r = cli_usage_error(cli->prog, cli->usage, "stat: -e '%s': no event named", arg);
	free(list);
	return r;
}

static int shared_option(const struct stat_cli *cli, int c, const char *arg, struct stat_opts *o)
{
	unsigned long long v;

	switch (c) {
	case 'e':
		return parse_events(cli, arg, o);
	case 'r':
		if (cli_parse_num(arg, 1, STAT_MAX_RUNS, &v))
			return cli_bad_number(cli->prog, cli->usage, 'r', arg, "a number of runs, 1 to 100000");
		o->repeat = (unsigned)v;
		return 0;
	case 'x':
		if (!*arg)
			return cli_usage_error(cli->prog, cli->usage, "stat: -x needs a separator");
		o->sep = arg;
		return 0;
	case 'o':
		if (!*arg)
			return cli_usage_error(cli->prog, cli->usage, "stat: -o needs a file name");
		o->output = arg;
		return 0;
	case 'B':
		o->no_big_num = false;
		return 0;
	case OPT_NO_BIG_NUM:
		o->no_big_num = true;
		return 0;
	case 'a':
		o->all = true;
		return 0;
	case 'p':
		if (cli_parse_num(arg, 1, INT_MAX, &v))
			return cli_bad_number(cli->prog, cli->usage, 'p', arg, "a process id");
		o->pid = (pid_t)v;
		return 0;
	}
	return -1;
}

int stat_cli_parse(const struct stat_cli *cli, int argc, char **argv, struct stat_opts *o)
{
	struct option longopts[NR_SHARED + CLI_OWN_LONGOPTS_MAX + 1];
	char shortopts[128];
	int c, r;

	cli_merge_longopts(longopts, shared_longopts, NR_SHARED, cli->own_longopts);
	snprintf(shortopts, sizeof(shortopts), "+:e:r:x:o:Bap:h%s", cli->own_shortopts ? cli->own_shortopts : "");
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
			return cli_usage_error(cli->prog, cli->usage, "stat: option %s needs an argument", argv[optind - 1]);
		case '?':
			return cli_usage_error(cli->prog, cli->usage, "stat: unknown option %s", argv[optind - 1]);
		}
		r = shared_option(cli, c, optarg, o);
		if (r < 0)
			r = cli->own_option ? cli->own_option(c, optarg, cli->ctx) : -1;
		if (r < 0)
			return cli_usage_error(cli->prog, cli->usage, "stat: unknown option %s", argv[optind - 1]);
		if (r)
			return r;
	}
	if (optind < argc)
		o->argv = argv + optind;
	else if (optind > 1 && !strcmp(argv[optind - 1], "--"))
		return cli_usage_error(cli->prog, cli->usage, "stat: missing command after --");
	return -1;
}

int stat_cli_check_target(const struct stat_cli *cli, const struct stat_opts *o)
{
	if (o->pid && o->all)
		return cli_usage_error(cli->prog, cli->usage, "stat: -p and -a exclude each other");
	if (!o->all && !o->pid && !o->argv)
		return cli_usage_error(cli->prog, cli->usage, "stat: nothing to count: give -- CMD, -p PID or -a");
	if (o->repeat > 1 && !o->argv)
		return cli_usage_error(cli->prog, cli->usage, "stat: -r repeats a command: give -- CMD");
	return -1;
}

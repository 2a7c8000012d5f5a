/* SPDX-License-Identifier: MIT */
/* kvmprof-agent export: its options; the stream is export.c's. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "agent_commands.h"
#include "cli/cli.h"
#include "export.h"

static const char export_usage[] =
	"usage: kvmprof-agent export [-o DEVICE] [--pid PID]... [--all-symbols]\n";

static const char export_help[] =
	"\n"
	"Writes this system's process table, executable mappings and kernel symbols as\n"
	"a sample file, for a profiler on the host to resolve this guest's samples with.\n"
	"\n"
	"  -o, --output DEVICE  where to send the stream (default /dev/ttyS1, the\n"
	"                  kvmprof-vmm agent channel; a terminal is set to raw 115200 8N1)\n"
	"  -p, --pid PID    only these processes (repeatable; default all)\n"
	"  --all-symbols    all of /proc/kallsyms; by default only text symbols go\n"
	"                  (program counters land only in code; half the bytes)\n";


#define export_usage_error(...) cli_usage_error("kvmprof-agent", export_usage, __VA_ARGS__)

int cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "all-symbols", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct export_opts o = { 0 };
	unsigned long long v;
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				return export_usage_error("-o needs a file name");
			o.output = optarg;
			break;
		case 'A':
			o.all_symbols = true;
			break;
		case 'p': {
			pid_t *n;

			if (cli_parse_num(optarg, 1, INT_MAX, &v)) {
				free(o.pids);
				return cli_bad_number("kvmprof-agent", export_usage, 'p', optarg, "a process id");
			}
			n = realloc(o.pids, (o.npids + 1) * sizeof(*n));
			if (!n) {
				free(o.pids);
				fprintf(stderr, "kvmprof-agent: out of memory\n");
				return 1;
			}
			o.pids = n;
			o.pids[o.npids++] = (pid_t)v;
			break;
		}
		case 'h':
			printf("%s%s", export_usage, export_help);
			free(o.pids);
			return 0;
		case ':':
			free(o.pids);
			return export_usage_error("export: option %s needs an argument", argv[optind - 1]);
		default:
			free(o.pids);
			return export_usage_error("export: unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		free(o.pids);
		return export_usage_error("export: unexpected argument '%s'", argv[optind]);
	}
	r = export_run(&o);
	free(o.pids);
	return r;
}

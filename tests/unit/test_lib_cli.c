/* SPDX-License-Identifier: MIT */
/*
 * lib/record_cli and lib/report_cli: the command-line layer both programs
 * share. The record options land in struct record_opts and a program's own
 * options reach its callback; one event or many; every refusal is exit
 * status 2 with "prog: what" and the usage. The report command loads the
 * file (END included), hands the program's options to the loader, renders
 * to -o, and says what went wrong as "prog: ..." with exit status 1.
 * lib/cli_command: a program's command table, its usage and --help.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli/cli_command.h"
#include "lib_fixture.h"
#include "cli/record_cli.h"
#include "cli/cli.h"
#include "cli/report_cli.h"

static char *dir;
static char data_path[600], out_path[600], captured[8192];

static int setup(void **state)
{
	(void)state;
	dir = fx_mkdir();
	if (!dir)
		return -1;
	snprintf(data_path, sizeof(data_path), "%s/test.data", dir);
	snprintf(out_path, sizeof(out_path), "%s/out", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fx_rmdir(dir);
	return 0;
}

/* What a call writes to fd (1 or 2) goes to a file between these two; capture_end puts it in captured. */
struct capture {
	int fd, saved, file;
};

static struct capture capture_begin(int fd)
{
	char path[640];
	struct capture c = { .fd = fd };

	snprintf(path, sizeof(path), "%s/captured-%d", dir, fd);
	fflush(fd == 1 ? stdout : stderr);
	c.saved = dup(fd);
	c.file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(c.saved >= 0 && c.file >= 0);
	assert_true(dup2(c.file, fd) == fd);
	return c;
}

static void capture_end(struct capture c)
{
	ssize_t n;

	fflush(c.fd == 1 ? stdout : stderr);
	dup2(c.saved, c.fd);
	close(c.saved);
	n = pread(c.file, captured, sizeof(captured) - 1, 0);
	captured[n > 0 ? n : 0] = '\0';
	close(c.file);
}

/* The exit status of call, with what it wrote to fd in captured. */
#define CAPTURE(fd, call)                                  \
	do {                                               \
		struct capture cap_ = capture_begin(fd);   \
		rc = (call);                               \
		capture_end(cap_);                         \
	} while (0)

/* ---- record ---- */

struct own_record {
	bool all;
	const char *pid;
	int calls;
};

static int own_record_option(int c, const char *arg, void *ctx)
{
	struct own_record *o = ctx;

	o->calls++;
	switch (c) {
	case 'a':
		o->all = true;
		return 0;
	case 'p':
		o->pid = arg;
		return 0;
	}
	return -1;
}

static const struct option own_record_longopts[] = {
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "pid", required_argument, NULL, 'p' },
	{ NULL, 0, NULL, 0 },
};

static struct record_cli record_cli_for(struct own_record *own, int max_events)
{
	return (struct record_cli){
		.prog = "prog", .usage = "usage: prog record ...\n", .help = "help text\n",
		.max_events = max_events, .max_freq = 1000, .stop_at_command = true,
		.own_shortopts = "ap:", .own_longopts = own_record_longopts, .own_option = own_record_option,
		.ctx = own,
	};
}

static void test_record_shared_and_own_options(void **state)
{
	char *argv[] = { "record", "-e", "cycles", "--freq", "500", "-g", "-o", "x.data", "-q",
			 "-a", "--pid", "42", "--", "cmd", "-e", NULL };
	struct own_record own = { 0 };
	struct record_cli cli = record_cli_for(&own, RECORD_MAX_EVENTS);
	struct record_opts o;

	(void)state;
	assert_int_equal(record_cli_parse(&cli, 15, argv, &o), -1);
	assert_int_equal(o.nevents, 1);
	assert_string_equal(o.events[0].name, "cycles");
	assert_int_equal(o.freq, 500);
	assert_int_equal(o.period, 0);
	assert_int_equal(o.callgraph, RECORD_CALLGRAPH_FP);
	assert_true(o.quiet);
	assert_string_equal(o.output, "x.data");
	/* The program's own, through its callback; the command's own -e is not ours. */
	assert_true(own.all);
	assert_string_equal(own.pid, "42");
	assert_int_equal(own.calls, 2);
	assert_string_equal(argv[optind], "cmd");
	assert_int_equal(record_cli_check_rate(&cli, &o), -1);
}

static void test_record_events(void **state)
{
	char *two[] = { "record", "-e", "cycles", "-e", "instructions", NULL };
	char *three[] = { "record", "-e", "cycles", "-e", "instructions", "-e", "branches", NULL };
	struct own_record own = { 0 };
	struct record_cli one_event = record_cli_for(&own, 1), two_events = record_cli_for(&own, 2);
	struct record_opts o;
	int rc;

	(void)state;
	/* kvmprof: one event, the last -e wins. */
	assert_int_equal(record_cli_parse(&one_event, 5, two, &o), -1);
	assert_int_equal(o.nevents, 1);
	assert_string_equal(o.events[0].name, "instructions");
	/* kvmprof-agent: up to its maximum, then refused. */
	assert_int_equal(record_cli_parse(&two_events, 5, two, &o), -1);
	assert_int_equal(o.nevents, 2);
	CAPTURE(2, record_cli_parse(&two_events, 7, three, &o));
	assert_int_equal(rc, 2);
	assert_string_equal(captured, "prog: at most 2 events\n");
}

/* perf's --call-graph MODE[,SIZE], in both spellings; -g is fp; the last one given wins. */
static void test_record_call_graph(void **state)
{
	static const struct {
		int argc;
		char *argv[4];
		enum record_callgraph mode;
		uint32_t stack;
	} cases[] = {
		{ 1, { "record" }, RECORD_CALLGRAPH_NONE, 0 },
		{ 2, { "record", "-g" }, RECORD_CALLGRAPH_FP, 0 },
		{ 2, { "record", "--callgraph" }, RECORD_CALLGRAPH_FP, 0 },
		{ 3, { "record", "--call-graph", "fp" }, RECORD_CALLGRAPH_FP, 0 },
		{ 2, { "record", "--call-graph=fp" }, RECORD_CALLGRAPH_FP, 0 },
		{ 3, { "record", "--call-graph", "dwarf" }, RECORD_CALLGRAPH_DWARF, 8192 },
		{ 2, { "record", "--call-graph=dwarf,4096" }, RECORD_CALLGRAPH_DWARF, 4096 },
		{ 2, { "record", "--call-graph=dwarf,1001" }, RECORD_CALLGRAPH_DWARF, 1008 }, /* rounded up to 8 */
		{ 2, { "record", "--call-graph=dwarf,65528" }, RECORD_CALLGRAPH_DWARF, 65528 },
		{ 3, { "record", "--call-graph=dwarf", "-g" }, RECORD_CALLGRAPH_FP, 8192 },
	};
	struct own_record own = { 0 };
	struct record_cli cli = record_cli_for(&own, RECORD_MAX_EVENTS);
	struct record_opts o;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[5] = { 0 };

		memcpy(argv, cases[i].argv, sizeof(cases[i].argv));
		assert_int_equal(record_cli_parse(&cli, cases[i].argc, argv, &o), -1);
		assert_int_equal(o.callgraph, cases[i].mode);
		if (cases[i].mode == RECORD_CALLGRAPH_DWARF)
			assert_int_equal(o.dwarf_stack, cases[i].stack);
	}
	/* `--call-graph dwarf PROG`: dwarf is the option's, PROG the command (it was taken for the command). */
	{
		char *argv[] = { "record", "--call-graph", "dwarf", "prog", NULL };

		assert_int_equal(record_cli_parse(&cli, 4, argv, &o), -1);
		assert_int_equal(o.callgraph, RECORD_CALLGRAPH_DWARF);
		assert_string_equal(argv[optind], "prog");
	}
}

static void test_record_refusals(void **state)
{
	static const struct {
		int argc;
		char *argv[4];
		const char *message;
	} cases[] = {
		{ 3, { "record", "-F", "1001" }, "prog: -F '1001': expected a sampling frequency of 1 to 1000 Hz\n" },
		{ 3, { "record", "-c", "0" }, "prog: -c '0': expected a sampling period of at least 1 event\n" },
		{ 3, { "record", "-o", "" }, "prog: -o needs a file name\n" },
		{ 2, { "record", "-Z" }, "prog: record: unknown option -Z\n" },
		{ 2, { "record", "--bogus" }, "prog: record: unknown option --bogus\n" },
		{ 2, { "record", "-e" }, "prog: record: option -e needs an argument\n" },
		{ 2, { "record", "--call-graph" }, "prog: record: option --call-graph needs an argument\n" },
		{ 3, { "record", "--call-graph", "dwarf,0" },
		  "prog: record: --call-graph dwarf,0: the stack size must be 8 to 65528 bytes\n" },
		{ 2, { "record", "--call-graph=dwarf,65536" },
		  "prog: record: --call-graph dwarf,65536: the stack size must be 8 to 65528 bytes\n" },
		{ 2, { "record", "--call-graph=dwarf,8k" },
		  "prog: record: --call-graph dwarf,8k: the stack size must be 8 to 65528 bytes\n" },
		{ 2, { "record", "--call-graph=fp,8" }, "prog: record: --call-graph 'fp,8': the mode is fp or dwarf[,SIZE]\n" },
		{ 2, { "record", "--call-graph=dwarfish" },
		  "prog: record: --call-graph 'dwarfish': the mode is fp or dwarf[,SIZE]\n" },
		{ 2, { "record", "--call-graph=lbr" }, "prog: record: --call-graph lbr needs Intel's last-branch records, "
						      "which kvmprof does not read; use fp or dwarf\n" },
	};
	struct own_record own = { 0 };
	struct record_cli cli = record_cli_for(&own, RECORD_MAX_EVENTS);
	struct record_opts o;
	char want[256];
	int rc;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[5] = { 0 };

		memcpy(argv, cases[i].argv, sizeof(cases[i].argv));
		CAPTURE(2, record_cli_parse(&cli, cases[i].argc, argv, &o));
	assert_int_equal(rc, 2);
		snprintf(want, sizeof(want), "%s%s", cases[i].message, cli.usage);
		assert_string_equal(captured, want);
	}
	o = (struct record_opts){ .freq = 10, .period = 5 };
	CAPTURE(2, record_cli_check_rate(&cli, &o));
	assert_int_equal(rc, 2);
	assert_string_equal(captured, "prog: record: -F and -c exclude each other\nusage: prog record ...\n");
}

static void test_record_help(void **state)
{
	char *argv[] = { "record", "--help", NULL };
	struct own_record own = { 0 };
	struct record_cli cli = record_cli_for(&own, 1);
	struct record_opts o;
	int rc;

	(void)state;
	CAPTURE(1, record_cli_parse(&cli, 2, argv, &o));
	assert_int_equal(rc, 0);
	assert_string_equal(captured, "usage: prog record ...\nhelp text\n");
}

/* ---- report ---- */

struct own_report {
	const char *kallsyms;
	int prepare_rc, check_rc;
	/* what the callbacks saw */
	struct report_cli_args seen;
	struct profile_options popt;
	uint64_t duration_ns;
	bool has_end;
	int renders;
};

static int own_report_option(int c, const char *arg, void *ctx)
{
	struct own_report *o = ctx;

	if (c != 'k')
		return -1;
	o->kallsyms = arg;
	return 0;
}

static int own_check(void *ctx)
{
	return ((struct own_report *)ctx)->check_rc;
}

static void own_profile_options(const struct report_cli_args *a, struct profile_options *popt, void *ctx)
{
	struct own_report *o = ctx;

	popt->root = a->root;
	popt->kallsyms_path = o->kallsyms;
	o->popt = *popt;
}

static int own_prepare(struct profile *p, void *ctx)
{
	(void)p;
	return ((struct own_report *)ctx)->prepare_rc;
}

static int own_render(FILE *out, struct profile *p, const struct report_cli_args *a, void *ctx)
{
	struct own_report *o = ctx;

	o->seen = *a;
	o->duration_ns = p->duration_ns;
	o->has_end = p->has_end;
	o->renders++;
	fprintf(out, "%zu samples\n", p->nr_samples);
	return 0;
}

static const struct option own_report_longopts[] = {
	{ "kallsyms", required_argument, NULL, 'k' },
	{ NULL, 0, NULL, 0 },
};

static struct report_cli report_cli_for(struct own_report *own)
{
	return (struct report_cli){
		.prog = "prog", .cmd = "prog report", .usage = "usage: prog report ...\n", .help = "help text\n",
		.own_shortopts = "k:", .own_longopts = own_report_longopts, .own_option = own_report_option,
		.check = own_check, .profile_options = own_profile_options, .prepare = own_prepare,
		.render = own_render, .note_unresolved = true, .ctx = own,
	};
}

/* One sample nothing resolves (no maps), END with a duration; aborted: no END, a truncated file. */
static void write_file(bool whole)
{
	struct kp_writer *w;
	int fd;

	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_event(w, 1, "cycles", 1000, 0), 0);
	assert_int_equal(fx_sample(w, 1, 10, 1, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	if (whole) {
		assert_int_equal(kp_writer_close(w, 0, 987654321), 0);
	} else {
		assert_int_equal(kp_writer_flush(w), 0);
		kp_writer_abort(w);
	}
	close(fd);
}

static void test_report_loads_and_renders(void **state)
{
	char *argv[] = { "report", "-i", data_path, "--format", "folded", "-o", out_path, "--guest-root", dir,
			 "--kallsyms", "/nonexistent-kallsyms", NULL };
	struct own_report own = { .check_rc = -1 };
	struct report_cli cli = report_cli_for(&own);
	char text[64] = "";
	FILE *f;
	int rc;

	(void)state;
	write_file(true);
	CAPTURE(2, report_cli_main(&cli, 11, argv));
	assert_int_equal(rc, 0);
	assert_int_equal(own.renders, 1);
	assert_string_equal(own.seen.input, data_path);
	assert_ptr_equal(own.seen.format, report_format_find("folded"));
	assert_false(own.seen.recover);
	/* The program's own option reached the loader, next to the shared --guest-root. */
	assert_string_equal(own.popt.root, dir);
	assert_string_equal(own.popt.kallsyms_path, "/nonexistent-kallsyms");
	/* The END record is read: the recording's duration. */
	assert_true(own.has_end);
	assert_int_equal(own.duration_ns, 987654321);
	f = fopen(out_path, "r");
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	assert_string_equal(text, "1 samples\n");
	/* Warnings come as "prog: warning: ..."; not text: the unresolved count. */
	assert_non_null(strstr(captured, "prog: warning: /nonexistent-kallsyms: "));
	assert_non_null(strstr(captured, "prog: 1 of 1 samples have no symbol\n"));
}

static void test_report_damaged_file(void **state)
{
	char *plain[] = { "report", "-i", data_path, NULL };
	char *recover[] = { "report", "-i", data_path, "--recover", "-o", out_path, NULL };
	struct own_report own = { .check_rc = -1 };
	struct report_cli cli = report_cli_for(&own);
	int rc;

	(void)state;
	write_file(false);
	CAPTURE(2, report_cli_main(&cli, 3, plain));
	assert_int_equal(rc, 1);
	assert_int_equal(own.renders, 0);
	assert_true(strncmp(captured, "prog: ", 6) == 0);
	assert_non_null(strstr(captured, " (`prog report --recover` reads what precedes the damage)\n"));
	/* --recover: what is intact, and one warning that says where the damage is. */
	CAPTURE(2, report_cli_main(&cli, 6, recover));
	assert_int_equal(rc, 0);
	assert_int_equal(own.renders, 1);
	assert_true(own.seen.recover);
	assert_true(strncmp(captured, "prog: warning: --recover: ", 26) == 0);
	assert_non_null(strstr(captured, "no valid END record"));
	assert_false(own.has_end);
}

static void test_report_refusals(void **state)
{
	char *bad_format[] = { "report", "-f", "xml", NULL };
	char *unknown[] = { "report", "--bogus", NULL };
	char *missing[] = { "report", "-i", NULL };
	char *extra[] = { "report", "extra", NULL };
	char *fine[] = { "report", "-i", data_path, NULL };
	struct own_report own = { .check_rc = -1 };
	struct report_cli cli = report_cli_for(&own);
	int rc;

	(void)state;
	CAPTURE(2, report_cli_main(&cli, 3, bad_format));
	assert_int_equal(rc, 2);
	assert_string_equal(captured, "prog report: unknown format 'xml' (text, folded, pprof or svg)\n"
				      "usage: prog report ...\n");
	CAPTURE(2, report_cli_main(&cli, 2, unknown));
	assert_int_equal(rc, 2);
	assert_string_equal(captured, "prog report: unknown option '--bogus'\nusage: prog report ...\n");
	CAPTURE(2, report_cli_main(&cli, 2, missing));
	assert_int_equal(rc, 2);
	assert_string_equal(captured, "prog report: option '-i' needs an argument\nusage: prog report ...\n");
	CAPTURE(2, report_cli_main(&cli, 2, extra));
	assert_int_equal(rc, 2);
	assert_string_equal(captured, "prog report: unexpected argument 'extra'\nusage: prog report ...\n");
	/* The program's own check of its options, then its prepare step's failure. */
	write_file(true);
	own.check_rc = 2;
	assert_int_equal(report_cli_main(&cli, 3, fine), 2);
	own.check_rc = -1;
	own.prepare_rc = -ENOMEM;
	CAPTURE(2, report_cli_main(&cli, 3, fine));
	assert_int_equal(rc, 1);
	assert_string_equal(captured, "prog: out of memory\n");
	assert_int_equal(own.renders, 0);
}

/* The formats' rows: found by name, picked by an -o name's ending, listed for messages. */
static void test_report_formats(void **state)
{
	const struct report_format *f = NULL;
	char names[128];

	(void)state;
	assert_string_equal(report_format_default()->name, "text");
	assert_false(report_format_default()->stacks);
	assert_null(report_format_find("xml"));
	assert_null(report_format_find(""));
	assert_true(report_format_find("pprof")->binary);
	assert_false(report_format_find("svg")->binary);
	assert_true(report_format_find("folded")->stacks);
	assert_int_equal(report_format_of_name("out.pb.gz", &f), 1);
	assert_ptr_equal(f, report_format_find("pprof"));
	assert_int_equal(report_format_of_name("a/b.folded", &f), 1);
	assert_ptr_equal(f, report_format_find("folded"));
	assert_int_equal(report_format_of_name("x.svg", &f), 1);
	assert_ptr_equal(f, report_format_find("svg"));
	/* gzip or protobuf without saying which; a bare suffix is no name */
	assert_int_equal(report_format_of_name("x.gz", &f), -1);
	assert_int_equal(report_format_of_name("x.pb", &f), -1);
	assert_int_equal(report_format_of_name(".svg", &f), 0);
	assert_int_equal(report_format_of_name("report.txt", &f), 0);
	report_format_names(names, sizeof(names), ", ", " or ");
	assert_string_equal(names, "text, folded, pprof or svg");
	report_format_names(names, sizeof(names), "|", "|");
	assert_string_equal(names, "text|folded|pprof|svg");
	report_format_names(names, 8, ", ", " or ");
	assert_string_equal(names, "text, f");
}

static const struct report_format_words own_words[] = { { "svg", "our own words for svg" }, { 0 } };

/* --help lists every row of the formats' table, in the program's words where it has them. */
static void test_report_help_lists_formats(void **state)
{
	char *help[] = { "report", "--help", NULL };
	static const struct report_view view = { .words = own_words };
	struct own_report own = { .check_rc = -1 };
	struct report_cli cli = report_cli_for(&own);
	char line[256];
	int rc;

	(void)state;
	cli.view = &view;
	CAPTURE(1, report_cli_main(&cli, 2, help));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(captured, "usage: prog report ...\nhelp text\n\nFormats "));
	for (const struct report_format *f = report_formats(); f->name; f++) {
		snprintf(line, sizeof(line), "\n  %-7s %.40s", f->name, strcmp(f->name, "svg") ? f->help : "our own words");
		assert_non_null(strstr(captured, line));
		if (f->suffix) {
			snprintf(line, sizeof(line), " -o *%s\n", f->suffix);
			assert_non_null(strstr(captured, line));
		}
	}
	/* A command with one output of its own has no formats to list. */
	cli.one_format = true;
	CAPTURE(1, report_cli_main(&cli, 2, help));
	assert_string_equal(captured, "usage: prog report ...\nhelp text\n");
}

/* cli_help_item: the item's column, then words wrapped at 80 columns. */
static void test_help_item_wraps(void **state)
{
	char words[256] = "";
	int rc = 0;

	(void)state;
	for (int i = 0; i < 20; i++)
		strcat(words, "abcdefghi ");
	CAPTURE(1, (cli_help_item(stdout, 10, "item", words), 0));
	assert_int_equal(rc, 0);
	assert_string_equal(captured, "  item    abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi\n"
				      "          abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi\n"
				      "          abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi\n");
	CAPTURE(1, (cli_help_item(stdout, 6, "longer-item", "text"), 0));
	assert_string_equal(captured, "  longer-item text\n");
}

/* ---- the command table ---- */

static char ran_argv0[32];
static int ran_argc;

static int cmd_one(int argc, char **argv)
{
	snprintf(ran_argv0, sizeof(ran_argv0), "%s", argv[0]);
	ran_argc = argc;
	return 7;
}

static int cmd_two(int argc, char **argv)
{
	(void)argc;
	snprintf(ran_argv0, sizeof(ran_argv0), "%s", argv[0]);
	return 0;
}

static const struct cli_command table[] = {
	{ "one", "[-x] FILE", "the first command", cmd_one },
	{ "second", "--all", "the second, whose summary\ntakes two lines", cmd_two },
	{ 0 },
};

static const struct cli_program program = { .name = "prog", .about = "What prog does.\n", .commands = table };

static const char table_usage[] = "usage: prog one [-x] FILE\n"
				  "       prog second --all\n"
				  "       prog --help | --version\n";

static void test_command_table(void **state)
{
	char *argv_one[] = { "prog", "one", "a", "b", NULL }, *argv_two[] = { "prog", "second", NULL };
	char *argv_none[] = { "prog", NULL }, *argv_bad[] = { "prog", "on", NULL }, *argv_help[] = { "prog", "help", NULL };
	char *argv_version[] = { "prog", "-V", NULL };
	const char *unknown = "prog: unknown subcommand 'on'\n";
	int rc;

	(void)state;
	/* A row's command runs with argv from its name on; its status is the program's. */
	CAPTURE(1, cli_program_main(&program, 4, argv_one));
	assert_int_equal(rc, 7);
	assert_string_equal(ran_argv0, "one");
	assert_int_equal(ran_argc, 3);
	CAPTURE(1, cli_program_main(&program, 2, argv_two));
	assert_int_equal(rc, 0);
	assert_string_equal(ran_argv0, "second");

	/* No command, or one not in the table (no prefixes): the usage, status 2. */
	CAPTURE(2, cli_program_main(&program, 1, argv_none));
	assert_int_equal(rc, 2);
	assert_string_equal(captured, table_usage);
	ran_argv0[0] = '\0';
	CAPTURE(2, cli_program_main(&program, 2, argv_bad));
	assert_int_equal(rc, 2);
	assert_string_equal(ran_argv0, "");
	assert_true(!strncmp(captured, unknown, strlen(unknown)));
	assert_string_equal(captured + strlen(unknown), table_usage);

	/* --help: the usage, the paragraph, a line per row (further lines under the first). */
	CAPTURE(1, cli_program_main(&program, 2, argv_help));
	assert_int_equal(rc, 0);
	assert_true(!strncmp(captured, table_usage, strlen(table_usage)));
	assert_string_equal(captured + strlen(table_usage), "\nWhat prog does.\n\n"
							     "  one      the first command\n"
							     "  second   the second, whose summary\n"
							     "           takes two lines\n"
							     "\n`prog COMMAND --help` describes each command's options.\n");
	CAPTURE(1, cli_program_main(&program, 2, argv_version));
	assert_int_equal(rc, 0);
	assert_true(!strncmp(captured, "prog ", 5));
	assert_non_null(strstr(captured, " (sample format "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_shared_and_own_options),
		cmocka_unit_test(test_record_events),
		cmocka_unit_test(test_record_call_graph),
		cmocka_unit_test(test_record_refusals),
		cmocka_unit_test(test_record_help),
		cmocka_unit_test(test_report_loads_and_renders),
		cmocka_unit_test(test_report_damaged_file),
		cmocka_unit_test(test_report_refusals),
		cmocka_unit_test(test_report_formats),
		cmocka_unit_test(test_report_help_lists_formats),
		cmocka_unit_test(test_help_item_wraps),
		cmocka_unit_test(test_command_table),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

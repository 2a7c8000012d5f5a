/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof report`: reads a system-wide recording (and, optionally, a
 * guest's `kvmprof-agent export`), puts every sample in exactly one domain
 * and renders it: a table by domain, process and symbol; folded stacks and
 * flame graphs whose process frames say the domain ("[guest] matmul",
 * "[vmm] kvmprof-vmm", "[host] kvmprof-vmm", "[guest-kernel] matmul"); pprof.
 *
 * Shares are shares of samples. The host samples the VMM's threads and the
 * VMM samples its vCPUs with the same event and rate (kvmprof record asks
 * it to), so a sample stands for the same amount of time on both sides.
 */
#include "host_report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/keymap.h"
#include "report/report.h"
#include "cli/report_cli.h"
#include "cli/report_table_cli.h"

static const char usage[] =
	"usage: kvmprof report [-i FILE] [--guest-kernel ELF | --guest-kallsyms FILE] [--guest-root DIR]\n"
	"                      [--guest-export FILE] [--sort KEYS] [--percent-limit P] [-n] [-g]\n"
	"                      [--comms LIST] [--pids LIST] [--tids LIST] [--dsos LIST] [--symbols LIST]\n"
	"                      [--percentage absolute|relative]\n"
	"                      [--format FMT] [-o OUT] [--recover]\n"
	"                      [--drill [START]] [--drill-threshold PCT] [--exits] [--no-cross-layer]\n"
	"                      [--no-demangle]\n";

static const char help[] =
	"\n"
	"Reads a `kvmprof record` file and shows where the VM's time went, every\n"
	"sample in exactly one domain: guest user, guest kernel, VMM user (the VMM's\n"
	"own code on the host) or host kernel.\n"
	"\n"
	"  -i, --input FILE        the recording (default kvmprof.data; '-' is standard input)\n"
	"  -r, --guest-root DIR    the guest's files on the host: guest mappings resolve as\n"
	"                          DIR/path (build/guest for the bundled guest)\n"
	"  -k, --guest-kernel ELF  the guest kernel's ELF file, for guest kernel symbols\n"
	"  -K, --guest-kallsyms FILE  the guest's /proc/kallsyms, for guest kernel symbols\n"
	"  -x, --guest-export FILE a guest's `kvmprof-agent export` stream (process maps,\n"
	"                          names, kallsyms), read as the guest's\n"
	"  -s, --sort KEYS         text: rows by these keys, comma-separated, columns in their\n"
	"                          order, as perf report's: domain (the four above),\n"
	"                          process (the guest process or VMM thread, 'command\n"
	"                          [pid]'), comm, pid, tid (a thread; perf's pid), dso (or\n"
	"                          image), sym (or symbol;\n"
	"                          shows its image unless dso is a key). Default\n"
	"                          domain,process,symbol; domain,symbol: without processes\n"
	"      --percent-limit P   text: rows under P% of the samples are not shown (a line\n"
	"                          says how many rows and samples)\n"
	"  -n, --show-nr-samples   accepted for perf's sake: the samples column is always shown\n"
	"      --comms LIST        only the samples of these commands (comma-separated; a\n"
	"                          guest's 'matmul' or the tagged '[guest] matmul'; also --comm)\n"
	"      --pids LIST         only the samples of these pids (also --pid)\n"
	"      --tids LIST         only the samples of these threads (also --tid)\n"
	"      --dsos LIST         only the samples in these images, by name or path (also --dso)\n"
	"      --symbols LIST      only the samples in these functions (also --symbol); the\n"
	"                          filters apply to every format; a line says how many\n"
	"                          samples they kept\n"
	"      --percentage absolute|relative  under a filter, the table's shares are of\n"
	"                          all samples (absolute, the default, as perf's) or of\n"
	"                          those kept (relative: the rows add up to 100%)\n"
	"  -g, --callgraph         text: the caller chains of the top rows (through VM exits\n"
	"                          into the guest, unless --no-cross-layer)\n"
	"  -f, --format FMT        the output's format, one of those below (default text)\n"
	"  -o, --output OUT        write there instead of standard output; without -f, the\n"
	"                          name's ending picks the format (below)\n"
	"      --drill[=START]     the drill-down: from the whole recording (or the guest\n"
	"                          process or function START) follow the heaviest path\n"
	"                          down the cross-layer stacks (guest, exit, VMM, host\n"
	"                          kernel) to the frame that holds the time itself\n"
	"      --drill-threshold PCT  children below PCT% of the start are not followed\n"
	"                          or listed (default 5)\n"
	"      --exits             the exit cost table: VM exits by guest function and by\n"
	"                          guest process, with the host time that handled them\n"
	"      --no-cross-layer    host samples keep their host stacks (by default, one\n"
	"                          taken while the VMM handled a VM exit goes on through\n"
	"                          the exit's frame into the guest's stack at the exit)\n"
	"      --recover           read a damaged file (cut short by kill -9, a crash or a\n"
	"                          full disk; a corrupt record; data after END) up to the\n"
	"                          damage, and say where it is and how much was lost\n"
	"      --no-demangle       C++ and Rust function names as the files have them\n"
	"                          (_ZN2ns3fooEv); by default they are demangled (ns::foo)\n";

static const char *const layer_names[HOST_LAYER_COUNT] = { "guest user", "guest kernel", "guest unknown",
							   "VMM user", "host kernel" };
/* The tag a sample's process frame carries in folded stacks and flame graphs. */
static const char *const layer_tags[HOST_LAYER_COUNT] = { "[guest]", "[guest-kernel]", "[guest]", "[vmm]", "[host]" };

enum host_layer host_layer_of(const struct profile_sample *s)
{
	if (s->domain == KP_DOMAIN_GUEST && s->cpl == HOST_CPL_UNKNOWN)
		return HOST_LAYER_GUEST_UNKNOWN;
	if (s->domain == KP_DOMAIN_GUEST)
		return s->cpl == KP_CPL_KERNEL ? HOST_LAYER_GUEST_KERNEL : HOST_LAYER_GUEST_USER;
	return s->cpl == KP_CPL_KERNEL ? HOST_LAYER_HOST_KERNEL : HOST_LAYER_VMM_USER;
}

int host_report_option(int c, const char *arg, void *ctx)
{
	struct host_report_args *a = ctx;
	int r = report_table_option(c, arg, &a->opt.table, HOST_REPORT_KEYS, "kvmprof report", usage);

	if (r >= 0)
		return r;
	switch (c) {
	case 'k':
		a->guest_kernel = arg;
		return 0;
	case 'K':
		a->guest_kallsyms = arg;
		return 0;
	case 'x':
		a->guest_export = arg;
		return 0;
	case 'D':
		a->drill = true;
		/* "--drill START" as well as "--drill=START": START is never an option or empty. */
		if (!arg && optind < a->argc && a->argv[optind][0] && a->argv[optind][0] != '-')
			arg = a->argv[optind++];
		a->drill_start = arg;
		return 0;
	case 'T': {
		char *end;

		a->drill_threshold = strtod(arg, &end);
		if (end == arg || *end || !(a->drill_threshold >= 0 && a->drill_threshold <= 100))
			return cli_usage_error("kvmprof report", usage, "--drill-threshold: '%s' is not a percentage (0-100)",
					       arg);
		return 0;
	}
	case 'E':
		a->exits = true;
		return 0;
	case 'C':
		a->no_cross_layer = true;
		return 0;
	case 'g':
		a->opt.callgraph = true;
		return 0;
	}
	return -1;
}

static int check_args(void *ctx)
{
	const struct host_report_args *a = ctx;

	if (a->guest_kernel && a->guest_kallsyms)
		return cli_usage_error("kvmprof report", usage, "--guest-kernel and --guest-kallsyms exclude each other");
	if (a->drill && a->exits)
		return cli_usage_error("kvmprof report", usage, "--drill and --exits are two reports: ask for one");
	if ((a->drill || a->exits) && report_filter_active(&a->opt.table.filter))
		return cli_usage_error("kvmprof report", usage, "--%s reads the whole recording: the filters (--comms, --pids, "
				       "--dsos, --symbols) are the table's", a->drill ? "drill" : "exits");
	if ((a->drill || a->exits) && a->no_cross_layer)
		return cli_usage_error("kvmprof report", usage, "--%s needs the cross-layer stacks: not with --no-cross-layer",
				       a->drill ? "drill" : "exits");
	return -1;
}

/* Everything here but the host's own kernel is the guest's: its root, kernel symbols and export. */
void host_report_profile_options(const struct report_cli_args *a, struct profile_options *popt, void *ctx)
{
	const struct host_report_args *own = ctx;

	popt->guest_root = a->root;
	popt->guest_kernel_path = own->guest_kernel;
	popt->guest_kallsyms_path = own->guest_kallsyms;
	popt->guest_export_path = own->guest_export;
	popt->cross_layer = !own->no_cross_layer;
	popt->all_exit_frames = own->exits; /* by guest function: every exit's stack */
	/*
	 * Otherwise reports show the exits host samples joined, and the
	 * header the guest's COM2 writers (I/O out exits): the rest are only
	 * counted, which is most of a 10^6-sample report's memory.
	 */
	popt->exits_joined_only = true;
	popt->exit_kinds_kept = 1u << KP_EXIT_IO_OUT;
}

/*
 * QEMU's threads by role ("vCPU 0", "main loop", "I/O"), from META
 * vmm_threads ("tid:role;..."): the role of thread tid, or "other thread"
 * (one that started after the recording began). NULL when the recording
 * is not of QEMU: kvmprof-vmm's threads keep its name alone.
 */
static const char *thread_role(const struct profile *p, uint32_t pid, uint32_t tid, char *buf, size_t len)
{
	const char *vmm = profile_meta(p, "vmm"), *threads = profile_meta(p, "vmm_threads");
	const char *vmm_pid = profile_meta(p, "vmm_pid");

	if (!vmm || strcmp(vmm, "qemu") || !threads || !vmm_pid || strtoul(vmm_pid, NULL, 10) != pid)
		return NULL;
	for (const char *t = threads; *t;) {
		char *end;
		unsigned long id = strtoul(t, &end, 10);
		size_t n;

		if (*end != ':')
			break;
		n = strcspn(end + 1, ";");
		if (id == tid) {
			snprintf(buf, len, "%.*s", (int)n, end + 1);
			return buf;
		}
		t = end + 1 + n;
		if (*t == ';')
			t++;
	}
	return "other thread";
}

/*
 * "[guest] matmul": each sample's command names its domain. In stacks, a
 * host sample joined to a VM exit is the guest process's that caused the
 * exit ("[guest-kernel] spam" for an exit in its kernel code): its stack
 * starts in that process, so its time shows under that process. QEMU's own
 * samples name the thread's role: "[vmm] qemu-system-x86 (vCPU 0)".
 * A tagged name is made once per (layer, command, thread when it may have
 * a role) and looked up after: formatting and interning it per sample was
 * a third of a 10^6-sample report.
 */
static int tag_commands(struct profile *p, bool stacks, uint64_t by_layer[HOST_LAYER_COUNT])
{
	struct keymap tagged = KEYMAP_INIT;
	char name[160], rbuf[64];
	uint64_t last_a = 0, last_b = 0;
	uint32_t last = PROFILE_NONE;
	int rc = -ENOMEM;

	for (size_t i = 0; i < p->nr_samples; i++) {
		struct profile_sample *s = &p->samples[i];
		enum host_layer layer = host_layer_of(s);
		uint32_t c, comm = s->comm;

		by_layer[layer]++; /* the header's counts, here rather than in a pass of their own */

		if (stacks && s->exit != PROFILE_NONE) {
			const struct profile_exit *x = &p->exits[s->exit];

			layer = x->cpl == KP_CPL_KERNEL ? HOST_LAYER_GUEST_KERNEL : HOST_LAYER_GUEST_USER;
			comm = x->comm;
			s->pid = x->pid;
		}
		bool may_have_role = s->domain == KP_DOMAIN_NATIVE && comm == s->comm;
		uint64_t ka = (uint64_t)comm << 8 | (uint64_t)may_have_role << 4 | layer;
		uint64_t kb = may_have_role ? (uint64_t)s->pid << 32 | s->tid : 0;
		int64_t v = last != PROFILE_NONE && ka == last_a && kb == last_b ? last : keymap_get(&tagged, ka, kb);

		if (v >= 0) {
			s->comm = (uint32_t)v;
			last = s->comm, last_a = ka, last_b = kb;
			continue;
		}
		const char *role = may_have_role ? thread_role(p, s->pid, s->tid, rbuf, sizeof(rbuf)) : NULL;

		if (role)
			snprintf(name, sizeof(name), "%s %s (%s)", layer_tags[layer], p->comms[comm], role);
		else
			snprintf(name, sizeof(name), "%s %s", layer_tags[layer], p->comms[comm]);
		c = profile_comm(p, name);
		if (c == PROFILE_NONE || keymap_put(&tagged, ka, kb, c))
			goto out;
		s->comm = c;
	}
	rc = 0;
out:
	keymap_free(&tagged);
	return rc;
}

const char *host_frame_layer(const struct profile *p, uint32_t func)
{
	const struct profile_image *im = &p->images[p->funcs[func].image];

	if (im->vm_exit)
		return "VM exit";
	if (im->domain == KP_DOMAIN_GUEST)
		return im->kernel ? "guest kernel" : "guest user";
	return im->kernel ? "host kernel" : "VMM user";
}

/*
 * pprof's labels: the layer the sample's time was spent in, and the guest
 * process it was for (a guest sample's, or the one whose VM exit a host
 * sample handled), its command without the layer's tag.
 */
static void pprof_labels(const struct profile *p, const struct profile_sample *s, void *ctx, const char **layer,
			 const char **guest_process)
{
	const char *comm = p->comms[s->comm], *sp = strchr(comm, ' ');

	(void)ctx;
	*layer = layer_names[host_layer_of(s)];
	*guest_process = (s->domain == KP_DOMAIN_GUEST || s->exit != PROFILE_NONE) && sp ? sp + 1 : NULL;
}

static enum report_kind frame_kind(const struct profile *p, uint32_t func, void *ctx)
{
	const struct profile_image *im = &p->images[p->funcs[func].image];

	(void)ctx;
	if (im->vm_exit)
		return REPORT_KIND_VM_EXIT;
	if (!im->path && !im->kernel && !profile_func_known(p, func))
		return REPORT_KIND_UNKNOWN;
	if (im->domain == KP_DOMAIN_GUEST)
		return im->kernel ? REPORT_KIND_GUEST_KERNEL : REPORT_KIND_GUEST_USER;
	return im->kernel ? REPORT_KIND_HOST_KERNEL : REPORT_KIND_VMM;
}

/* ---- the table ---- */

/* The domain sort key: the sample's layer. */
static uint32_t table_domain(const struct profile *p, const struct profile_sample *s, void *ctx)
{
	(void)p;
	(void)ctx;
	return host_layer_of(s);
}

static const char *table_domain_name(uint32_t layer, void *ctx)
{
	(void)ctx;
	return layer < HOST_LAYER_COUNT ? layer_names[layer] : "?";
}

void host_report_table_defaults(struct report_table_options *o)
{
	char err[200];

	o->domain = table_domain;
	o->domain_name = table_domain_name;
	/* domain,process,symbol: what the table has always been by default (the keys are all valid). */
	report_keys_parse("domain,process,sym", HOST_REPORT_KEYS, &o->keys, err, sizeof(err));
}

static int print_text(FILE *out, const struct profile *p, const char *input, const struct report_options *opt,
		      const uint64_t by_layer[HOST_LAYER_COUNT])
{
	uint64_t total = p->nr_samples, whole;
	struct report_table_options o = opt->table;
	struct report_table t;
	size_t shown;
	int rc;

	host_report_header(out, p, input, by_layer);

	o.sample_rows = opt->callgraph;
	rc = report_table_build(&t, p, &o);
	if (rc)
		return rc;
	fputc('\n', out);
	report_table_print_filter(out, &o, t.kept[0], t.total[0]);
	/* Shares are of all samples, as the domain table's (perf's --percentage absolute), or of those kept (relative). */
	whole = report_table_whole(&o, t.kept[0], total);
	rc = report_table_print(out, p, &t, 0, t.nr, whole, &o, REPORT_STYLE_HOST);
	if (!rc && p->unresolved)
		fprintf(out, "\n%" PRIu64 " of %zu samples have no symbol\n", p->unresolved, p->nr_samples);
	if (!rc)
		host_report_unmapped_note(out, p);
	shown = report_table_shown(&t, 0, t.nr, whole, &o);
	if (!rc && opt->callgraph && shown) {
		fputs("\nCallers of the top rows (outermost first):\n", out);
		rc = report_table_callgraph(out, p, &t, 0, shown, whole, &o, opt->callgraph_rows, opt->callgraph_chains);
	}
	if (!rc && ferror(out))
		rc = -EIO;
	report_table_free(&t);
	return rc;
}

/*
 * Folded stacks and flame graphs show one event: the host's and the
 * guest's samples are one time line, so samples of the VMM's own event are
 * shown with the host's.
 */
static uint32_t merge_events(struct profile *p)
{
	uint32_t ev = report_folded_event(p);

	for (size_t i = 0; i < p->nr_samples; i++)
		p->samples[i].event = ev;
	return ev;
}

int host_report_text(FILE *out, struct profile *p, const char *input, const struct report_options *opt)
{
	uint64_t by_layer[HOST_LAYER_COUNT] = { 0 };
	int rc = tag_commands(p, false, by_layer);

	return rc ? rc : print_text(out, p, input, opt, by_layer);
}

static int render_directory(FILE *out, const struct report_cli_args *a, const struct profile_options *popt,
			    void *ctx)
{
	const struct host_report_args *own = ctx;

	if (a->format->stacks || own->drill || own->exits) {
		fprintf(stderr, "kvmprof report: %s is an --all-domains recording: its report is the text table; for "
				"%s, report one domain's file (%s/NAME.data)\n", a->input,
			own->drill ? "--drill" : own->exits ? "--exits" : "other formats", a->input);
		return -ECANCELED;
	}
	return host_report_domains(out, a->input, popt, &own->opt);
}

/* What kvmprof's view of the formats needs of one report. */
struct render_call {
	const struct host_report_args *own;
	const char *input;
	const uint64_t *by_layer;
};

static uint32_t stack_event(struct profile *p, const struct report_format *f, void *ctx)
{
	(void)f, (void)ctx;
	return merge_events(p);
}

static void pprof_options(const struct profile *p, struct report_pprof_options *o, void *ctx)
{
	(void)ctx;
	*o = (struct report_pprof_options){ .domain = profile_meta(p, "domain"), .labels = pprof_labels };
}

static int text(FILE *out, struct profile *p, void *ctx)
{
	const struct render_call *c = ctx;

	return print_text(out, p, c->input, &c->own->opt, c->by_layer);
}

static const struct report_format_words words[] = {
	{ "text", "a table by domain, process and symbol (the default)" },
	{ "folded", "'[layer] comm;image`outer;...' lines for flame graph tools, the host's and the guest's samples "
		    "together" },
	{ "pprof", "gzipped protobuf for pprof, each sample labelled with its layer (needs -o or a non-terminal)" },
	{ "svg", "a flame graph, the four layers in their own colours (click a frame to zoom, 'all' to zoom out)" },
	{ 0 },
};

/* kvmprof's view of every format: one stack per sample across the layers, each in its colour. */
static const struct report_svg_options svg = { .title = "kvmprof system-wide", .kind = frame_kind };
static const struct report_view view = { .stack_event = stack_event, .svg = &svg, .pprof = pprof_options, .text = text,
					 .words = words };

static int render(FILE *out, struct profile *p, const struct report_cli_args *a, void *ctx)
{
	const struct host_report_args *own = ctx;
	bool stacks = a->format->stacks;
	uint64_t by_layer[HOST_LAYER_COUNT] = { 0 };
	struct render_call call = { .own = own, .input = a->input, .by_layer = by_layer };
	int rc;

	if (own->drill)
		return host_report_drill(out, p, own->drill_start, own->drill_threshold);
	if (own->exits)
		return host_report_exits(out, p);
	rc = host_report_add_unsampled(p);
	if (!rc)
		rc = tag_commands(p, stacks, by_layer);
	if (rc)
		return rc;
	if (stacks)
		report_filter_profile(p, &own->opt.table.filter);
	return a->format->render(out, p, a->format, &view, &call);
}

int host_report_main(int argc, char **argv)
{
	static const struct option own_longopts[] = {
		{ "guest-kernel", required_argument, NULL, 'k' },
		{ "guest-kallsyms", required_argument, NULL, 'K' },
		{ "guest-export", required_argument, NULL, 'x' },
		REPORT_TABLE_LONGOPTS,
		{ "callgraph", no_argument, NULL, 'g' },
		{ "drill", optional_argument, NULL, 'D' },
		{ "drill-threshold", required_argument, NULL, 'T' },
		{ "exits", no_argument, NULL, 'E' },
		{ "no-cross-layer", no_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	struct host_report_args own = { .drill_threshold = 5.0, .argc = argc, .argv = argv };
	const struct report_cli cli = {
		.prog = "kvmprof", .cmd = "kvmprof report", .usage = usage, .help = help,
		.own_shortopts = REPORT_TABLE_SHORTOPTS "gk:K:x:", .own_longopts = own_longopts, .own_option = host_report_option,
		.check = check_args, .profile_options = host_report_profile_options, .render = render, .directory = render_directory,
		.view = &view, .ctx = &own,
	};

	host_report_table_defaults(&own.opt.table);
	return report_cli_main(&cli, argc, argv);
}

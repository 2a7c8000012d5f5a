// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmi_trace.h"
#include "control.h"
#include "kvmprof/plugin.h"
#include "kvmprof/sample_format.h"
#include "kvmprof/version.h"
#include "options.h"
#include "common/trace_event_table.h"

static const char usage_text[] =
	"Usage: kvmprof-vmm [OPTIONS]\n"
	"Boots a guest under KVM: the bundled kvmprof guest by default, or a Linux\n"
	"kernel (bzImage, or a PVH-bootable vmlinux).\n"
	"\n"
	"  --kernel FILE         kernel: PVH ELF or bzImage (default: the bundled\n"
	"                        kvmprof guest, built into this program)\n"
	"  --initrd FILE         initial ramdisk (default: the bundled guest's demo\n"
	"                        initrd with the bundled kernel, none otherwise);\n"
	"                        --initrd none: no initrd\n"
	"  --cmdline STR         kernel command line\n"
	"  --mem SIZE            guest RAM, e.g. 256M or 1G; a plain number is MiB\n"
	"                        (default 256M, 16M to 3G)\n"
	"  --cpus N              vCPUs, 1 to %d (default 1)\n"
	"  --console FILE        COM1 output to FILE (default: standard output)\n"
	"  --agent-channel PATH  COM2 to PATH: a UNIX socket if one listens there,\n"
	"                        else a file created or truncated\n"
	"  --control PATH        serve the control socket at PATH: a UNIX socket,\n"
	"                        mode 0600, line-delimited JSON (status, vCPU thread\n"
	"                        ids, vPMU figures; docs/control-socket.md)\n"
	"  --timeout SECONDS     stop the guest after SECONDS (exit code 124)\n"
	"  --kvm-device PATH     the KVM device (default /dev/kvm)\n"
	"\n"
	"Virtual PMU:\n"
	"  --vpmu=MODEL          off, amd or intel: the PMU the guest sees, whatever\n"
	"                        the host's vendor (default: the host's vendor)\n"
	"  --vpmu-counters N     offer N general-purpose counters (default: the\n"
	"                        model's maximum, 6 for amd, 8 for intel)\n"
	"  --vpmu-backend=KIND   how the vPMU counts:\n";

/* After the backends, which vpmu_names.c lists. */
static const char usage_tail[] =
	"  --vpmu-mode=MODE      cpu-switch (count guest execution only, default) or\n"
	"                        domain-switch (also the VMM's work for the guest)\n"
	"  --vpmu-filter FILE    allow or deny list of events (docs/vpmu-filter.md)\n"
	"  --vpmu-stats          print the vPMU's statistics at exit\n"
	"  --vpmu-trace-pmi N    single-step the guest's NMI handler for the first N\n"
	"                        PMIs (0 to 100000), entry to IRETQ; print the ring-0\n"
	"                        instructions and VM exits per PMI, and the run's VM\n"
	"                        exits by reason, at exit (for benchmarks: a traced\n"
	"                        PMI is ~1000 times slower)\n"
	"  --vpmu-trace-tick N   the same for the first N LAPIC timer interrupts\n"
	"  --trace FILE          write the VMM's trace events into FILE (binary;\n"
	"                        read it with kvmprof trace -i FILE; docs/trace.md)\n"
	"  --trace-events LIST   the events --trace writes: comma-separated globs of\n"
	"                        event names, e.g. 'vm_exit,pio,msr_*' (default: all)\n"
	"  --plugin FILE.so[,KEY=VALUE...]\n"
	"                        load a plugin (repeatable, at most %d): its callbacks\n"
	"                        get the trace events; out=FILE sends its output to\n"
	"                        FILE (default: stderr at exit); docs/plugins.md\n"
	"  -h, --help            this help\n"
	"  -V, --version         the version, and those of the formats it speaks\n"
	"\n"
	"The guest powers off by writing a 32-bit status to port 0xf4; that status\n"
	"is the exit code (255 if larger). Other exit codes: 1 the VM could not be\n"
	"set up, 2 bad options, 124 timeout, 125 the guest crashed (a diagnostic\n"
	"with its registers is printed), 130 interrupted.\n";

enum {
	OPT_KERNEL = 256, OPT_INITRD, OPT_CMDLINE, OPT_MEM, OPT_CPUS, OPT_CONSOLE,
	OPT_AGENT, OPT_TIMEOUT, OPT_KVM_DEVICE, OPT_VPMU, OPT_VPMU_COUNTERS, OPT_VPMU_BACKEND,
	OPT_VPMU_MODE, OPT_VPMU_FILTER, OPT_VPMU_STATS, OPT_VPMU_TRACE_PMI, OPT_VPMU_TRACE_TICK,
	OPT_CONTROL, OPT_TRACE, OPT_TRACE_EVENTS, OPT_PLUGIN,
};

int parse_mem_size(const char *s, uint64_t *bytes)
{
	char *end;
	unsigned long long v;
	uint64_t shift = 20;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case '\0': shift = 20; break;
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	default: return -EINVAL;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (toupper((unsigned char)*end) == 'B')
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*bytes = (uint64_t)v << shift;
	return 0;
}

static int parse_uint(const char *s, unsigned long *out)
{
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return (errno || *end) ? -EINVAL : 0;
}

__attribute__((format(printf, 2, 3)))
static int bad(char err[OPTIONS_ERR_MAX], const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, OPTIONS_ERR_MAX, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A name from one of the vPMU's name tables, or a message that lists them all. */
static int parse_vpmu_name(char err[OPTIONS_ERR_MAX], const char *option, const struct vpmu_names *names,
			   const char *arg, int *value)
{
	char choices[128];

	if (!vpmu_name_parse(names, arg, value))
		return 0;
	vpmu_name_choices(names, choices, sizeof(choices));
	return bad(err, "%s '%s': must be %s", option, arg, choices);
}

int vmm_options_parse(int argc, char **argv, struct vm_config *cfg, char err[OPTIONS_ERR_MAX])
{
	static const struct option longopts[] = {
		{ "kernel", required_argument, NULL, OPT_KERNEL },
		{ "initrd", required_argument, NULL, OPT_INITRD },
		{ "cmdline", required_argument, NULL, OPT_CMDLINE },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "console", required_argument, NULL, OPT_CONSOLE },
		{ "agent-channel", required_argument, NULL, OPT_AGENT },
		{ "control", required_argument, NULL, OPT_CONTROL },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "kvm-device", required_argument, NULL, OPT_KVM_DEVICE },
		{ "vpmu", required_argument, NULL, OPT_VPMU },
		{ "vpmu-counters", required_argument, NULL, OPT_VPMU_COUNTERS },
		{ "vpmu-backend", required_argument, NULL, OPT_VPMU_BACKEND },
		{ "vpmu-mode", required_argument, NULL, OPT_VPMU_MODE },
		{ "vpmu-filter", required_argument, NULL, OPT_VPMU_FILTER },
		{ "vpmu-stats", no_argument, NULL, OPT_VPMU_STATS },
		{ "vpmu-trace-pmi", required_argument, NULL, OPT_VPMU_TRACE_PMI },
		{ "vpmu-trace-tick", required_argument, NULL, OPT_VPMU_TRACE_TICK },
		{ "trace", required_argument, NULL, OPT_TRACE },
		{ "trace-events", required_argument, NULL, OPT_TRACE_EVENTS },
		{ "plugin", required_argument, NULL, OPT_PLUGIN },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool initrd_given = false;
	unsigned long n;
	int opt, v;

	*cfg = (struct vm_config){
		.cmdline = "",
		.mem_size = 256ULL << 20,
		.ncpus = 1,
		.kvm_device = "/dev/kvm",
		.vpmu = { .model = -1, .backend = VPMU_BACKEND_AUTO, .mode = VPMU_MODE_CPU_SWITCH },
	};
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":hV", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_KERNEL:
			cfg->kernel_path = optarg;
			break;
		case OPT_INITRD:
			cfg->initrd_path = strcmp(optarg, "none") ? optarg : NULL;
			initrd_given = true;
			break;
		case OPT_CMDLINE:
			cfg->cmdline = optarg;
			break;
		case OPT_MEM:
			if (parse_mem_size(optarg, &cfg->mem_size))
				return bad(err, "--mem '%s': not a size (use e.g. 256M or 1G)", optarg);
			if (cfg->mem_size < KVMPROF_MEM_MIN)
				return bad(err, "--mem %s is too small: at least %luM", optarg, KVMPROF_MEM_MIN >> 20);
			if (cfg->mem_size > KVMPROF_MEM_MAX)
				return bad(err, "--mem %s is too large: at most %luG (guest RAM lies below the 32-bit MMIO hole)", optarg,
					   KVMPROF_MEM_MAX >> 30);
			if (cfg->mem_size & 0xfff)
				return bad(err, "--mem %s is not a whole number of 4 KiB pages", optarg);
			break;
		case OPT_CPUS:
			if (parse_uint(optarg, &n) || n < 1 || n > KVMPROF_MAX_CPUS)
				return bad(err, "--cpus '%s': must be a number from 1 to %d", optarg, KVMPROF_MAX_CPUS);
			cfg->ncpus = (unsigned int)n;
			break;
		case OPT_CONSOLE:
			cfg->console_path = optarg;
			break;
		case OPT_AGENT:
			cfg->agent_path = optarg;
			break;
		case OPT_CONTROL:
			if (!optarg[0])
				return bad(err, "--control needs a path");
			if (strlen(optarg) > CONTROL_PATH_MAX)
				return bad(err, "--control %s: too long for a UNIX socket path (at most %d bytes)", optarg,
					   CONTROL_PATH_MAX);
			cfg->control_path = optarg;
			break;
		case OPT_KVM_DEVICE:
			cfg->kvm_device = optarg;
			break;
		case OPT_VPMU:
			if (parse_vpmu_name(err, "--vpmu", &vpmu_model_names, optarg, &v))
				return -EINVAL;
			cfg->vpmu.model = v;
			break;
		case OPT_VPMU_COUNTERS:
			if (parse_uint(optarg, &n) || n < 1 || n > VPMU_MAX_GP)
				return bad(err, "--vpmu-counters '%s': must be a number from 1 to %d", optarg, VPMU_MAX_GP);
			cfg->vpmu.counters = (unsigned int)n;
			break;
		case OPT_VPMU_BACKEND:
			if (parse_vpmu_name(err, "--vpmu-backend", &vpmu_backend_names, optarg, &v))
				return -EINVAL;
			cfg->vpmu.backend = (enum vpmu_backend_choice)v;
			break;
		case OPT_VPMU_MODE:
			if (parse_vpmu_name(err, "--vpmu-mode", &vpmu_mode_names, optarg, &v))
				return -EINVAL;
			cfg->vpmu.mode = (enum vpmu_mode)v;
			break;
		case OPT_VPMU_FILTER:
			cfg->vpmu.filter_path = optarg;
			break;
		case OPT_VPMU_STATS:
			cfg->vpmu.stats = true;
			break;
		case OPT_VPMU_TRACE_PMI:
			if (parse_uint(optarg, &n) || n > PMI_TRACE_MAX)
				return bad(err, "--vpmu-trace-pmi '%s': must be a number from 0 to %d", optarg, PMI_TRACE_MAX);
			cfg->trace_pmi_on = true;
			cfg->trace_pmi = (unsigned int)n;
			break;
		case OPT_VPMU_TRACE_TICK:
			if (parse_uint(optarg, &n) || n > PMI_TRACE_MAX)
				return bad(err, "--vpmu-trace-tick '%s': must be a number from 0 to %d", optarg, PMI_TRACE_MAX);
			cfg->trace_tick_on = true;
			cfg->trace_tick = (unsigned int)n;
			break;
		case OPT_TRACE:
			if (!*optarg)
				return bad(err, "--trace needs a file name");
			cfg->trace_path = optarg;
			break;
		case OPT_TRACE_EVENTS:
			cfg->trace_events = optarg;
			break;
		case OPT_PLUGIN:
			if (!*optarg || *optarg == ',')
				return bad(err, "--plugin needs a file name: --plugin FILE.so[,KEY=VALUE...]");
			if (cfg->nplugins == VMM_PLUGINS_MAX)
				return bad(err, "--plugin: at most %d plugins", VMM_PLUGINS_MAX);
			cfg->plugins[cfg->nplugins++] = optarg;
			break;
		case OPT_TIMEOUT: {
			char *end;
			errno = 0;
			cfg->timeout_s = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(cfg->timeout_s > 0) || cfg->timeout_s > 1e7)
				return bad(err, "--timeout '%s': must be a positive number of seconds", optarg);
			break;
		}
		case 'h':
			printf(usage_text, KVMPROF_MAX_CPUS);
			vpmu_name_help(&vpmu_backend_names, stdout, 26);
			printf(usage_tail, VMM_PLUGINS_MAX);
			return 1;
		case 'V':
			printf("kvmprof-vmm %s (sample format %d.%d, plugin API %d)\n", KVMPROF_VERSION,
			       KP_FILE_VERSION_MAJOR, KP_FILE_VERSION_MINOR, KVMPROF_PLUGIN_VERSION);
			return 1;
		case ':':
			return bad(err, "option %s needs a value (see --help)", argv[optind - 1]);
		default:
			return bad(err, "unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad(err, "unexpected argument '%s' (see --help)", argv[optind]);
	cfg->initrd_embedded = !initrd_given && !cfg->kernel_path;
	if (cfg->trace_events && !cfg->trace_path)
		return bad(err, "--trace-events needs --trace FILE");
	if (cfg->trace_path) {
		char why[160];

		if (trace_events_match(cfg->trace_events, cfg->trace_enabled, why, sizeof(why)))
			return bad(err, "--trace-events %s", why);
	}
	return 0;
}

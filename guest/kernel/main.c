/* SPDX-License-Identifier: MIT */
/*
 * Boot: read the PVH start info, set up the BSP, start the APs, then start
 * the programs listed by `start=` on the command line or by /etc/start.
 */
#include "cpio.h"
#include "kernel.h"

#define HVM_START_MAGIC 0x336ec578
#define CMDLINE_MAX 1024
#define MAX_PROGS 16
#define MAX_ARGS 15
#define POOL_SIZE 4096

struct hvm_start_info {
	uint32_t magic, version, flags, nr_modules;
	uint64_t modlist_paddr, cmdline_paddr, rsdp_paddr, memmap_paddr;
	uint32_t memmap_entries, reserved;
};

struct hvm_modlist_entry {
	uint64_t paddr, size, cmdline_paddr, reserved;
};

struct hvm_memmap_entry {
	uint64_t addr, size;
	uint32_t type, reserved;
};

static char cmdline[CMDLINE_MAX];
static const void *initrd;
static size_t initrd_size;
static uint64_t ram_bytes;
static uint64_t rsdp_paddr; /* from the start info; 0: search for it */
static int maxcpus = MAX_CPUS;
static const char *start_opt; /* value of start=, inside cmdline[] */
static int crash_test;        /* `crash`: fault in kernel mode after boot */

static struct prog {
	int argc;
	int bad; /* too many or too long arguments */
	char *argv[MAX_ARGS + 1];
} progs[MAX_PROGS];
static int nprogs;
static char pool[POOL_SIZE];
static size_t pool_used;

/* Is [addr, addr + len) identity mapped (below 1 GiB)? */
static int phys_ok(uint64_t addr, uint64_t len)
{
	return addr && addr + len >= addr && addr + len <= KERNEL_MEM_LIMIT;
}

static void read_start_info(uint32_t paddr)
{
	const struct hvm_start_info *si = (const void *)(uint64_t)paddr;
	if (!phys_ok(paddr, sizeof(*si)) || si->magic != HVM_START_MAGIC)
		panic("no PVH start info (ebx=0x%x)\n", paddr);

	if (si->cmdline_paddr && phys_ok(si->cmdline_paddr, 1)) {
		const char *s = (const char *)si->cmdline_paddr;
		size_t n = 0;
		while (n < CMDLINE_MAX - 1 && phys_ok(si->cmdline_paddr + n, 1) && s[n])
			n++;
		memcpy(cmdline, s, n);
		cmdline[n] = '\0';
	}
	rsdp_paddr = si->rsdp_paddr;
	if (si->nr_modules >= 1 && phys_ok(si->modlist_paddr, sizeof(struct hvm_modlist_entry))) {
		const struct hvm_modlist_entry *m = (const void *)si->modlist_paddr;
		if (phys_ok(m->paddr, m->size)) {
			initrd = (const void *)m->paddr;
			initrd_size = m->size;
		}
	}
	if (si->version >= 1 && si->memmap_entries &&
	    phys_ok(si->memmap_paddr, (uint64_t)si->memmap_entries * sizeof(struct hvm_memmap_entry)) &&
	    si->memmap_entries < 128) {
		const struct hvm_memmap_entry *e = (const void *)si->memmap_paddr;
		for (uint32_t i = 0; i < si->memmap_entries; i++) {
			if (e[i].type != 1)
				continue;
			ram_bytes += e[i].size;
			mm_add_ram(e[i].addr, e[i].addr + e[i].size);
		}
	} else {
		ram_bytes = 64UL << 20; /* no map: assume the minimum */
		mm_add_ram(KVMPROF_HIGHMEM_START, 64UL << 20);
	}
	if (initrd)
		mm_reserve((uint64_t)initrd, (uint64_t)initrd + initrd_size);
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void parse_cmdline(void)
{
	char *s = cmdline;
	while (*s) {
		while (is_space(*s))
			*s++ = '\0';
		char *tok = s;
		while (*s && !is_space(*s))
			s++;
		size_t n = (size_t)(s - tok);
		uint64_t v;
		if (n == 5 && !strncmp(tok, "quiet", 5))
			quiet = 1;
		else if (n == 5 && !strncmp(tok, "crash", 5))
			crash_test = 1;
		else if (n == 7 && !strncmp(tok, "pmutest", 7))
			pmu_test_enabled = 1;
		else if (n == 13 && !strncmp(tok, "poweroff=acpi", 13))
			acpi_poweroff_only = 1;
		else if (n == 18 && !strncmp(tok, "sampletest=baddesc", 18))
			vmm_desc_test = 1;
		else if (n > 6 && !strncmp(tok, "start=", 6))
			start_opt = tok + 6;
		else if (n > 8 && !strncmp(tok, "maxcpus=", 8) && !parse_uint(tok + 8, n - 8, &v))
			maxcpus = v < 1 ? 1 : (int)v;
		else if (n > 6 && !strncmp(tok, "pmubuf", 6) && pmu_sbuf_option(tok, n))
			kprintf("kvmprof guest: bad pmubuf option ignored\n");
		else if (n > 12 && !strncmp(tok, "pmu_max_rate", 12) && pmu_throttle_option(tok, n))
			kprintf("kvmprof guest: bad pmu_max_rate option ignored\n");
	}
}

int initrd_find(const char *path, const void **data, size_t *size)
{
	struct cpio_entry e;
	if (!initrd || cpio_find(initrd, initrd_size, path, &e) != CPIO_OK)
		return -1;
	*data = e.data;
	*size = e.size;
	return 0;
}

/* Adds one program from words[0..n) (each NUL-terminated, in pool). */
static char *pool_add(const char *s, size_t n)
{
	if (pool_used + n + 1 > POOL_SIZE)
		return NULL;
	char *d = pool + pool_used;
	memcpy(d, s, n);
	d[n] = '\0';
	pool_used += n + 1;
	return d;
}

/*
 * Splits `s` (len bytes) into programs and arguments: programs end at any
 * of `prog_seps`, words at any of `word_seps`.
 */
static void parse_programs(const char *s, size_t len, const char *prog_seps, const char *word_seps,
			   int comments)
{
	size_t i = 0;
	while (i < len && nprogs < MAX_PROGS) {
		struct prog *p = &progs[nprogs];
		p->argc = 0;
		p->bad = 0;
		int comment = 0;
		while (i < len) {
			char c = s[i];
			int pend = 0, wsep = 0;
			for (const char *q = prog_seps; *q; q++)
				pend |= c == *q;
			for (const char *q = word_seps; *q; q++)
				wsep |= c == *q;
			if (pend) {
				i++;
				break;
			}
			if (wsep || comment) {
				i++;
				continue;
			}
			if (comments && c == '#' && p->argc == 0) {
				comment = 1;
				continue;
			}
			size_t j = i;
			while (j < len) {
				int stop = 0;
				for (const char *q = prog_seps; *q; q++)
					stop |= s[j] == *q;
				for (const char *q = word_seps; *q; q++)
					stop |= s[j] == *q;
				if (stop)
					break;
				j++;
			}
			char *w = p->argc < MAX_ARGS ? pool_add(s + i, j - i) : NULL;
			if (w)
				p->argv[p->argc++] = w;
			else
				p->bad = 1;
			i = j;
		}
		if (p->argc > 0) {
			p->argv[p->argc] = NULL;
			nprogs++;
		}
	}
}

static void mask_pic(void)
{
	outb(0x21, 0xff);
	outb(0xa1, 0xff);
}

void kmain(uint32_t start_info)
{
	struct cpu *c = cpu_get(0);

	read_start_info(start_info); /* before low memory is reused */
	acpi_init(rsdp_paddr);
	parse_cmdline();
	mask_pic();
	idt_init();
	c->id = 0;
	c->apic_id = lapic_id();
	cpu_init(c);
	c->online = 1;
	boot_timer_start();
	smp_boot(maxcpus);

	kprintf("kvmprof guest: %d cpus, %lu MiB\n", ncpus_online(),
		(unsigned long)((ram_bytes + (1UL << 19)) >> 20));
	pmu_init(); /* prints the model; LVTPC of this CPU */
	vmm_desc_register(); /* where the VMM's sampler finds the current process */
	if (!initrd)
		kprintf("kvmprof guest: no initrd\n");
	if (crash_test)
		__asm__ volatile("ud2"); /* tests the kernel-mode exception path */

	if (start_opt) {
		parse_programs(start_opt, strlen(start_opt), ",", ":", 0);
	} else {
		const void *data;
		size_t size;
		if (initrd_find("/etc/start", &data, &size) == 0)
			parse_programs(data, size, "\n", " \t\r", 1);
		else
			kprintf("kvmprof guest: no /etc/start in the initrd\n");
	}
	for (int i = 0; i < nprogs; i++) {
		if (progs[i].bad) {
			int pid = proc_alloc_pid();
			kprintf("kvmprof guest: %s: too many or too long arguments\n", progs[i].argv[0]);
			proc_record_failure(pid, 127);
			continue;
		}
		int pid = proc_spawn(progs[i].argv[0], progs[i].argc, progs[i].argv);
		if (pid < 0)
			proc_record_failure(-pid, 127);
		else
			kinfo("kvmprof guest: started pid %d: %s\n", pid, progs[i].argv[0]);
	}
	if (sched_nlive() == 0) {
		kprintf("kvmprof guest: nothing to run\n");
		poweroff(127);
	}
	timers_start();
	cpu_idle();
}

// SPDX-License-Identifier: MIT
/* PVH loading without KVM: ELF parsing, the Xen entry note, start_info, memory map, initrd placement. */
#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "boot.h"
#include "pvh.h"
#include "kvmprof/platform.h"

#define MEM_SIZE (32u << 20)
#define LOAD_ADDR 0x100000u
#define ENTRY 0x100040u

/* An ELF64 kernel: one PT_LOAD of 0x100 file bytes (0x300 in memory), one PT_NOTE. */
struct test_kernel {
	uint8_t bytes[0x1000];
	size_t size;
	Elf64_Ehdr *eh;
	Elf64_Phdr *load, *note;
};

static void make_kernel(struct test_kernel *k, uint32_t note_type, uint32_t entry)
{
	uint8_t *p = k->bytes;
	Elf64_Nhdr nh = { 4, 4, note_type };

	memset(k, 0, sizeof(*k));
	k->eh = (Elf64_Ehdr *)p;
	memcpy(k->eh->e_ident, ELFMAG, SELFMAG);
	k->eh->e_ident[EI_CLASS] = ELFCLASS64;
	k->eh->e_ident[EI_DATA] = ELFDATA2LSB;
	k->eh->e_ident[EI_VERSION] = EV_CURRENT;
	k->eh->e_type = ET_EXEC;
	k->eh->e_machine = EM_X86_64;
	k->eh->e_phoff = sizeof(Elf64_Ehdr);
	k->eh->e_phentsize = sizeof(Elf64_Phdr);
	k->eh->e_phnum = 2;
	k->load = (Elf64_Phdr *)(p + sizeof(Elf64_Ehdr));
	k->note = k->load + 1;
	*k->load = (Elf64_Phdr){ .p_type = PT_LOAD, .p_offset = 0x400, .p_paddr = LOAD_ADDR,
				  .p_vaddr = LOAD_ADDR, .p_filesz = 0x100, .p_memsz = 0x300 };
	*k->note = (Elf64_Phdr){ .p_type = PT_NOTE, .p_offset = 0x200, .p_filesz = 20 };
	memcpy(p + 0x200, &nh, sizeof(nh));
	memcpy(p + 0x200 + 12, "Xen", 4);
	memcpy(p + 0x200 + 16, &entry, 4);
	memset(p + 0x400, 0xab, 0x100);
	k->size = 0x500;
}

struct fixture {
	struct guest_mem mem;
	struct memmap map;
	struct test_kernel k;
	struct boot_config cfg;
	struct boot_entry entry;
	char err[BOOT_ERR_MAX];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->mem.host = calloc(1, MEM_SIZE);
	f->mem.size = MEM_SIZE;
	memmap_build(&f->map, MEM_SIZE);
	make_kernel(&f->k, 18, ENTRY);
	f->cfg = (struct boot_config){ .mem = &f->mem, .map = &f->map, .kernel = f->k.bytes,
				       .kernel_size = f->k.size, .cmdline = "console=ttyS0 quiet" };
	/* Dirty the .bss range so that zeroing it is observable. */
	memset(f->mem.host + LOAD_ADDR, 0x77, 0x400);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	free(f->mem.host);
	free(f);
	return 0;
}

static void test_pvh_loads_segments_and_entry(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), 0);
	assert_int_equal(f->entry.mode, BOOT_PVH32);
	assert_int_equal(f->entry.rip, ENTRY);
	assert_int_equal(f->entry.arg, KVMPROF_START_INFO_ADDR);
	assert_int_equal(f->mem.host[LOAD_ADDR], 0xab);
	assert_int_equal(f->mem.host[LOAD_ADDR + 0xff], 0xab);
	assert_int_equal(f->mem.host[LOAD_ADDR + 0x100], 0);  /* bss zeroed */
	assert_int_equal(f->mem.host[LOAD_ADDR + 0x2ff], 0);
	assert_int_equal(f->mem.host[LOAD_ADDR + 0x300], 0x77); /* past memsz untouched */
}

static void test_pvh_start_info(void **state)
{
	struct fixture *f = *state;
	static const uint8_t initrd[5000] = { 1, 2, 3 };
	struct hvm_start_info si;
	struct hvm_modlist_entry mod;
	struct hvm_memmap_table_entry e;

	f->cfg.initrd = initrd;
	f->cfg.initrd_size = sizeof(initrd);
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), 0);
	memcpy(&si, f->mem.host + KVMPROF_START_INFO_ADDR, sizeof(si));
	assert_int_equal(si.magic, HVM_START_MAGIC_VALUE);
	assert_int_equal(si.version, 1);
	assert_int_equal(si.nr_modules, 1);
	assert_int_equal(si.rsdp_paddr, KVMPROF_ACPI_ADDR);
	assert_string_equal((char *)f->mem.host + si.cmdline_paddr, "console=ttyS0 quiet");
	memcpy(&mod, f->mem.host + si.modlist_paddr, sizeof(mod));
	assert_int_equal(mod.size, sizeof(initrd));
	assert_int_equal(mod.paddr % 4096, 0);
	assert_true(mod.paddr + mod.size <= MEM_SIZE);
	assert_true(mod.paddr >= LOAD_ADDR + 0x300);
	assert_memory_equal(f->mem.host + mod.paddr, initrd, sizeof(initrd));
	assert_int_equal(si.memmap_entries, f->map.count);
	memcpy(&e, f->mem.host + si.memmap_paddr + 3 * sizeof(e), sizeof(e));
	assert_int_equal(e.addr, KVMPROF_HIGHMEM_START);
	assert_int_equal(e.addr + e.size, MEM_SIZE);
	assert_int_equal(e.type, MEMMAP_RAM);
}

static void test_pvh_no_initrd_no_modules(void **state)
{
	struct fixture *f = *state;
	struct hvm_start_info si;

	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), 0);
	memcpy(&si, f->mem.host + KVMPROF_START_INFO_ADDR, sizeof(si));
	assert_int_equal(si.nr_modules, 0);
}

static void test_pvh_missing_note(void **state)
{
	struct fixture *f = *state;

	make_kernel(&f->k, 17, ENTRY);
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), -ENOEXEC);
	assert_non_null(strstr(f->err, "no PVH entry point"));
}

static void test_pvh_segment_outside_memory(void **state)
{
	struct fixture *f = *state;

	f->k.load->p_paddr = MEM_SIZE - 0x100;
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), -ERANGE);
	assert_non_null(strstr(f->err, "outside guest memory"));
	f->k.load->p_paddr = 0x7000; /* over the VMM's boot tables */
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), -ERANGE);
	f->k.load->p_paddr = UINT64_MAX - 0x10; /* wraps around */
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), -ERANGE);
}

static void test_pvh_truncated(void **state)
{
	struct fixture *f = *state;

	f->cfg.kernel_size = 0x480; /* segment data cut short */
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), -ENOEXEC);
	assert_non_null(strstr(f->err, "truncated"));
	f->cfg.kernel_size = 40; /* inside the ELF header */
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), -ENOEXEC);
	f->cfg.kernel_size = 0x500;
	f->k.eh->e_phnum = 1000; /* program headers past the end */
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), -ENOEXEC);
}

static void test_pvh_bad_note_sizes(void **state)
{
	struct fixture *f = *state;
	uint32_t huge = 0xfffffff0u;

	memcpy(f->k.bytes + 0x200 + 4, &huge, 4); /* descsz runs off the segment */
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), -ENOEXEC);
}

static void test_pvh_memsz_smaller_than_filesz(void **state)
{
	struct fixture *f = *state;

	f->k.load->p_memsz = 0x10;
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), -ENOEXEC);
}

static void test_pvh_initrd_too_big(void **state)
{
	struct fixture *f = *state;
	static uint8_t big[MEM_SIZE];

	f->cfg.initrd = big;
	f->cfg.initrd_size = MEM_SIZE - 0x100000;
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), -E2BIG);
	assert_non_null(strstr(f->err, "use a larger --mem"));
}

static void test_pvh_cmdline_too_long(void **state)
{
	struct fixture *f = *state;
	char *line = malloc(KVMPROF_CMDLINE_MAX + 1);

	memset(line, 'a', KVMPROF_CMDLINE_MAX);
	line[KVMPROF_CMDLINE_MAX] = 0;
	f->cfg.cmdline = line;
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), -E2BIG);
	free(line);
}

static void test_not_a_kernel(void **state)
{
	struct fixture *f = *state;
	static const uint8_t junk[4096] = "#!/bin/sh\n";

	f->cfg.kernel = junk;
	f->cfg.kernel_size = sizeof(junk);
	assert_int_equal(boot_load(&f->cfg, &f->entry, f->err), -ENOEXEC);
	assert_string_equal(f->err, "neither a PVH ELF kernel nor a Linux bzImage");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pvh_loads_segments_and_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pvh_start_info, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pvh_no_initrd_no_modules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pvh_missing_note, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pvh_segment_outside_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pvh_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pvh_bad_note_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pvh_memsz_smaller_than_filesz, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pvh_initrd_too_big, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pvh_cmdline_too_long, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_a_kernel, setup, teardown),
	};

	return cmocka_run_group_tests_name("boot_pvh", tests, NULL, NULL);
}

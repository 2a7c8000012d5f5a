// SPDX-License-Identifier: MIT
/*
 * bzImage loading without KVM: the setup header, boot_params, the e820 map,
 * page tables. Synthetic images cover the error paths; a real Debian kernel
 * (tests/debian-kernel.sh puts it at build/debian/vmlinuz, or set
 * KVMPROF_DEBIAN_VMLINUZ) checks the parser against what Linux really ships.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "boot.h"
#include "bzimage.h"
#include "kvmprof/platform.h"

#define MEM_SIZE (64u << 20)

static uint8_t *mem_host;
static struct guest_mem mem;
static struct memmap map;

static void put16(uint8_t *p, size_t off, uint16_t v) { memcpy(p + off, &v, 2); }
static void put32(uint8_t *p, size_t off, uint32_t v) { memcpy(p + off, &v, 4); }
static uint32_t get32(const uint8_t *p, size_t off) { uint32_t v; memcpy(&v, p + off, 4); return v; }
static uint64_t get64(const uint8_t *p, size_t off) { uint64_t v; memcpy(&v, p + off, 8); return v; }

/* A bzImage of 2 setup sectors + 3 sectors of "kernel", protocol 2.15, 64-bit entry. */
static size_t make_bzimage(uint8_t *img)
{
	memset(img, 0, 5 * 512);
	img[BZ_SETUP_SECTS] = 1;
	put16(img, 0x1fe, 0xaa55);
	memcpy(img + 0x202, "HdrS", 4);
	img[0x201] = 0x62; /* header ends at 0x264 */
	put16(img, BZ_VERSION, 0x020f);
	put16(img, BZ_XLOADFLAGS, XLF_KERNEL_64);
	put32(img, BZ_CMDLINE_SIZE, 2047);
	put32(img, BZ_INITRD_ADDR_MAX, 0x7fffffff);
	put32(img, BZ_INIT_SIZE, 0x200000);
	img[BZ_LOADFLAGS] = KEEP_SEGMENTS;
	memset(img + 1024, 0xcd, 3 * 512);
	return 5 * 512;
}

static int setup(void **state)
{
	(void)state;
	mem_host = calloc(1, MEM_SIZE);
	mem = (struct guest_mem){ mem_host, MEM_SIZE };
	memmap_build(&map, MEM_SIZE);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(mem_host);
	return 0;
}

static int load(const uint8_t *img, size_t size, const uint8_t *initrd, size_t initrd_size,
		struct boot_entry *entry, char err[BOOT_ERR_MAX])
{
	struct boot_config cfg = { .mem = &mem, .map = &map, .kernel = img, .kernel_size = size,
				   .initrd = initrd, .initrd_size = initrd_size, .cmdline = "console=ttyS0" };
	return boot_load(&cfg, entry, err);
}

static void test_bzimage_boot_params(void **state)
{
	static uint8_t img[5 * 512];
	static const uint8_t initrd[8192] = { 9 };
	size_t size = make_bzimage(img);
	const uint8_t *bp = mem_host + KVMPROF_BOOT_PARAMS_ADDR;
	struct boot_entry entry;
	char err[BOOT_ERR_MAX];
	uint32_t rd;

	(void)state;
	assert_int_equal(load(img, size, initrd, sizeof(initrd), &entry, err), 0);
	assert_int_equal(entry.mode, BOOT_LINUX64);
	assert_int_equal(entry.rip, KVMPROF_HIGHMEM_START + 0x200);
	assert_int_equal(entry.arg, KVMPROF_BOOT_PARAMS_ADDR);
	/* Protected-mode kernel at 1 MiB, taken from (setup_sects + 1) * 512. */
	assert_int_equal(mem_host[KVMPROF_HIGHMEM_START], 0xcd);
	assert_int_equal(mem_host[KVMPROF_HIGHMEM_START + 3 * 512 - 1], 0xcd);
	/* The setup header is copied, then the loader's fields are filled in. */
	assert_memory_equal(bp + 0x202, "HdrS", 4);
	assert_int_equal(bp[BZ_TYPE_OF_LOADER], 0xff);
	assert_int_equal(bp[BZ_LOADFLAGS] & LOADED_HIGH, LOADED_HIGH);
	assert_int_equal(bp[BZ_LOADFLAGS] & KEEP_SEGMENTS, 0);
	assert_int_equal(get32(bp, BZ_CMD_LINE_PTR), KVMPROF_CMDLINE_ADDR);
	assert_int_equal(get64(bp, BZ_ACPI_RSDP_ADDR), KVMPROF_ACPI_ADDR);
	assert_string_equal((char *)mem_host + KVMPROF_CMDLINE_ADDR, "console=ttyS0");
	rd = get32(bp, BZ_RAMDISK_IMAGE);
	assert_int_equal(get32(bp, BZ_RAMDISK_SIZE), sizeof(initrd));
	assert_int_equal(rd % 4096, 0);
	assert_true(rd >= KVMPROF_HIGHMEM_START + 0x200000); /* above init_size */
	assert_true(rd + sizeof(initrd) <= MEM_SIZE);
	assert_int_equal(mem_host[rd], 9);
	/* e820: the same map PVH guests get, in the zero page's format. */
	assert_int_equal(bp[BZ_E820_ENTRIES], map.count);
	assert_int_equal(get64(bp, BZ_E820_TABLE), 0);
	assert_int_equal(get64(bp, BZ_E820_TABLE + 8), KVMPROF_LOWMEM_END);
	assert_int_equal(get32(bp, BZ_E820_TABLE + 16), MEMMAP_RAM);
	assert_int_equal(get64(bp, BZ_E820_TABLE + 3 * 20), KVMPROF_HIGHMEM_START);
	assert_int_equal(get64(bp, BZ_E820_TABLE + 3 * 20 + 8), MEM_SIZE - KVMPROF_HIGHMEM_START);
	/* Identity map: PML4[0] -> PDPT, PDPT[0..3] -> PDs, PD entries are 2 MiB pages. */
	assert_int_equal(get64(mem_host, KVMPROF_PML4_ADDR) & ~0xfffULL, KVMPROF_PML4_ADDR + 0x1000);
	assert_int_equal(get64(mem_host, KVMPROF_PML4_ADDR + 0x2000 + 8 * 5), (5ULL << 21) | 0x83);
	/* GDT: __BOOT_CS is 64-bit code, __BOOT_DS flat data. */
	assert_int_equal(get64(mem_host, KVMPROF_GDT_ADDR + 0x10), 0x00af9b000000ffffULL);
	assert_int_equal(get64(mem_host, KVMPROF_GDT_ADDR + 0x18), 0x00cf93000000ffffULL);
}

static void test_bzimage_rejects(void **state)
{
	static uint8_t img[5 * 512];
	struct boot_entry entry;
	char err[BOOT_ERR_MAX];
	size_t size;

	(void)state;
	size = make_bzimage(img);
	put16(img, BZ_VERSION, 0x0204);
	assert_int_equal(load(img, size, NULL, 0, &entry, err), -ENOEXEC);
	assert_non_null(strstr(err, "too old"));

	size = make_bzimage(img);
	put16(img, BZ_XLOADFLAGS, 0);
	assert_int_equal(load(img, size, NULL, 0, &entry, err), -ENOEXEC);
	assert_non_null(strstr(err, "64-bit"));

	size = make_bzimage(img);
	assert_int_equal(load(img, 0x300, NULL, 0, &entry, err), -ENOEXEC); /* truncated */
	assert_non_null(strstr(err, "truncated"));

	size = make_bzimage(img);
	put32(img, BZ_INIT_SIZE, MEM_SIZE); /* does not fit */
	assert_int_equal(load(img, size, NULL, 0, &entry, err), -ERANGE);
	assert_non_null(strstr(err, "--mem"));

	size = make_bzimage(img);
	put32(img, BZ_CMDLINE_SIZE, 4); /* "console=ttyS0" is longer */
	assert_int_equal(load(img, size, NULL, 0, &entry, err), -E2BIG);

	size = make_bzimage(img);
	put32(img, BZ_INITRD_ADDR_MAX, 0x1fffff); /* initrd must lie below 2 MiB: impossible */
	assert_int_equal(load(img, size, (const uint8_t *)"x", 1, &entry, err), -E2BIG);
}

/*
 * A file that ends inside the setup header, as short as 0x206 bytes (just
 * past "HdrS"): each size is copied into a heap buffer of exactly that size,
 * so the sanitizer build catches any read past the end.
 */
static void test_bzimage_truncated_header(void **state)
{
	static uint8_t img[5 * 512];
	struct bzimage_info info;
	char err[BOOT_ERR_MAX];

	(void)state;
	make_bzimage(img);
	for (size_t size = 0x206; size < BZ_HDR_MIN_END; size++) {
		uint8_t *cut = malloc(size);

		assert_non_null(cut);
		memcpy(cut, img, size);
		assert_true(boot_is_bzimage(cut, size));
		assert_int_equal(bzimage_parse(cut, size, &info, err), -ENOEXEC);
		assert_non_null(strstr(err, "truncated"));
		free(cut);
	}
}

static void test_bzimage_debian_kernel(void **state)
{
	const char *path = getenv("KVMPROF_DEBIAN_VMLINUZ");
	struct bzimage_info info;
	struct boot_entry entry;
	char err[BOOT_ERR_MAX];
	uint8_t *img;
	FILE *f;
	long size;

	(void)state;
	if (!path)
		path = "build/debian/vmlinuz";
	f = fopen(path, "rb");
	if (!f)
		fail_msg("%s: missing; run tests/debian-kernel.sh (make test does)", path);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	img = malloc((size_t)size);
	assert_int_equal(fread(img, 1, (size_t)size, f), (size_t)size);
	fclose(f);

	assert_int_equal(bzimage_parse(img, (size_t)size, &info, err), 0);
	assert_true(info.version >= 0x020f);       /* Linux 6.1 speaks 2.15 */
	assert_true(info.xloadflags & XLF_KERNEL_64);
	assert_int_equal(info.kernel_offset, (info.setup_sects + 1) * 512ULL);
	assert_true(info.init_size > info.kernel_size); /* it decompresses in place */
	assert_int_equal(info.cmdline_size, 2047);
	/* The 64-bit entry's first bytes: the decompressor's startup_64 begins with cld; cli. */
	assert_int_equal(img[info.kernel_offset + 0x200], 0xfc);
	assert_int_equal(img[info.kernel_offset + 0x201], 0xfa);

	/* And a full load into 256 MiB of guest memory. */
	free(mem_host);
	mem_host = calloc(1, 256u << 20);
	mem = (struct guest_mem){ mem_host, 256u << 20 };
	memmap_build(&map, mem.size);
	assert_int_equal(load(img, (size_t)size, (const uint8_t *)"initrd", 6, &entry, err), 0);
	assert_memory_equal(mem_host + KVMPROF_HIGHMEM_START, img + info.kernel_offset, 4096);
	assert_int_equal(get32(mem_host + KVMPROF_BOOT_PARAMS_ADDR, BZ_INIT_SIZE), info.init_size);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bzimage_boot_params, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bzimage_rejects, setup, teardown),
		cmocka_unit_test(test_bzimage_truncated_header),
		cmocka_unit_test_setup_teardown(test_bzimage_debian_kernel, setup, teardown),
	};

	return cmocka_run_group_tests_name("boot_bzimage", tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * lib/symtab: symbols of a static non-PIE fixture at known addresses, of
 * this PIE test binary and of a shared library as they are mapped right
 * now (/proc/self/maps), one linked by lld, build-id checks, and files
 * that aren't ELF.
 */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib_fixture.h"
#include "common/file_open.h"
#include "symbols/symtab.h"

static char *dir;
static char fx_path[512];

static int setup(void **state)
{
	(void)state;
	dir = fx_mkdir();
	if (!dir || fx_build(dir, NULL))
		return -1;
	snprintf(fx_path, sizeof(fx_path), "%s/bin/fx", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fx_rmdir(dir);
	return 0;
}

static const char *name_at(const struct symtab *st, uint64_t vaddr)
{
	const struct symtab_sym *s = symtab_lookup(st, vaddr);

	return s ? s->name : NULL;
}

static void test_static_fixture(void **state)
{
	struct symtab *st;

	(void)state;
	assert_int_equal(symtab_open(&st, fx_path, NULL, 0), 0);
	assert_string_equal(name_at(st, FX_START), "_start");
	assert_string_equal(name_at(st, FX_ALPHA), "alpha");
	assert_string_equal(name_at(st, FX_ALPHA + 3), "alpha");
	assert_string_equal(name_at(st, FX_BETA + 1), "beta");
	/* An assembly label without type or size: up to its segment's end. */
	assert_string_equal(name_at(st, FX_GAMMA), "gamma_label");
	assert_string_equal(name_at(st, FX_GAMMA + 2), "gamma_label");
	assert_null(name_at(st, FX_GAMMA + 3));
	assert_null(name_at(st, FX_ALPHA - 1));
	assert_null(name_at(st, 0));
	assert_null(name_at(st, UINT64_MAX));
	/* Fixed-address executables: the runtime address is the address, whatever the map says. */
	assert_int_equal(symtab_map_addr(st, FX_BETA + 4, 0x40000000, 0), FX_BETA + 4);
	assert_int_equal(symtab_map_addr(st, FX_BETA + 4, 0x1234, 0x999), FX_BETA + 4);
	assert_true(symtab_count(st) >= 4);
	symtab_close(st);
}

static void test_build_id(void **state)
{
	struct symtab *st, *again;
	const uint8_t *id;
	uint8_t wrong[64];
	size_t n;
	char path[600];

	(void)state;
	assert_int_equal(symtab_open(&st, fx_path, NULL, 0), 0);
	n = symtab_build_id(st, &id);
	assert_int_equal(n, 20); /* sha1 */
	assert_int_equal(symtab_open(&again, fx_path, id, n), 0);
	symtab_close(again);
	memcpy(wrong, id, n);
	wrong[7] ^= 1;
	assert_int_equal(symtab_open(&again, fx_path, wrong, n), -ESTALE);
	/* A shorter id is a different id too. */
	assert_int_equal(symtab_open(&again, fx_path, id, 8), -ESTALE);

	/* A recorded build-id for a file that has none: not the same file. */
	{
		char *d2 = fx_mkdir();

		assert_non_null(d2);
		assert_int_equal(fx_build(d2, "-Wl,--build-id=none"), 0);
		snprintf(path, sizeof(path), "%s/bin/fx", d2);
		assert_int_equal(symtab_open(&again, path, id, n), -ESTALE);
		assert_int_equal(symtab_open(&again, path, NULL, 0), 0);
		assert_int_equal(symtab_build_id(again, &id), 0);
		assert_string_equal(name_at(again, FX_ALPHA + 1), "alpha");
		symtab_close(again);
		fx_rmdir(d2);
	}
	symtab_close(st);
}

static void test_not_elf(void **state)
{
	struct symtab *st = NULL;
	char path[600];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/text", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\necho not an ELF file\n", f);
	fclose(f);
	assert_int_equal(symtab_open(&st, path, NULL, 0), -ENOEXEC);
	snprintf(path, sizeof(path), "%s/empty", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(symtab_open(&st, path, NULL, 0), -ENOEXEC);
	/* An ELF object file (ET_REL) is no program. */
	snprintf(path, sizeof(path), "gcc -c -x c -o '%s/obj.o' '%s/fx.c'", dir, dir);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/obj.o", dir);
	assert_int_equal(symtab_open(&st, path, NULL, 0), -ENOEXEC);
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(symtab_open(&st, path, NULL, 0), -ENOENT);
	/* Not regular files: refused at once, a FIFO without a writer included. */
	assert_int_equal(symtab_open(&st, dir, NULL, 0), FILE_NOT_REGULAR);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(60);
	assert_int_equal(symtab_open(&st, path, NULL, 0), FILE_NOT_REGULAR);
	alarm(0);
	assert_int_equal(symtab_open(&st, "/dev/null", NULL, 0), FILE_NOT_REGULAR);
	assert_null(st);
}

/* The executable mapping of this process that holds addr, as perf's MMAP record would describe it. */
static int find_mapping(uintptr_t addr, char *path, size_t len, uint64_t *start, uint64_t *end, uint64_t *pgoff)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128];
	int found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char perms[8], file[PATH_MAX];

		file[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &s, &e, perms, &off, file) < 4)
			continue;
		if (addr >= s && addr < e && perms[2] == 'x' && file[0] == '/') {
			snprintf(path, len, "%s", file);
			*start = s;
			*end = e;
			*pgoff = off;
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

static const char *resolve_live(uintptr_t addr, struct symtab **st)
{
	char path[PATH_MAX];
	uint64_t start, end, pgoff;

	if (find_mapping(addr, path, sizeof(path), &start, &end, &pgoff))
		return NULL;
	if (symtab_open(st, path, NULL, 0))
		return NULL;
	return name_at(*st, symtab_map_addr(*st, addr, start, pgoff));
}

__attribute__((noinline)) int known_function_one(int x)
{
	return x * 7 + (int)getpid();
}

__attribute__((noinline)) int known_function_two(int x)
{
	return known_function_one(x) ^ 0x55;
}

static void test_self_pie(void **state)
{
	struct symtab *st = NULL;
	const char *name;

	(void)state;
	/* An address inside each function, not just its entry. */
	name = resolve_live((uintptr_t)known_function_one + 2, &st);
	assert_non_null(name);
	assert_string_equal(name, "known_function_one");
	symtab_close(st);
	name = resolve_live((uintptr_t)known_function_two, &st);
	assert_non_null(name);
	assert_string_equal(name, "known_function_two");
	symtab_close(st);
}

static void test_shared_library(void **state)
{
	char src[600], so[600], cmd[2048];
	struct symtab *st = NULL;
	const char *name;
	void *h, *fn;
	FILE *f;

	(void)state;
	/* Padding before so_second moves it well past the first page of text. */
	snprintf(src, sizeof(src), "%s/so.c", dir);
	snprintf(so, sizeof(so), "%s/libfx.so", dir);
	f = fopen(src, "w");
	assert_non_null(f);
	fputs("int so_first(int x) { return x + 1; }\n"
	      "__asm__(\".text\\n.fill 20000, 1, 0x90\\n\");\n"
	      "int so_second(int x) { return so_first(x) * 2; }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gcc -O1 -shared -fPIC -o '%s' '%s'", so, src);
	assert_int_equal(system(cmd), 0);
	h = dlopen(so, RTLD_NOW);
	assert_non_null(h);
	fn = dlsym(h, "so_second");
	assert_non_null(fn);
	name = resolve_live((uintptr_t)fn + 1, &st);
	assert_non_null(name);
	assert_string_equal(name, "so_second");
	symtab_close(st);
	fn = dlsym(h, "so_first");
	name = resolve_live((uintptr_t)fn, &st);
	assert_non_null(name);
	assert_string_equal(name, "so_first");
	symtab_close(st);
	dlclose(h);

	/* The C library, wherever it was mapped; aliases may pick __getpid. */
	name = resolve_live((uintptr_t)getpid, &st);
	assert_non_null(name);
	assert_non_null(strstr(name, "getpid"));
	symtab_close(st);
}

/*
 * A stripped file of this machine finds its symbols through its
 * debuglink, beside it in .debug/, when the CRC matches; and with no
 * DEBUGINFOD_URLS, a debug file not found here does not bring in
 * libdebuginfod (libdwfl's standard search dlopens it, and libcurl with
 * it, whether or not a server is named).
 */
static void test_host_debuglink(void **state)
{
	char cmd[2048], good[600], bad[600], nodebug[600];
	struct symtab *st;

	(void)state;
	unsetenv("DEBUGINFOD_URLS");
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd '%s'; mkdir -p host/.debug; "
		 "objcopy -R .note.gnu.build-id -S bin/fx host/good; "
		 "objcopy --only-keep-debug -R .note.gnu.build-id bin/fx host/.debug/good.debug; "
		 "objcopy --add-gnu-debuglink=host/.debug/good.debug host/good; "
		 "objcopy -R .note.gnu.build-id -S bin/fx host/bad; cp host/.debug/good.debug host/.debug/bad.debug; "
		 "objcopy --add-gnu-debuglink=host/.debug/bad.debug host/bad; printf x >> host/.debug/bad.debug; "
		 "objcopy -S bin/fx host/nodebug",
		 dir);
	assert_int_equal(system(cmd), 0);
	snprintf(good, sizeof(good), "%s/host/good", dir);
	snprintf(bad, sizeof(bad), "%s/host/bad", dir);
	snprintf(nodebug, sizeof(nodebug), "%s/host/nodebug", dir);

	assert_int_equal(symtab_open(&st, good, NULL, 0), 0);
	assert_string_equal(name_at(st, FX_ALPHA), "alpha");
	assert_string_equal(name_at(st, FX_BETA + 1), "beta");
	symtab_close(st);
	/* bad.debug grew a byte after its debuglink was made: another CRC. */
	if (symtab_open(&st, bad, NULL, 0) == 0) {
		assert_null(name_at(st, FX_ALPHA));
		symtab_close(st);
	}
	/* A build-id and no debug file for it here: a server would be asked, if one were named. */
	if (symtab_open(&st, nodebug, NULL, 0) == 0) {
		assert_null(name_at(st, FX_ALPHA));
		symtab_close(st);
	}
	assert_null(dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_NOLOAD));
}

/*
 * A library linked by lld (issue 31). lld packs segments without padding:
 * the code's mapping begins with read-only data that shares its first page
 * and ends with writable data that shares its last, and the code is linked
 * a page above its file offset. Every byte of that mapping translates
 * through the code segment; --call-graph dwarf takes a file's load bias
 * from its mapping's first byte, and with the read-only segment's
 * translation found no callers at all.
 */
static void test_lld_layout(void **state)
{
	char src[600], so[600], path[PATH_MAX], cmd[2048];
	struct link_map *lm = NULL;
	struct symtab *st = NULL;
	uint64_t start, end, pgoff;
	void *h, *fn;
	FILE *f;

	(void)state;
	snprintf(src, sizeof(src), "%s/lld.c", dir);
	snprintf(so, sizeof(so), "%s/liblld.so", dir);
	f = fopen(src, "w");
	assert_non_null(f);
	fputs("int lld_first(int x) { return x + 1; }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gcc -O1 -shared -fPIC -fuse-ld=lld -o '%s' '%s'", so, src);
	if (system(cmd) != 0)
		fail_msg("could not link with lld (Debian package lld, installed by make deps)");
	h = dlopen(so, RTLD_NOW);
	assert_non_null(h);
	fn = dlsym(h, "lld_first");
	assert_non_null(fn);
	assert_int_equal(dlinfo(h, RTLD_DI_LINKMAP, &lm), 0);
	assert_int_equal(find_mapping((uintptr_t)fn, path, sizeof(path), &start, &end, &pgoff), 0);
	assert_int_equal(symtab_open(&st, path, NULL, 0), 0);
	/* The layout this is about: the code does not begin its page, nor end it. */
	assert_int_not_equal(((uintptr_t)fn - lm->l_addr) & 0xfff, 0);
	/* The first byte (read-only data): the bias is the loader's. */
	assert_int_equal(start - symtab_map_addr(st, start, start, pgoff), lm->l_addr);
	/* The code, and the last byte (writable data). */
	assert_string_equal(name_at(st, symtab_map_addr(st, (uintptr_t)fn, start, pgoff)), "lld_first");
	assert_int_equal(symtab_map_addr(st, end - 1, start, pgoff), end - 1 - lm->l_addr);
	symtab_close(st);
	dlclose(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_fixture),
		cmocka_unit_test(test_build_id),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_self_pie),
		cmocka_unit_test(test_shared_library),
		cmocka_unit_test(test_lld_layout),
		cmocka_unit_test(test_host_debuglink),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

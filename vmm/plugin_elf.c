// SPDX-License-Identifier: MIT
/* DT_NEEDED of a plugin file, read before dlopen (plugin_elf.h). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin_elf.h"

/* Larger files are not plugins worth reading here: dlopen decides. */
#define PLUGIN_ELF_MAX (64u << 20)

static bool in_file(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/* The file offset of virtual address va, through the PT_LOAD segments; false if none holds it. */
static bool va_to_offset(const uint8_t *f, const Elf64_Ehdr *eh, uint64_t va, uint64_t *off)
{
	for (unsigned int i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, f + eh->e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_LOAD && va >= ph.p_vaddr && va - ph.p_vaddr < ph.p_filesz) {
			*off = ph.p_offset + (va - ph.p_vaddr);
			return true;
		}
	}
	return false;
}

/* The runtimes that must come first, and the symbol by which a process that has one shows it. */
static const struct {
	const char *lib, *init;
} first_runtimes[] = {
	{ "libasan.so", "__asan_init" },
	{ "libtsan.so", "__tsan_init" },
	{ "libhwasan.so", "__hwasan_init" },
};

int plugin_elf_scan(const uint8_t *f, size_t size, char *runtime, size_t rsize, const char **init_symbol)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph, dyn_ph = { 0 };
	uint64_t strtab = 0, strsz = 0, stroff;
	bool has_dyn = false, has_strtab = false;

	if (size < sizeof(eh))
		return 0;
	memcpy(&eh, f, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_file(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), size))
		return 0;
	for (unsigned int i = 0; i < eh.e_phnum && !has_dyn; i++) {
		memcpy(&ph, f + eh.e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_DYNAMIC && in_file(ph.p_offset, ph.p_filesz, size)) {
			dyn_ph = ph;
			has_dyn = true;
		}
	}
	if (!has_dyn)
		return 0;
	for (uint64_t o = 0; o + sizeof(Elf64_Dyn) <= dyn_ph.p_filesz; o += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;

		memcpy(&d, f + dyn_ph.p_offset + o, sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_STRTAB) {
			strtab = d.d_un.d_ptr;
			has_strtab = true;
		} else if (d.d_tag == DT_STRSZ) {
			strsz = d.d_un.d_val;
		}
	}
	if (!has_strtab || !va_to_offset(f, &eh, strtab, &stroff) || !in_file(stroff, strsz, size))
		return 0;
	for (uint64_t o = 0; o + sizeof(Elf64_Dyn) <= dyn_ph.p_filesz; o += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;
		const char *name;
		size_t max;

		memcpy(&d, f + dyn_ph.p_offset + o, sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag != DT_NEEDED || d.d_un.d_val >= strsz)
			continue;
		name = (const char *)f + stroff + d.d_un.d_val;
		max = strsz - d.d_un.d_val;
		if (!memchr(name, '\0', max))
			continue; /* not a string inside the table */
		for (size_t r = 0; r < sizeof(first_runtimes) / sizeof(first_runtimes[0]); r++) {
			if (!strncmp(name, first_runtimes[r].lib, strlen(first_runtimes[r].lib))) {
				snprintf(runtime, rsize, "%s", name);
				*init_symbol = first_runtimes[r].init;
				return 1;
			}
		}
	}
	return 0;
}

int plugin_elf_sanitizer_runtime(const char *path, char *runtime, size_t size, const char **init_symbol)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return 0;
	/* Read, not mapped: a file cut short meanwhile must not fault the VMM. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > PLUGIN_ELF_MAX ||
	    !(buf = malloc((size_t)st.st_size))) {
		close(fd);
		return 0;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	rc = plugin_elf_scan(buf, got, runtime, size, init_symbol);
	free(buf);
	return rc;
}

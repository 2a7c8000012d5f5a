/* SPDX-License-Identifier: MIT */
/*
 * Function symbols of one ELF file, for turning sampled addresses into
 * names. Symbols come through libdwfl, which merges .symtab, .dynsym, the
 * MiniDebugInfo in .gnu_debugdata and separate debug files found by
 * build-id or debuglink; they are copied into one sorted array so a lookup
 * is a binary search and the file can be closed.
 */
#ifndef KVMPROF_SYMTAB_H
#define KVMPROF_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symtab_sym {
	uint64_t addr; /* virtual address in the file (st_value) */
	uint64_t size; /* 0 in the file: up to the next symbol or the segment end */
	const char *name;
};

struct symtab;

/*
 * Opens `path` and reads its function symbols. If build_id_size is not 0,
 * the file's GNU build-id must equal build_id. Returns 0, -ENOEXEC (not an
 * ELF file), -ESTALE (build-id differs or the file has none), or another
 * -errno from opening the file (FILE_NOT_REGULAR: a FIFO, device or directory).
 */
int symtab_open(struct symtab **out, const char *path, const uint8_t *build_id, size_t build_id_size);
/*
 * The same on a descriptor of a regular file, which it closes. `name` is
 * the file's name for debug-file lookups; with root_fd >= 0 it is a path
 * inside that root, and separate debug files are looked up only inside it
 * (file_open_in_root), never on the host.
 */
int symtab_open_fd(struct symtab **out, int fd, const char *name, int root_fd, const uint8_t *build_id,
		   size_t build_id_size);
/* The symbol covering vaddr, or NULL. */
const struct symtab_sym *symtab_lookup(const struct symtab *st, uint64_t vaddr);
/*
 * The file virtual address of a runtime address in a mapping of this file
 * that starts at map_start and maps file offset pgoff there. Fixed-address
 * executables (ET_EXEC) are mapped where they were linked, so the address
 * is the address; position-independent objects go through the file offset
 * and the program headers. The mapping is taken to be an executable one
 * (the only kind recorded): an offset in a page it shares with the code
 * segment goes through the code segment (lld's layout, symtab.c).
 */
uint64_t symtab_map_addr(const struct symtab *st, uint64_t ip, uint64_t map_start, uint64_t pgoff);
size_t symtab_count(const struct symtab *st);
/* The file's build-id (0 bytes if it has none). */
size_t symtab_build_id(const struct symtab *st, const uint8_t **id);
void symtab_close(struct symtab *st);

/*
 * Up to len bytes of the file's code at file address vaddr, as an
 * executable segment loads them, read from fd: a new descriptor of the
 * file symtab_open_fd read (annotate reads a function's bytes after its
 * symbols). The bytes read (fewer when the segment's file bytes end),
 * -ESTALE (fd is not that file any more: replaced or rewritten), -ERANGE
 * (vaddr is in no executable segment's file bytes), or -errno.
 */
ssize_t symtab_read_code(const struct symtab *st, int fd, uint64_t vaddr, void *buf, size_t len);

/*
 * Source lines of the file's code from its DWARF (or its separate debug
 * file, found as symtab_open_fd finds them: inside root_fd if >= 0).
 * symtab_src_open takes fd, a new descriptor of the file st was read from
 * (-ESTALE if it is not that file any more), and `name` as for
 * symtab_open_fd.
 */
struct symtab_src;
int symtab_src_open(struct symtab_src **out, const struct symtab *st, int fd, const char *name, int root_fd);
/* The source file and line (> 0) of the code at file address vaddr; NULL when the debug info has none. */
const char *symtab_src_line(struct symtab_src *s, uint64_t vaddr, int *line);
void symtab_src_close(struct symtab_src *s);

/*
 * The address (st_value) and size of the symbol called name, of any type
 * (a data object too: symtab_open keeps functions only), in the ELF file
 * at path's .symtab or .dynsym. 0, -ENOENT (no such symbol), -ENOEXEC (not
 * an ELF file) or -errno from opening the file.
 */
int symtab_find_symbol(const char *path, const char *name, uint64_t *addr, uint64_t *size);

/*
 * Demangling (lib/symbols/symtab_demangle.c, libiberty): a C++ (Itanium ABI) or
 * Rust (legacy or v0) symbol name as perf report shows it,
 * "ns::Spinner<unsigned long>::spin" for _ZN2ns7SpinnerImE4spinEmj, into
 * buf. False, buf unspecified, for a name that is not mangled, malformed,
 * or longer than SYMTAB_DEMANGLE_INPUT_MAX, or a buffer under 16 bytes:
 * the caller keeps the name.
 * A name that does not fit in size bytes is cut and ends in "...", so a
 * hostile name costs at most size bytes of output. The output is
 * libiberty's, bytes of the name included: sanitize it like any name.
 */
#define SYMTAB_DEMANGLE_INPUT_MAX 8192
#define SYMTAB_DEMANGLED_MAX 4096 /* the buffer the symbolizer uses */
#define SYMTAB_DEMANGLE_PARAMS 1u /* with parameter types and qualifiers, as perf report -v */
bool symtab_demangle(const char *name, char *buf, size_t size, unsigned flags);

#endif

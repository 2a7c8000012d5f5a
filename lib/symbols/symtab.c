/* SPDX-License-Identifier: MIT */
#include "symbols/symtab.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/file_open.h"
#include "common/grow.h"

/* A size-0 symbol that is also the last in its segment gets this much at most. */
#define SYMTAB_UNSIZED_SPAN 0x1000
/* x86-64: the kernel maps an ELF file's segments in 4 KiB pages (ELF_MIN_ALIGN), whatever their p_align. */
#define SYMTAB_SEGMENT_PAGE 0x1000ull

struct symtab_load {
	uint64_t vaddr, offset, filesz, memsz;
	bool exec;
};

struct symtab {
	struct symtab_sym *syms;
	size_t nr, cap;
	char *names;
	size_t names_len, names_cap;
	struct symtab_load *loads;
	size_t nr_loads, loads_cap;
	bool fixed; /* ET_EXEC: mapped at its link addresses */
	uint8_t build_id[64];
	size_t build_id_size;
	/* The file read, so that a later read of its code can tell it is still the same file. */
	struct stat file;
};

/* What symtab_open keeps per symbol while reading: names by offset, the arena moves. */
struct raw_sym {
	uint64_t addr, size;
	size_t name_off;
	int rank; /* higher wins among symbols at one address */
};

static int read_headers(struct symtab *st, int fd)
{
	const void *id;
	GElf_Ehdr eh;
	size_t i, nphdr;
	Elf *elf;
	int rc = 0;
	ssize_t n;

	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) || elf_getphdrnum(elf, &nphdr)) {
		rc = -ENOEXEC;
		goto out;
	}
	st->fixed = eh.e_type == ET_EXEC;
	for (i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (grow_array(&st->loads, &st->loads_cap, st->nr_loads + 1, sizeof(*st->loads))) {
			rc = -ENOMEM;
			goto out;
		}
		st->loads[st->nr_loads++] = (struct symtab_load){
			.vaddr = ph.p_vaddr, .offset = ph.p_offset, .filesz = ph.p_filesz,
			.memsz = ph.p_memsz, .exec = ph.p_flags & PF_X,
		};
	}
	n = dwelf_elf_gnu_build_id(elf, &id);
	if (n > 0 && (size_t)n <= sizeof(st->build_id)) {
		memcpy(st->build_id, id, (size_t)n);
		st->build_id_size = (size_t)n;
	}
out:
	elf_end(elf);
	return rc;
}

/* Whether a symbol names code: functions, and untyped labels in code (hand-written assembly). */
static bool is_code(const GElf_Sym *sym, GElf_Word shndx, Elf *elf)
{
	int type = GELF_ST_TYPE(sym->st_info);
	GElf_Shdr sh;
	Elf_Scn *scn;

	if (shndx == SHN_UNDEF || shndx == (GElf_Word)-1 || shndx == SHN_ABS)
		return false;
	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		return true;
	if (type != STT_NOTYPE || !elf)
		return false;
	scn = elf_getscn(elf, shndx);
	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

/* perf's preferences among aliases: functions, global over weak over local, fewer leading underscores. */
static int rank_of(const GElf_Sym *sym, const char *name)
{
	int rank = 0;

	if (GELF_ST_TYPE(sym->st_info) == STT_FUNC)
		rank += 100;
	if (GELF_ST_BIND(sym->st_info) == STB_GLOBAL)
		rank += 20;
	else if (GELF_ST_BIND(sym->st_info) == STB_WEAK)
		rank += 10;
	if (sym->st_size)
		rank += 5;
	if (name[0] != '_')
		rank += 2;
	else if (name[1] != '_')
		rank += 1;
	return rank;
}

static int cmp_raw(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	return x->name_off < y->name_off ? -1 : x->name_off > y->name_off;
}

static int add_name(struct symtab *st, const char *name, size_t *off)
{
	size_t len = strlen(name) + 1;

	if (grow_array(&st->names, &st->names_cap, st->names_len + len, 1))
		return -ENOMEM;
	memcpy(st->names + st->names_len, name, len);
	*off = st->names_len;
	st->names_len += len;
	return 0;
}

static int collect(Dwfl_Module *mod, struct symtab *st, struct raw_sym **raw, size_t *nr)
{
	size_t cap = 0;
	int i, n = dwfl_module_getsymtab(mod);

	for (i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, NULL);
		size_t off;

		if (!name || !*name || !is_code(&sym, shndx, elf))
			continue;
		if (grow_array(raw, &cap, *nr + 1, sizeof(**raw)) || add_name(st, name, &off))
			return -ENOMEM;
		(*raw)[(*nr)++] = (struct raw_sym){
			.addr = sym.st_value, .size = sym.st_size, .name_off = off, .rank = rank_of(&sym, name),
		};
	}
	return 0;
}

/* The end of the executable segment holding vaddr, to bound unsized symbols. */
static uint64_t segment_end(const struct symtab *st, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < st->nr_loads; i++) {
		const struct symtab_load *l = &st->loads[i];

		if (vaddr >= l->vaddr && vaddr - l->vaddr < l->memsz)
			return l->vaddr + l->memsz;
	}
	return vaddr > UINT64_MAX - SYMTAB_UNSIZED_SPAN ? UINT64_MAX : vaddr + SYMTAB_UNSIZED_SPAN;
}

static int build_table(struct symtab *st, struct raw_sym *raw, size_t nr)
{
	size_t i;

	if (nr > 1)
		qsort(raw, nr, sizeof(*raw), cmp_raw);
	st->syms = calloc(nr ? nr : 1, sizeof(*st->syms));
	if (!st->syms)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		/* The best-ranked alias sorts first; drop the rest. */
		if (i && raw[i].addr == raw[i - 1].addr)
			continue;
		st->syms[st->nr++] = (struct symtab_sym){
			.addr = raw[i].addr, .size = raw[i].size, .name = st->names + raw[i].name_off,
		};
	}
	for (i = 0; i < st->nr; i++) {
		struct symtab_sym *s = &st->syms[i];
		uint64_t end;

		if (s->size)
			continue;
		end = segment_end(st, s->addr);
		if (i + 1 < st->nr && st->syms[i + 1].addr < end)
			end = st->syms[i + 1].addr;
		s->size = end - s->addr;
	}
	return 0;
}

/* The guest root that separate debug files of the file being read must come from. */
static __thread int debug_root_fd = -1;

/* Whether a candidate debug file belongs to the module: same build-id, or the debuglink's CRC. */
static bool debug_file_matches(Dwfl_Module *mod, int fd, GElf_Word crc)
{
	const unsigned char *want;
	GElf_Addr vaddr;
	int nwant = dwfl_module_build_id(mod, &want, &vaddr);
	bool ok = false;

	if (nwant > 0) {
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		const void *have;
		ssize_t nhave = elf ? dwelf_elf_gnu_build_id(elf, &have) : -1;

		ok = nhave == nwant && !memcmp(have, want, (size_t)nwant);
		elf_end(elf);
	} else {
		unsigned char buf[65536];
		uLong sum = crc32(0, Z_NULL, 0);
		off_t off = 0;
		ssize_t n;

		while ((n = pread(fd, buf, sizeof(buf), off)) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				break;
			sum = crc32(sum, buf, (uInt)n);
			off += n;
		}
		ok = n == 0 && (GElf_Word)sum == crc;
	}
	return ok;
}

static int debug_try(Dwfl_Module *mod, const char *path, GElf_Word crc, char **found)
{
	int fd = debug_root_fd >= 0 ? file_open_in_root(debug_root_fd, path) : file_open_regular(path);

	if (fd < 0)
		return -1;
	if (!debug_file_matches(mod, fd, crc)) {
		close(fd);
		return -1;
	}
	*found = strdup(path);
	return fd;
}

/*
 * libdwfl's standard search, inside the guest root (on the host without one): by build-id under
 * /usr/lib/debug/.build-id, then the debuglink beside the file, in .debug/
 * and under /usr/lib/debug. modname is the file's path inside the root.
 */
static int find_debuginfo_in_root(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
				  const char *file_name, const char *debuglink, GElf_Word crc, char **found)
{
	const unsigned char *id;
	GElf_Addr vaddr;
	char dir[4096], path[sizeof(dir) + 256];
	const char *slash = strrchr(modname, '/');
	int n = dwfl_module_build_id(mod, &id, &vaddr), fd, len;

	(void)userdata, (void)base, (void)file_name;
	if (n > 1) {
		len = snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/", id[0]);
		for (int i = 1; i < n && len < (int)sizeof(path) - 8; i++)
			len += snprintf(path + len, sizeof(path) - (size_t)len, "%02x", id[i]);
		snprintf(path + len, sizeof(path) - (size_t)len, ".debug");
		if ((fd = debug_try(mod, path, crc, found)) >= 0)
			return fd;
	}
	if (!debuglink || !*debuglink)
		return -1;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - modname) : 0, modname);
	snprintf(path, sizeof(path), "%s/%s", dir, debuglink);
	/* A debuglink naming the file itself would match its own CRC: not a debug file. */
	if (strcmp(debuglink, slash ? slash + 1 : modname) && (fd = debug_try(mod, path, crc, found)) >= 0)
		return fd;
	snprintf(path, sizeof(path), "%s/.debug/%s", dir, debuglink);
	if ((fd = debug_try(mod, path, crc, found)) >= 0)
		return fd;
	snprintf(path, sizeof(path), "/usr/lib/debug%s/%s", dir, debuglink);
	return debug_try(mod, path, crc, found);
}

/*
 * A file of this machine: the same search on the host, and debuginfod only
 * when DEBUGINFOD_URLS names a server. libdwfl's standard search would
 * dlopen libdebuginfod and with it libcurl and some twenty libraries into
 * every report, server or not: 6% of a small report's time.
 */
static int find_debuginfo_on_host(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
				  const char *file_name, const char *debuglink, GElf_Word crc, char **found)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	if (urls && *urls)
		return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink, crc, found);
	return find_debuginfo_in_root(mod, userdata, modname, base, file_name, debuglink, crc, found);
}

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo_on_host,
	.section_address = dwfl_offline_section_address,
};

static const Dwfl_Callbacks root_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo_in_root,
	.section_address = dwfl_offline_section_address,
};

/*
 * Reports the file on fd to a new Dwfl as symtab_open_fd does (inside
 * root_fd: its debug files only from there). NULL if libdwfl can't use it.
 */
static Dwfl_Module *report_file(Dwfl **dwfl, int fd, const char *name, int root_fd)
{
	char self[64];
	Dwfl_Module *mod;

	*dwfl = dwfl_begin(root_fd >= 0 ? &root_callbacks : &offline_callbacks);
	if (!*dwfl)
		return NULL;
	/*
	 * libdwfl opens the file again by name. Inside a root that name is our
	 * own descriptor's, so nothing is looked up on the host; debug files
	 * come through find_debuginfo_in_root.
	 */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	debug_root_fd = root_fd;
	mod = dwfl_report_offline(*dwfl, name, root_fd >= 0 ? self : name, -1);
	dwfl_report_end(*dwfl, NULL, NULL);
	debug_root_fd = -1;
	return mod;
}

int symtab_open(struct symtab **out, const char *path, const uint8_t *build_id, size_t build_id_size)
{
	int fd = file_open_regular(path);

	if (fd < 0)
		return fd;
	return symtab_open_fd(out, fd, path, -1, build_id, build_id_size);
}

int symtab_open_fd(struct symtab **out, int fd, const char *name, int root_fd, const uint8_t *build_id,
		   size_t build_id_size)
{
	struct symtab *st = calloc(1, sizeof(*st));
	struct raw_sym *raw = NULL;
	Dwfl_Module *mod;
	size_t nr = 0;
	Dwfl *dwfl;
	int rc;

	if (!st) {
		close(fd);
		return -ENOMEM;
	}
	elf_version(EV_CURRENT);
	if (fstat(fd, &st->file)) {
		rc = -errno;
		goto fail;
	}
	rc = read_headers(st, fd);
	if (rc)
		goto fail;
	if (build_id_size && (build_id_size != st->build_id_size ||
			      memcmp(build_id, st->build_id, build_id_size))) {
		rc = -ESTALE;
		goto fail;
	}
	mod = report_file(&dwfl, fd, name, root_fd);
	if (!dwfl) {
		rc = -ENOMEM;
		goto fail;
	}
	/* A file libdwfl can't use has no symbols for us; the image still shows by name. */
	debug_root_fd = root_fd; /* debug files are found lazily, while symbols are read */
	rc = mod ? collect(mod, st, &raw, &nr) : 0;
	debug_root_fd = -1;
	dwfl_end(dwfl);
	if (!rc)
		rc = build_table(st, raw, nr);
	free(raw);
	if (rc)
		goto fail;
	close(fd);
	*out = st;
	return 0;
fail:
	close(fd);
	symtab_close(st);
	return rc;
}

const struct symtab_sym *symtab_lookup(const struct symtab *st, uint64_t vaddr)
{
	size_t lo = 0, hi = st->nr, i, steps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/*
	 * The closest symbol at or below vaddr usually covers it; when it
	 * doesn't, a larger one just before may (a function with a local
	 * label inside it). Look back a little, not through the whole file.
	 */
	for (i = lo, steps = 0; i > 0 && steps < 4; i--, steps++) {
		const struct symtab_sym *s = &st->syms[i - 1];

		if (vaddr - s->addr < s->size)
			return s;
	}
	return NULL;
}

/*
 * The segment a file offset in a recorded mapping goes through. Recorded
 * mappings are executable ones (perf reports no others unless asked for
 * data mappings, and no recorder here asks), and the kernel maps each
 * segment from the start of the page holding its first byte to the end of
 * the page holding its last: a code segment's pages may hold bytes of its
 * neighbours too. lld packs segments without padding (read-only data at file
 * offset 0, the code at 0x700 of the same page, linked at 0x1700), so the
 * code's mapping begins with read-only bytes whose own segment would place
 * them 0x1000 too low. In order: an executable segment holding the offset,
 * an executable segment whose pages hold it, any segment holding it.
 */
static const struct symtab_load *load_for_offset(const struct symtab *st, uint64_t off)
{
	const struct symtab_load *in_pages = NULL, *holder = NULL;

	for (size_t i = 0; i < st->nr_loads; i++) {
		const struct symtab_load *l = &st->loads[i];
		/* Its pages: from the start of the page of its first byte to the end of the page of its last. */
		uint64_t first = l->offset & ~(SYMTAB_SEGMENT_PAGE - 1);
		uint64_t end = (l->offset + l->filesz + SYMTAB_SEGMENT_PAGE - 1) & ~(SYMTAB_SEGMENT_PAGE - 1);

		if (off >= l->offset && off - l->offset < l->filesz) {
			if (l->exec)
				return l;
			if (!holder)
				holder = l;
		} else if (l->exec && !in_pages && off >= first && off < end) {
			in_pages = l;
		}
	}
	return in_pages ? in_pages : holder;
}

uint64_t symtab_map_addr(const struct symtab *st, uint64_t ip, uint64_t map_start, uint64_t pgoff)
{
	uint64_t off = ip - map_start + pgoff;
	const struct symtab_load *l;

	if (st->fixed)
		return ip;
	l = load_for_offset(st, off);
	/* Offset and address differ by a whole number of pages, the same for every byte of the mapping. */
	return l ? off - l->offset + l->vaddr : off;
}

size_t symtab_count(const struct symtab *st)
{
	return st->nr;
}

size_t symtab_build_id(const struct symtab *st, const uint8_t **id)
{
	*id = st->build_id;
	return st->build_id_size;
}

void symtab_close(struct symtab *st)
{
	if (!st)
		return;
	free(st->syms);
	free(st->names);
	free(st->loads);
	free(st);
}

int symtab_find_symbol(const char *path, const char *name, uint64_t *addr, uint64_t *size)
{
	int fd = file_open_regular(path), rc = -ENOENT;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0)
		return fd;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		close(fd);
		return -ENOEXEC;
	}
	while (rc == -ENOENT && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    !(n = elf_strptr(elf, sh.sh_link, sym.st_name)) || strcmp(n, name))
				continue;
			*addr = sym.st_value;
			*size = sym.st_size;
			rc = 0;
			break;
		}
	}
	elf_end(elf);
	close(fd);
	return rc;
}

/* Whether fd is the very file symtab_open_fd read: not replaced or rewritten since. */
static bool same_file(const struct symtab *st, int fd)
{
	struct stat now;

	return !fstat(fd, &now) && now.st_dev == st->file.st_dev && now.st_ino == st->file.st_ino &&
	       now.st_size == st->file.st_size && now.st_mtim.tv_sec == st->file.st_mtim.tv_sec &&
	       now.st_mtim.tv_nsec == st->file.st_mtim.tv_nsec;
}

ssize_t symtab_read_code(const struct symtab *st, int fd, uint64_t vaddr, void *buf, size_t len)
{
	size_t i, done = 0;

	if (!same_file(st, fd))
		return -ESTALE;
	for (i = 0; i < st->nr_loads; i++) {
		const struct symtab_load *l = &st->loads[i];
		uint64_t in, avail;

		/* Only bytes the file holds: the rest of memsz (.bss) is no code. */
		if (!l->exec || vaddr < l->vaddr || vaddr - l->vaddr >= l->filesz)
			continue;
		in = vaddr - l->vaddr;
		avail = l->filesz - in;
		if (len > avail)
			len = (size_t)avail;
		while (done < len) {
			ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(l->offset + in + done));

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return -errno;
			if (n == 0)
				break; /* the file is shorter than its headers say */
			done += (size_t)n;
		}
		return (ssize_t)done;
	}
	return -ERANGE;
}

struct symtab_src {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	int fd, root_fd;
};

int symtab_src_open(struct symtab_src **out, const struct symtab *st, int fd, const char *name, int root_fd)
{
	struct symtab_src *s;

	if (!same_file(st, fd)) {
		close(fd);
		return -ESTALE;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		return -ENOMEM;
	}
	s->fd = fd;
	s->root_fd = root_fd;
	s->mod = report_file(&s->dwfl, fd, name, root_fd);
	if (!s->mod) {
		symtab_src_close(s);
		return -ENOEXEC;
	}
	*out = s;
	return 0;
}

const char *symtab_src_line(struct symtab_src *s, uint64_t vaddr, int *line)
{
	Dwarf_Addr bias, addr;
	const char *file = NULL;
	Dwfl_Line *l;

	/* Offline, libdwfl places the file at its link addresses (plus a bias it reports). */
	debug_root_fd = s->root_fd; /* the debug file is looked up on first use */
	if (dwfl_module_getdwarf(s->mod, &bias) && (l = dwfl_module_getsrc(s->mod, vaddr + bias)))
		file = dwfl_lineinfo(l, &addr, line, NULL, NULL, NULL);
	debug_root_fd = -1;
	return file && *line > 0 ? file : NULL;
}

void symtab_src_close(struct symtab_src *s)
{
	if (!s)
		return;
	if (s->dwfl)
		dwfl_end(s->dwfl);
	close(s->fd);
	free(s);
}

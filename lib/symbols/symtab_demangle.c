/* SPDX-License-Identifier: MIT */
/*
 * C++ and Rust symbol names demangled with libiberty (binutils' and perf's
 * demangler), as cplus_demangle does in its automatic style: Rust first
 * (legacy "_ZN...17h<hash>E" names are also valid C++ manglings), then the
 * Itanium C++ ABI.
 *
 * Guest files are hostile, and a mangled name is a small program: its
 * back-references can double the output at each step (a 250-byte name
 * would print gigabytes), and its parse takes stack in proportion to its
 * length. libiberty bounds the depth it recurses to, and so the C++ names
 * it takes to 1024 bytes, but not the output, nor the length of Rust
 * names. So names longer than SYMTAB_DEMANGLE_INPUT_MAX are left as they
 * are, and the output goes through libiberty's callback interface into a
 * bounded buffer: when the buffer is full the demangler is left with
 * longjmp. That is safe because the callback interface allocates nothing
 * (its working arrays live on the stack of the frames longjmp discards; it
 * is what the C++ runtime uses where malloc may not work) and keeps no state
 * between calls.
 */
#include "symbols/symtab.h"

#include <libiberty/demangle.h>
#include <setjmp.h>
#include <string.h>

struct demangle_out {
	char *buf;
	size_t size, len;
	bool cut;
	jmp_buf full;
};

static void put(const char *s, size_t n, void *opaque)
{
	struct demangle_out *o = opaque;
	size_t room = o->size - 1 - o->len;

	/* libiberty hands over empty pieces, some as (NULL, 0). */
	if (!n)
		return;
	if (n > room) {
		memcpy(o->buf + o->len, s, room);
		o->len += room;
		o->cut = true;
		longjmp(o->full, 1);
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

/* Ends a cut name with "..." on a character boundary (the name may hold UTF-8 from the source). */
static void mark_cut(struct demangle_out *o)
{
	size_t len = o->len > 3 ? o->len - 3 : 0;

	while (len && ((unsigned char)o->buf[len] & 0xc0) == 0x80)
		len--;
	memcpy(o->buf + len, "...", 3);
	o->len = len + 3;
}

/*
 * libiberty's verdict, Rust first, else C++; 1 when it stopped at a full
 * buffer. A function of its own so that setjmp's frame has no local that
 * changes between setjmp and longjmp (those would be indeterminate).
 */
static int run(const char *name, int options, struct demangle_out *out)
{
	if (setjmp(out->full))
		return 1;
	if (rust_demangle_callback(name, options, put, out))
		return 1;
	out->len = 0;
	return cplus_demangle_v3_callback(name, options, put, out);
}

bool symtab_demangle(const char *name, char *buf, size_t size, unsigned flags)
{
	/* DMGL_PARAMS|DMGL_ANSI is perf report -v's form; perf's default shows names without them. */
	int options = (flags & SYMTAB_DEMANGLE_PARAMS) ? DMGL_PARAMS | DMGL_ANSI : DMGL_NO_OPTS;
	struct demangle_out out = { .buf = buf, .size = size };

	if (size < 16 || strnlen(name, SYMTAB_DEMANGLE_INPUT_MAX + 1) > SYMTAB_DEMANGLE_INPUT_MAX)
		return false;
	/* Only names in a mangling: the C++ demangler would take "i" for the type int. */
	if (strncmp(name, "_Z", 2) && strncmp(name, "_R", 2) && strncmp(name, "_GLOBAL_", 8))
		return false;
	if (!run(name, options, &out) || !out.len)
		return false;
	if (out.cut)
		mark_cut(&out);
	buf[out.len] = 0;
	return true;
}

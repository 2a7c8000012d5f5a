/* SPDX-License-Identifier: MIT */
/*
 * annotate, as perf annotate --stdio: one function's machine code,
 * disassembled by Capstone from the ELF file its symbols came from, with
 * how many of its samples fell on each instruction (each sample's own
 * address, its first frame) and, where the file has debug info, the
 * source file:line above each run of instructions from one line.
 *
 * The code is read through the profile (profile_image_code): the same file,
 * under the same root, as the symbolizer opened, and refused when it
 * changed since. What is hostile or odd is said in one line and bounded: a
 * symbol size past its segment or past ANNOTATE_CODE_MAX, bytes that do
 * not decode, samples between instruction starts.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "common/suggest.h"
#include "symbols/symtab.h"
#include "common/utf8.h"

/* Code read at most for one function: 1 MiB is far past any real one's size; a bogus size is cut here. */
#define ANNOTATE_CODE_MAX (1u << 20)
/* Undecodable bytes in a row that end the listing: past this it is data, not code. */
#define ANNOTATE_BAD_MAX 16

/* Samples at one address of the function. */
struct hit {
	uint64_t rel;
	uint64_t count;
};

static int cmp_hits(const void *x, const void *y)
{
	const struct hit *a = x, *b = y;

	return (a->rel > b->rel) - (a->rel < b->rel);
}

static bool counted(const struct profile_sample *s, const struct report_annotate_options *opt)
{
	return s->nr_frames && (opt->event == PROFILE_NONE || s->event == opt->event);
}

static bool image_matches(const struct profile *p, uint32_t img, const char *dso)
{
	const struct profile_image *im = &p->images[img];

	return !dso || !strcmp(im->name, dso) || (im->path && !strcmp(im->path, dso));
}

/* A name from the recorded system, safe for the terminal. */
static const char *clean(char *buf, size_t len, const char *s)
{
	size_t n = strnlen(s, len - 1); /* a longer name is cut */

	memcpy(buf, s, n);
	buf[n] = 0;
	utf8_sanitize(buf, '?', NULL);
	return buf;
}

/*
 * The function to annotate: opt->symbol's (of opt->dso's image), the one
 * with the most samples among same-named ones; without a symbol, the
 * hottest function with a name. PROFILE_NONE after saying why on stderr.
 */
static uint32_t pick(const struct profile *p, const uint64_t *self, const struct report_annotate_options *opt)
{
	uint32_t best = PROFILE_NONE, f;
	size_t others = 0;
	char a[256], b[256], list[SUGGEST_MAX * (SUGGEST_NAME_MAX + 2)], c[sizeof(list)];
	struct suggest sg;

	for (f = 0; f < p->nr_funcs; f++) {
		const char *name = p->funcs[f].name;

		if (!name || (opt->symbol && strcmp(name, opt->symbol)))
			continue;
		if (!image_matches(p, p->funcs[f].image, opt->dso)) {
			others++;
			continue;
		}
		if (best == PROFILE_NONE || self[f] > self[best])
			best = f;
	}
	if (best != PROFILE_NONE) {
		/* Same-named functions of other images: say so, --dso picks one. */
		for (f = 0; opt->symbol && !opt->dso && f < p->nr_funcs; f++)
			if (f != best && p->funcs[f].name && !strcmp(p->funcs[f].name, opt->symbol))
				fprintf(stderr, "%s: %s is also in %s (%" PRIu64 " samples; --dso picks it)\n", opt->prog,
					clean(a, sizeof(a), opt->symbol), clean(b, sizeof(b), p->images[p->funcs[f].image].name),
					self[f]);
		return best;
	}
	if (!opt->symbol) {
		fprintf(stderr, "%s: no sample has a symbol%s%s\n", opt->prog, opt->dso ? " in " : "",
			opt->dso ? clean(a, sizeof(a), opt->dso) : "");
		return PROFILE_NONE;
	}
	if (others) {
		size_t len = 0, shown = 0;

		/* Where it is instead: the first few images. */
		list[0] = 0;
		for (f = 0; f < p->nr_funcs && shown < 4 && len < sizeof(list); f++)
			if (p->funcs[f].name && !strcmp(p->funcs[f].name, opt->symbol))
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", shown++ ? ", " : "",
							p->images[p->funcs[f].image].name);
		fprintf(stderr, "%s: %s is not in %s; it is in %s%s\n", opt->prog, clean(a, sizeof(a), opt->symbol),
			clean(b, sizeof(b), opt->dso), clean(c, sizeof(c), list), others > shown ? ", ..." : "");
		return PROFILE_NONE;
	}
	suggest_init(&sg, opt->symbol, 5);
	for (f = 0; f < p->nr_funcs; f++)
		if (p->funcs[f].name && image_matches(p, p->funcs[f].image, opt->dso))
			suggest_consider(&sg, p->funcs[f].name);
	if (suggest_format(&sg, list, sizeof(list)))
		fprintf(stderr, "%s: no symbol %s in the samples; closest: %s\n", opt->prog, clean(a, sizeof(a), opt->symbol),
			clean(b, sizeof(b), list));
	else
		fprintf(stderr, "%s: no symbol %s in the samples (report lists them)\n", opt->prog,
			clean(a, sizeof(a), opt->symbol));
	return PROFILE_NONE;
}

/* The samples whose own address is in function f, by address, sorted. */
static int collect_hits(const struct profile *p, uint32_t f, const struct report_annotate_options *opt,
			struct hit **out, size_t *nr)
{
	uint64_t *per_loc = calloc(p->nr_locs ? p->nr_locs : 1, sizeof(*per_loc));
	struct hit *hits;
	size_t i, n = 0;

	if (!per_loc)
		return -ENOMEM;
	for (i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];

		if (counted(s, opt))
			per_loc[p->frames[s->first_frame]]++;
	}
	for (i = 0; i < p->nr_locs; i++)
		n += p->locs[i].func == f && per_loc[i];
	hits = calloc(n ? n : 1, sizeof(*hits));
	if (!hits) {
		free(per_loc);
		return -ENOMEM;
	}
	n = 0;
	for (i = 0; i < p->nr_locs; i++)
		if (p->locs[i].func == f && per_loc[i])
			hits[n++] = (struct hit){ p->locs[i].rel, per_loc[i] };
	free(per_loc);
	qsort(hits, n, sizeof(*hits), cmp_hits);
	*out = hits;
	*nr = n;
	return 0;
}

/* Why there is no code to show, in words. */
static const char *code_error(const struct profile_image *im, int rc)
{
	switch (rc) {
	case -ENOENT:
		if (!im->path && im->kernel)
			return "its symbols come from kallsyms, which holds no code (a kernel ELF file would: "
			       "kvmprof's --guest-kernel for a guest)";
		if (!im->path || im->path[0] != '/')
			return "its image is no file";
		return "its file was not read (see the warning above: missing, another build-id, or a guest file "
		       "without --guest-root)";
	case -ESTALE:
		return "its file changed since its symbols were read";
	case -ERANGE:
		return "its address is in none of its file's executable segments (a bogus symbol)";
	default:
		return strerror(-rc);
	}
}

struct listing {
	FILE *out;
	uint64_t total;                  /* the function's samples */
	const struct hit *hits;
	size_t nr_hits, next;            /* hits[next] is the first not yet placed */
	uint64_t shown, between;         /* samples on an instruction start; inside an instruction */
	struct symtab_src *src;
	const char *last_file;
	int last_line;
	bool any_line;
};

/* The samples at `addr` and those inside the instruction [addr, addr + size). */
static uint64_t take_hits(struct listing *l, uint64_t addr, uint64_t size)
{
	uint64_t here = 0;

	for (; l->next < l->nr_hits && l->hits[l->next].rel < addr + size; l->next++) {
		if (l->hits[l->next].rel == addr)
			here += l->hits[l->next].count;
		else if (l->hits[l->next].rel > addr)
			l->between += l->hits[l->next].count;
		/* Below addr: before the first instruction; counted as not shown. */
	}
	l->shown += here;
	return here;
}

static void put_source(struct listing *l, uint64_t addr)
{
	char buf[512];
	const char *file;
	int line = 0;

	if (!l->src || !(file = symtab_src_line(l->src, addr, &line)))
		return;
	l->any_line = true;
	if (l->last_file && line == l->last_line && !strcmp(file, l->last_file))
		return;
	l->last_file = file;
	l->last_line = line;
	/* In the instructions' column, as perf puts its source lines. */
	fprintf(l->out, "%30s%s:%d\n", "", clean(buf, sizeof(buf), file), line);
}

static void put_insn(struct listing *l, uint64_t addr, uint64_t size, const char *text)
{
	uint64_t n = take_hits(l, addr, size);

	put_source(l, addr);
	fprintf(l->out, "%8.2f %8" PRIu64 " %8" PRIx64 ":   %s\n", l->total ? 100.0 * (double)n / (double)l->total : 0.0,
		n, addr, text);
}

/* Disassembles code (loaded at addr) into the listing. 0, or -ENOMEM / -EINVAL (Capstone failed). */
static int disassemble(struct listing *l, const uint8_t *code, size_t len, uint64_t addr, bool intel,
		       const char *prog)
{
	const uint8_t *at = code;
	uint64_t pc = addr;
	size_t left = len;
	unsigned bad = 0;
	cs_insn *insn;
	csh cs;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return -EINVAL;
	cs_option(cs, CS_OPT_SYNTAX, intel ? CS_OPT_SYNTAX_INTEL : CS_OPT_SYNTAX_ATT);
	insn = cs_malloc(cs);
	if (!insn) {
		cs_close(&cs);
		return -ENOMEM;
	}
	while (left) {
		char text[256];

		if (cs_disasm_iter(cs, &at, &left, &pc, insn)) {
			bad = 0;
			if (insn->op_str[0])
				snprintf(text, sizeof(text), "%-7s %s", insn->mnemonic, insn->op_str);
			else
				snprintf(text, sizeof(text), "%s", insn->mnemonic);
			put_insn(l, insn->address, insn->size, text);
			continue;
		}
		/* Not an instruction: one byte shown as data, and on to the next. */
		if (++bad > ANNOTATE_BAD_MAX) {
			fprintf(stderr, "%s: the code at 0x%" PRIx64 " does not decode as x86-64 (%u bytes in a row); "
					"the listing stops there\n", prog, pc - ANNOTATE_BAD_MAX, ANNOTATE_BAD_MAX);
			break;
		}
		snprintf(text, sizeof(text), "(bad)   .byte 0x%02x", *at);
		put_insn(l, pc, 1, text);
		at++, pc++, left--;
	}
	cs_free(insn, 1);
	cs_close(&cs);
	return 0;
}

int report_annotate(FILE *out, struct profile *p, const struct report_annotate_options *opt)
{
	struct listing l = { .out = out };
	uint64_t *self, start, size, want, total = 0;
	struct hit *hits = NULL;
	size_t nr_hits = 0, i;
	uint8_t *code = NULL;
	char a[256], b[KP_PATH_MAX + 8];
	const struct profile_image *im;
	uint32_t f;
	ssize_t got;
	int rc;

	self = calloc(p->nr_funcs ? p->nr_funcs : 1, sizeof(*self));
	if (!self)
		return -ENOMEM;
	for (i = 0; i < p->nr_samples; i++)
		if (counted(&p->samples[i], opt))
			self[p->locs[p->frames[p->samples[i].first_frame]].func]++;
	f = pick(p, self, opt);
	if (f == PROFILE_NONE) {
		free(self);
		return -ECANCELED;
	}
	total = self[f];
	free(self);
	im = &p->images[p->funcs[f].image];
	rc = collect_hits(p, f, opt, &hits, &nr_hits);
	if (rc)
		return rc;

	clean(a, sizeof(a), p->funcs[f].name); /* the function's name, for every line below */
	rc = profile_func_extent(p, f, &start, &size);
	if (!rc) {
		want = size < ANNOTATE_CODE_MAX ? size : ANNOTATE_CODE_MAX;
		code = malloc(want ? want : 1);
		if (!code) {
			free(hits);
			return -ENOMEM;
		}
		got = profile_image_code(p, p->funcs[f].image, start, code, want);
		rc = got < 0 ? (int)got : 0;
	}
	if (rc) {
		fprintf(stderr, "%s: no code to show for %s: %s\n", opt->prog, a, code_error(im, rc));
		free(code);
		free(hits);
		return -ECANCELED;
	}
	fprintf(out, "%s (%s", a, clean(b, sizeof(b), im->name));
	if (im->path && strcmp(im->name, im->path))
		fprintf(out, ", %s", clean(b, sizeof(b), im->path));
	fprintf(out, "%s): %" PRIu64 " samples", im->domain == KP_DOMAIN_GUEST ? ", guest" : "", total);
	if (opt->event != PROFILE_NONE) {
		const struct profile_event *e = &p->events[opt->event];

		/* Under the fallback the samples are cpu-clock's, as report's header says (the name is what was asked). */
		if (e->declared && (e->flags & KP_EVENT_FALLBACK) && strcmp(e->name, "cpu-clock"))
			fprintf(out, " of cpu-clock (standing in for %s)", clean(b, sizeof(b), e->name));
		else
			fprintf(out, " of %s", clean(b, sizeof(b), e->name));
	}
	fputc('\n', out);

	if ((uint64_t)got < size && (uint64_t)got < want)
		fprintf(stderr, "%s: %s's symbol says %" PRIu64 " bytes, but its file's code ends after %zd; those are "
				"shown\n", opt->prog, a, size, got);
	else if (size > want)
		fprintf(stderr, "%s: %s's symbol says %" PRIu64 " bytes; the first %" PRIu64 " are shown\n", opt->prog, a,
			size, want);

	l.total = total;
	l.hits = hits;
	l.nr_hits = nr_hits;
	if (profile_image_src(p, p->funcs[f].image, &l.src))
		l.src = NULL;
	fprintf(out, "%8s %8s %8s    %s\n", "Percent", "Samples", "Address", "Instruction");
	rc = disassemble(&l, code, (size_t)got, start, opt->intel, opt->prog);
	symtab_src_close(l.src);
	if (!rc) {
		if (l.between)
			fprintf(out, "%" PRIu64 " samples fell inside an instruction, not on its first byte (not counted "
				     "above)\n", l.between);
		if (total > l.shown + l.between)
			fprintf(out, "%" PRIu64 " samples fell outside the code shown\n", total - l.shown - l.between);
		if (!l.any_line)
			fprintf(out, "(no source lines: the file has no line table for this code)\n");
	}
	free(code);
	free(hits);
	if (!rc && ferror(out))
		rc = -EIO;
	return rc;
}

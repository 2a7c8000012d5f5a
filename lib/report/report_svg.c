/* SPDX-License-Identifier: MIT */
/*
 * An SVG flame graph of one event's stacks: the same aggregation as the
 * folded stacks (report_folded.c), drawn outermost at the bottom. The root
 * "all" spans the width; above it one box per command, then the frames,
 * each as wide as its samples. Children are ordered by name, so equal
 * profiles give byte-identical files and graphs of two runs compare.
 *
 * The file stands alone: inline style and a small script (hover shows a
 * frame's line at the bottom, a click zooms into a frame, a click on "all"
 * zooms out), no external resources, so it opens from disk offline. Every
 * name (symbols, images, commands, the event) comes from a possibly hostile
 * sample file: it is made valid UTF-8 without XML-forbidden characters, then
 * escaped, before it reaches the file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "common/utf8.h"

#define DEFAULT_WIDTH 1200
#define PAD 10.0        /* left and right margins */
#define FRAME_H 16      /* one stack level; the box is 1 pixel less, a gap between levels */
#define TOP 40          /* the title */
#define BOTTOM 46       /* the hover line and the legend */
#define FONT_PX 12
#define CHAR_W 7.3      /* a monospace character at FONT_PX, a little generous so labels fit */
#define LABEL_MIN 3     /* characters worth showing, ".." included; narrower boxes get no label */
#define MIN_WIDTH 0.1   /* frames narrower than this (and their callees) are not drawn */

/*
 * Colours by kind: a hue range in degrees, a saturation and a lightness
 * range. Within its range a frame's colour follows a hash of its name, so
 * the same function has the same colour in every graph and neighbours
 * differ. Warm for user code, cool for kernels, muted for the synthetic
 * levels. A new kind (enum report_kind) needs a row here.
 */
static const struct kind_style {
	const char *legend;
	double hue0, hue1, sat, light0, light1;
} kind_styles[REPORT_KIND_COUNT] = {
	[REPORT_KIND_ROOT] = { "all", 0, 0, 0, 0.80, 0.80 },
	[REPORT_KIND_PROCESS] = { "process", 265, 290, 0.35, 0.72, 0.80 },
	[REPORT_KIND_USER] = { "user", 0, 45, 0.85, 0.55, 0.65 },
	[REPORT_KIND_KERNEL] = { "kernel", 190, 225, 0.65, 0.58, 0.70 },
	[REPORT_KIND_UNKNOWN] = { "unknown", 0, 0, 0, 0.66, 0.74 },
	[REPORT_KIND_GUEST_USER] = { "guest user", 85, 140, 0.55, 0.50, 0.62 },
	[REPORT_KIND_GUEST_KERNEL] = { "guest kernel", 165, 185, 0.55, 0.50, 0.62 },
	[REPORT_KIND_VMM] = { "VMM user", 0, 45, 0.85, 0.55, 0.65 },
	[REPORT_KIND_HOST_KERNEL] = { "host kernel", 210, 240, 0.65, 0.58, 0.70 },
	[REPORT_KIND_VM_EXIT] = { "VM exit", 50, 58, 0.95, 0.55, 0.58 },
};

enum report_kind report_frame_kind(const struct profile *p, uint32_t func)
{
	const struct profile_image *im = &p->images[p->funcs[func].image];

	if (im->kernel)
		return REPORT_KIND_KERNEL;
	/* "[unknown]": no recorded mapping covers the address. */
	if (!im->path)
		return REPORT_KIND_UNKNOWN;
	return REPORT_KIND_USER;
}

/* One distinct (command, stack), frames outermost first. */
struct stack {
	const char *comm;
	const uint32_t *ids;
	uint32_t nr;
	uint64_t count;
};

struct svg {
	FILE *out;
	const struct profile *p;
	const struct report_svg_options *opt;
	struct stack *stacks;
	uint64_t total;
	double width, scale; /* pixels per sample */
	uint32_t levels;     /* root, commands, frames */
	bool kinds_used[REPORT_KIND_COUNT];
};

/* ---- names into XML ---- */

/*
 * The length of the UTF-8 sequence at s if it is well formed and a
 * character XML 1.0 allows (no C0 controls but tab, no DEL, no surrogates,
 * no U+FFFE/U+FFFF), else 0. Tab, CR and LF are allowed by XML but not
 * wanted inside a one-line label, so they count as invalid too.
 */
static size_t xml_char_len(const unsigned char *s)
{
	uint32_t cp;
	size_t n = utf8_decode(s, &cp);

	if (!n || cp < 0x20 || cp == 0x7f || cp == 0xfffe || cp == 0xffff)
		return 0;
	return n;
}

/* Characters as the label counts them: a valid sequence or one bad byte each. */
static size_t xml_chars(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = 0, l;

	while (*u) {
		l = xml_char_len(u);
		u += l ? l : 1;
		n++;
	}
	return n;
}

/*
 * Writes at most max characters of s, escaped for text and attribute
 * values alike; a bad byte becomes U+FFFD.
 */
static void xml_put(FILE *out, const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t l;

	for (; *u && max; max--, u += l ? l : 1) {
		l = xml_char_len(u);
		if (!l) {
			fputs("\xef\xbf\xbd", out);
			continue;
		}
		switch (*u) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default: fwrite(u, 1, l, out);
		}
	}
}

/* ---- colours ---- */

static uint32_t name_hash(const char *s, uint32_t seed)
{
	uint32_t h = 2166136261u ^ seed;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* Without libm: the library links into a static agent that does not pull it in otherwise. */
static double absd(double v)
{
	return v < 0 ? -v : v;
}

static int channel(double v)
{
	int c = (int)(v * 255 + 0.5);

	return c < 0 ? 0 : c > 255 ? 255 : c;
}

/* HSL to RGB, the hue chosen by one hash of the name and the lightness by another. */
static void kind_colour(enum report_kind kind, const char *name, int rgb[3])
{
	const struct kind_style *k = &kind_styles[kind];
	double a = (name_hash(name, 0) % 1000) / 1000.0, b = (name_hash(name, 0x9e3779b9u) % 1000) / 1000.0;
	double h = (k->hue0 + (k->hue1 - k->hue0) * a) / 60.0, l = k->light0 + (k->light1 - k->light0) * b;
	int sector = (int)h % 6;
	double c = (1 - absd(2 * l - 1)) * k->sat, x = c * (1 - absd(h - (sector & ~1) - 1)), m = l - c / 2;
	double r = 0, g = 0, bl = 0;

	switch (sector) {
	case 0: r = c, g = x; break;
	case 1: r = x, g = c; break;
	case 2: g = c, bl = x; break;
	case 3: g = x, bl = c; break;
	case 4: r = x, bl = c; break;
	default: r = c, bl = x; break;
	}
	rgb[0] = channel(r + m);
	rgb[1] = channel(g + m);
	rgb[2] = channel(bl + m);
}

/* ---- layout ---- */

static int cmp_func(const struct profile *p, uint32_t a, uint32_t b)
{
	int c;

	if (a == b)
		return 0;
	c = strcmp(report_func_name(p, a), report_func_name(p, b));
	if (!c)
		c = strcmp(p->images[p->funcs[a].image].name, p->images[p->funcs[b].image].name);
	return c ? c : a < b ? -1 : 1;
}

/* By command, then frame by frame; a stack that ends sorts before its longer siblings. */
static int cmp_stacks(const void *va, const void *vb, void *ctx)
{
	const struct stack *a = va, *b = vb;
	const struct profile *p = ctx;
	uint32_t i;
	int c = strcmp(a->comm, b->comm);

	for (i = 0; !c && i < a->nr && i < b->nr; i++)
		c = cmp_func(p, a->ids[i], b->ids[i]);
	if (!c)
		c = a->nr < b->nr ? -1 : a->nr > b->nr;
	return c;
}

static double level_y(const struct svg *s, uint32_t depth)
{
	return TOP + (double)(s->levels - 1 - depth) * FRAME_H;
}

/*
 * One box: its tooltip (the name, what it is, samples and share), the
 * rectangle, and as much of the label as fits (".." marks a cut).
 */
static void emit_frame(struct svg *s, uint32_t depth, uint64_t start, uint64_t count, const char *label,
		       const char *what, enum report_kind kind)
{
	double x = PAD + start * s->scale, w = count * s->scale, y = level_y(s, depth);
	size_t fit = w > 6 ? (size_t)((w - 6) / CHAR_W) : 0, len = xml_chars(label);
	int rgb[3];

	s->kinds_used[kind] = true;
	kind_colour(kind, label, rgb);
	fputs("<g class=\"f\" data-n=\"", s->out);
	xml_put(s->out, label, SIZE_MAX);
	fputs("\"><title>", s->out);
	xml_put(s->out, label, SIZE_MAX);
	if (what) {
		fputs(" (", s->out);
		xml_put(s->out, what, SIZE_MAX);
		fputc(')', s->out);
	}
	fprintf(s->out, ": %" PRIu64 " sample%s, %.2f%%</title>", count, count == 1 ? "" : "s",
		100.0 * (double)count / (double)s->total);
	fprintf(s->out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"rgb(%d,%d,%d)\"/>", x, y, w,
		FRAME_H - 1, rgb[0], rgb[1], rgb[2]);
	if (fit >= LABEL_MIN) {
		fprintf(s->out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FRAME_H - 4.5);
		if (len <= fit) {
			xml_put(s->out, label, SIZE_MAX);
		} else {
			xml_put(s->out, label, fit - 2);
			fputs("..", s->out);
		}
		fputs("</text>", s->out);
	}
	fputs("</g>\n", s->out);
}

/*
 * The stacks [lo, hi) share their first depth - 1 levels (the command is
 * level 1, frame i level i + 2) and begin at sample `start`. Those that end
 * below this level are the parent's own samples, sorted first: they leave
 * a gap on the left. The rest are grouped by their frame here.
 */
static void emit_level(struct svg *s, size_t lo, size_t hi, uint32_t depth, uint64_t start)
{
	size_t i, j;

	for (i = lo; i < hi;) {
		const struct stack *st = &s->stacks[i];
		uint64_t count = 0;

		if (depth >= 2 && st->nr < depth - 1) {
			start += st->count;
			i++;
			continue;
		}
		for (j = i; j < hi; j++) {
			const struct stack *o = &s->stacks[j];

			if (depth == 1 ? strcmp(o->comm, st->comm) != 0 : o->ids[depth - 2] != st->ids[depth - 2])
				break;
			count += o->count;
		}
		if (count * s->scale >= MIN_WIDTH) {
			if (depth == 1) {
				emit_frame(s, depth, start, count, st->comm, "process", REPORT_KIND_PROCESS);
			} else {
				uint32_t f = st->ids[depth - 2];
				const struct profile_image *im = &s->p->images[s->p->funcs[f].image];
				enum report_kind kind = s->opt->kind ? s->opt->kind(s->p, f, s->opt->kind_ctx)
								     : report_frame_kind(s->p, f);

				if ((unsigned)kind >= REPORT_KIND_COUNT)
					kind = REPORT_KIND_UNKNOWN;
				emit_frame(s, depth, start, count, report_func_name(s->p, f), im->name, kind);
			}
			emit_level(s, i, j, depth + 1, start);
		}
		start += count;
		i = j;
	}
}

/*
 * Click to zoom and a hover line. Frames are found by their boxes'
 * geometry: a frame's callees sit above it within its x range, its
 * callers below it spanning that range. No "]]>" may appear in here.
 */
static const char svg_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"(function () {\n"
	"\tvar svg = document.documentElement, NS = 'http://www.w3.org/2000/svg';\n"
	"\tvar W = +svg.getAttribute('width'), P = %.1f, CW = %.1f, MIN = %d, E = 0.02;\n"
	"\tvar det = document.getElementById('details'), frames = [];\n"
	"\tfunction label(f, w) {\n"
	"\t\tvar n = Math.floor((w - 6) / CW), c = Array.from(f.n);\n"
	"\t\tvar t = n >= c.length ? f.n : n >= MIN ? c.slice(0, n - 2).join('') + '..' : '';\n"
	"\t\tif (!f.t) {\n"
	"\t\t\tif (!t) return;\n"
	"\t\t\tf.t = document.createElementNS(NS, 'text');\n"
	"\t\t\tf.t.setAttribute('y', (f.y + %.1f).toFixed(1));\n"
	"\t\t\tf.g.appendChild(f.t);\n"
	"\t\t}\n"
	"\t\tf.t.setAttribute('x', (+f.r.getAttribute('x') + 3).toFixed(2));\n"
	"\t\tf.t.textContent = t;\n"
	"\t}\n"
	"\tfunction zoom(z) {\n"
	"\t\tvar s = (W - 2 * P) / z.w;\n"
	"\t\tframes.forEach(function (f) {\n"
	"\t\t\tvar x, w;\n"
	"\t\t\tif (f.y > z.y && f.x <= z.x + E && f.x + f.w >= z.x + z.w - E) {\n"
	"\t\t\t\tx = P; w = W - 2 * P;\n"
	"\t\t\t} else if (f.y <= z.y && f.x >= z.x - E && f.x + f.w <= z.x + z.w + E) {\n"
	"\t\t\t\tx = P + (f.x - z.x) * s; w = f.w * s;\n"
	"\t\t\t} else {\n"
	"\t\t\t\tf.g.style.display = 'none';\n"
	"\t\t\t\treturn;\n"
	"\t\t\t}\n"
	"\t\t\tf.g.style.display = '';\n"
	"\t\t\tf.r.setAttribute('x', x.toFixed(2));\n"
	"\t\t\tf.r.setAttribute('width', w.toFixed(2));\n"
	"\t\t\tlabel(f, w);\n"
	"\t\t});\n"
	"\t}\n"
	"\tArray.prototype.forEach.call(document.querySelectorAll('g.f'), function (g) {\n"
	"\t\tvar r = g.querySelector('rect'), f = { g: g, r: r, t: g.querySelector('text'),\n"
	"\t\t\tn: g.getAttribute('data-n'), x: +r.getAttribute('x'), w: +r.getAttribute('width'),\n"
	"\t\t\ty: +r.getAttribute('y') };\n"
	"\t\tframes.push(f);\n"
	"\t\tg.addEventListener('click', function () { zoom(f); });\n"
	"\t\tg.addEventListener('mouseover', function () {\n"
	"\t\t\tdet.textContent = g.querySelector('title').textContent;\n"
	"\t\t});\n"
	"\t\tg.addEventListener('mouseout', function () { det.textContent = ' '; });\n"
	"\t});\n"
	"})();\n"
	"]]></script>\n";

static void emit_header(struct svg *s, const struct profile_event *e, double height)
{
	const char *title = s->opt->title ? s->opt->title : "Flame graph";

	fprintf(s->out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n",
		s->width, height, s->width, height);
	fprintf(s->out,
		"<style>\n"
		"text { font-family: monospace; font-size: %dpx; fill: #000; }\n"
		"text.title { font-size: 17px; }\n"
		"g.f { cursor: pointer; }\n"
		"g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
		"</style>\n",
		FONT_PX);
	/* The document's name (a browser's tab) and the visible title say the same. */
	for (int pass = 0; pass < 2; pass++) {
		fputs(pass ? "<text class=\"title\" x=\"50%\" y=\"24\" text-anchor=\"middle\">" : "<title>", s->out);
		xml_put(s->out, title, SIZE_MAX);
		fputs(": ", s->out);
		/* A recording that asked for nothing names cpu-clock itself: nothing stood in for anything. */
		if (e && e->flags & KP_EVENT_FALLBACK && strcmp(e->name, "cpu-clock")) {
			fputs("cpu-clock (standing in for ", s->out);
			xml_put(s->out, e->name, SIZE_MAX);
			fputs(": no hardware PMU)", s->out);
		} else {
			xml_put(s->out, e ? e->name : "no event", SIZE_MAX);
		}
		fprintf(s->out, ", %" PRIu64 " sample%s", s->total, s->total == 1 ? "" : "s");
		fputs(pass ? "</text>\n" : "</title>\n", s->out);
		/* The background goes under everything visible. */
		if (!pass)
			fputs("<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#f6f6f2\"/>\n", s->out);
	}
}

/* The hover line, and a swatch per kind that appears in the graph. */
static void emit_footer(struct svg *s, double height)
{
	double x = PAD;
	int k, rgb[3];

	fprintf(s->out, "<text id=\"details\" x=\"%.1f\" y=\"%.1f\"> </text>\n", PAD, height - BOTTOM + 18);
	for (k = 0; k < REPORT_KIND_COUNT; k++) {
		if (!s->kinds_used[k] || k == REPORT_KIND_ROOT)
			continue;
		kind_colour(k, kind_styles[k].legend, rgb);
		fprintf(s->out,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"rgb(%d,%d,%d)\"/>"
			"<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
			x, height - 18, rgb[0], rgb[1], rgb[2], x + 16, height - 8, kind_styles[k].legend);
		x += 16 + CHAR_W * (double)strlen(kind_styles[k].legend) + 14;
	}
	fprintf(s->out, svg_script, PAD, CHAR_W, LABEL_MIN, FRAME_H - 4.5);
	fputs("</svg>\n", s->out);
}

int report_svg(FILE *out, const struct profile *p, uint32_t event, const struct report_svg_options *opt)
{
	static const struct report_svg_options defaults = { 0 };
	struct report_stacks rs = { 0 };
	struct svg s = { .out = out, .p = p, .opt = opt ? opt : &defaults };
	uint32_t *ids;
	uint32_t maxnr = 0;
	double height;
	size_t i;
	int rc = 0;

	s.width = s.opt->width ? s.opt->width : DEFAULT_WIDTH;
	if (s.width < 2 * PAD + 100)
		return -EINVAL;
	ids = malloc((KP_CALLCHAIN_MAX + 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	/* The folded stacks' aggregation: one id list per sample, outermost first. */
	for (i = 0; i < p->nr_samples && !rc; i++) {
		const struct profile_sample *smp = &p->samples[i];
		uint32_t f, n = smp->nr_frames;

		if (smp->event != event)
			continue;
		if (n > KP_CALLCHAIN_MAX + 1)
			n = KP_CALLCHAIN_MAX + 1;
		for (f = 0; f < n; f++)
			ids[f] = p->locs[p->frames[smp->first_frame + n - 1 - f]].func;
		rc = report_stacks_add(&rs, smp->comm, ids, n, smp->period);
	}
	free(ids);
	if (!rc && rs.nr) {
		s.stacks = calloc(rs.nr, sizeof(*s.stacks));
		if (!s.stacks)
			rc = -ENOMEM;
	}
	if (rc) {
		report_stacks_free(&rs);
		return rc;
	}
	for (i = 0; i < rs.nr; i++) {
		const struct report_stack *st = &rs.stacks[i];

		s.stacks[i] = (struct stack){ .comm = p->comms[st->group], .ids = &rs.ids[st->first],
					      .nr = st->nr, .count = st->count };
		s.total += st->count;
		if (st->nr > maxnr)
			maxnr = st->nr;
	}
	/* glibc's qsort_r (_GNU_SOURCE): the comparison needs the profile, and no global. */
	if (rs.nr > 1)
		qsort_r(s.stacks, rs.nr, sizeof(*s.stacks), cmp_stacks, (void *)p);
	s.levels = rs.nr ? maxnr + 2 : 1;
	s.scale = s.total ? (s.width - 2 * PAD) / (double)s.total : 0;
	height = TOP + (double)s.levels * FRAME_H + BOTTOM;

	emit_header(&s, event < p->nr_events ? &p->events[event] : NULL, height);
	if (s.total) {
		emit_frame(&s, 0, 0, s.total, "all", NULL, REPORT_KIND_ROOT);
		emit_level(&s, 0, rs.nr, 1, 0);
	} else {
		fprintf(out, "<text x=\"50%%\" y=\"%.1f\" text-anchor=\"middle\">no samples</text>\n",
			level_y(&s, 0) + FRAME_H - 4.5);
	}
	emit_footer(&s, height);
	free(s.stacks);
	report_stacks_free(&rs);
	if (fflush(out) || ferror(out))
		return -EIO;
	return 0;
}

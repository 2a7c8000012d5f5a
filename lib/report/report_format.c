/* SPDX-License-Identifier: MIT */
#include "report/report_format.h"

#include <string.h>

static int render_text(FILE *out, struct profile *p, const struct report_format *f, const struct report_view *v,
		       void *ctx)
{
	(void)f;
	return v->text(out, p, ctx);
}

static int render_folded(FILE *out, struct profile *p, const struct report_format *f, const struct report_view *v,
			 void *ctx)
{
	return report_folded(out, p, v->stack_event(p, f, ctx));
}

static int render_pprof(FILE *out, struct profile *p, const struct report_format *f, const struct report_view *v,
			void *ctx)
{
	struct report_pprof_options o = { 0 };

	(void)f;
	if (!v->pprof)
		return report_pprof(out, p, NULL);
	v->pprof(p, &o, ctx);
	return report_pprof(out, p, &o);
}

static int render_svg(FILE *out, struct profile *p, const struct report_format *f, const struct report_view *v,
		      void *ctx)
{
	return report_svg(out, p, v->stack_event(p, f, ctx), v->svg);
}

/* Text first: the default. */
static const struct report_format formats[] = {
	{ "text", "table", "a table of where the samples fell (the default)", NULL, false, false, render_text },
	{ "folded", "folded stacks", "'comm;image`outer;...;image`inner count' lines for flame graph tools",
	  ".folded", false, true, render_folded },
	{ "pprof", "pprof profile", "gzipped protobuf for pprof (needs -o or a non-terminal)", ".pb.gz", true, true,
	  render_pprof },
	{ "svg", "flame graph", "a flame graph to open in a browser (click a frame to zoom, 'all' to zoom out)", ".svg",
	  false, true, render_svg },
	{ 0 },
};

const struct report_format *report_format_default(void)
{
	return &formats[0];
}

const struct report_format *report_formats(void)
{
	return formats;
}

const struct report_format *report_format_find(const char *name)
{
	for (const struct report_format *f = formats; f->name; f++)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
}

const char *report_format_help(const struct report_format *f, const struct report_view *v)
{
	for (const struct report_format_words *w = v ? v->words : NULL; w && w->format; w++)
		if (!strcmp(w->format, f->name))
			return w->help;
	return f->help;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n > t && !strcmp(s + n - t, tail);
}

int report_format_of_name(const char *path, const struct report_format **out)
{
	for (const struct report_format *f = formats; f->name; f++) {
		if (f->suffix && ends_with(path, f->suffix)) {
			*out = f;
			return 1;
		}
	}
	return ends_with(path, ".gz") || ends_with(path, ".pb") ? -1 : 0;
}

void report_format_names(char *buf, size_t len, const char *sep, const char *last)
{
	size_t off = 0;

	buf[0] = '\0';
	for (const struct report_format *f = formats; f->name && off < len; f++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", f == formats ? "" : f[1].name ? sep : last,
					f->name);
}

/* SPDX-License-Identifier: MIT */
/*
 * lib/report/report_svg.c: a profile built by hand (the renderer reads only the
 * finished arrays) drawn as a flame graph: exact boxes for known counts,
 * hostile names escaped, labels cut or left out in narrow boxes, colours by
 * kind, well-formed XML (xmllint where installed), write errors.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "report/report.h"

#define HOSTILE "a<b>&\"c'"
#define HOSTILE_XML "a&lt;b&gt;&amp;&quot;c&apos;"
/* A command with XML specials, a control character and a byte that is not UTF-8. */
#define BAD_COMM "<x&y>\x01\xff"
#define BAD_COMM_XML "&lt;x&amp;y&gt;\xef\xbf\xbd\xef\xbf\xbd"

enum { F_START, F_BETA, F_ALPHA, F_HOSTILE, F_UNKNOWN, NR_FUNCS };

static struct profile_event events[2] = { { .name = "cycles", .samples = 7 }, { .name = "instructions", .samples = 1 } };
static struct profile_image images[] = {
	{ .name = "fx", .path = "/bin/fx" },
	{ .name = "[kernel.kallsyms]", .kernel = true },
	{ .name = "[unknown]" },
};
static struct profile_func funcs[NR_FUNCS] = {
	[F_START] = { .image = 0, .name = "_start" },
	[F_BETA] = { .image = 0, .name = "beta" },
	[F_ALPHA] = { .image = 0, .name = "alpha" },
	[F_HOSTILE] = { .image = 1, .name = HOSTILE },
	[F_UNKNOWN] = { .image = 2, .name = NULL },
};
/* Location i is function i. */
static struct profile_loc locs[NR_FUNCS] = {
	{ .func = 0 }, { .func = 1 }, { .func = 2 }, { .func = 3 }, { .func = 4 },
};
static const char *comms[] = { "matmul", BAD_COMM };
/* Innermost first, like the profile's frames. */
static uint32_t frames[] = {
	F_ALPHA, F_BETA, F_START, /* 0: matmul; _start, beta, alpha: 3 samples */
	F_BETA, F_START,          /* 3: matmul; _start, beta: 1 */
	F_HOSTILE, F_BETA,        /* 5: matmul; beta, hostile: 2 */
	F_UNKNOWN,                /* 7: BAD_COMM; [unknown]: 1 */
};
static struct profile_sample samples[] = {
	{ .event = 0, .comm = 0, .nr_frames = 3, .first_frame = 0, .period = 1000 },
	{ .event = 0, .comm = 0, .nr_frames = 3, .first_frame = 0, .period = 1000 },
	{ .event = 0, .comm = 0, .nr_frames = 3, .first_frame = 0, .period = 1000 },
	{ .event = 0, .comm = 0, .nr_frames = 2, .first_frame = 3, .period = 1000 },
	{ .event = 0, .comm = 0, .nr_frames = 2, .first_frame = 5, .period = 1000 },
	{ .event = 1, .comm = 0, .nr_frames = 1, .first_frame = 0, .period = 1000 }, /* another event */
	{ .event = 0, .comm = 0, .nr_frames = 2, .first_frame = 5, .period = 1000 },
	{ .event = 0, .comm = 1, .nr_frames = 1, .first_frame = 7, .period = 1000 },
};

static const struct profile prof = {
	.events = events, .nr_events = 2,
	.images = images, .nr_images = 3,
	.funcs = funcs, .nr_funcs = NR_FUNCS,
	.locs = locs, .nr_locs = NR_FUNCS,
	.samples = samples, .nr_samples = sizeof(samples) / sizeof(samples[0]),
	.frames = frames,
	.comms = comms, .nr_comms = 2,
};

static char *render(uint32_t event, const struct report_svg_options *opt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(report_svg(f, &prof, event, opt), 0);
	fclose(f);
	return buf;
}

/* The <g> of the frame whose tooltip is `title` (escaped as in the file); fails if there is none. */
static const char *frame_of(const char *svg, const char *title)
{
	char key[256];
	const char *t;

	snprintf(key, sizeof(key), "<title>%s</title>", title);
	t = strstr(svg, key);
	if (!t)
		fail_msg("no frame with tooltip '%s'", title);
	/* Exactly one frame has it. */
	assert_null(strstr(t + 1, key));
	return t;
}

/* An attribute's value in the frame's first element of `tag`, as written. */
static void attr(const char *frame, const char *tag, const char *name, char *val, size_t len)
{
	char key[64];
	const char *e = strstr(frame, tag), *end = strstr(frame, "</g>"), *a, *q;

	assert_non_null(e);
	assert_true(e < end);
	snprintf(key, sizeof(key), " %s=\"", name);
	a = strstr(e, key);
	assert_non_null(a);
	a += strlen(key);
	q = strchr(a, '"');
	assert_non_null(q);
	assert_true((size_t)(q - a) < len);
	memcpy(val, a, q - a);
	val[q - a] = 0;
}

static void check_box(const char *svg, const char *title, const char *x, const char *y, const char *w)
{
	const char *f = frame_of(svg, title);
	char v[32];

	attr(f, "<rect", "x", v, sizeof(v));
	assert_string_equal(v, x);
	attr(f, "<rect", "y", v, sizeof(v));
	assert_string_equal(v, y);
	attr(f, "<rect", "width", v, sizeof(v));
	assert_string_equal(v, w);
}

/* The label of a frame, "" when it has none. */
static void label_of(const char *svg, const char *title, char *buf, size_t len)
{
	const char *f = frame_of(svg, title), *end = strstr(f, "</g>"), *t = strstr(f, "<text"), *q;

	buf[0] = 0;
	if (!t || t > end)
		return;
	t = strchr(t, '>') + 1;
	q = strstr(t, "</text>");
	assert_true(q && (size_t)(q - t) < len);
	memcpy(buf, t, q - t);
	buf[q - t] = 0;
}

/*
 * 7 samples across 1180 pixels (1200 less the margins): 168.57 per sample.
 * Commands sort by name ('<' before 'm'), children by symbol ('_' before
 * 'b'), a frame's own samples on the left of its callees. Five levels
 * from y=104 (all) up by 16.
 */
static void test_boxes(void **state)
{
	char *svg;

	(void)state;
	svg = render(0, NULL);
	check_box(svg, "all: 7 samples, 100.00%", "10.00", "104.0", "1180.00");
	check_box(svg, BAD_COMM_XML " (process): 1 sample, 14.29%", "10.00", "88.0", "168.57");
	check_box(svg, "[unknown] ([unknown]): 1 sample, 14.29%", "10.00", "72.0", "168.57");
	check_box(svg, "matmul (process): 6 samples, 85.71%", "178.57", "88.0", "1011.43");
	check_box(svg, "_start (fx): 4 samples, 57.14%", "178.57", "72.0", "674.29");
	check_box(svg, "beta (fx): 4 samples, 57.14%", "178.57", "56.0", "674.29");
	check_box(svg, "alpha (fx): 3 samples, 42.86%", "347.14", "40.0", "505.71");
	check_box(svg, "beta (fx): 2 samples, 28.57%", "852.86", "72.0", "337.14");
	check_box(svg, HOSTILE_XML " ([kernel.kallsyms]): 2 samples, 28.57%", "852.86", "56.0", "337.14");
	/* Nine frames, the other event's sample in none of them. */
	{
		size_t n = 0;
		const char *c;

		for (c = svg; (c = strstr(c, "<g class=\"f\"")); c++)
			n++;
		assert_int_equal(n, 9);
	}
	assert_non_null(strstr(svg, "<title>Flame graph: cycles, 7 samples</title>"));
	assert_non_null(strstr(svg, ">Flame graph: cycles, 7 samples</text>"));
	assert_non_null(strstr(svg, "width=\"1200\" height=\"166\""));
	free(svg);

	svg = render(1, NULL);
	check_box(svg, "alpha (fx): 1 sample, 100.00%", "10.00", "40.0", "1180.00");
	free(svg);
}

/*
 * Without a hardware PMU the title names cpu-clock, and what it stood in
 * for only when that was something else: a recording that asked for
 * nothing (a domain's) is cpu-clock's own, and read "cpu-clock (standing
 * in for cpu-clock: ...)" before.
 */
static void test_fallback_title(void **state)
{
	struct profile_event saved = events[0];
	char *svg;

	(void)state;
	events[0].flags = KP_EVENT_FREQ | KP_EVENT_FALLBACK;
	events[0].declared = true;
	svg = render(0, NULL);
	assert_non_null(strstr(svg, "<title>Flame graph: cpu-clock (standing in for cycles: no hardware PMU), 7 samples"
				    "</title>"));
	free(svg);
	snprintf(events[0].name, sizeof(events[0].name), "cpu-clock");
	svg = render(0, NULL);
	assert_non_null(strstr(svg, "<title>Flame graph: cpu-clock, 7 samples</title>"));
	assert_non_null(strstr(svg, ">Flame graph: cpu-clock, 7 samples</text>"));
	assert_null(strstr(svg, "standing in"));
	free(svg);
	events[0] = saved;
}

static void test_escaping(void **state)
{
	char *svg, label[128];
	const unsigned char *c;

	(void)state;
	svg = render(0, NULL);
	assert_null(strstr(svg, "a<b"));
	assert_null(strstr(svg, "<x&"));
	assert_non_null(strstr(svg, "data-n=\"" HOSTILE_XML "\""));
	assert_non_null(strstr(svg, "data-n=\"" BAD_COMM_XML "\""));
	label_of(svg, HOSTILE_XML " ([kernel.kallsyms]): 2 samples, 28.57%", label, sizeof(label));
	assert_string_equal(label, HOSTILE_XML);
	label_of(svg, BAD_COMM_XML " (process): 1 sample, 14.29%", label, sizeof(label));
	assert_string_equal(label, BAD_COMM_XML);
	/* No control characters but line ends and the script's tabs, no stray 0xff. */
	for (c = (const unsigned char *)svg; *c; c++) {
		assert_true(*c >= 0x20 || *c == '\n' || *c == '\t');
		assert_true(*c != 0x7f && *c != 0xff);
	}
	free(svg);
}

/* 200 pixels: 25.71 per sample, room for 6 characters in 2 samples and none in 1. */
static void test_labels(void **state)
{
	struct report_svg_options opt = { .width = 200, .title = "T&" };
	char *svg, label[128];

	(void)state;
	svg = render(0, &opt);
	label_of(svg, HOSTILE_XML " ([kernel.kallsyms]): 2 samples, 28.57%", label, sizeof(label));
	assert_string_equal(label, "a&lt;b&gt;..");
	label_of(svg, "[unknown] ([unknown]): 1 sample, 14.29%", label, sizeof(label));
	assert_string_equal(label, "");
	label_of(svg, "alpha (fx): 3 samples, 42.86%", label, sizeof(label));
	assert_string_equal(label, "alpha");
	check_box(svg, "alpha (fx): 3 samples, 42.86%", "61.43", "40.0", "77.14");
	assert_non_null(strstr(svg, "<title>T&amp;: cycles, 7 samples</title>"));
	free(svg);
}

static void rgb_of(const char *svg, const char *title, int rgb[3])
{
	char v[32];

	attr(frame_of(svg, title), "<rect", "fill", v, sizeof(v));
	assert_int_equal(sscanf(v, "rgb(%d,%d,%d)", &rgb[0], &rgb[1], &rgb[2]), 3);
}

static enum report_kind all_kernel(const struct profile *p, uint32_t func, void *ctx)
{
	(void)p;
	(void)ctx;
	return func == F_UNKNOWN ? (enum report_kind)99 : REPORT_KIND_KERNEL;
}

static void test_colours(void **state)
{
	struct report_svg_options opt = { .kind = all_kernel };
	int user[3], kernel[3], unknown[3], again[3];
	char *svg, *svg2;

	(void)state;
	assert_int_equal(report_frame_kind(&prof, F_ALPHA), REPORT_KIND_USER);
	assert_int_equal(report_frame_kind(&prof, F_HOSTILE), REPORT_KIND_KERNEL);
	assert_int_equal(report_frame_kind(&prof, F_UNKNOWN), REPORT_KIND_UNKNOWN);
	svg = render(0, NULL);
	rgb_of(svg, "alpha (fx): 3 samples, 42.86%", user);
	rgb_of(svg, HOSTILE_XML " ([kernel.kallsyms]): 2 samples, 28.57%", kernel);
	rgb_of(svg, "[unknown] ([unknown]): 1 sample, 14.29%", unknown);
	assert_true(user[0] > user[2] + 60);     /* warm */
	assert_true(kernel[2] > kernel[0] + 60); /* cool */
	assert_true(unknown[0] == unknown[1] && unknown[1] == unknown[2]); /* grey */
	/* The legend names the kinds present. */
	assert_non_null(strstr(svg, ">user</text>"));
	assert_non_null(strstr(svg, ">kernel</text>"));
	assert_non_null(strstr(svg, ">unknown</text>"));
	assert_non_null(strstr(svg, ">process</text>"));

	/* The caller's classifier decides; a kind it makes up shows as unknown. */
	svg2 = render(0, &opt);
	rgb_of(svg2, "alpha (fx): 3 samples, 42.86%", again);
	assert_true(again[2] > again[0] + 60);
	rgb_of(svg2, "[unknown] ([unknown]): 1 sample, 14.29%", again);
	assert_memory_equal(again, unknown, sizeof(again));
	assert_null(strstr(svg2, ">user</text>"));
	free(svg2);

	/* Same input, same bytes. */
	svg2 = render(0, NULL);
	assert_string_equal(svg, svg2);
	free(svg2);
	free(svg);
}

static void test_no_samples(void **state)
{
	struct profile empty = prof;
	char *svg;

	(void)state;
	empty.nr_samples = 0;
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		assert_int_equal(report_svg(f, &empty, 0, NULL), 0);
		fclose(f);
		svg = buf;
	}
	assert_non_null(strstr(svg, ">no samples</text>"));
	assert_non_null(strstr(svg, "cycles, 0 samples"));
	assert_null(strstr(svg, "<g class=\"f\""));
	assert_non_null(strstr(svg, "</svg>\n"));
	free(svg);
}

static void test_xmllint(void **state)
{
	char path[] = "/tmp/kvmprof-svg-XXXXXX", cmd[128];
	char *svg;
	FILE *f;
	int fd;

	(void)state;
	if (system("command -v xmllint >/dev/null 2>&1") != 0)
		skip();
	svg = render(0, NULL);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(svg, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", path);
	assert_int_equal(system(cmd), 0);
	unlink(path);
	free(svg);
}

static void test_write_error(void **state)
{
	FILE *f = fopen("/dev/full", "w");

	(void)state;
	if (!f)
		skip();
	assert_int_equal(report_svg(f, &prof, 0, NULL), -EIO);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_boxes),
		cmocka_unit_test(test_fallback_title),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_colours),
		cmocka_unit_test(test_no_samples),
		cmocka_unit_test(test_xmllint),
		cmocka_unit_test(test_write_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * The column widths are perf's (perf 6.1, tools/perf/util/stat-display.c's
 * layout as it prints it): an 18-wide value, a 4-wide unit, a 32-wide event
 * name, then " # " and an 8-wide figure with its 23-wide unit, then the
 * spread. Lines are not padded past their last field.
 */
#include "stat/stat_format.h"

#include <linux/perf_event.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collection/events.h"

void stat_spread_add(struct stat_spread *s, double v)
{
	double d = v - s->mean;

	s->n++;
	s->mean += d / s->n;
	s->m2 += d * (v - s->mean);
}

double stat_spread_stderr(const struct stat_spread *s)
{
	if (s->n < 2)
		return 0;
	return sqrt(s->m2 / (s->n - 1) / s->n);
}

double stat_spread_rel(const struct stat_spread *s)
{
	return s->mean ? 100.0 * stat_spread_stderr(s) / fabs(s->mean) : 0;
}

void stat_format_number(char *buf, size_t len, double v, int decimals, bool big_num)
{
	char plain[64], out[96];
	const char *p = plain, *dot;
	size_t o = 0, ndigits;

	snprintf(plain, sizeof(plain), "%.*f", decimals, v);
	if (!big_num) {
		snprintf(buf, len, "%s", plain);
		return;
	}
	if (*p == '-')
		out[o++] = *p++;
	dot = strchr(p, '.');
	ndigits = dot ? (size_t)(dot - p) : strlen(p);
	for (size_t i = 0; i < ndigits; i++) {
		/* A comma before each group of three digits counted from the decimal point. */
		if (i && (ndigits - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = p[i];
	}
	snprintf(out + o, sizeof(out) - o, "%s", p + ndigits);
	snprintf(buf, len, "%s", out);
}

static bool is_sw(const struct stat_event_result *e, uint64_t config)
{
	return e->type == PERF_TYPE_SOFTWARE && e->config == config;
}

static bool is_hw(const struct stat_event_result *e, uint64_t config)
{
	return e->type == PERF_TYPE_HARDWARE && e->config == config;
}

/* The mean of the first counted event matching (type, config) among ev; 0: none. */
static double mean_of(const struct stat_event_result *ev, int n, uint32_t type, uint64_t config)
{
	for (int i = 0; i < n; i++)
		if (ev[i].type == type && ev[i].config == config && ev[i].state == STAT_COUNTED)
			return ev[i].value.mean;
	return 0;
}

bool stat_format_metric(const struct stat_event_result *ev, int n, int i, double elapsed_ns, double *value,
			const char **unit)
{
	const struct stat_event_result *e = &ev[i];
	double task_ns = mean_of(ev, n, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK), v = e->value.mean;

	if (e->state != STAT_COUNTED)
		return false;
	if (is_sw(e, PERF_COUNT_SW_TASK_CLOCK) || is_sw(e, PERF_COUNT_SW_CPU_CLOCK)) {
		if (elapsed_ns <= 0)
			return false;
		*value = v / elapsed_ns;
		*unit = "CPUs utilized";
		return true;
	}
	if (is_hw(e, PERF_COUNT_HW_CPU_CYCLES) && task_ns > 0) {
		*value = v / task_ns;
		*unit = "GHz";
		return true;
	}
	if (is_hw(e, PERF_COUNT_HW_INSTRUCTIONS)) {
		double cycles = mean_of(ev, n, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);

		if (cycles > 0) {
			*value = v / cycles;
			*unit = "insn per cycle";
			return true;
		}
	}
	if (task_ns <= 0)
		return false;
	*value = v / (task_ns / 1e9);
	if (*value >= 1e9) {
		*value /= 1e9;
		*unit = "G/sec";
	} else if (*value >= 1e6) {
		*value /= 1e6;
		*unit = "M/sec";
	} else if (*value >= 1e3) {
		*value /= 1e3;
		*unit = "K/sec";
	} else {
		*unit = "/sec";
	}
	return true;
}

static bool is_clock(const struct stat_event_result *e)
{
	return events_is_clock(e->type, e->config);
}

static const char *state_text(enum stat_state s)
{
	return s == STAT_NOT_SUPPORTED ? "<not supported>" : "<not counted>";
}

/* Drops the spaces a line ends with: the table's padding stops at its last field. */
static void put_line(FILE *f, char *line)
{
	size_t n = strlen(line);

	while (n && line[n - 1] == ' ')
		line[--n] = '\0';
	fprintf(f, "%s\n", line);
}

static void print_table_line(const struct stat_output *o, const struct stat_event_result *ev, int n, int i)
{
	const struct stat_event_result *e = &ev[i];
	char value[64], line[256];
	double metric;
	const char *munit;
	size_t len;

	if (e->state == STAT_COUNTED)
		stat_format_number(value, sizeof(value), is_clock(e) ? e->value.mean / 1e6 : e->value.mean,
				   is_clock(e) ? 2 : 0, o->big_num);
	else
		snprintf(value, sizeof(value), "%s", state_text(e->state));
	len = (size_t)snprintf(line, sizeof(line), "%18s %-4s %-32s", value, is_clock(e) ? "msec" : "", e->name);
	if (len < sizeof(line)) {
		if (stat_format_metric(ev, n, i, o->elapsed_ns.mean, &metric, &munit))
			len += (size_t)snprintf(line + len, sizeof(line) - len, " # %8.3f %-23s", metric, munit);
		else
			len += (size_t)snprintf(line + len, sizeof(line) - len, "%35s", "");
	}
	if (len < sizeof(line) && o->runs > 1 && e->state == STAT_COUNTED && stat_spread_rel(&e->value) != 0)
		snprintf(line + len, sizeof(line) - len, "  ( +- %5.2f%% )", stat_spread_rel(&e->value));
	put_line(o->f, line);
	if (e->note)
		fprintf(o->f, "%24s(%s)\n", "", e->note);
}

static void print_csv_line(const struct stat_output *o, const struct stat_event_result *ev, int n, int i)
{
	const struct stat_event_result *e = &ev[i];
	const char *s = o->sep, *munit;
	double metric, pct = e->enabled > 0 ? 100.0 * e->running / e->enabled : 100.0;

	if (e->state == STAT_COUNTED)
		fprintf(o->f, is_clock(e) ? "%.2f" : "%.0f", is_clock(e) ? e->value.mean / 1e6 : e->value.mean);
	else
		fputs(state_text(e->state), o->f);
	fprintf(o->f, "%s%s%s%s", s, is_clock(e) ? "msec" : "", s, e->name);
	if (o->runs > 1)
		fprintf(o->f, "%s%.2f%%", s, e->state == STAT_COUNTED ? stat_spread_rel(&e->value) : 0.0);
	/* run-time: the mean time the counter ran per run, ns. */
	fprintf(o->f, "%s%.0f%s%.2f%s", s, o->runs ? e->running / o->runs : 0.0, s, pct, s);
	if (stat_format_metric(ev, n, i, o->elapsed_ns.mean, &metric, &munit))
		fprintf(o->f, "%.3f%s%s\n", metric, s, munit);
	else
		fprintf(o->f, "%s\n", s);
}

/* Decimals that show a standard deviation sd with 3 significant digits, as perf's elapsed line does. */
static int spread_precision(double sd)
{
	int p;

	if (sd <= 0)
		return 9;
	p = 2 - (int)floor(log10(sd));
	return p < 0 ? 0 : p > 9 ? 9 : p;
}

void stat_format_print(const struct stat_output *o, const struct stat_event_result *ev, int n)
{
	if (o->sep) {
		for (int i = 0; i < n; i++)
			print_csv_line(o, ev, n, i);
		return;
	}
	fprintf(o->f, "\n Performance counter stats for %s", o->target);
	if (o->runs > 1)
		fprintf(o->f, " (%u runs)", o->runs);
	fprintf(o->f, ":\n\n");
	for (int i = 0; i < n; i++)
		print_table_line(o, ev, n, i);
	fprintf(o->f, "\n");
	if (o->runs > 1) {
		double sec = o->elapsed_ns.mean / 1e9, sd = stat_spread_stderr(&o->elapsed_ns) / 1e9;
		int p = spread_precision(sd);

		fprintf(o->f, "%18.*f +- %.*f seconds time elapsed  ( +- %5.2f%% )\n\n", p, sec, p, sd,
			stat_spread_rel(&o->elapsed_ns));
		return;
	}
	fprintf(o->f, "%18.9f seconds time elapsed\n\n", o->elapsed_ns.mean / 1e9);
	if (o->have_rusage)
		fprintf(o->f, "%18.9f seconds user\n%18.9f seconds sys\n\n", o->user_s, o->sys_s);
}

/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof top --vm SOCKET`: the hottest symbols of a running VM, guest and
 * host, redrawn every few seconds, as perf top shows a host's.
 *
 * It is kvmprof record's recording (record.c: the same host events, the
 * same guest sampler, the same rules for what is guest time) run in
 * windows of -d seconds. The sample stream goes to a memory file; after
 * each window the new records are read back through the sample-file reader
 * (every record checked, as the report's are) into one live profile, which
 * resolves only what is new (profile_update: symbol files stay open,
 * locations resolved once). Each refresh shows the last window's samples
 * alone (no decay): the table is what the VM did in those seconds. The
 * memory file's pages already read are given back (a hole punched), so a
 * long session holds one window's records at a time.
 */
#include "host_top.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "collection/emit.h"
#include "host_report.h"
#include "profile/profile.h"
#include "report/report_table.h"
#include "format/sample_file.h"

struct top {
	const struct host_top_opts *o;
	struct host_record_opts rec; /* o's, quiet, with top's keyboard check */
	struct host_recording *R;
	int fd;                 /* the memory file the recording writes */
	struct kp_reader *rd;   /* reading it back */
	struct profile *p;
	struct report_table t; /* the last window's */
	bool screen;            /* a terminal, redrawn in place; else plain blocks */
	bool tty_saved, quit, entered;
	struct termios saved;
	char warning[512];      /* the symbolizer's last word, shown under the table on screen */
	uint64_t lost_before;
};

static void on_warning(void *ctx, const char *msg)
{
	struct top *T = ctx;

	if (T->screen)
		snprintf(T->warning, sizeof(T->warning), "%s", msg);
	else
		fprintf(stderr, "kvmprof: %s\n", msg);
}

/* 'q' on the keyboard ends top (Ctrl-C does through the recording's signal handler). */
static bool key_quit(void *ctx)
{
	struct top *T = ctx;
	char c;

	if (T->quit || !T->tty_saved)
		return T->quit;
	while (read(0, &c, 1) == 1)
		if (c == 'q' || c == 'Q')
			T->quit = true;
	return T->quit;
}

/* The keyboard, key by key and without echo; the screen, the terminal's alternate one. */
static void screen_enter(struct top *T)
{
	struct termios raw;

	if (isatty(0) && !tcgetattr(0, &T->saved)) {
		raw = T->saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO); /* ISIG stays: Ctrl-C is SIGINT */
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		if (!tcsetattr(0, TCSANOW, &raw))
			T->tty_saved = true;
	}
	fputs("\033[?1049h\033[?25l", stdout);
	fflush(stdout);
	T->entered = true;
}

static void screen_leave(struct top *T)
{
	if (!T->entered)
		return;
	T->entered = false;
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	if (T->tty_saved)
		tcsetattr(0, TCSANOW, &T->saved);
	T->tty_saved = false;
}

/* Reads what the recording wrote since the last window into the profile. 0 or -errno (said). */
static int read_new_records(struct top *T)
{
	struct kp_writer *w = host_record_writer(T->R);
	struct kp_record rec;
	char err[512];
	struct stat st;
	int r = kp_writer_flush(w);

	if (!r && fstat(T->fd, &st))
		r = -errno;
	if (r) {
		fprintf(stderr, "kvmprof: top: the sample stream: %s\n", strerror(-r));
		return r;
	}
	if (!T->rd) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", T->fd);
		r = kp_reader_open(&T->rd, path, err, sizeof(err));
		if (r) {
			fprintf(stderr, "kvmprof: top: %s\n", err);
			return r;
		}
	}
	while (kp_reader_offset(T->rd) < (uint64_t)st.st_size) {
		r = kp_reader_next(T->rd, &rec, err, sizeof(err));
		if (r <= 0) {
			fprintf(stderr, "kvmprof: top: %s\n", r ? err : "the sample stream ended early");
			return r ? r : -EBADMSG;
		}
		r = profile_add_record(T->p, &rec);
		if (r) {
			fprintf(stderr, "kvmprof: top: %s\n", strerror(-r));
			return r;
		}
	}
	/* Read: the pages before the reader's place hold nothing needed again. */
	long page = sysconf(_SC_PAGESIZE);
	off_t done = (off_t)(kp_reader_offset(T->rd) / (uint64_t)page * (uint64_t)page);

	if (done > 0)
		fallocate(T->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, done);
	return 0;
}

static int terminal_rows(void)
{
	struct winsize ws;

	return !ioctl(1, TIOCGWINSZ, &ws) && ws.ws_row ? ws.ws_row : 24;
}

static size_t terminal_cols(void)
{
	struct winsize ws;

	return !ioctl(1, TIOCGWINSZ, &ws) && ws.ws_col ? ws.ws_col : 80;
}

/* One refresh: the window's table, a block of text or the whole screen. */
static int show(struct top *T, unsigned long refresh, double seconds)
{
	const struct report_table_options *o = &T->o->table;
	struct report_table_fit fit = { 0 };
	struct host_record_status st;
	const struct profile *p = T->p;
	size_t cols = T->screen ? terminal_cols() : 0, rows = T->t.nr;
	/* As the report: shares of all the window's samples, or with --percentage relative of those a filter kept. */
	uint64_t whole = report_table_whole(o, T->t.kept[0], p->nr_samples), lost;
	int rc;

	/* A terminal's width goes to the symbol first: narrower names, the image only where there is room. */
	if (T->screen) {
		fit.width = cols - 1;
		fit.cut = true;
		fit.no_sym_image = cols < 120;
		fit.process_width = cols >= 120 ? 28 : 22;
	}

	host_record_status(T->R, &st);
	lost = st.lost - T->lost_before;
	T->lost_before = st.lost;
	if (T->screen) {
		/*
		 * The lines around the rows: 4 of heading, the warning's, q's, one
		 * spare; the filter's and --percent-limit's when they are on. Rows
		 * the screen cuts off are not counted as --percent-limit's.
		 */
		int room = terminal_rows() - 7 - (report_filter_active(&o->filter) ? 1 : 0) - (o->percent_limit > 0 ? 1 : 0);
		size_t fit_rows = room > 0 ? (size_t)room : 0;

		fputs("\033[H\033[2J", stdout);
		if (report_table_shown(&T->t, 0, rows, whole, o) > fit_rows)
			rows = fit_rows;
	}
	printf("kvmprof top: refresh %lu, the last %.1f s (no decay): %zu samples, %" PRIu64 " lost\n", refresh,
	       seconds, p->nr_samples, lost);
	printf("event: %s, %" PRIu64 " %s\n", st.event, st.rate,
	       st.freq ? "Hz" : st.clock ? "ns per sample" : "events per sample");
	host_report_guest_sampling(stdout, st.guest_status);
	report_table_print_filter(stdout, o, T->t.kept[0], T->t.total[0]);
	rc = report_table_print_fit(stdout, p, &T->t, 0, rows, whole, o, REPORT_STYLE_HOST, &fit);
	if (T->screen) {
		if (T->warning[0])
			printf("%.*s\n", (int)(cols ? cols - 1 : 0), T->warning);
		printf("q or Ctrl-C quits");
	} else {
		fputc('\n', stdout);
	}
	fflush(stdout);
	return rc;
}

static int run(struct top *T)
{
	const struct host_top_opts *o = T->o;
	uint64_t delay_ns = (uint64_t)(o->delay * 1e9), start = emit_now_ns();
	unsigned long refresh = 0;
	int r;

	for (;;) {
		uint64_t end = start + delay_ns;

		r = host_record_window(T->R, end);
		if (r < 0)
			return 1;
		if (read_new_records(T))
			return 1;
		if (r == HOST_WINDOW_DONE) {
			int u = profile_update(T->p);

			if (!u) {
				report_table_free(&T->t);
				u = report_table_build(&T->t, T->p, &o->table);
			}
			if (!u)
				u = show(T, ++refresh, (double)(emit_now_ns() - start) / 1e9);
			if (u) {
				screen_leave(T);
				fprintf(stderr, "kvmprof: top: %s\n", strerror(-u));
				return 1;
			}
			profile_drop_samples(T->p);
			if (o->iterations && refresh >= o->iterations)
				return 0;
		}
		if (r == HOST_WINDOW_VM_GONE) {
			screen_leave(T);
			fprintf(stderr, "kvmprof: top: %s: nothing more to show\n", host_record_gone_why(T->R));
			return 0;
		}
		if (r == HOST_WINDOW_STOPPED)
			return 0;
		/* Windows follow each other; one that ended late (a slow terminal) does not make the next shorter. */
		start = emit_now_ns() > end + delay_ns / 10 ? emit_now_ns() : end;
	}
}

int host_top_run(const struct host_top_opts *o)
{
	static struct top T; /* holds the terminal's state for the way out */
	struct profile_options popt = { 0 };
	int r, status = 1;

	memset(&T, 0, sizeof(T));
	T.o = o;
	T.fd = -1;
	T.screen = !o->stdio && isatty(1);
	T.rec = o->rec;
	T.rec.rec.quiet = true;
	T.rec.no_exits = true; /* exits are for the report's cross-layer stacks, which top does not draw */
	T.rec.should_stop = key_quit;
	T.rec.should_stop_ctx = &T;
	if (host_record_open(&T.R, &T.rec))
		return 1;
	T.fd = memfd_create("kvmprof-top", MFD_CLOEXEC);
	if (T.fd < 0) {
		fprintf(stderr, "kvmprof: top: memfd_create: %s\n", strerror(errno));
		goto out;
	}
	popt.guest_root = o->guest_root;
	popt.guest_kernel_path = o->guest_kernel;
	popt.no_demangle = o->no_demangle;
	popt.warn = on_warning;
	popt.warn_ctx = &T;
	r = profile_new(&T.p, &popt);
	if (r) {
		fprintf(stderr, "kvmprof: top: %s\n", strerror(-r));
		goto out;
	}
	r = host_record_start(T.R, T.fd, "kvmprof top's sample stream");
	if (r)
		goto out;
	if (T.screen)
		screen_enter(&T);
	status = run(&T);
	screen_leave(&T);
	if (host_record_stop(T.R) && !status) {
		fprintf(stderr, "kvmprof: top: stopping the guest sampler failed\n");
		status = 1;
	}
out:
	screen_leave(&T);
	host_record_close(T.R);
	kp_reader_close(T.rd);
	profile_free(T.p);
	report_table_free(&T.t);
	if (T.fd >= 0)
		close(T.fd);
	return status;
}

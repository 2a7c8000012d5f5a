// SPDX-License-Identifier: MIT
/*
 * The vPMU event filter: KVM_SET_PMU_EVENT_FILTER semantics (an ALLOW or DENY
 * list of at most 300 event select + unit mask pairs, and a fixed-counter
 * bitmap that alone decides the fixed counters), read from a small text file
 * (docs/vpmu-filter.md). Event names are resolved with libpfm4.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfmon/pfmlib.h>

#include "vpmu.h"

#define FILTER_MAX_FILE (1u << 20)
#define FILTER_MAX_SELECT 0xfffu
#define FILTER_MAX_UMASK 0xffu
#define QUOTE_MAX 60 /* characters of the offending line quoted in a message */


/* One line being parsed: its number and text (without comment and line end), for messages. */
struct line {
	unsigned int no;
	char text[QUOTE_MAX + 4];
};

static void line_err(char *err, const struct line *l, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void line_err(char *err, const struct line *l, const char *fmt, ...)
{
	char what[VPMU_ERR_MAX];
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(err, VPMU_ERR_MAX, "line %u: '%s': %.*s", l->no, l->text, VPMU_ERR_MAX / 2, what);
}

/* Parses a non-negative number, hex with 0x or decimal; -ERANGE above max, -EINVAL if malformed. */
static int parse_number(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned long long v = 0;
	unsigned int base = 10;
	const char *p = s;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (!*p)
		return -EINVAL;
	for (; *p; p++) {
		unsigned int d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned int)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = (unsigned int)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			d = (unsigned int)(*p - 'A' + 10);
		else
			return -EINVAL;
		if (v > (ULLONG_MAX - d) / base)
			return -ERANGE;
		v = v * base + d;
	}
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* --- libpfm4 ------------------------------------------------------------- */

static int pfm_state; /* 0: not tried, 1: initialized, <0: pfm_initialize's error */

/*
 * Is there a hardware core PMU, not only perf_events' generic ones? Needs
 * libpfm4 initialized; event names resolve only when this is true.
 */
bool vpmu_filter_host_core_pmu(void)
{
	for (int p = 0; p < PFM_PMU_MAX; p++) {
		pfm_pmu_info_t pi;

		memset(&pi, 0, sizeof pi);
		pi.size = sizeof pi;
		if (pfm_get_pmu_info((pfm_pmu_t)p, &pi) == PFM_SUCCESS && pi.is_present &&
		    pi.type == PFM_PMU_TYPE_CORE)
			return true;
	}
	return false;
}

/*
 * Resolves a libpfm4 event name to event select and unit mask from its raw
 * code: bits 7:0 select, 15:8 unit mask, 35:32 AMD select bits 11:8.
 */
static int resolve_name(const char *name, const struct line *l, uint16_t *select, uint8_t *umask,
			char *err)
{
	pfm_pmu_encode_arg_t arg;
	pfm_event_info_t ei;
	pfm_pmu_info_t pi;
	uint64_t code;
	int r;

	if (!pfm_state) {
		r = pfm_initialize();
		pfm_state = r == PFM_SUCCESS ? 1 : (r < 0 ? r : -1);
	}
	if (pfm_state < 0) {
		line_err(err, l, "libpfm4 could not initialize (%s); use 'event SELECT [UMASK]'",
			 pfm_strerror(pfm_state));
		return -ENOTSUP;
	}
	memset(&arg, 0, sizeof arg);
	arg.size = sizeof arg;
	r = pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_NONE, &arg);
	if (r != PFM_SUCCESS) {
		free(arg.codes);
		if (r == PFM_ERR_NOTFOUND && !vpmu_filter_host_core_pmu()) {
			line_err(err, l,
				 "unknown event name: libpfm4 knows no hardware PMU of this host CPU "
				 "(set LIBPFM_FORCE_PMU, or use 'event SELECT [UMASK]')");
			return -ENOENT;
		}
		line_err(err, l, "libpfm4 cannot resolve '%.*s': %s", QUOTE_MAX, name, pfm_strerror(r));
		return r == PFM_ERR_NOTFOUND ? -ENOENT : -EINVAL;
	}
	code = arg.count > 0 ? arg.codes[0] : 0;
	free(arg.codes);
	if (arg.count < 1) {
		line_err(err, l, "libpfm4 gave no event code for '%.*s'", QUOTE_MAX, name);
		return -EINVAL;
	}
	/* Only a core PMU's code is an event select: perf's generic events are not. */
	memset(&ei, 0, sizeof ei);
	ei.size = sizeof ei;
	memset(&pi, 0, sizeof pi);
	pi.size = sizeof pi;
	if (pfm_get_event_info(arg.idx, PFM_OS_NONE, &ei) != PFM_SUCCESS ||
	    pfm_get_pmu_info(ei.pmu, &pi) != PFM_SUCCESS || pi.type != PFM_PMU_TYPE_CORE) {
		line_err(err, l,
			 "'%.*s' is not an event of a hardware core PMU (libpfm4 PMU '%s'); "
			 "use a core event name or 'event SELECT [UMASK]'",
			 QUOTE_MAX, name, pi.name ? pi.name : "?");
		return -EINVAL;
	}
	*select = (uint16_t)((code & 0xff) | ((code >> 32) & 0xf) << 8);
	*umask = (uint8_t)((code >> 8) & 0xff);
	return 0;
}

/* --- parser -------------------------------------------------------------- */

static int add_event(struct vpmu_filter *f, uint16_t select, uint8_t umask, const struct line *l,
		     char *err)
{
	for (unsigned int i = 0; i < f->nevents; i++)
		if (f->events[i].select == select && f->events[i].umask == umask)
			return 0; /* the same pair twice decides nothing new */
	if (f->nevents >= VPMU_FILTER_MAX_EVENTS) {
		line_err(err, l, "more than %d events (KVM's limit)", VPMU_FILTER_MAX_EVENTS);
		return -E2BIG;
	}
	f->events[f->nevents].select = select;
	f->events[f->nevents].umask = umask;
	f->nevents++;
	return 0;
}

#define MAX_TOKENS 4

static int parse_line(char *s, const struct line *l, struct vpmu_filter *f, bool *have_action,
		      bool *have_fixed, char *err)
{
	char *tok[MAX_TOKENS];
	char orig[QUOTE_MAX + 1];
	size_t off[MAX_TOKENS];
	unsigned long long v;
	unsigned int n = 0;
	int r;

	snprintf(orig, sizeof orig, "%s", s);
	for (char *p = s; *p;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		if (n == MAX_TOKENS) {
			line_err(err, l, "trailing '%.*s'", QUOTE_MAX, orig + off[MAX_TOKENS - 1]);
			return -EINVAL;
		}
		off[n] = (size_t)(p - s) < sizeof orig - 1 ? (size_t)(p - s) : sizeof orig - 1;
		tok[n++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (*p)
			*p++ = '\0';
	}
	if (!n)
		return 0;
#define TRAILING(k) line_err(err, l, "trailing '%s'", orig + off[k])

	if (!strcasecmp(tok[0], "action")) {
		if (n < 2) {
			line_err(err, l, "'action' needs 'allow' or 'deny'");
			return -EINVAL;
		}
		if (n > 2) {
			TRAILING(2);
			return -EINVAL;
		}
		if (*have_action) {
			line_err(err, l, "duplicate 'action'");
			return -EINVAL;
		}
		if (!strcasecmp(tok[1], "allow"))
			f->action = VPMU_FILTER_ALLOW;
		else if (!strcasecmp(tok[1], "deny"))
			f->action = VPMU_FILTER_DENY;
		else {
			line_err(err, l, "action '%.24s' is neither 'allow' nor 'deny'", tok[1]);
			return -EINVAL;
		}
		*have_action = true;
		return 0;
	}

	if (!strcasecmp(tok[0], "event")) {
		uint16_t select;
		uint8_t umask = 0;

		if (n < 2) {
			line_err(err, l, "'event' needs SELECT [UMASK] or a libpfm4 event name");
			return -EINVAL;
		}
		if (isdigit((unsigned char)tok[1][0])) {
			r = parse_number(tok[1], FILTER_MAX_SELECT, &v);
			if (r == -ERANGE) {
				line_err(err, l, "event select above 0xfff");
				return -ERANGE;
			}
			if (r) {
				line_err(err, l, "bad event select '%.24s' (hex 0x.. or decimal)", tok[1]);
				return r;
			}
			select = (uint16_t)v;
			if (n > 2) {
				r = parse_number(tok[2], FILTER_MAX_UMASK, &v);
				if (r == -ERANGE) {
					line_err(err, l, "unit mask above 0xff");
					return -ERANGE;
				}
				if (r) {
					line_err(err, l, "bad unit mask '%.24s' (hex 0x.. or decimal)", tok[2]);
					return r;
				}
				umask = (uint8_t)v;
			}
			if (n > 3) {
				TRAILING(3);
				return -EINVAL;
			}
		} else {
			if (n > 2) {
				line_err(err, l,
					 "trailing '%s' (a libpfm4 name takes no UMASK: write NAME:UMASK)",
					 orig + off[2]);
				return -EINVAL;
			}
			r = resolve_name(tok[1], l, &select, &umask, err);
			if (r)
				return r;
		}
		return add_event(f, select, umask, l, err);
	}

	if (!strcasecmp(tok[0], "fixed")) {
		if (n < 2) {
			line_err(err, l, "'fixed' needs a BITMAP");
			return -EINVAL;
		}
		if (n > 2) {
			TRAILING(2);
			return -EINVAL;
		}
		if (*have_fixed) {
			line_err(err, l, "duplicate 'fixed'");
			return -EINVAL;
		}
		r = parse_number(tok[1], UINT32_MAX, &v);
		if (r == -EINVAL) {
			line_err(err, l, "bad bitmap '%.24s' (hex 0x.. or decimal)", tok[1]);
			return r;
		}
		if (r || v >> VPMU_MAX_FIXED) {
			line_err(err, l, "bitmap names fixed counters above %d", VPMU_MAX_FIXED - 1);
			return -ERANGE;
		}
		f->fixed_bitmap = (uint32_t)v;
		*have_fixed = true;
		return 0;
	}

	line_err(err, l, "unknown keyword '%.*s' (expected action, event or fixed)", QUOTE_MAX, tok[0]);
	return -EINVAL;
#undef TRAILING
}

int vpmu_filter_parse(const char *text, size_t len, struct vpmu_filter *f, char err[VPMU_ERR_MAX])
{
	struct vpmu_filter nf;
	bool have_action = false, have_fixed = false;
	unsigned int no = 0;
	size_t pos = 0;
	char *buf;
	int r = 0;

	if (!f || (!text && len)) {
		vpmu_set_err(err, "no filter");
		return -EINVAL;
	}
	memset(&nf, 0, sizeof nf);
	buf = malloc(len + 1);
	if (!buf) {
		vpmu_set_err(err, "out of memory");
		return -ENOMEM;
	}
	while (pos < len) {
		struct line l = { 0 };
		size_t end = pos, n;
		char *s, *hash;

		l.no = ++no;

		while (end < len && text[end] != '\n')
			end++;
		n = end - pos;
		memcpy(buf, text + pos, n);
		buf[n] = '\0';
		pos = end + 1;
		if (strlen(buf) != n) {
			snprintf(l.text, sizeof l.text, "%.*s", QUOTE_MAX, buf);
			line_err(err, &l, "NUL byte in the line");
			r = -EINVAL;
			break;
		}
		if (n && buf[n - 1] == '\r')
			buf[--n] = '\0';
		hash = strchr(buf, '#');
		if (hash)
			*hash = '\0';
		s = buf;
		while (*s == ' ' || *s == '\t')
			s++;
		for (n = strlen(s); n && (s[n - 1] == ' ' || s[n - 1] == '\t');)
			s[--n] = '\0';
		if (n > QUOTE_MAX)
			snprintf(l.text, sizeof l.text, "%.*s...", QUOTE_MAX, s);
		else
			snprintf(l.text, sizeof l.text, "%s", s);
		for (size_t i = 0; i < n && !r; i++) {
			if (!isprint((unsigned char)s[i]) && s[i] != '\t') {
				snprintf(l.text, sizeof l.text, "%.*s", (int)(i < QUOTE_MAX ? i : QUOTE_MAX), s);
				line_err(err, &l, "unprintable byte 0x%02x", (unsigned char)s[i]);
				r = -EINVAL;
			}
		}
		if (r)
			break;
		r = parse_line(s, &l, &nf, &have_action, &have_fixed, err);
		if (r)
			break;
	}
	free(buf);
	if (r)
		return r;
	if (!have_action) {
		vpmu_set_err(err, "no 'action allow' or 'action deny' line (one is required)");
		return -EINVAL;
	}
	*f = nf;
	return 0;
}

int vpmu_filter_load(const char *path, struct vpmu_filter *f, char err[VPMU_ERR_MAX])
{
	char perr[VPMU_ERR_MAX];
	struct stat st;
	char *text;
	size_t len = 0;
	int fd, r;

	/* O_NONBLOCK: a FIFO or a device must be refused below, not block the open. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		vpmu_set_err(err, "%s: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st)) {
		r = -errno;
		vpmu_set_err(err, "%s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		vpmu_set_err(err, "%s: not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	if (st.st_size > FILTER_MAX_FILE) {
		vpmu_set_err(err, "%s: larger than %u bytes, not a filter file", path, FILTER_MAX_FILE);
		close(fd);
		return -EFBIG;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		close(fd);
		vpmu_set_err(err, "%s: out of memory", path);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n = read(fd, text + len, (size_t)st.st_size + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			vpmu_set_err(err, "%s: %s", path, strerror(-r));
			free(text);
			close(fd);
			return r;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > (size_t)st.st_size) {
			vpmu_set_err(err, "%s: file grew while being read", path);
			free(text);
			close(fd);
			return -EAGAIN;
		}
	}
	close(fd);
	r = vpmu_filter_parse(text, len, f, perr);
	free(text);
	if (r)
		vpmu_set_err(err, "%s: %s", path, perr);
	return r;
}

/* KVM: a listed event counts under ALLOW only; an unlisted one under DENY only. */
bool vpmu_filter_allows_event(const struct vpmu_filter *f, uint16_t select, uint8_t umask)
{
	bool listed = false;

	if (!f)
		return true;
	for (unsigned int i = 0; i < f->nevents && !listed; i++)
		listed = f->events[i].select == select && f->events[i].umask == umask;
	return listed == (f->action == VPMU_FILTER_ALLOW);
}

/* KVM: the bitmap alone decides; a set bit allows under ALLOW and denies under DENY. */
bool vpmu_filter_allows_fixed(const struct vpmu_filter *f, unsigned int fixed_idx)
{
	bool set;

	if (!f)
		return true;
	set = fixed_idx < 32 && (f->fixed_bitmap >> fixed_idx) & 1;
	return set == (f->action == VPMU_FILTER_ALLOW);
}

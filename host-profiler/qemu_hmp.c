/* SPDX-License-Identifier: MIT */
#include "qemu_hmp.h"

#include <errno.h>
#include <string.h>

/*
 * Hex digits at s (at most 16) ended by stop (a space also ends at a line
 * or string end): the value in *v, *end (if asked) at the stop.
 */
static bool hex_until(const char *s, char stop, uint64_t *v, const char **end)
{
	uint64_t x = 0;
	int n = 0;

	for (; n < 17; n++, s++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		x = x << 4 | (uint64_t)d;
	}
	if (n == 0 || n > 16 || (*s != stop && !(stop == ' ' && (!*s || *s == '\n' || *s == '\r'))))
		return false;
	*v = x;
	if (end)
		*end = s;
	return true;
}

static bool hex_field(const char *s, uint64_t *v, const char **end)
{
	return hex_until(s, ' ', v, end);
}

/* The line at s: its end without the "\r\n" or "\n" (HMP through QMP ends lines with CRLF), and the next line. */
static const char *line_end(const char *s, const char **next)
{
	const char *end = strchr(s, '\n');

	if (!end)
		end = s + strlen(s);
	*next = *end ? end + 1 : end;
	if (end > s && end[-1] == '\r')
		end--;
	return end;
}

/* The line [s, end) has "KEY=" at its start or after a space: the value's start, or NULL. */
static const char *key_in_line(const char *s, const char *end, const char *key)
{
	size_t k = strlen(key);

	for (const char *p = s; p + k <= end; p++)
		if ((p == s || p[-1] == ' ') && !memcmp(p, key, k))
			return p + k;
	return NULL;
}

enum {
	R_RIP = 1 << 0, R_RSP = 1 << 1, R_RBP = 1 << 2, R_CR0 = 1 << 3, R_CR3 = 1 << 4,
	R_CR4 = 1 << 5, R_EFER = 1 << 6, R_CPL = 1 << 7, R_TR = 1 << 8,
	R_ALL = (1 << 9) - 1,
};

static const struct {
	const char *key;
	unsigned int bit;
	size_t off;
} reg_keys[] = {
	{ "RIP=", R_RIP, offsetof(struct qemu_vcpu_regs, rip) },
	{ "RSP=", R_RSP, offsetof(struct qemu_vcpu_regs, rsp) },
	{ "RBP=", R_RBP, offsetof(struct qemu_vcpu_regs, rbp) },
	{ "CR0=", R_CR0, offsetof(struct qemu_vcpu_regs, cr0) },
	{ "CR3=", R_CR3, offsetof(struct qemu_vcpu_regs, cr3) },
	{ "CR4=", R_CR4, offsetof(struct qemu_vcpu_regs, cr4) },
	{ "EFER=", R_EFER, offsetof(struct qemu_vcpu_regs, efer) },
};

/* One line of a vCPU's dump into r; the fields it carried are added to *seen. */
static void regs_line(const char *s, const char *end, struct qemu_vcpu_regs *r, unsigned int *seen)
{
	const char *v;
	uint64_t x;

	for (size_t i = 0; i < sizeof(reg_keys) / sizeof(reg_keys[0]); i++)
		if ((v = key_in_line(s, end, reg_keys[i].key)) && hex_field(v, &x, NULL)) {
			memcpy((char *)r + reg_keys[i].off, &x, sizeof(x));
			*seen |= reg_keys[i].bit;
		}
	if ((v = key_in_line(s, end, "CPL=")) && v < end && *v >= '0' && *v <= '3' && (v + 1 == end || v[1] == ' ')) {
		r->cpl = (uint8_t)(*v - '0');
		*seen |= R_CPL;
	}
	if ((v = key_in_line(s, end, "HLT=")) && v < end)
		r->halted = *v == '1';
	/* "TR =0028 00000000001e0024 00000067 00008b00 ...": selector, then the base. */
	if (end - s > 4 && !memcmp(s, "TR =", 4) && hex_field(s + 4, &x, &v) && *v == ' ' &&
	    hex_field(v + 1, &r->tr_base, NULL))
		*seen |= R_TR;
	/* "IDT=     fffffe0000000000 00000fff": base, then limit (not needed for a sample: no R_ bit). */
	if (end - s > 4 && !memcmp(s, "IDT=", 4)) {
		const char *p = s + 4;
		uint64_t base, limit;

		while (p < end && *p == ' ')
			p++;
		if (hex_field(p, &base, &v) && *v == ' ' && hex_field(v + 1, &limit, NULL) && limit <= 0xffff) {
			r->idt_base = base;
			r->idt_limit = (uint16_t)limit;
		}
	}
}

int qemu_hmp_parse_registers(const char *text, struct qemu_vcpu_regs *out, int max)
{
	struct qemu_vcpu_regs cur;
	unsigned int seen = 0;
	bool in_cpu = false;
	int n = 0;

	memset(&cur, 0, sizeof(cur));
	/* A dump without "CPU#" lines is one vCPU's, numbered 0. */
	in_cpu = !strstr(text, "CPU#");
	for (const char *s = text, *next; *s && n < max; s = next) {
		const char *end = line_end(s, &next);

		if (end - s > 4 && !memcmp(s, "CPU#", 4)) {
			uint64_t id = 0;
			const char *p = s + 4;

			if (in_cpu && seen == R_ALL)
				out[n++] = cur;
			memset(&cur, 0, sizeof(cur));
			seen = 0;
			in_cpu = false;
			while (p < end && *p >= '0' && *p <= '9' && id < QEMU_HMP_MAX_VCPUS * 16)
				id = id * 10 + (uint64_t)(*p++ - '0');
			if (p > s + 4 && p == end && id < 4096) {
				cur.cpu = (unsigned int)id;
				in_cpu = true;
			}
		} else if (in_cpu) {
			regs_line(s, end, &cur, &seen);
		}
	}
	if (in_cpu && seen == R_ALL && n < max)
		out[n++] = cur;
	return n ? n : -EBADMSG;
}

/* "  START-END (prio N, TYPE): NAME ...": 1 for a ram/rom range (filled in), 0 another kind, -1 malformed. */
static int mtree_range(const char *s, const char *end, struct qemu_ram_range *r)
{
	uint64_t start, last;
	const char *p, *type, *name;
	size_t n;

	while (s < end && *s == ' ')
		s++;
	if (!hex_until(s, '-', &start, &p) || !hex_until(p + 1, ' ', &last, &p) || last < start)
		return -1;
	if (end - p < 8 || memcmp(p, " (prio ", 7))
		return -1;
	type = memchr(p, ',', (size_t)(end - p));
	name = type ? memchr(type, ')', (size_t)(end - type)) : NULL;
	if (!name || end - name < 3 || memcmp(name, "): ", 3))
		return -1;
	type += 2; /* ", " */
	if (!((name - type == 3 && !memcmp(type, "ram", 3)) || (name - type == 3 && !memcmp(type, "rom", 3))))
		return 0;
	name += 3;
	for (n = 0; name + n < end && name[n] != ' '; n++)
		;
	if (!n)
		return -1;
	if (n >= sizeof(r->name))
		n = sizeof(r->name) - 1;
	memcpy(r->name, name, n);
	r->name[n] = 0;
	r->gpa = start;
	r->size = last - start + 1; /* last < 2^64 - 1 for any range QEMU has: a wrap is 0 and refused */
	r->hva = 0;
	return r->size ? 1 : -1;
}

int qemu_hmp_parse_mtree(const char *text, struct qemu_ram_range *out, int max)
{
	bool in_view = false, memory_view = false, found = false;
	int n = 0;

	for (const char *s = text, *next; *s; s = next) {
		const char *end = line_end(s, &next);

		if (!strncmp(s, "FlatView #", 10)) {
			if (memory_view)
				break; /* the view of "memory" is complete */
			in_view = true;
		} else if (in_view && (size_t)(end - s) >= 13 && !memcmp(s, " AS \"memory\",", 13)) {
			memory_view = found = true;
		} else if (memory_view && end - s > 2 && s[0] == ' ' && s[1] == ' ') {
			struct qemu_ram_range r;
			int k = mtree_range(s, end, &r);

			if (k < 0)
				return -EBADMSG;
			if (k > 0) {
				if (n && r.gpa < out[n - 1].gpa + out[n - 1].size)
					return -EBADMSG; /* overlapping or out of order: not a flat view */
				if (n == max)
					return -EBADMSG;
				out[n++] = r;
			}
		}
	}
	return found && n ? n : -EBADMSG;
}

int qemu_hmp_parse_gpa2hva(const char *text, uint64_t *hva)
{
	const char *p = strstr(text, " is 0x");

	if (strncmp(text, "Host virtual address for ", 25) || !p || !hex_field(p + 6, hva, NULL) || !*hva)
		return -EBADMSG;
	return 0;
}

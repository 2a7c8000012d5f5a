/* SPDX-License-Identifier: MIT */
#include "acpi_tables.h"

#define SDT_HEADER 36
#define RSDP_V1_LEN 20
#define RSDP_V2_LEN 36
#define ROOT_ENTRIES_MAX 64
/* FADT fields (ACPI 6.x, table 5.9), by byte offset. */
#define FADT_DSDT 40
#define FADT_PM1A_CNT 64
#define FADT_PM1B_CNT 68
#define FADT_X_DSDT 140
#define FADT_X_PM1A_CNT 172
#define FADT_X_PM1B_CNT 184
#define GAS_SIZE 12
#define GAS_SYSTEM_IO 1
/* AML opcodes (ACPI 6.x, section 20). */
#define AML_NAME_OP 0x08
#define AML_ROOT_CHAR 0x5c
#define AML_PACKAGE_OP 0x12
#define AML_ZERO_OP 0x00
#define AML_ONE_OP 0x01
#define AML_BYTE_PREFIX 0x0a

static uint8_t sum8(const uint8_t *p, uint64_t len)
{
	uint8_t s = 0;

	for (uint64_t i = 0; i < len; i++)
		s = (uint8_t)(s + p[i]);
	return s;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int same(const uint8_t *p, const char *s, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (p[i] != (uint8_t)s[i])
			return 0;
	return 1;
}

static const uint8_t *rsdp_at(const struct acpi_phys *m, uint64_t pa)
{
	const uint8_t *p = m->map(m->ctx, pa, RSDP_V1_LEN);

	if (!p || !same(p, "RSD PTR ", 8) || sum8(p, RSDP_V1_LEN))
		return 0;
	if (p[15] >= 2) {
		const uint8_t *x = m->map(m->ctx, pa, RSDP_V2_LEN);
		uint32_t len = x ? le32(x + 20) : 0;

		if (!x || len < RSDP_V2_LEN || len > 4096 || !(x = m->map(m->ctx, pa, len)) || sum8(x, len))
			return 0;
		return x;
	}
	return p;
}

static const uint8_t *rsdp_search(const struct acpi_phys *m, uint64_t start, uint64_t len)
{
	for (uint64_t pa = start; pa + RSDP_V1_LEN <= start + len; pa += 16) {
		const uint8_t *p = rsdp_at(m, pa);

		if (p)
			return p;
	}
	return 0;
}

/* The table at pa with signature sig (0: any), its length checked and checksummed; 0 if not. */
static const uint8_t *sdt_at(const struct acpi_phys *m, uint64_t pa, const char *sig, uint32_t *len)
{
	const uint8_t *h = pa ? m->map(m->ctx, pa, SDT_HEADER) : 0;

	if (!h || (sig && !same(h, sig, 4)))
		return 0;
	*len = le32(h + 4);
	if (*len < SDT_HEADER || *len > ACPI_TABLE_MAX)
		return 0;
	h = m->map(m->ctx, pa, *len);
	return h && !sum8(h, *len) ? h : 0;
}

/* A control port: the 32-bit legacy field, else the extended one if the table reaches it and it is I/O. */
static uint16_t fadt_port(const uint8_t *fadt, uint32_t len, unsigned int legacy, unsigned int x)
{
	uint64_t port = len >= legacy + 4 ? le32(fadt + legacy) : 0;

	if (!port && len >= x + GAS_SIZE && fadt[x] == GAS_SYSTEM_IO)
		port = le64(fadt + x + 4);
	return port <= 0xffff ? (uint16_t)port : 0;
}

/* Package element i of aml[0, len) at *pos: an integer 0-7 (advancing *pos), or -1 if it is anything else. */
static int aml_small_int(const uint8_t *aml, uint64_t len, uint64_t *pos)
{
	uint64_t i = *pos;

	if (i < len && (aml[i] == AML_ZERO_OP || aml[i] == AML_ONE_OP)) {
		*pos = i + 1;
		return aml[i];
	}
	if (i + 1 < len && aml[i] == AML_BYTE_PREFIX && aml[i + 1] <= 7) {
		*pos = i + 2;
		return aml[i + 1];
	}
	return -1;
}

/* Name (_S5_, Package () { a, b, ... }) anywhere in aml[0, len): its first two elements. */
static int dsdt_s5(const uint8_t *aml, uint64_t len, struct acpi_poweroff *out)
{
	for (uint64_t i = 1; i + 6 <= len; i++) {
		uint64_t pos;
		uint8_t nelem;
		int a, b;

		if (!same(aml + i, "_S5_", 4) || aml[i + 4] != AML_PACKAGE_OP)
			continue;
		if (aml[i - 1] != AML_NAME_OP && !(aml[i - 1] == AML_ROOT_CHAR && i >= 2 && aml[i - 2] == AML_NAME_OP))
			continue;
		pos = i + 5;
		pos += 1 + (aml[pos] >> 6); /* PkgLength: its lead byte says how many bytes follow */
		if (pos >= len || !(nelem = aml[pos++]))
			continue;
		a = aml_small_int(aml, len, &pos);
		if (a < 0)
			continue;
		b = nelem >= 2 ? aml_small_int(aml, len, &pos) : a;
		out->slp_typa = (uint8_t)a;
		out->slp_typb = (uint8_t)(b < 0 ? a : b);
		return 0;
	}
	return -1;
}

int acpi_find_poweroff(const struct acpi_phys *m, uint64_t rsdp_pa, struct acpi_poweroff *out, const char **why)
{
	const uint8_t *rsdp, *root, *fadt = 0, *dsdt, *ebda_seg;
	uint32_t root_len, fadt_len = 0, dsdt_len, esize;
	uint64_t dsdt_pa = 0;
	int xsdt;

	out->pm1a_cnt = out->pm1b_cnt = 0;
	out->slp_typa = out->slp_typb = 0;
	if (rsdp_pa) {
		rsdp = rsdp_at(m, rsdp_pa);
	} else {
		ebda_seg = m->map(m->ctx, 0x40e, 2);
		rsdp = ebda_seg ? rsdp_search(m, (uint64_t)(ebda_seg[0] | ebda_seg[1] << 8) << 4, 1024) : 0;
		if (!rsdp)
			rsdp = rsdp_search(m, 0xe0000, 0x20000);
	}
	if (!rsdp) {
		*why = "no valid RSDP";
		return -1;
	}
	xsdt = rsdp[15] >= 2 && le64(rsdp + 24);
	root = xsdt ? sdt_at(m, le64(rsdp + 24), "XSDT", &root_len) : sdt_at(m, le32(rsdp + 16), "RSDT", &root_len);
	if (!root) {
		*why = xsdt ? "XSDT unreadable or corrupt" : "RSDT unreadable or corrupt";
		return -1;
	}
	esize = xsdt ? 8 : 4;
	for (uint32_t i = 0; i < (root_len - SDT_HEADER) / esize && i < ROOT_ENTRIES_MAX && !fadt; i++) {
		const uint8_t *e = root + SDT_HEADER + i * esize;

		fadt = sdt_at(m, xsdt ? le64(e) : le32(e), "FACP", &fadt_len);
	}
	if (!fadt) {
		*why = "no valid FADT";
		return -1;
	}
	out->pm1a_cnt = fadt_port(fadt, fadt_len, FADT_PM1A_CNT, FADT_X_PM1A_CNT);
	out->pm1b_cnt = fadt_port(fadt, fadt_len, FADT_PM1B_CNT, FADT_X_PM1B_CNT);
	if (!out->pm1a_cnt) {
		*why = "the FADT has no PM1a control block";
		return -1;
	}
	if (fadt_len >= FADT_X_DSDT + 8)
		dsdt_pa = le64(fadt + FADT_X_DSDT);
	if (!dsdt_pa && fadt_len >= FADT_DSDT + 4)
		dsdt_pa = le32(fadt + FADT_DSDT);
	dsdt = sdt_at(m, dsdt_pa, "DSDT", &dsdt_len);
	if (!dsdt) {
		*why = "DSDT unreadable or corrupt";
		return -1;
	}
	if (dsdt_s5(dsdt + SDT_HEADER, dsdt_len - SDT_HEADER, out)) {
		*why = "no \\_S5 package in the DSDT";
		return -1;
	}
	return 0;
}

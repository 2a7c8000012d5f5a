// SPDX-License-Identifier: MIT
/*
 * The bundled guest's ACPI power-off lookup (guest/kernel/acpi_tables.c) on
 * kvmprof-vmm's own tables (vmm/acpi.c), on tables laid out as QEMU's pc
 * machine lays them out (RSDP revision 0, RSDT, \_S5 with Zero elements),
 * and on broken or hostile ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "acpi.h"
#include "acpi_tables.h"
#include "kvmprof/platform.h"

#define MEM_SIZE (2u << 20)

static uint8_t *mem;

static const void *map(void *ctx, uint64_t pa, uint64_t len)
{
	(void)ctx;
	return pa < MEM_SIZE && len <= MEM_SIZE - pa ? mem + pa : NULL;
}

static const struct acpi_phys phys = { .map = map };

static int setup(void **state)
{
	(void)state;
	mem = calloc(1, MEM_SIZE);
	return mem ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(mem);
	return 0;
}

static void put32(uint64_t pa, uint32_t v)
{
	memcpy(mem + pa, &v, 4);
}

static void fix_sum(uint64_t pa, uint32_t len, unsigned int sum_off)
{
	uint8_t s = 0;

	mem[pa + sum_off] = 0;
	for (uint32_t i = 0; i < len; i++)
		s = (uint8_t)(s + mem[pa + i]);
	mem[pa + sum_off] = (uint8_t)-s;
}

static void sdt(uint64_t pa, const char *sig, uint32_t len)
{
	memcpy(mem + pa, sig, 4);
	put32(pa + 4, len);
	fix_sum(pa, len, 9);
}

/* QEMU pc's shape: RSDP rev 0 at 0xf5000 -> RSDT -> FACP (rev 1, 116 bytes) -> DSDT with \_S5. */
#define Q_RSDP 0xf5000u
#define Q_RSDT 0x100000u
#define Q_FADT 0x100100u
#define Q_DSDT 0x100200u

static void qemu_tables(const uint8_t *aml, uint32_t aml_len)
{
	memcpy(mem + Q_RSDP, "RSD PTR ", 8);
	put32(Q_RSDP + 16, Q_RSDT);
	fix_sum(Q_RSDP, 20, 8);
	put32(Q_RSDT + 36, Q_FADT);
	sdt(Q_RSDT, "RSDT", 40);
	put32(Q_FADT + 40, Q_DSDT);
	put32(Q_FADT + 56, 0x600);
	put32(Q_FADT + 64, 0x604);
	sdt(Q_FADT, "FACP", 116);
	memcpy(mem + Q_DSDT + 36, aml, aml_len);
	sdt(Q_DSDT, "DSDT", 36 + aml_len);
}

/* QEMU's \_S5: Name (\_S5, Package (0x04) { Zero, Zero, Zero, Zero }) after other AML. */
static const uint8_t qemu_aml[] = { 0x10, 0x05, '_', 'S', 'B', '_', 0x5b, /* junk before */
				    0x08, 0x5c, '_', 'S', '5', '_', 0x12, 0x06, 0x04, 0x00, 0x00, 0x00, 0x00 };

static void test_vmm_tables(void **state)
{
	struct guest_mem gm = { mem, MEM_SIZE };
	struct acpi_poweroff off;
	const char *why = NULL;

	(void)state;
	assert_int_equal(acpi_write_tables(&gm, 2), 0);
	/* Through the start info's pointer, and by the firmware-area search. */
	assert_int_equal(acpi_find_poweroff(&phys, KVMPROF_ACPI_ADDR, &off, &why), 0);
	assert_int_equal(off.pm1a_cnt, KVMPROF_ACPI_PM1A_CNT_PORT);
	assert_int_equal(off.pm1b_cnt, 0);
	assert_int_equal(off.slp_typa, KVMPROF_ACPI_S5_TYPE);
	memset(&off, 0, sizeof(off));
	assert_int_equal(acpi_find_poweroff(&phys, 0, &off, &why), 0);
	assert_int_equal(off.pm1a_cnt, KVMPROF_ACPI_PM1A_CNT_PORT);
	assert_int_equal(off.slp_typa, KVMPROF_ACPI_S5_TYPE);
}

static void test_qemu_shaped_tables(void **state)
{
	struct acpi_poweroff off;
	const char *why = NULL;

	(void)state;
	qemu_tables(qemu_aml, sizeof(qemu_aml));
	assert_int_equal(acpi_find_poweroff(&phys, 0, &off, &why), 0);
	assert_int_equal(off.pm1a_cnt, 0x604);
	assert_int_equal(off.slp_typa, 0);
	assert_int_equal(off.slp_typb, 0);
}

static void test_rsdp_in_the_ebda(void **state)
{
	struct acpi_poweroff off;
	const char *why = NULL;

	(void)state;
	qemu_tables(qemu_aml, sizeof(qemu_aml));
	memmove(mem + 0x9fc00, mem + Q_RSDP, 20);
	memset(mem + Q_RSDP, 0, 20);
	mem[0x40e] = 0xc0; /* segment 0x9fc0 */
	mem[0x40f] = 0x9f;
	assert_int_equal(acpi_find_poweroff(&phys, 0, &off, &why), 0);
	assert_int_equal(off.pm1a_cnt, 0x604);
}

static void test_extended_control_block(void **state)
{
	struct acpi_poweroff off;
	const char *why = NULL;
	uint8_t gas[12] = { 1, 16, 0, 2, 0x04, 0xb0 }; /* system I/O, port 0xb004 */

	(void)state;
	qemu_tables(qemu_aml, sizeof(qemu_aml));
	put32(Q_FADT + 64, 0);
	memcpy(mem + Q_FADT + 172, gas, sizeof(gas));
	sdt(Q_FADT, "FACP", 244);
	assert_int_equal(acpi_find_poweroff(&phys, Q_RSDP, &off, &why), 0);
	assert_int_equal(off.pm1a_cnt, 0xb004);
	/* A memory-space block is not a port. */
	mem[Q_FADT + 172] = 0;
	sdt(Q_FADT, "FACP", 244);
	assert_int_equal(acpi_find_poweroff(&phys, Q_RSDP, &off, &why), -1);
	assert_string_equal(why, "the FADT has no PM1a control block");
}

static void expect_refusal(const char *reason)
{
	struct acpi_poweroff off;
	const char *why = NULL;

	assert_int_equal(acpi_find_poweroff(&phys, 0, &off, &why), -1);
	assert_string_equal(why, reason);
}

static void test_broken_tables(void **state)
{
	(void)state;
	expect_refusal("no valid RSDP");
	qemu_tables(qemu_aml, sizeof(qemu_aml));
	mem[Q_RSDP + 10] ^= 1; /* checksum off */
	expect_refusal("no valid RSDP");

	qemu_tables(qemu_aml, sizeof(qemu_aml));
	put32(Q_RSDT + 4, 0xffffffff); /* a length past everything */
	expect_refusal("RSDT unreadable or corrupt");

	qemu_tables(qemu_aml, sizeof(qemu_aml));
	put32(Q_RSDT + 36, MEM_SIZE - 8); /* the FADT pointer at the end of memory */
	sdt(Q_RSDT, "RSDT", 40);
	expect_refusal("no valid FADT");

	qemu_tables(qemu_aml, sizeof(qemu_aml));
	put32(Q_FADT + 40, 0);
	sdt(Q_FADT, "FACP", 116);
	expect_refusal("DSDT unreadable or corrupt");

	qemu_tables(qemu_aml, sizeof(qemu_aml));
	mem[Q_DSDT + 36 + 10] = 'X'; /* _S5_ becomes _SX_ */
	sdt(Q_DSDT, "DSDT", 36 + sizeof(qemu_aml));
	expect_refusal("no \\_S5 package in the DSDT");
}

static void test_hostile_aml(void **state)
{
	/* A package cut off after its PkgLength, an element that is not a small integer, a name without NameOp. */
	static const uint8_t cut[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x46 };
	static const uint8_t wordconst[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x07, 0x02, 0x0b, 0x05, 0x00, 0x00 };
	static const uint8_t noname[] = { 0x00, '_', 'S', '5', '_', 0x12, 0x04, 0x01, 0x0a, 0x05 };
	static const uint8_t empty[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x02, 0x00 };
	/* The first good \_S5 wins, a second package element of its own. */
	static const uint8_t two[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x02, 0x0a, 0x05, 0x0a, 0x06 };
	struct acpi_poweroff off;
	const char *why = NULL;

	(void)state;
	qemu_tables(cut, sizeof(cut));
	expect_refusal("no \\_S5 package in the DSDT");
	qemu_tables(wordconst, sizeof(wordconst));
	expect_refusal("no \\_S5 package in the DSDT");
	qemu_tables(noname, sizeof(noname));
	expect_refusal("no \\_S5 package in the DSDT");
	qemu_tables(empty, sizeof(empty));
	expect_refusal("no \\_S5 package in the DSDT");
	qemu_tables(two, sizeof(two));
	assert_int_equal(acpi_find_poweroff(&phys, 0, &off, &why), 0);
	assert_int_equal(off.slp_typa, 5);
	assert_int_equal(off.slp_typb, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_vmm_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qemu_shaped_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rsdp_in_the_ebda, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extended_control_block, setup, teardown),
		cmocka_unit_test_setup_teardown(test_broken_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_aml, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

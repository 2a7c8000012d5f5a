// SPDX-License-Identifier: MIT
/*
 * The parsers of QEMU's monitor replies (host-profiler/qemu_hmp.c): on
 * QEMU 7.2's own output, captured from libvirt domains running the bundled
 * guest (tests/fixtures/qemu-7.2/: a pc machine under KVM, a q35 machine
 * with 4 GiB under TCG), and on text that is cut, garbled or lying.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "qemu_hmp.h"

static char *fixture(const char *name)
{
	char path[256], *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "tests/fixtures/qemu-7.2/%s", name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void test_registers_kvm_pc(void **state)
{
	struct qemu_vcpu_regs r[4];
	char *t = fixture("registers-pc-2cpu.txt");

	(void)state;
	assert_int_equal(qemu_hmp_parse_registers(t, r, 4), 2);
	/* vCPU 0 in matmul's loop (ring 3), vCPU 1 halted in the kernel's idle loop. */
	assert_int_equal(r[0].cpu, 0);
	assert_int_equal(r[0].rip, 0x400020fb);
	assert_int_equal(r[0].rsp, 0x7ffefef0);
	assert_int_equal(r[0].rbp, 0x7ffeff30);
	assert_int_equal(r[0].cpl, 3);
	assert_false(r[0].halted);
	assert_int_equal(r[0].cr0, 0x80010011);
	assert_int_equal(r[0].cr3, 0x222000);
	assert_int_equal(r[0].cr4, 0x20);
	assert_int_equal(r[0].efer, 0x500);
	assert_int_equal(r[0].tr_base, 0x1e0024);
	assert_int_equal(r[0].idt_base, 0x220010);
	assert_int_equal(r[0].idt_limit, 0xfff);
	assert_int_equal(r[1].cpu, 1);
	assert_int_equal(r[1].rip, 0x106718);
	assert_int_equal(r[1].cpl, 0);
	assert_true(r[1].halted);
	assert_int_equal(r[1].tr_base, 0x1e8024);
	/* Room for one: the first. */
	assert_int_equal(qemu_hmp_parse_registers(t, r, 1), 1);
	assert_int_equal(r[0].cpu, 0);
	free(t);
}

static void test_registers_tcg_q35(void **state)
{
	struct qemu_vcpu_regs r[4];
	char *t = fixture("registers-q35-tcg-2cpu.txt");

	(void)state;
	assert_int_equal(qemu_hmp_parse_registers(t, r, 4), 2);
	assert_int_equal(r[0].cpu, 0);
	assert_int_equal(r[1].cpu, 1);
	assert_int_equal(r[0].efer & 0x400, 0x400); /* long mode active */
	free(t);
}

static void test_registers_single_and_broken(void **state)
{
	struct qemu_vcpu_regs r[2];
	static const char one[] =
		"RAX=0000000000000000 RBX=0000000000000000\r\n"
		"RSI=0000000000000000 RDI=0000000000000000 RBP=0000000000001000 RSP=0000000000000ff0\r\n"
		"RIP=ffffffff81000000 RFL=00000002 [-------] CPL=0 II=0 A20=1 SMM=0 HLT=0\r\n"
		"TR =0040 fffffe0000003000 00004087 00008b00 DPL=0 TSS64-busy\r\n"
		"CR0=80050033 CR2=0000000000000000 CR3=0000000001234000 CR4=003506f0\r\n"
		"EFER=0000000000000d01\r\n";
	char buf[sizeof(one)];

	(void)state;
	/* A plain `info registers` (no "CPU#" line): one vCPU, numbered 0. */
	assert_int_equal(qemu_hmp_parse_registers(one, r, 2), 1);
	assert_int_equal(r[0].cpu, 0);
	assert_int_equal(r[0].rip, 0xffffffff81000000ULL);
	assert_int_equal(r[0].tr_base, 0xfffffe0000003000ULL);
	/* No "IDT=" line: the vCPU still parses, its IDT unknown (0); a garbled one is not taken. */
	assert_int_equal(r[0].idt_base, 0);
	assert_int_equal(r[0].idt_limit, 0);
	{
		char idt[sizeof(one) + 64];

		snprintf(idt, sizeof(idt), "%sIDT=     fffffe0000000000 00000fff\r\n", one);
		assert_int_equal(qemu_hmp_parse_registers(idt, r, 2), 1);
		assert_int_equal(r[0].idt_base, 0xfffffe0000000000ULL);
		assert_int_equal(r[0].idt_limit, 0xfff);
		snprintf(idt, sizeof(idt), "%sIDT=     fffffe0000000000 000fffff\r\n", one);
		assert_int_equal(qemu_hmp_parse_registers(idt, r, 2), 1);
		assert_int_equal(r[0].idt_base, 0);
		snprintf(idt, sizeof(idt), "%sIDT=     fffffe00000000x0 00000fff\r\n", one);
		assert_int_equal(qemu_hmp_parse_registers(idt, r, 2), 1);
		assert_int_equal(r[0].idt_base, 0);
	}
	/* A field missing, cut short or garbled: no vCPU at all, never a half one. */
	memcpy(buf, one, sizeof(one));
	memcpy(strstr(buf, "EFER="), "EFEX=", 5);
	assert_int_equal(qemu_hmp_parse_registers(buf, r, 2), -EBADMSG);
	memcpy(buf, one, sizeof(one));
	*strstr(buf, "TR =") = 0;
	assert_int_equal(qemu_hmp_parse_registers(buf, r, 2), -EBADMSG);
	memcpy(buf, one, sizeof(one));
	memcpy(strstr(buf, "RIP=") + 4, "ffffffff8100000g", 16);
	assert_int_equal(qemu_hmp_parse_registers(buf, r, 2), -EBADMSG);
	memcpy(buf, one, sizeof(one));
	memcpy(strstr(buf, "CPL=") + 4, "7", 1);
	assert_int_equal(qemu_hmp_parse_registers(buf, r, 2), -EBADMSG);
	/* 17 hex digits do not fit 64 bits. */
	assert_int_equal(qemu_hmp_parse_registers("RIP=10000000000000000 RSP=0\n", r, 2), -EBADMSG);
	/* 32-bit dumps (EIP), QEMU's errors, nothing. */
	assert_int_equal(qemu_hmp_parse_registers("CPU#0\r\nEAX=00000000 EIP=0000fff0 CPL=0\r\n", r, 2), -EBADMSG);
	assert_int_equal(qemu_hmp_parse_registers("unknown command: 'info regs'\r\n", r, 2), -EBADMSG);
	assert_int_equal(qemu_hmp_parse_registers("", r, 2), -EBADMSG);
	/* A "CPU#" line that is not a number starts no vCPU. */
	assert_int_equal(qemu_hmp_parse_registers("CPU#x\n", r, 2), -EBADMSG);
}

static void test_mtree_pc(void **state)
{
	struct qemu_ram_range m[QEMU_HMP_MAX_RANGES];
	char *t = fixture("mtree-pc-256m.txt");

	(void)state;
	/* pc.ram in five pieces (the ROM-shadowed BIOS area), then pc.bios; no I/O. */
	assert_int_equal(qemu_hmp_parse_mtree(t, m, QEMU_HMP_MAX_RANGES), 6);
	assert_int_equal(m[0].gpa, 0);
	assert_int_equal(m[0].size, 0xc3000);
	assert_string_equal(m[0].name, "pc.ram");
	assert_int_equal(m[4].gpa, 0x100000);
	assert_int_equal(m[4].size, 0x10000000 - 0x100000);
	assert_string_equal(m[5].name, "pc.bios");
	assert_int_equal(m[5].gpa, 0xfffc0000);
	/* No room: refused rather than cut. */
	assert_int_equal(qemu_hmp_parse_mtree(t, m, 3), -EBADMSG);
	free(t);
}

static void test_mtree_q35_above_4g(void **state)
{
	struct qemu_ram_range m[QEMU_HMP_MAX_RANGES];
	char *t = fixture("mtree-q35-4g.txt");
	int n;

	(void)state;
	n = qemu_hmp_parse_mtree(t, m, QEMU_HMP_MAX_RANGES);
	assert_int_equal(n, 7);
	assert_int_equal(m[6].gpa, 0x100000000ULL);
	assert_int_equal(m[6].size, 0x80000000ULL);
	assert_string_equal(m[6].name, "pc.ram");
	free(t);
}

static void test_mtree_broken(void **state)
{
	struct qemu_ram_range m[8];
	static const char overlap[] = "FlatView #0\n AS \"memory\", root: system\n"
				      "  0000000000000000-0000000000000fff (prio 0, ram): pc.ram\n"
				      "  0000000000000800-0000000000001fff (prio 0, ram): pc.ram @0000000000000800\n";
	static const char backwards[] = "FlatView #0\n AS \"memory\", root: system\n"
					"  0000000000002000-0000000000000fff (prio 0, ram): pc.ram\n";
	static const char other_as[] = "FlatView #0\n AS \"I/O\", root: io\n"
				       "  0000000000000000-0000000000000fff (prio 0, ram): pc.ram\n";
	static const char garbled[] = "FlatView #0\n AS \"memory\", root: system\n"
				      "  0000000000000000-0000000000000fff (prio 0, ram) pc.ram\n";

	(void)state;
	assert_int_equal(qemu_hmp_parse_mtree(overlap, m, 8), -EBADMSG);
	assert_int_equal(qemu_hmp_parse_mtree(backwards, m, 8), -EBADMSG);
	assert_int_equal(qemu_hmp_parse_mtree(other_as, m, 8), -EBADMSG);
	assert_int_equal(qemu_hmp_parse_mtree(garbled, m, 8), -EBADMSG);
	assert_int_equal(qemu_hmp_parse_mtree("", m, 8), -EBADMSG);
}

static void test_gpa2hva(void **state)
{
	uint64_t hva = 0;

	(void)state;
	assert_int_equal(qemu_hmp_parse_gpa2hva("Host virtual address for 0x100000 (pc.ram) is 0x7f3123f00000\r\n", &hva),
			 0);
	assert_int_equal(hva, 0x7f3123f00000ULL);
	assert_int_equal(qemu_hmp_parse_gpa2hva("No memory is mapped at address 0x10000000\r\n", &hva), -EBADMSG);
	assert_int_equal(qemu_hmp_parse_gpa2hva("Host virtual address for 0x0 (x) is 0x0\r\n", &hva), -EBADMSG);
	assert_int_equal(qemu_hmp_parse_gpa2hva("Host virtual address for 0x0 (x) is 0xzz\r\n", &hva), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registers_kvm_pc),
		cmocka_unit_test(test_registers_tcg_q35),
		cmocka_unit_test(test_registers_single_and_broken),
		cmocka_unit_test(test_mtree_pc),
		cmocka_unit_test(test_mtree_q35_above_4g),
		cmocka_unit_test(test_mtree_broken),
		cmocka_unit_test(test_gpa2hva),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

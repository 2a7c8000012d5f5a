// SPDX-License-Identifier: MIT
/* The machine description without KVM: memory map, MP table, option parsing, the 8250 model. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "acpi.h"
#include "memmap.h"
#include "mptable.h"
#include "options.h"
#include "serial.h"
#include "kvmprof/platform.h"

static void test_memmap(void **state)
{
	struct memmap map;
	uint64_t ram = 0;

	(void)state;
	memmap_build(&map, 256u << 20);
	assert_int_equal(map.count, 4);
	for (unsigned int i = 0; i < map.count; i++) {
		if (i)
			assert_true(map.entry[i].addr >= map.entry[i - 1].addr + map.entry[i - 1].size);
		if (map.entry[i].type == MEMMAP_RAM)
			ram += map.entry[i].size;
	}
	/* The BIOS area with the ACPI and MP tables is reserved, not RAM. */
	assert_int_equal(map.entry[2].addr, KVMPROF_ACPI_ADDR);
	assert_true(map.entry[2].addr + map.entry[2].size > KVMPROF_MPTABLE_ADDR);
	assert_int_equal(map.entry[2].type, MEMMAP_RESERVED);
	assert_int_equal(ram, (256u << 20) - 0x100000 + KVMPROF_LOWMEM_END);
}

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;
	while (n--)
		s += *p++;
	return s;
}

static void test_mptable(void **state)
{
	struct guest_mem mem = { calloc(1, 2u << 20), 2u << 20 };
	const uint8_t *mpf = mem.host + KVMPROF_MPTABLE_ADDR;
	const uint8_t *mpc;
	uint32_t physptr;
	uint16_t len, count;
	unsigned int cpus = 0, bsp = 0, ioapics = 0, intsrc = 0;

	(void)state;
	assert_int_equal(mptable_write(&mem, 3), 0);
	assert_memory_equal(mpf, "_MP_", 4);
	assert_int_equal(sum(mpf, 16), 0);
	memcpy(&physptr, mpf + 4, 4);
	mpc = mem.host + physptr;
	assert_memory_equal(mpc, "PCMP", 4);
	memcpy(&len, mpc + 4, 2);
	memcpy(&count, mpc + 34, 2);
	assert_int_equal(sum(mpc, len), 0);
	for (const uint8_t *e = mpc + 44; e < mpc + len;) {
		switch (e[0]) {
		case 0:
			assert_int_equal(e[1], cpus); /* APIC IDs 0..n-1 */
			cpus++;
			bsp += (e[3] & 2) != 0;
			e += 20;
			break;
		case 2:
			ioapics++;
			e += 8;
			break;
		case 3:
			assert_int_equal(e[5], e[7]); /* ISA IRQ n -> pin n, as KVM routes GSIs */
			intsrc++;
			e += 8;
			break;
		default:
			e += 8;
		}
		count--;
	}
	assert_int_equal(count, 0);
	assert_int_equal(cpus, 3);
	assert_int_equal(bsp, 1);
	assert_int_equal(ioapics, 1);
	assert_int_equal(intsrc, 16);
	assert_int_equal(mptable_write(&mem, 0), -EINVAL);
	assert_int_equal(mptable_write(&mem, KVMPROF_MAX_CPUS + 1), -EINVAL);
	free(mem.host);
}

static const uint8_t *acpi_table(const uint8_t *mem, uint64_t gpa, const char *sig)
{
	uint32_t len;

	assert_memory_equal(mem + gpa, sig, 4);
	memcpy(&len, mem + gpa + 4, 4);
	assert_int_equal(sum(mem + gpa, len), 0);
	return mem + gpa;
}

static void test_acpi(void **state)
{
	struct guest_mem mem = { calloc(1, 2u << 20), 2u << 20 };
	const uint8_t *rsdp = mem.host + KVMPROF_ACPI_ADDR, *xsdt, *madt = NULL;
	uint64_t xsdt_gpa, entry;
	uint32_t len, flags;
	unsigned int lapics = 0, ioapics = 0;

	(void)state;
	assert_int_equal(acpi_write_tables(&mem, 4), 0);
	assert_memory_equal(rsdp, "RSD PTR ", 8);
	assert_int_equal(sum(rsdp, 20), 0);
	assert_int_equal(sum(rsdp, 36), 0);
	assert_int_equal(rsdp[15], 2);
	memcpy(&xsdt_gpa, rsdp + 24, 8);
	xsdt = acpi_table(mem.host, xsdt_gpa, "XSDT");
	memcpy(&len, xsdt + 4, 4);
	for (uint32_t off = 36; off < len; off += 8) {
		memcpy(&entry, xsdt + off, 8);
		if (memcmp(mem.host + entry, "FACP", 4) == 0) {
			const uint8_t *fadt = acpi_table(mem.host, entry, "FACP");
			uint64_t dsdt;
			memcpy(&flags, fadt + 112, 4);
			/* Not hardware-reduced: Linux would then give the legacy UARTs no IRQ. */
			assert_false(flags & (1u << 20));
			memcpy(&dsdt, fadt + 140, 8);
			acpi_table(mem.host, dsdt, "DSDT");
		} else {
			madt = acpi_table(mem.host, entry, "APIC");
		}
	}
	assert_non_null(madt);
	memcpy(&len, madt + 4, 4);
	for (uint32_t off = 44; off < len; off += madt[off + 1]) {
		if (madt[off] == 0) {
			assert_int_equal(madt[off + 3], lapics); /* APIC ID = vCPU index */
			lapics++;
		} else if (madt[off] == 1) {
			ioapics++;
		}
	}
	assert_int_equal(lapics, 4);
	assert_int_equal(ioapics, 1);
	assert_int_equal(acpi_write_tables(&mem, 0), -EINVAL);
	free(mem.host);
}

static void test_parse_mem_size(void **state)
{
	uint64_t b;

	(void)state;
	assert_int_equal(parse_mem_size("256M", &b), 0);
	assert_int_equal(b, 256ULL << 20);
	assert_int_equal(parse_mem_size("1G", &b), 0);
	assert_int_equal(b, 1ULL << 30);
	assert_int_equal(parse_mem_size("512", &b), 0); /* MiB, like QEMU's -m */
	assert_int_equal(b, 512ULL << 20);
	assert_int_equal(parse_mem_size("65536k", &b), 0);
	assert_int_equal(b, 64ULL << 20);
	assert_int_equal(parse_mem_size("2GiB", &b), 0);
	assert_int_equal(b, 2ULL << 30);
	assert_int_equal(parse_mem_size("lots", &b), -EINVAL);
	assert_int_equal(parse_mem_size("12X", &b), -EINVAL);
	assert_int_equal(parse_mem_size("-1M", &b), -EINVAL);
	assert_int_equal(parse_mem_size("", &b), -EINVAL);
	assert_int_equal(parse_mem_size("99999999999999999999G", &b), -EINVAL);
	assert_int_equal(parse_mem_size("17179869184G", &b), -EINVAL); /* overflows 64 bits */
}

static int parse(char *err, const char *a1, const char *a2, const char *a3, struct vm_config *cfg)
{
	char *argv[] = { "kvmprof-vmm", (char *)a1, (char *)a2, (char *)a3, NULL };
	int argc = 1 + (a1 != NULL) + (a2 != NULL) + (a3 != NULL);

	return vmm_options_parse(argc, argv, cfg, err);
}

static void test_options(void **state)
{
	struct vm_config cfg;
	char err[OPTIONS_ERR_MAX];

	(void)state;
	assert_int_equal(parse(err, NULL, NULL, NULL, &cfg), 0);
	assert_null(cfg.kernel_path);
	assert_true(cfg.initrd_embedded);
	assert_int_equal(cfg.ncpus, 1);
	assert_int_equal(cfg.mem_size, 256ULL << 20);

	assert_int_equal(parse(err, "--kernel", "bzImage", "--cpus=8", &cfg), 0);
	assert_string_equal(cfg.kernel_path, "bzImage");
	assert_false(cfg.initrd_embedded); /* another kernel gets no demo initrd */
	assert_int_equal(cfg.ncpus, 8);

	assert_int_equal(parse(err, "--cpus", "0", NULL, &cfg), -EINVAL);
	assert_non_null(strstr(err, "--cpus '0'"));
	assert_int_equal(parse(err, "--cpus", "9", NULL, &cfg), -EINVAL);
	assert_int_equal(parse(err, "--cpus", "two", NULL, &cfg), -EINVAL);
	assert_int_equal(parse(err, "--mem", "8M", NULL, &cfg), -EINVAL);
	assert_non_null(strstr(err, "too small"));
	assert_int_equal(parse(err, "--mem", "4G", NULL, &cfg), -EINVAL);
	assert_non_null(strstr(err, "too large"));
	assert_int_equal(parse(err, "--mem", "big", NULL, &cfg), -EINVAL);
	assert_non_null(strstr(err, "not a size"));
	assert_int_equal(parse(err, "--frobnicate", NULL, NULL, &cfg), -EINVAL);
	assert_non_null(strstr(err, "unknown option '--frobnicate'"));
	assert_int_equal(parse(err, "--kernel", NULL, NULL, &cfg), -EINVAL);
	assert_non_null(strstr(err, "needs a value"));
	assert_int_equal(parse(err, "stray", NULL, NULL, &cfg), -EINVAL);
	assert_int_equal(parse(err, "--timeout", "-3", NULL, &cfg), -EINVAL);
	assert_int_equal(parse(err, "--initrd", "none", NULL, &cfg), 0);
	assert_null(cfg.initrd_path);
	assert_false(cfg.initrd_embedded);
}

struct irq_log {
	int levels[64];
	int n;
};

static void record_irq(void *ctx, int level)
{
	struct irq_log *log = ctx;

	if (log->n < 64)
		log->levels[log->n++] = level;
}

static uint8_t uart_in(struct serial *s, uint16_t off)
{
	uint8_t v;
	serial_io(s, off, &v, 1, false);
	return v;
}

static void uart_out(struct serial *s, uint16_t off, uint8_t v)
{
	serial_io(s, off, &v, 1, true);
}

static void test_serial_output_and_thri(void **state)
{
	struct serial s;
	struct irq_log log = { 0 };
	int pipefd[2];
	char buf[8] = { 0 };

	(void)state;
	assert_int_equal(pipe(pipefd), 0);
	serial_init(&s, "COM1", pipefd[1], record_irq, &log);
	assert_int_equal(uart_in(&s, 2) & 0x0f, 0x01); /* no interrupt pending */
	assert_int_equal(uart_in(&s, 5) & 0x60, 0x60); /* THRE | TEMT */
	uart_out(&s, 0, 'h');
	uart_out(&s, 0, 'i');
	assert_int_equal(read(pipefd[0], buf, sizeof(buf)), 2);
	assert_string_equal(buf, "hi");
	assert_int_equal(log.n, 0); /* polled: no IRQ */
	/* Enabling THRI with an empty transmitter raises the IRQ at once. */
	uart_out(&s, 1, 0x02);
	assert_int_equal(log.n, 1);
	assert_int_equal(log.levels[0], 1);
	assert_int_equal(uart_in(&s, 2) & 0x0f, 0x02);  /* THRI, and reading acknowledges it */
	assert_int_equal(log.levels[log.n - 1], 0);
	assert_int_equal(uart_in(&s, 2) & 0x0f, 0x01);
	uart_out(&s, 0, '!');                           /* the next byte raises it again */
	assert_int_equal(log.levels[log.n - 1], 1);
	/* Divisor latch: DLAB hides THR/IER behind DLL/DLM. */
	uart_out(&s, 3, 0x83);
	uart_out(&s, 0, 0x01);
	uart_out(&s, 1, 0x00);
	assert_int_equal(uart_in(&s, 0), 0x01);
	uart_out(&s, 3, 0x03);
	assert_int_equal(read(pipefd[0], buf, sizeof(buf)), 1); /* the DLL write sent nothing */
	/* FIFO bits in IIR identify a 16550A to Linux. */
	uart_out(&s, 2, 0x07);
	assert_int_equal(uart_in(&s, 2) & 0xc0, 0xc0);
	/* Loopback as Linux's autoconfig probes it: MCR 0x1a -> MSR 0x90. */
	uart_out(&s, 4, 0x1a);
	assert_int_equal(uart_in(&s, 6) & 0xf0, 0x90);
	serial_destroy(&s);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* The receive FIFO, fed the one way a guest can feed it: in loopback what it sends comes back. */
static void test_serial_receive(void **state)
{
	struct serial s;
	struct irq_log log = { 0 };

	(void)state;
	serial_init(&s, "COM1", -1, record_irq, &log);
	uart_out(&s, 4, 0x18); /* loopback, OUT2 kept */
	uart_out(&s, 1, 0x01); /* RX interrupt */
	uart_out(&s, 0, 'a');
	uart_out(&s, 0, 'b');
	assert_int_equal(log.levels[log.n - 1], 1);
	assert_int_equal(uart_in(&s, 5) & 1, 1);
	assert_int_equal(uart_in(&s, 2) & 0x0f, 0x04);
	assert_int_equal(uart_in(&s, 0), 'a');
	assert_int_equal(uart_in(&s, 0), 'b');
	assert_int_equal(uart_in(&s, 5) & 1, 0);
	assert_int_equal(log.levels[log.n - 1], 0);
	/* A full FIFO drops what comes after. */
	for (unsigned int i = 0; i < SERIAL_RX_FIFO + 10; i++)
		uart_out(&s, 0, (uint8_t)i);
	for (unsigned int i = 0; i < SERIAL_RX_FIFO; i++)
		assert_int_equal(uart_in(&s, 0), (uint8_t)i);
	assert_int_equal(uart_in(&s, 5) & 1, 0);
	serial_destroy(&s);
}

/*
 * A reader that stops reading (a stalled agent-channel socket, a console
 * pipe nobody drains): once the pipe is full the UART waits SERIAL_STALL_MS
 * for room, then drops what follows and counts it; the guest's OUT never
 * blocks for good. alarm() turns a hang into a failure.
 */
static void test_serial_stalled_reader(void **state)
{
	struct serial s;
	struct irq_log log = { 0 };
	int pipefd[2], size;
	uint64_t passed, got = 0;
	char buf[4096];
	ssize_t n;

	(void)state;
	alarm(60);
	assert_int_equal(pipe(pipefd), 0);
	size = fcntl(pipefd[1], F_GETPIPE_SZ);
	assert_true(size > 0);
	serial_init(&s, "COM2", pipefd[1], record_irq, &log);
	/* Until the pipe has no room: the last byte waited SERIAL_STALL_MS and was dropped. */
	for (int i = 0; i <= size && !s.out_failed; i++)
		uart_out(&s, 0, 'x');
	assert_true(s.out_failed);
	assert_int_equal(s.dropped, 1);
	passed = s.tx_bytes - 1;
	assert_true(passed > 0 && passed <= (uint64_t)size);
	for (int i = 0; i < 1000; i++)
		uart_out(&s, 0, 'z'); /* dropped at once: no more waiting */
	assert_int_equal(s.dropped, 1001);
	/* The reader gets exactly the bytes written before the stall. */
	assert_int_equal(fcntl(pipefd[0], F_SETFL, O_NONBLOCK), 0);
	while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) {
		assert_null(memchr(buf, 'z', (size_t)n));
		got += (uint64_t)n;
	}
	assert_int_equal(got, passed);
	serial_destroy(&s);
	alarm(0);
	close(pipefd[0]);
	close(pipefd[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memmap),
		cmocka_unit_test(test_mptable),
		cmocka_unit_test(test_acpi),
		cmocka_unit_test(test_parse_mem_size),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_serial_output_and_thri),
		cmocka_unit_test(test_serial_receive),
		cmocka_unit_test(test_serial_stalled_reader),
	};

	return cmocka_run_group_tests_name("platform", tests, NULL, NULL);
}

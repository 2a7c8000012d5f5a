// SPDX-License-Identifier: MIT
/*
 * The "read guest memory" interface (vmi/vmi_mem.h) and the readers on top
 * of it driven through both of its ways: guest RAM mapped in this process,
 * and a read function (as a reader of another process's guest would be).
 * What must hold for the second: the same answers as the first; never a
 * request outside the RAM's size; one call per page-table entry or per page
 * of data, not per byte; a reader that refuses part of the RAM makes the
 * walks fail cleanly; and the emulator's walk, which writes accessed and
 * dirty bits, is refused (nothing walked) by a reader that cannot write.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "guest_stack.h"
#include "guest_walk.h"
#include "vmi_mem.h"

#define RAM_SIZE (1u << 20)
#define P (1ULL << 0)
#define RW (1ULL << 1)
#define US (1ULL << 2)
#define A (1ULL << 5)
#define D (1ULL << 6)

/* Guest-physical: the tables of one 4-level mapping, and two data pages. */
#define PML4 0x1000u
#define PDPT 0x2000u
#define PD 0x3000u
#define PT 0x4000u
#define DATA0 0x10000u
#define DATA1 0x30000u
/* Guest-virtual: two consecutive user pages, mapped to DATA0 and DATA1. */
#define VA0 0x400000ULL
#define VA1 0x401000ULL

/* Guest RAM behind a read function, with the calls counted and checked. */
struct reader {
	uint8_t *ram;
	uint64_t size;     /* what the vmi_mem says the RAM is */
	uint64_t readable; /* the reader refuses anything at or above this (a hole, say) */
	unsigned int calls, set_calls;
	uint64_t max_len;
	bool asked_outside; /* a request vmi_mem should have refused itself */
};

static int reader_read(void *opaque, uint64_t gpa, void *dst, uint64_t len)
{
	struct reader *r = opaque;

	r->calls++;
	if (len > r->max_len)
		r->max_len = len;
	if (gpa > r->size || len > r->size - gpa)
		r->asked_outside = true;
	if (gpa >= r->readable || len > r->readable - gpa)
		return -EFAULT;
	memcpy(dst, r->ram + gpa, len);
	return 0;
}

static int reader_set_bits(void *opaque, uint64_t gpa, uint64_t bits)
{
	struct reader *r = opaque;
	uint64_t v;

	r->set_calls++;
	if (gpa > r->size - 8)
		r->asked_outside = true;
	memcpy(&v, r->ram + gpa, 8);
	v |= bits;
	memcpy(r->ram + gpa, &v, 8);
	return 0;
}

static void put_u64(uint8_t *ram, uint64_t gpa, uint64_t v)
{
	memcpy(ram + gpa, &v, 8);
}

static uint64_t get_u64(const uint8_t *ram, uint64_t gpa)
{
	uint64_t v;

	memcpy(&v, ram + gpa, 8);
	return v;
}

/* malloc'd, not static: ASan puts redzones around it, so a read past guest RAM fails the test. */
static uint8_t *ram_new(void)
{
	uint8_t *ram = aligned_alloc(4096, RAM_SIZE);

	assert_non_null(ram);
	memset(ram, 0, RAM_SIZE);
	put_u64(ram, PML4 + 0 * 8, PDPT | P | RW | US);
	put_u64(ram, PDPT + 0 * 8, PD | P | RW | US);
	put_u64(ram, PD + 2 * 8, PT | P | RW | US);
	put_u64(ram, PT + 0 * 8, DATA0 | P | RW | US);
	put_u64(ram, PT + 1 * 8, DATA1 | P | RW | US);
	for (unsigned int i = 0; i < 4096; i++) {
		ram[DATA0 + i] = (uint8_t)i;
		ram[DATA1 + i] = (uint8_t)(0x80 + i);
	}
	return ram;
}

static struct reader reader_of(uint8_t *ram)
{
	return (struct reader){ .ram = ram, .size = RAM_SIZE, .readable = RAM_SIZE };
}

static struct vmi_mem via_reader(struct reader *r)
{
	return (struct vmi_mem){ .size = r->size, .read = reader_read, .opaque = r };
}

static const struct guest_paging pg = { .mode = GUEST_PAGING_4LEVEL, .cr3 = PML4, .nxe = true };

static void test_mapped_bounds(void **state)
{
	uint8_t *ram = ram_new();
	struct vmi_mem m = vmi_mem_mapped(ram, RAM_SIZE);
	uint8_t buf[16];
	uint64_t v;

	(void)state;
	assert_int_equal(vmi_mem_read(&m, DATA0, buf, 8), 0);
	assert_int_equal(buf[7], 7);
	assert_int_equal(vmi_mem_read(&m, RAM_SIZE - 8, buf, 8), 0);
	assert_int_equal(vmi_mem_read(&m, RAM_SIZE - 4, buf, 8), -EFAULT);
	assert_int_equal(vmi_mem_read(&m, RAM_SIZE, buf, 0), 0);
	assert_int_equal(vmi_mem_read(&m, RAM_SIZE + 1, buf, 0), -EFAULT);
	assert_int_equal(vmi_mem_read(&m, UINT64_MAX - 3, buf, 8), -EFAULT); /* would wrap to 4 */
	assert_null(vmi_mem_ptr(&m, RAM_SIZE - 4, 8));
	assert_ptr_equal(vmi_mem_ptr(&m, DATA1, 4096), ram + DATA1);
	assert_int_equal(vmi_mem_load64(&m, PML4, &v), 0);
	assert_int_equal(v, PDPT | P | RW | US);
	assert_int_equal(vmi_mem_load64(&m, PML4 + 4, &v), -EFAULT); /* misaligned */
	assert_int_equal(vmi_mem_load64(&m, RAM_SIZE - 8, &v), 0);
	assert_int_equal(vmi_mem_load64(&m, RAM_SIZE, &v), -EFAULT);
	assert_true(vmi_mem_can_set_bits(&m));
	free(ram);
}

static void test_reader_bounds(void **state)
{
	uint8_t *ram = ram_new();
	struct reader r = reader_of(ram);
	struct vmi_mem m = via_reader(&r);
	uint8_t buf[16];
	uint64_t v;

	(void)state;
	assert_int_equal(vmi_mem_read(&m, DATA1, buf, 4), 0);
	assert_int_equal(buf[3], 0x83);
	assert_int_equal(vmi_mem_read(&m, RAM_SIZE - 4, buf, 8), -EFAULT);
	assert_int_equal(vmi_mem_read(&m, UINT64_MAX - 3, buf, 8), -EFAULT);
	assert_int_equal(vmi_mem_load64(&m, RAM_SIZE, &v), -EFAULT);
	assert_int_equal(vmi_mem_load64(&m, PT + 8, &v), 0);
	assert_int_equal(v, DATA1 | P | RW | US);
	/* Out-of-range requests end in vmi_mem, before the reader. */
	assert_int_equal(r.calls, 2);
	assert_false(r.asked_outside);
	/* Nothing is mapped here: no pointer, no bits set. */
	assert_null(vmi_mem_ptr(&m, DATA0, 1));
	assert_false(vmi_mem_can_set_bits(&m));
	assert_int_equal(vmi_mem_set_bits64(&m, PT, A), -EOPNOTSUPP);
	/* A reader without a read function reads nothing. */
	m.read = NULL;
	assert_int_equal(vmi_mem_read(&m, DATA0, buf, 1), -EFAULT);
	free(ram);
}

static void test_reader_same_answers(void **state)
{
	uint8_t *ram = ram_new();
	struct reader r = reader_of(ram);
	struct vmi_mem mapped = vmi_mem_mapped(ram, RAM_SIZE), via = via_reader(&r);
	struct guest_translation t1, t2;
	uint8_t a[8192], b[8192];
	uint64_t cs_a[8], cs_b[8];

	(void)state;
	assert_int_equal(guest_walk_translate(&mapped, &pg, VA1 + 0x10, &t1), 0);
	assert_int_equal(guest_walk_translate(&via, &pg, VA1 + 0x10, &t2), 0);
	assert_memory_equal(&t1, &t2, sizeof(t1));
	assert_int_equal(t2.gpa, DATA1 + 0x10);
	/* One call per level, whatever the translation is for. */
	assert_int_equal(r.calls, 4);

	/* Across the two pages: a translation and one copy per page, never a call per byte. */
	r.calls = 0;
	r.max_len = 0;
	assert_int_equal(guest_read_virt(&mapped, &pg, VA0, a, sizeof(a)), 0);
	assert_int_equal(guest_read_virt(&via, &pg, VA0, b, sizeof(b)), 0);
	assert_memory_equal(a, b, sizeof(a));
	assert_int_equal(b[4096 + 5], 0x85);
	assert_int_equal(r.calls, 2 * 4 + 2);
	assert_int_equal(r.max_len, 4096);

	/* A user stack in DATA0: two frames, then the outermost marker. */
	put_u64(ram, DATA0 + 0x100, VA0 + 0x200);
	put_u64(ram, DATA0 + 0x108, 0x1234);
	put_u64(ram, DATA0 + 0x200, 0);
	put_u64(ram, DATA0 + 0x208, 0x5678);
	assert_int_equal(guest_stack_walk(&mapped, &pg, true, VA0 + 0xf0, VA0 + 0x100, cs_a, 8), 2);
	assert_int_equal(guest_stack_walk(&via, &pg, true, VA0 + 0xf0, VA0 + 0x100, cs_b, 8), 2);
	assert_memory_equal(cs_a, cs_b, 2 * sizeof(uint64_t));
	assert_int_equal(cs_b[1], 0x5678);
	assert_false(r.asked_outside);
	free(ram);
}

static void test_reader_refuses(void **state)
{
	uint8_t *ram = ram_new();
	struct reader r = reader_of(ram);
	struct vmi_mem via = via_reader(&r);
	struct guest_translation t;
	uint8_t buf[8192];
	uint64_t cs[8];

	(void)state;
	/* The reader cannot reach the page tables: every walk fails, cleanly. */
	r.readable = PML4;
	assert_int_equal(guest_walk_translate(&via, &pg, VA0, &t), -EFAULT);
	assert_int_equal(guest_read_virt(&via, &pg, VA0, buf, 8), -EFAULT);
	assert_int_equal(guest_stack_walk(&via, &pg, true, VA0 + 0xf0, VA0 + 0x100, cs, 8), 0);

	/* It reaches the tables and DATA0 but not DATA1 (a hole): the translation holds, the copy fails. */
	r.readable = DATA1;
	assert_int_equal(guest_walk_translate(&via, &pg, VA1, &t), 0);
	assert_int_equal(guest_read_virt(&via, &pg, VA0, buf, 4096), 0);
	assert_int_equal(guest_read_virt(&via, &pg, VA0 + 4092, buf, 8), -EFAULT);

	/* RAM said to end below DATA1: the entry pointing there is refused (-ENXIO: a page outside RAM) before the reader is asked. */
	r.readable = RAM_SIZE;
	r.size = via.size = DATA1;
	r.calls = 0;
	assert_int_equal(guest_walk_translate(&via, &pg, VA1, &t), -ENXIO);
	assert_int_equal(r.calls, 4);
	/* And a table past the end: its entry is never requested. */
	put_u64(ram, PD + 2 * 8, (uint64_t)RAM_SIZE * 4 | P | RW | US);
	r.calls = 0;
	assert_int_equal(guest_walk_translate(&via, &pg, VA0, &t), -EFAULT);
	assert_int_equal(r.calls, 3);
	assert_false(r.asked_outside);
	free(ram);
}

static void test_touch(void **state)
{
	uint8_t *ram = ram_new();
	struct reader r = reader_of(ram);
	struct vmi_mem via = via_reader(&r);
	struct guest_translation t;

	(void)state;
	/* A reader that cannot write: refused before anything is read, no bits half set. */
	assert_int_equal(guest_walk_touch(&via, &pg, VA0, true, &t), -EOPNOTSUPP);
	assert_int_equal(r.calls, 0);
	assert_int_equal(get_u64(ram, PT), DATA0 | P | RW | US);

	/* With a write function: accessed on every level, dirty on the leaf of a write. */
	via.set_bits64 = reader_set_bits;
	assert_int_equal(guest_walk_touch(&via, &pg, VA0, true, &t), 0);
	assert_int_equal(r.set_calls, 4);
	assert_int_equal(get_u64(ram, PML4), PDPT | P | RW | US | A);
	assert_int_equal(get_u64(ram, PD + 2 * 8), PT | P | RW | US | A);
	assert_int_equal(get_u64(ram, PT), DATA0 | P | RW | US | A | D);
	assert_int_equal(guest_walk_touch(&via, &pg, VA1, false, &t), 0);
	assert_int_equal(get_u64(ram, PT + 8), DATA1 | P | RW | US | A);

	/* Mapped RAM sets them itself, the same bits. */
	{
		uint8_t *ram2 = ram_new();
		struct vmi_mem mapped = vmi_mem_mapped(ram2, RAM_SIZE);

		assert_int_equal(guest_walk_touch(&mapped, &pg, VA0, true, &t), 0);
		assert_int_equal(guest_walk_touch(&mapped, &pg, VA1, false, &t), 0);
		assert_memory_equal(ram2 + PML4, ram + PML4, PT + 4096 - PML4);
		free(ram2);
	}
	assert_false(r.asked_outside);
	free(ram);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mapped_bounds),
		cmocka_unit_test(test_reader_bounds),
		cmocka_unit_test(test_reader_same_answers),
		cmocka_unit_test(test_reader_refuses),
		cmocka_unit_test(test_touch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

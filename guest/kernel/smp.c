/* SPDX-License-Identifier: MIT */
/*
 * Per-CPU setup, the local APIC (timer, EOI, IPIs), the MP table and AP
 * bring-up with INIT-SIPI-SIPI.
 */
#include "kernel.h"

#define LAPIC_ID 0x20
#define LAPIC_EOI 0xb0
#define LAPIC_SVR 0xf0
#define LAPIC_ICR_LO 0x300
#define LAPIC_ICR_HI 0x310
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_LVT_LINT0 0x350
#define LAPIC_TIMER_INIT 0x380
#define LAPIC_TIMER_CUR 0x390
#define LAPIC_TIMER_DIV 0x3e0
#define LVT_MASKED (1u << 16)
#define LVT_PERIODIC (1u << 17)

/* KVM's LAPIC timer counts at 1 GHz with divide-by-1: one count per ns. */
#define TICK_COUNT ((uint32_t)TICK_NS)

char cpu_blocks[MAX_CPUS * CPU_BLOCK_SIZE] __attribute__((aligned(CPU_BLOCK_SIZE)));
static int ncpus = 1;
static volatile int timers_go;
static uint64_t clock_last;

static void icr_send(uint32_t apic, uint32_t lo);

struct cpu *cpu_get(int id)
{
	return (struct cpu *)(cpu_blocks + (size_t)id * CPU_BLOCK_SIZE);
}

int ncpus_online(void)
{
	return ncpus;
}

uint32_t lapic_id(void)
{
	return lapic_read(LAPIC_ID) >> 24;
}

void lapic_eoi(void)
{
	lapic_write(LAPIC_EOI, 0);
}

/* GDT TSS descriptor, TR, IDT and the local APIC of the calling CPU. */
void cpu_init(struct cpu *c)
{
	uint64_t base = (uint64_t)&c->tss, limit = sizeof(struct tss) - 1;
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) idtr;
	extern char idt[];

	c->tss.rsp0 = cpu_stack_top(c);
	c->tss.ist[0] = (uint64_t)c + CPU_IST_TOP;
	c->tss.iomap_base = sizeof(struct tss);
	gdt[5 + 2 * c->id] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89UL << 40) |
			     (((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
	gdt[6 + 2 * c->id] = base >> 32;
	__asm__ volatile("ltr %w0" : : "r"(TSS_SEL0 + 16 * c->id));
	idtr.limit = 256 * 16 - 1;
	idtr.base = (uint64_t)idt;
	__asm__ volatile("lidt %0" : : "m"(idtr));

	lapic_write(LAPIC_SVR, 0x100 | SPURIOUS_VECTOR);
	lapic_write(LAPIC_LVT_LINT0, LVT_MASKED); /* no legacy PIC interrupts */
}

/*
 * Boot-time clock: the LAPIC timer counting down from ~4.3 s with its
 * interrupt masked; used to bound waits before the periodic timer runs.
 */
void boot_timer_start(void)
{
	lapic_write(LAPIC_TIMER_DIV, 0xb); /* divide by 1 */
	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | TIMER_VECTOR);
	lapic_write(LAPIC_TIMER_INIT, 0xffffffffu);
}

static uint64_t boot_elapsed_ns(void)
{
	return 0xffffffffu - lapic_read(LAPIC_TIMER_CUR);
}

static void timer_start_periodic(void)
{
	lapic_write(LAPIC_TIMER_DIV, 0xb);
	lapic_write(LAPIC_LVT_TIMER, LVT_PERIODIC | TIMER_VECTOR);
	lapic_write(LAPIC_TIMER_INIT, TICK_COUNT);
}

/* BSP: start the 250 Hz tick everywhere (clocks start together at 0). */
void timers_start(void)
{
	__atomic_store_n(&timers_go, 1, __ATOMIC_RELEASE);
	if (ncpus > 1) /* wake the halted APs: fixed, all excluding self */
		icr_send(0, 0xc4000 | WAKEUP_VECTOR);
	timer_start_periodic();
}

/* The wake-up IPI to every other CPU (fixed, all excluding self). */
void smp_kick_others(void)
{
	icr_send(0, 0xc4000 | WAKEUP_VECTOR);
}

uint64_t clock_ns(void)
{
	uint32_t timer;
	return clock_ns_timer(&timer);
}

uint64_t clock_ns_timer(uint32_t *timer)
{
	struct cpu *c = this_cpu();
	uint64_t t, cur = *timer = lapic_read(LAPIC_TIMER_CUR);
	t = c->ticks * TICK_NS + (TICK_COUNT - (cur > TICK_COUNT ? TICK_COUNT : cur));
	/* Counter wrapped but its interrupt is not yet taken (IF=0). */
	if (cur > TICK_COUNT / 2 && (lapic_read(0x200 + 0x10 * (TIMER_VECTOR / 32)) &
				     (1u << (TIMER_VECTOR % 32))))
		t += TICK_NS;
	uint64_t last = __atomic_load_n(&clock_last, __ATOMIC_RELAXED);
	while (t > last)
		if (__atomic_compare_exchange_n(&clock_last, &last, t, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return t;
	return t > last ? t : last;
}

/* ---- MP table ------------------------------------------------------- */

struct mp_float {
	char sig[4];
	uint32_t config;
	uint8_t length, rev, checksum, features[5];
};

static struct mp_float *mp_scan(uint64_t start, uint64_t len)
{
	for (uint64_t a = start; a + 16 <= start + len; a += 16) {
		if (*(volatile uint32_t *)a != 0x5f504d5f) /* "_MP_" */
			continue;
		uint8_t sum = 0;
		for (int i = 0; i < 16; i++)
			sum += ((uint8_t *)a)[i];
		if (sum == 0)
			return (struct mp_float *)a;
	}
	return NULL;
}

/* APIC IDs of the enabled processors; returns their number (0 if none). */
static int mp_find_cpus(uint8_t *ids, int max)
{
	struct mp_float *mf = mp_scan(0xf0000, 0x10000);
	if (!mf)
		mf = mp_scan(KVMPROF_LOWMEM_END, 0x400);
	if (!mf) {
		uint64_t ebda = (uint64_t)*(volatile uint16_t *)0x40e << 4;
		if (ebda >= 0x80000 && ebda < 0xa0000)
			mf = mp_scan(ebda, 0x400);
	}
	if (!mf || mf->config == 0 || mf->config >= KERNEL_MEM_LIMIT - 0x10000)
		return 0;
	const uint8_t *t = (const uint8_t *)(uint64_t)mf->config;
	if (t[0] != 'P' || t[1] != 'C' || t[2] != 'M' || t[3] != 'P')
		return 0;
	uint16_t len = *(const uint16_t *)(t + 4), count = *(const uint16_t *)(t + 34);
	int n = 0;
	uint32_t off = 44;
	for (int i = 0; i < count && off < len; i++) {
		uint8_t type = t[off];
		if (type == 0) {
			if (off + 20 > len)
				break;
			if ((t[off + 3] & 1) && n < max)
				ids[n++] = t[off + 1];
			off += 20;
		} else if (type <= 4) {
			off += 8;
		} else {
			break; /* unknown entry: its length is unknown */
		}
	}
	return n;
}

/* ---- AP bring-up ------------------------------------------------------ */

static void icr_send(uint32_t apic, uint32_t lo)
{
	lapic_write(LAPIC_ICR_HI, apic << 24);
	lapic_write(LAPIC_ICR_LO, lo);
	for (int i = 0; i < 1000 && (lapic_read(LAPIC_ICR_LO) & (1u << 12)); i++)
		cpu_relax();
}

void ap_main(void)
{
	struct cpu *c = this_cpu();
	cpu_init(c);
	__atomic_store_n(&c->online, 1, __ATOMIC_RELEASE);
	/* Halt (not spin: an emulated spin loop steals host CPU from the BSP). */
	while (!__atomic_load_n(&timers_go, __ATOMIC_ACQUIRE))
		__asm__ volatile("sti; hlt; cli" ::: "memory");
	pmu_cpu_init(); /* the BSP has detected the PMU by now */
	timer_start_periodic();
	cpu_idle();
}

void smp_boot(int maxcpus)
{
	uint8_t ids[MAX_CPUS * 2] = { 0 };
	int n = mp_find_cpus(ids, MAX_CPUS * 2);
	uint32_t self = lapic_id();

	if (n <= 1 || maxcpus <= 1)
		return;
	memcpy((void *)TRAMPOLINE_ADDR, tramp_start, (size_t)(tramp_end - tramp_start));
	for (int i = 0; i < n && ncpus < MAX_CPUS && ncpus < maxcpus; i++) {
		if (ids[i] == self)
			continue;
		struct cpu *c = cpu_get(ncpus);
		c->id = ncpus;
		c->apic_id = ids[i];
		__atomic_store_n(&ap_boot_stack, cpu_stack_top(c), __ATOMIC_RELEASE);
		icr_send(ids[i], 0x4500);                             /* INIT */
		icr_send(ids[i], 0x4600 | (TRAMPOLINE_ADDR >> 12)); /* SIPI */
		uint64_t t0 = boot_elapsed_ns();
		int sipis = 1;
		while (!__atomic_load_n(&c->online, __ATOMIC_ACQUIRE)) {
			uint64_t dt = boot_elapsed_ns() - t0;
			if (sipis == 1 && dt > 1000000) { /* 1 ms: second SIPI */
				icr_send(ids[i], 0x4600 | (TRAMPOLINE_ADDR >> 12));
				sipis = 2;
			}
			if (dt > 500000000) /* 500 ms */
				break;
			cpu_relax();
		}
		if (!c->online) {
			kprintf("kvmprof guest: cpu with APIC ID %u did not start\n", ids[i]);
			continue;
		}
		ncpus++;
	}
	ap_boot_stack = 0;
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serial.h"

/* Register offsets and bits of the 8250/16550 family. */
#define UART_RX 0
#define UART_TX 0
#define UART_DLL 0
#define UART_IER 1
#define UART_DLM 1
#define UART_IIR 2
#define UART_FCR 2
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_MSR 6
#define UART_SCR 7

#define UART_IER_RDI 0x01
#define UART_IER_THRI 0x02
#define UART_IIR_NO_INT 0x01
#define UART_IIR_THRI 0x02
#define UART_IIR_RDI 0x04
#define UART_IIR_FIFO_ENABLED 0xc0
#define UART_FCR_ENABLE_FIFO 0x01
#define UART_FCR_CLEAR_RCVR 0x02
#define UART_LCR_DLAB 0x80
#define UART_MCR_LOOP 0x10
#define UART_LSR_DR 0x01
#define UART_LSR_THRE 0x20
#define UART_LSR_TEMT 0x40
#define UART_MSR_DCD 0x80
#define UART_MSR_DSR 0x20
#define UART_MSR_CTS 0x10

void serial_init(struct serial *s, const char *name, int out_fd, void (*set_irq)(void *ctx, int level),
		 void *irq_ctx)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->name = name;
	s->out_fd = out_fd;
	s->set_irq = set_irq;
	s->irq_ctx = irq_ctx;
	s->mcr = 0x08; /* OUT2: the PC wiring that lets the IRQ reach the PIC */
}

void serial_destroy(struct serial *s)
{
	if (!s->name)
		return; /* never initialized: the VM's setup failed before its devices */
	if (s->dropped)
		fprintf(stderr, "kvmprof-vmm: %s: %llu bytes the guest wrote were dropped (the output stopped "
			"taking them)\n", s->name, (unsigned long long)s->dropped);
	pthread_mutex_destroy(&s->lock);
	s->name = NULL;
}

static uint64_t serial_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Whether a one-byte write will not block: a pipe, socket or terminal
 * reports POLLOUT when it has room. Waits up to SERIAL_STALL_MS for room;
 * signals (the sampler's and the stop kick) do not restart the clock.
 */
static bool serial_wait_writable(int fd)
{
	uint64_t deadline = serial_now_ms() + SERIAL_STALL_MS;
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	for (;;) {
		uint64_t now = serial_now_ms();
		int n = poll(&p, 1, now >= deadline ? 0 : (int)(deadline - now));

		if (n > 0)
			return true; /* room, or an error that write will report */
		if (n == 0)
			return false;
		if (errno != EINTR)
			return true;
	}
}

static uint8_t serial_iir(const struct serial *s)
{
	uint8_t fifo = (s->fcr & UART_FCR_ENABLE_FIFO) ? UART_IIR_FIFO_ENABLED : 0;

	if ((s->ier & UART_IER_RDI) && s->rx_count)
		return fifo | UART_IIR_RDI;
	if ((s->ier & UART_IER_THRI) && s->thri_pending)
		return fifo | UART_IIR_THRI;
	return fifo | UART_IIR_NO_INT;
}

static void serial_update_irq(struct serial *s)
{
	int level = !(serial_iir(s) & UART_IIR_NO_INT);

	if (level != s->irq_level) {
		s->irq_level = level;
		if (s->set_irq)
			s->set_irq(s->irq_ctx, level);
	}
}

static void serial_transmit(struct serial *s, uint8_t byte)
{
	if (s->mcr & UART_MCR_LOOP) {
		if (s->rx_count < SERIAL_RX_FIFO)
			s->rx[(s->rx_head + s->rx_count++) % SERIAL_RX_FIFO] = byte;
		return;
	}
	s->tx_bytes++;
	if (s->out_fd < 0)
		return;
	if (s->out_failed) {
		s->dropped++;
		return;
	}
	/* A reader that takes nothing for SERIAL_STALL_MS must not hold the vCPU (and the guest) forever. */
	if (!serial_wait_writable(s->out_fd)) {
		s->out_failed = true;
		s->dropped++;
		fprintf(stderr, "kvmprof-vmm: %s output stalled: its reader took no byte for %d s; what the guest "
			"writes there from now on is dropped and counted\n", s->name, SERIAL_STALL_MS / 1000);
		return;
	}
	for (;;) {
		ssize_t n = write(s->out_fd, &byte, 1);
		if (n == 1)
			return;
		if (n < 0 && errno == EINTR)
			continue;
		/* The reader went away: keep the guest running, say so once. */
		s->out_failed = true;
		s->dropped++;
		fprintf(stderr, "kvmprof-vmm: %s output stopped: %s\n", s->name, n < 0 ? strerror(errno) : "short write");
		return;
	}
}

static uint8_t serial_read_reg(struct serial *s, uint16_t offset)
{
	bool dlab = s->lcr & UART_LCR_DLAB;
	uint8_t v;

	switch (offset) {
	case UART_RX:
		if (dlab)
			return s->dll;
		if (!s->rx_count)
			return 0;
		v = s->rx[s->rx_head];
		s->rx_head = (s->rx_head + 1) % SERIAL_RX_FIFO;
		s->rx_count--;
		return v;
	case UART_IER:
		return dlab ? s->dlm : s->ier;
	case UART_IIR:
		v = serial_iir(s);
		/* Reading IIR acknowledges a THR-empty interrupt. */
		if ((v & 0x0f) == UART_IIR_THRI)
			s->thri_pending = false;
		return v;
	case UART_LCR:
		return s->lcr;
	case UART_MCR:
		return s->mcr;
	case UART_LSR:
		return UART_LSR_THRE | UART_LSR_TEMT | (s->rx_count ? UART_LSR_DR : 0);
	case UART_MSR:
		if (s->mcr & UART_MCR_LOOP) {
			/* Loopback wires DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD. */
			return (uint8_t)(((s->mcr & 0x01) << 5) | ((s->mcr & 0x02) << 3) |
					 ((s->mcr & 0x04) << 4) | ((s->mcr & 0x08) << 4));
		}
		return UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS;
	default:
		return s->scr;
	}
}

static void serial_write_reg(struct serial *s, uint16_t offset, uint8_t v)
{
	bool dlab = s->lcr & UART_LCR_DLAB;

	switch (offset) {
	case UART_TX:
		if (dlab) {
			s->dll = v;
			return;
		}
		serial_transmit(s, v);
		s->thri_pending = true; /* sent at once: the THR is empty again */
		return;
	case UART_IER:
		if (dlab) {
			s->dlm = v;
			return;
		}
		/* Enabling THRI with an empty transmitter raises it at once, as on a 16550. */
		if ((v & UART_IER_THRI) && !(s->ier & UART_IER_THRI))
			s->thri_pending = true;
		s->ier = v & 0x0f;
		return;
	case UART_FCR:
		s->fcr = v & UART_FCR_ENABLE_FIFO;
		if (v & UART_FCR_CLEAR_RCVR)
			s->rx_count = 0;
		return;
	case UART_LCR:
		s->lcr = v;
		return;
	case UART_MCR:
		s->mcr = v & 0x1f;
		return;
	case UART_SCR:
		s->scr = v;
		return;
	default:
		return; /* LSR and MSR are read-only */
	}
}

struct vcpu_outcome serial_io(void *opaque, uint16_t offset, uint8_t *data, unsigned int size, bool is_write)
{
	struct serial *s = opaque;

	pthread_mutex_lock(&s->lock);
	/* A wider access touches consecutive registers, one byte each. */
	for (unsigned int i = 0; i < size && offset + i < 8; i++) {
		if (is_write)
			serial_write_reg(s, (uint16_t)(offset + i), data[i]);
		else
			data[i] = serial_read_reg(s, (uint16_t)(offset + i));
	}
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return vcpu_continue();
}

int serial_register(struct serial *s, struct ioport_bus *bus, uint16_t base)
{
	return ioport_register(bus, base, 8, serial_io, s);
}

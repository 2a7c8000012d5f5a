/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_SERIAL_H
#define KVMPROF_SERIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERIAL_RX_FIFO 256

/*
 * A 16550A UART: enough of it for Linux's 8250 driver in interrupt mode and
 * for the bundled guest's polled output. Transmission is instantaneous (the
 * transmitter is always empty), received bytes queue in a FIFO. The IRQ line
 * follows the interrupt-pending state, so an edge-triggered ISA IRQ sees a
 * rising edge each time a new interrupt becomes pending.
 */
struct serial {
	pthread_mutex_t lock;
	uint8_t ier, lcr, mcr, scr, dll, dlm, fcr;
	bool thri_pending;  /* THR empty interrupt not yet acknowledged */
	uint8_t rx[SERIAL_RX_FIFO];
	unsigned int rx_head, rx_count;
	int irq_level;
	void (*set_irq)(void *ctx, int level);
	void *irq_ctx;
	int out_fd;          /* -1: output discarded */
	const char *name;    /* "COM1" or "COM2", for messages */
	bool out_failed;     /* the output went away or stalled; reported once */
	uint64_t tx_bytes;
	uint64_t dropped;    /* bytes the guest wrote after out_failed */
	void (*on_first_byte)(void *ctx); /* boot-time measurement hook */
	void *first_byte_ctx;
};

/*
 * How long the UART waits for its reader (a socket, pipe or terminal) to
 * take one byte before it calls the reader stalled and drops, counting,
 * whatever the guest writes from then on: the vCPU never blocks longer.
 */
#define SERIAL_STALL_MS 5000

void serial_init(struct serial *s, const char *name, int out_fd, void (*set_irq)(void *ctx, int level),
		 void *irq_ctx);
/* Says how many bytes were dropped, if any. */
void serial_destroy(struct serial *s);

/* Register access at offset 0-7 from the UART's base port. */
void serial_io(void *opaque, uint16_t offset, uint8_t *data, unsigned int size, bool is_write);

/* Queues received bytes; returns how many fit in the FIFO. */
size_t serial_receive(struct serial *s, const uint8_t *buf, size_t len);

#endif

/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_SERIAL_H
#define KVMPROF_SERIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ioport.h"

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
};

/*
 * How long the UART waits for its reader (a socket, pipe or terminal) to
 * take one byte before it calls the reader stalled and drops, counting,
 * whatever the guest writes from then on: the vCPU never blocks longer.
 */
#define SERIAL_STALL_MS 5000

void serial_init(struct serial *s, const char *name, int out_fd, void (*set_irq)(void *ctx, int level),
		 void *irq_ctx);
/* Registers the UART's eight registers at base on bus. */
int serial_register(struct serial *s, struct ioport_bus *bus, uint16_t base);
/* Says how many bytes were dropped, if any; a zeroed, never initialized UART is left alone. */
void serial_destroy(struct serial *s);

/* Register access at offset 0-7 from the UART's base port. */
struct vcpu_outcome serial_io(void *opaque, uint16_t offset, uint8_t *data, unsigned int size, bool is_write);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The agent channel: COM2 (KVMPROF_COM2_PORT), which kvmprof-vmm writes to
 * the file or socket of --agent-channel. Transmit only, polled.
 *
 * Every port access is a VM exit (~8 us from ring 0), so bytes go out with
 * `rep outsb`, which KVM hands to the VMM a page of bytes per exit instead
 * of one. kvmprof-vmm's UART sends each byte at once (THR empty again
 * immediately); a real 16550 would need pacing to its 16-byte FIFO, so
 * each chunk still waits, bounded, for THR empty first.
 */
#include "kernel.h"

#define UART_FCR 2
#define UART_LCR 3
#define UART_LSR 5
#define UART_LSR_THRE 0x20
#define CHUNK 4096

static volatile int chan_lock;
static int chan_ready;

static void chan_init(void)
{
	outb(KVMPROF_COM2_PORT + UART_LCR, 0x03); /* 8N1, DLAB off */
	outb(KVMPROF_COM2_PORT + UART_FCR, 0x07); /* FIFOs on and cleared */
	chan_ready = 1;
}

long agent_write(const void *buf, size_t len)
{
	const char *s = buf;
	spin_lock(&chan_lock);
	if (!chan_ready)
		chan_init();
	for (size_t off = 0; off < len;) {
		size_t n = len - off < CHUNK ? len - off : CHUNK;
		for (int i = 0; i < 10000; i++) /* a missing UART must not hang us */
			if (inb(KVMPROF_COM2_PORT + UART_LSR) & UART_LSR_THRE)
				break;
		const char *p = s + off;
		__asm__ volatile("rep outsb" : "+S"(p), "+c"(n) : "d"((uint16_t)KVMPROF_COM2_PORT) : "memory");
		off = (size_t)(p - s);
	}
	spin_unlock(&chan_lock);
	return (long)len;
}

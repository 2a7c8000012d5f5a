// SPDX-License-Identifier: MIT
#include <time.h>

#include "kvmprof/platform.h"
#include "rtc.h"

static uint8_t bcd(int v)
{
	return (uint8_t)(((v / 10) << 4) | (v % 10));
}

static uint8_t rtc_read(uint8_t index)
{
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	switch (index) {
	case 0x00: return bcd(tm.tm_sec);
	case 0x02: return bcd(tm.tm_min);
	case 0x04: return bcd(tm.tm_hour);
	case 0x06: return bcd(tm.tm_wday + 1);
	case 0x07: return bcd(tm.tm_mday);
	case 0x08: return bcd(tm.tm_mon + 1);
	case 0x09: return bcd(tm.tm_year % 100);
	case 0x32: return bcd(tm.tm_year / 100 + 19);
	case 0x0a: return 0x26;  /* 32.768 kHz base, no update in progress */
	case 0x0b: return 0x02;  /* 24-hour mode, BCD */
	case 0x0d: return 0x80;  /* valid RAM and time */
	default: return 0;
	}
}

static struct vcpu_outcome rtc_io(void *opaque, uint16_t offset, uint8_t *data, unsigned int size, bool is_write)
{
	struct rtc *rtc = opaque;

	(void)size;
	if (offset == 0) {
		if (is_write)
			rtc->index = data[0] & 0x7f; /* bit 7 masks NMIs on a PC */
		else
			data[0] = 0xff;
		return vcpu_continue();
	}
	if (!is_write)
		data[0] = rtc_read(rtc->index);
	return vcpu_continue();
}

int rtc_init(struct rtc *rtc, struct ioport_bus *bus)
{
	rtc->index = 0;
	return ioport_register(bus, KVMPROF_RTC_PORT, 2, rtc_io, rtc);
}

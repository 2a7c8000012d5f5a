/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_RTC_H
#define KVMPROF_RTC_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The CMOS real-time clock at ports 0x70/0x71, read-only: Linux reads the
 * wall-clock time from it at boot, and spins while the update-in-progress
 * bit reads as set, so an open bus (0xff) there would hang it.
 */
struct rtc {
	uint8_t index;
};

void rtc_io(void *opaque, uint16_t offset, uint8_t *data, unsigned int size, bool is_write);

#endif

/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_RTC_H
#define KVMPROF_RTC_H

#include <stdint.h>

#include "ioport.h"

/*
 * The CMOS real-time clock at KVMPROF_RTC_PORT and the port after it, read-only: Linux reads the
 * wall-clock time from it at boot, and spins while the update-in-progress
 * bit reads as set, so an open bus (0xff) there would hang it.
 */
struct rtc {
	uint8_t index;
};

/* Registers the clock's two ports on bus. */
int rtc_init(struct rtc *rtc, struct ioport_bus *bus);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * kvmprof's release, one number for its programs (kvmprof-vmm, kvmprof,
 * kvmprof-agent), which print it with the formats they speak.
 */
#ifndef KVMPROF_VERSION_H
#define KVMPROF_VERSION_H

#define KVMPROF_VERSION "0.1"

#endif

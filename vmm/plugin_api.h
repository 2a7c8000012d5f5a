/* SPDX-License-Identifier: MIT */
/*
 * The api functions a plugin calls at an event (kvmprof/plugin.h): the
 * vCPU's registers, guest memory through vmi/'s page walker, the guest
 * process through vmi/'s process attribution. plugin_host.c puts them into
 * each plugin's struct kvmprof_plugin_api.
 */
#ifndef KVMPROF_PLUGIN_API_H
#define KVMPROF_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

#include "kvmprof/plugin.h"

struct vm;

/* The VM the functions below read. */
void plugin_api_set_vm(struct vm *vm);

/* Fills the functions of api that are the same for every plugin. */
void plugin_api_fill(struct kvmprof_plugin_api *api);

#define PLUGIN_READ_MAX (1u << 20) /* bytes of one ctx_read_virt / read_phys */

#endif

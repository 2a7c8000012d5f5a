// SPDX-License-Identifier: MIT
/* Has the version symbol but no kvmprof_plugin_init: refused. */
#include "kvmprof/plugin.h"

KVMPROF_PLUGIN_DECLARE;

/* SPDX-License-Identifier: MIT */
/* kvmprof plugin: a running VMM's plugins over its control socket (docs/plugins.md). */
#ifndef HOST_PLUGIN_CMD_H
#define HOST_PLUGIN_CMD_H

/* argv[0] is "plugin". Exit code: 0, 1 (the VMM refused or is unreachable), 2 (usage). */
int host_plugin_main(int argc, char **argv);

#endif

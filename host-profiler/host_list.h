/* SPDX-License-Identifier: MIT */
/* `kvmprof list [--connect URI]`: the running libvirt domains and what kvmprof can do with each. */
#ifndef HOST_LIST_H
#define HOST_LIST_H

/* argv[0] is "list". Returns the exit status. */
int host_list_main(int argc, char **argv);

#endif

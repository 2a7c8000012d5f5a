// SPDX-License-Identifier: MIT
#include "virt_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

struct virt_dl virt_dl;

/* Their sonames, as Debian's libvirt0 and libxml2 install them (the -dev packages' links are build-time only). */
static const char *const libraries[] = { "libvirt.so.0", "libvirt-qemu.so.0", "libxml2.so.2" };

int virt_dl_load(char *err, size_t errlen)
{
	static bool loaded;
	void *h[sizeof(libraries) / sizeof(*libraries)];
	void *sym;

	if (loaded)
		return 0;
	for (size_t i = 0; i < sizeof(libraries) / sizeof(*libraries); i++) {
		/* Never closed: libvirt keeps threads and handlers of its own once a connection was made. */
		h[i] = dlopen(libraries[i], RTLD_NOW | RTLD_LOCAL);
		if (!h[i]) {
			snprintf(err, errlen, "cannot load %s (%s): install libvirt0 and libxml2", libraries[i], dlerror());
			return -ENOENT;
		}
	}
#define VIRT_DL_LOOKUP(lib, f)                                                                                    \
	sym = dlsym(h[lib], #f);                                                                                  \
	if (!sym) {                                                                                               \
		snprintf(err, errlen, "%s has no %s: a libvirt or libxml2 older than kvmprof needs", libraries[lib], #f); \
		return -ENOENT;                                                                                   \
	}                                                                                                         \
	*(void **)&virt_dl.f = sym;
	VIRT_DL_FUNCS(VIRT_DL_LOOKUP)
#undef VIRT_DL_LOOKUP
	loaded = true;
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * The plugin compiled into a static build (make build/static/NAME/kvmprof-vmm,
 * docs/plugins.md): plugins/NAME.c linked in, its KVMPROF_PLUGIN_ON handlers
 * called from the TRACE sites (trace.h). In the ordinary build there is none.
 */
#include <errno.h>
#include <stdio.h>

#include "plugin_host.h"
#include "trace.h"

#ifdef KVMPROF_STATIC_PLUGIN
/* The same source builds as a loadable plugin, where fini is optional too. */
#pragma weak kvmprof_plugin_fini

#define STATIC_HANDLES(id, name, nargs, argspec, desc) [KVMPROF_TRACE_##name] = TRACE_STATIC_HANDLES(name),
static const struct plugin_builtin builtin = {
	.name = KVMPROF_STATIC_PLUGIN,
	.init = kvmprof_plugin_init,
	.fini = kvmprof_plugin_fini,
	.handles = { KVMPROF_TRACE_EVENTS(STATIC_HANDLES) },
};
#undef STATIC_HANDLES

int plugin_static_load(int argc, char *const *argv, char *err, size_t errsz)
{
	/* A plugin without KVMPROF_PLUGIN_DECLARE does not link: the loader would refuse it too. */
	if (kvmprof_plugin_version != KVMPROF_PLUGIN_VERSION) {
		snprintf(err, errsz, "%s: built for plugin API version %u, not %u", builtin.name, kvmprof_plugin_version,
			 KVMPROF_PLUGIN_VERSION);
		return -EPROTO;
	}
	return plugin_load_builtin(&builtin, argc, argv, err, errsz);
}

static bool have_builtin = true;
#else
int plugin_static_load(int argc, char *const *argv, char *err, size_t errsz)
{
	(void)argc, (void)argv;
	snprintf(err, errsz, "%s: this kvmprof-vmm has no built-in plugin (a static build has one: "
		 "make build/static/NAME/kvmprof-vmm builds plugins/NAME.c in)", PLUGIN_BUILTIN_SPEC);
	return -ENOENT;
}

static bool have_builtin = false;
#endif

int plugin_load_start(const char *const *specs, unsigned int n, char *err, size_t errsz)
{
	int rc;

	for (unsigned int i = 0; i < n; i++) {
		rc = plugin_load_spec(specs[i], err, errsz);
		if (rc < 0)
			return rc;
	}
	if (!have_builtin)
		return 0;
	/* -EEXIST: a "builtin,key=value" spec above started it with its arguments. */
	rc = plugin_static_load(0, NULL, err, errsz);
	return rc < 0 && rc != -EEXIST ? rc : 0;
}

/* SPDX-License-Identifier: MIT */
#include "virt.h"

#include <errno.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collection/procfs.h"
#include "common/suggest.h"
#include "virt_dl.h"
#include "virt_uri.h"

/* libvirt prints every error to stderr by default; kvmprof says what failed in its own words. */
static void quiet_errors(void *data, virErrorPtr e)
{
	(void)data, (void)e;
}

static const char *last_error(void)
{
	const char *m = virt_dl.virGetLastErrorMessage();

	return m && *m ? m : "unknown libvirt error";
}

int virt_connect(struct virt_conn *c, const char *uri, char *err, size_t errlen)
{
	const char *type;

	memset(c, 0, sizeof(*c));
	snprintf(c->uri, sizeof(c->uri), "%s", uri ? uri : VIRT_DEFAULT_URI);
	/* Before libvirt is even loaded: a remote URI would first cost an ssh login or a TLS handshake. */
	if (virt_uri_check_local(c->uri, err, errlen))
		return -EPROTONOSUPPORT;
	if (virt_dl_load(err, errlen))
		return -ENOENT;
	virt_dl.virSetErrorFunc(NULL, quiet_errors);
	c->conn = virt_dl.virConnectOpen(c->uri);
	if (!c->conn) {
		snprintf(err, errlen, "cannot connect to libvirt at %s (is libvirtd running?): %s", c->uri, last_error());
		return -ECONNREFUSED;
	}
	type = virt_dl.virConnectGetType(c->conn);
	if (!type || strcmp(type, "QEMU")) {
		snprintf(err, errlen, "%s is a %s connection: kvmprof profiles QEMU/KVM domains (qemu:///system)",
			 c->uri, type ? type : "non-QEMU");
		virt_disconnect(c);
		return -EPROTONOSUPPORT;
	}
	return 0;
}

void virt_disconnect(struct virt_conn *c)
{
	if (c->conn)
		virt_dl.virConnectClose(c->conn);
	c->conn = NULL;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void virt_free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The names of the domains listAll gives with flags, sorted. */
static int domain_names(struct virt_conn *c, unsigned int flags, char ***names, int *n, char *err, size_t errlen)
{
	virDomainPtr *doms = NULL;
	int nd = virt_dl.virConnectListAllDomains(c->conn, &doms, flags);

	*names = NULL;
	*n = 0;
	if (nd < 0) {
		snprintf(err, errlen, "%s: cannot list domains: %s", c->uri, last_error());
		return -EIO;
	}
	*names = calloc((size_t)nd + 1, sizeof(**names));
	for (int i = 0; i < nd; i++) {
		const char *name = virt_dl.virDomainGetName(doms[i]);

		if (*names && name && !((*names)[*n] = strdup(name))) {
			virt_free_names(*names, *n);
			*names = NULL;
		} else if (*names && name) {
			(*n)++;
		}
		virt_dl.virDomainFree(doms[i]);
	}
	free(doms);
	if (!*names) {
		*n = 0;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	qsort(*names, (size_t)*n, sizeof(**names), cmp_names);
	return 0;
}

int virt_running_names(struct virt_conn *c, char ***names, int *n, char *err, size_t errlen)
{
	return domain_names(c, VIR_CONNECT_LIST_DOMAINS_ACTIVE, names, n, err, errlen);
}

/* "no domain 'x' at URI (closest: a, b)", or the domains there are when none is close. */
static void no_such_domain(struct virt_conn *c, const char *name, char *err, size_t errlen)
{
	char **names, close[512] = "", what[600];
	struct suggest s;
	int n;

	if (domain_names(c, 0, &names, &n, what, sizeof(what))) {
		snprintf(err, errlen, "no domain '%s' at %s", name, c->uri);
		return;
	}
	suggest_init(&s, name, 3);
	for (int i = 0; i < n; i++)
		suggest_consider(&s, names[i]);
	if (suggest_format(&s, close, sizeof(close)))
		snprintf(what, sizeof(what), "did you mean: %s?", close);
	else if (n) {
		size_t k = (size_t)snprintf(what, sizeof(what), "its domains: ");

		for (int i = 0; i < n && i < 8 && k < sizeof(what); i++)
			k += (size_t)snprintf(what + k, sizeof(what) - k, "%s%s", i ? ", " : "", names[i]);
		if (n > 8 && k < sizeof(what))
			snprintf(what + k, sizeof(what) - k, ", ... (%d in all: kvmprof list)", n);
	} else {
		snprintf(what, sizeof(what), "it has no domains");
	}
	snprintf(err, errlen, "no domain '%s' at %s (%s)", name, c->uri, what);
	virt_free_names(names, n);
}

static const char *state_name(int state)
{
	switch (state) {
	case VIR_DOMAIN_RUNNING:
		return "running";
	case VIR_DOMAIN_BLOCKED:
		return "blocked";
	case VIR_DOMAIN_PAUSED:
		return "paused";
	case VIR_DOMAIN_SHUTDOWN:
		return "shutting down";
	case VIR_DOMAIN_SHUTOFF:
		return "shut off";
	case VIR_DOMAIN_CRASHED:
		return "crashed";
	case VIR_DOMAIN_PMSUSPENDED:
		return "suspended";
	default:
		return "in no known state";
	}
}

/* The string value of an XPath expression in the domain XML, "" when absent. */
static void xpath_string(xmlXPathContextPtr x, const char *expr, char *out, size_t outlen)
{
	xmlXPathObjectPtr o = virt_dl.xmlXPathEvalExpression((const xmlChar *)expr, x);

	out[0] = 0;
	if (o && o->type == XPATH_STRING && o->stringval)
		snprintf(out, outlen, "%s", (const char *)o->stringval);
	virt_dl.xmlXPathFreeObject(o);
}

static int xml_facts(struct virt_domain *d, char *err, size_t errlen)
{
	char *xml = virt_dl.virDomainGetXMLDesc(d->dom, 0), buf[64];
	xmlDocPtr doc;
	xmlXPathContextPtr x;

	if (!xml) {
		snprintf(err, errlen, "domain '%s': cannot read its XML: %s", d->name, last_error());
		return -EIO;
	}
	doc = virt_dl.xmlReadMemory(xml, (int)strlen(xml), "domain.xml", NULL, XML_PARSE_NONET | XML_PARSE_NOERROR |
								   XML_PARSE_NOWARNING);
	free(xml);
	x = doc ? virt_dl.xmlXPathNewContext(doc) : NULL;
	if (!x) {
		virt_dl.xmlFreeDoc(doc);
		snprintf(err, errlen, "domain '%s': its XML does not parse", d->name);
		return -EBADMSG;
	}
	xpath_string(x, "string(/domain/@type)", d->type, sizeof(d->type));
	xpath_string(x, "string(/domain/os/type/@machine)", d->machine, sizeof(d->machine));
	xpath_string(x, "string(/domain/os/kernel)", d->kernel, sizeof(d->kernel));
	xpath_string(x, "string(/domain/memoryBacking/source/@type)", d->memory_backing, sizeof(d->memory_backing));
	/* <features><pmu state='on|off'/>, or a CPU model's <feature policy='require|disable' name='pmu'/>. */
	xpath_string(x, "string(/domain/features/pmu/@state)", buf, sizeof(buf));
	d->pmu = !strcmp(buf, "on") ? 1 : !strcmp(buf, "off") ? 0 : -1;
	if (d->pmu < 0) {
		xpath_string(x, "string(/domain/cpu/feature[@name='pmu']/@policy)", buf, sizeof(buf));
		d->pmu = !strcmp(buf, "require") || !strcmp(buf, "force") ? 1 : buf[0] ? 0 : -1;
	}
	virt_dl.xmlXPathFreeContext(x);
	virt_dl.xmlFreeDoc(doc);
	return 0;
}

static int virt_hmp(void *ctx, const char *cmd, char **reply, char *err, size_t errlen)
{
	struct virt_domain *d = ctx;

	*reply = NULL;
	if (virt_dl.virDomainQemuMonitorCommand(d->dom, cmd, reply, VIR_DOMAIN_QEMU_MONITOR_COMMAND_HMP) < 0) {
		snprintf(err, errlen, "QEMU's monitor, command '%s': %s", cmd, last_error());
		return -EIO;
	}
	return 0;
}

/* The vCPU thread ids (QMP query-cpus-fast), then QEMU's pid: the thread group of vCPU 0. */
static int qemu_threads(struct virt_domain *d, char *err, size_t errlen)
{
	char *reply = NULL;
	json_object *root = NULL, *ret, *v;
	size_t len;

	if (virt_dl.virDomainQemuMonitorCommand(d->dom, "{\"execute\":\"query-cpus-fast\"}", &reply, 0) < 0) {
		snprintf(err, errlen, "domain '%s': QMP query-cpus-fast: %s", d->name, last_error());
		return -EIO;
	}
	root = json_tokener_parse(reply);
	free(reply);
	if (!root || !json_object_object_get_ex(root, "return", &ret) || !json_object_is_type(ret, json_type_array))
		goto bad;
	len = json_object_array_length(ret);
	if (len > VIRT_MAX_VCPUS) {
		json_object_put(root);
		snprintf(err, errlen, "domain '%s' has %zu vCPUs: kvmprof samples at most %d", d->name, len,
			 VIRT_MAX_VCPUS);
		return -E2BIG;
	}
	if (!len)
		goto bad;
	for (size_t i = 0; i < len; i++) {
		json_object *cpu = json_object_array_get_idx(ret, i);
		int64_t idx, tid;

		if (!json_object_object_get_ex(cpu, "cpu-index", &v) || !json_object_is_type(v, json_type_int) ||
		    (idx = json_object_get_int64(v)) < 0 || idx >= VIRT_MAX_VCPUS ||
		    !json_object_object_get_ex(cpu, "thread-id", &v) || !json_object_is_type(v, json_type_int) ||
		    (tid = json_object_get_int64(v)) <= 0 || tid > INT32_MAX)
			goto bad;
		d->vcpu_tid[idx] = (pid_t)tid;
		if ((unsigned int)idx + 1 > d->nvcpus)
			d->nvcpus = (unsigned int)idx + 1;
	}
	json_object_put(root);
	root = NULL;
	for (unsigned int i = 0; i < d->nvcpus; i++)
		if (!d->vcpu_tid[i])
			goto bad;
	if (procfs_thread_group(d->vcpu_tid[0], &d->qemu_pid)) {
		snprintf(err, errlen, "domain '%s': its vCPU thread %d is not a thread of this host (a remote URI?)",
			 d->name, (int)d->vcpu_tid[0]);
		return -ESRCH;
	}
	return 0;
bad:
	json_object_put(root);
	snprintf(err, errlen, "domain '%s': QMP query-cpus-fast gave no usable vCPU list", d->name);
	return -EBADMSG;
}

int virt_domain_open(struct virt_conn *c, const char *name, struct virt_domain *d, char *err, size_t errlen)
{
	virDomainInfo info;
	int state = 0, reason = 0, rc;

	memset(d, 0, sizeof(*d));
	d->dom = virt_dl.virDomainLookupByName(c->conn, name);
	if (!d->dom) {
		no_such_domain(c, name, err, errlen);
		return -ENOENT;
	}
	snprintf(d->name, sizeof(d->name), "%s", name);
	if (virt_dl.virDomainGetState(d->dom, &state, &reason, 0) < 0 || state != VIR_DOMAIN_RUNNING) {
		snprintf(err, errlen, "domain '%s' at %s is %s, not running", name, c->uri, state_name(state));
		virt_domain_close(d);
		return -ESRCH;
	}
	if (virt_dl.virDomainGetInfo(d->dom, &info) == 0)
		d->memory_kib = info.memory;
	d->monitor = (struct qemu_monitor){ .hmp = virt_hmp, .ctx = d };
	rc = xml_facts(d, err, errlen);
	if (!rc)
		rc = qemu_threads(d, err, errlen);
	if (rc)
		virt_domain_close(d);
	return rc;
}

void virt_domain_close(struct virt_domain *d)
{
	if (d->dom)
		virt_dl.virDomainFree(d->dom);
	d->dom = NULL;
}

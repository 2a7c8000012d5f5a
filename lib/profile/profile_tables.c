/* SPDX-License-Identifier: MIT */
/*
 * The profile's tables: strings, commands, images, events, functions and
 * locations, each entry made once and found again by key. The bottom of
 * the profile library: every other part adds to these, none is called
 * from here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/keymap.h"
#include "common/utf8.h"
#include "profile/profile_state.h"

void profile_warn(struct profile *p, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!p->state->opt.warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* File and symbol names in it are the recorded system's (a guest's): nothing for the terminal. */
	utf8_sanitize(msg, '?', NULL);
	p->state->opt.warn(p->state->opt.warn_ctx, msg);
}

/* Names compare by pointer afterwards. */
const char *profile_intern(struct profile *p, const char *s)
{
	struct profile_state *ps = p->state;
	uint64_t h = keymap_hash(s, strlen(s), 1);
	uint64_t k;

	/* Hash collisions chain through the second key. */
	for (k = 0;; k++) {
		int64_t v = keymap_get(&ps->strs, h, k);
		char *copy;

		if (v >= 0) {
			if (!strcmp(ps->str_list[v], s))
				return ps->str_list[v];
			continue;
		}
		if (grow_array(&ps->str_list, &ps->strs_cap, ps->nr_strs + 1, sizeof(char *)))
			return NULL;
		copy = strdup(s);
		if (!copy || keymap_put(&ps->strs, h, k, (uint32_t)ps->nr_strs)) {
			free(copy);
			return NULL;
		}
		ps->str_list[ps->nr_strs++] = copy;
		return copy;
	}
}

uint32_t profile_comm(struct profile *p, const char *name)
{
	struct profile_state *ps = p->state;
	const char *s = profile_intern(p, name);
	int64_t v;

	if (!s)
		return PROFILE_NONE;
	v = keymap_get(&ps->comm_by_str, (uintptr_t)s, 0);
	if (v >= 0)
		return (uint32_t)v;
	if (grow_array(&p->comms, &ps->comms_cap, p->nr_comms + 1, sizeof(*p->comms)) ||
	    keymap_put(&ps->comm_by_str, (uintptr_t)s, 0, (uint32_t)p->nr_comms))
		return PROFILE_NONE;
	p->comms[p->nr_comms] = s;
	return (uint32_t)p->nr_comms++;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/*
 * The image for a recorded path and build-id, or a pseudo image (path NULL)
 * called `name`. Images are shared by every process that maps the file.
 */
uint32_t profile_image_id(struct profile *p, const char *path, const char *name, const uint8_t *bid,
			 uint8_t bid_size, bool kernel, uint8_t domain)
{
	struct profile_state *ps = p->state;
	const char *key = path ? path : name;
	uint64_t h = keymap_hash(key, strlen(key), path ? 2 : 3) ^ keymap_hash(bid, bid_size, 4) ^ domain;
	struct profile_image *im;
	uint64_t k;

	for (k = 0;; k++) {
		int64_t v = keymap_get(&ps->image_by_key, h, k);

		if (v < 0)
			break;
		im = &p->images[v];
		if ((path ? im->path && !strcmp(im->path, path) : !im->path && !strcmp(im->name, name)) &&
		    im->build_id_size == bid_size && (!bid_size || !memcmp(im->build_id, bid, bid_size)) &&
		    im->domain == domain)
			return (uint32_t)v;
	}
	if (grow_array(&p->images, &ps->images_cap, p->nr_images + 1, sizeof(*p->images)) ||
	    grow_array(&ps->istate, &ps->istate_cap, p->nr_images + 1, sizeof(*ps->istate)) ||
	    keymap_put(&ps->image_by_key, h, k, (uint32_t)p->nr_images))
		return PROFILE_NONE;
	im = &p->images[p->nr_images];
	*im = (struct profile_image){ .kernel = kernel, .build_id_size = bid_size, .domain = domain };
	if (bid_size)
		memcpy(im->build_id, bid, bid_size);
	im->path = path ? profile_intern(p, path) : NULL;
	im->name = profile_intern(p, path ? base_name(path) : name);
	if ((path && !im->path) || !im->name)
		return PROFILE_NONE;
	ps->istate[p->nr_images] = (struct image_state){ 0 };
	return (uint32_t)p->nr_images++;
}

uint32_t profile_event_index(struct profile *p, uint32_t id)
{
	struct profile_state *ps = p->state;
	int64_t v = keymap_get(&ps->event_by_id, id, 0);
	struct profile_event *e;

	if (v >= 0)
		return (uint32_t)v;
	if (grow_array(&p->events, &ps->events_cap, p->nr_events + 1, sizeof(*p->events)) ||
	    keymap_put(&ps->event_by_id, id, 0, (uint32_t)p->nr_events))
		return PROFILE_NONE;
	e = &p->events[p->nr_events];
	*e = (struct profile_event){ .id = id };
	/* Samples of an event no EVENT record describes still count, under a made-up name. */
	snprintf(e->name, sizeof(e->name), "event%u", id);
	return (uint32_t)p->nr_events++;
}

uint32_t profile_func_id(struct profile *p, uint32_t img, const void *sym, const char *name, uint64_t addr)
{
	struct profile_state *ps = p->state;
	int64_t v = keymap_get(&ps->func_by_key, img, (uintptr_t)sym);

	if (v >= 0)
		return (uint32_t)v;
	if (grow_array(&p->funcs, &ps->funcs_cap, p->nr_funcs + 1, sizeof(*p->funcs)) ||
	    keymap_put(&ps->func_by_key, img, (uintptr_t)sym, (uint32_t)p->nr_funcs))
		return PROFILE_NONE;
	p->funcs[p->nr_funcs] = (struct profile_func){ .image = img, .name = name, .addr = addr };
	return (uint32_t)p->nr_funcs++;
}

uint32_t profile_add_loc(struct profile *p, uint32_t img, uint64_t addr, uint64_t rel, uint32_t func)
{
	struct profile_state *ps = p->state;

	if (func == PROFILE_NONE ||
	    grow_array(&p->locs, &ps->locs_cap, p->nr_locs + 1, sizeof(*p->locs)) ||
	    keymap_put(&ps->loc_by_key, img, rel, (uint32_t)p->nr_locs))
		return PROFILE_NONE;
	p->locs[p->nr_locs] = (struct profile_loc){ .addr = addr, .rel = rel, .func = func, .image = img };
	return (uint32_t)p->nr_locs++;
}

uint32_t profile_pseudo_loc(struct profile *p, uint32_t img, const char *name, uint64_t addr)
{
	/* Keyed by the interned name: one location per pseudo function. */
	int64_t v = keymap_get(&p->state->loc_by_key, img, (uintptr_t)name);

	if (v >= 0)
		return (uint32_t)v;
	return profile_add_loc(p, img, addr, (uintptr_t)name, profile_func_id(p, img, name, name, 0));
}

/* SPDX-License-Identifier: MIT */
/*
 * Growing an array before appending to it: the symbolizer, the profile
 * model and the renderers all collect an unknown number of entries, many of
 * them counted by a possibly hostile guest, so every size is overflow-checked.
 */
#ifndef KVMPROF_GROW_H
#define KVMPROF_GROW_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Makes room for `need` elements of `size` bytes in *arr (capacity *cap). 0 or -ENOMEM. */
static inline int grow_array(void *arr, size_t *cap, size_t need, size_t size)
{
	void **p = arr;
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / size)
		return -ENOMEM;
	n = realloc(*p, ncap * size);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = ncap;
	return 0;
}

#endif

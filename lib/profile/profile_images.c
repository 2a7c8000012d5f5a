/* SPDX-License-Identifier: MIT */
/*
 * An image's file: found under its domain's root (or on the host), opened
 * once for its symbols, and again for its code, its source lines and its
 * CFI (the unwinder). Warnings say once why a file gives no symbols.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/file_open.h"
#include "profile/profile_state.h"
#include "symbols/symtab.h"

/* The root directory a domain's files are looked up in: a descriptor, or -1 for none (host paths). */
static int domain_root(struct profile *p, uint8_t domain)
{
	struct profile_state *ps = p->state;
	const char *dir = domain == KP_DOMAIN_GUEST ? ps->opt.guest_root : ps->opt.root;
	int d = domain == KP_DOMAIN_GUEST;

	if (ps->root_fd[d] != -2)
		return ps->root_fd[d];
	ps->root_fd[d] = -1;
	if (dir) {
		ps->root_fd[d] = file_open_root(dir);
		if (ps->root_fd[d] < 0)
			profile_warn(p, "%s: %s; no symbols for files under it", dir, strerror(-ps->root_fd[d]));
	}
	return ps->root_fd[d];
}

/*
 * A descriptor of an image's file: inside its domain's root when there is
 * one, else on the host; -errno when opening it failed. IMAGE_NOT_LOOKED_UP
 * when there is nothing to open (a pseudo name, a guest file without a
 * root to look in: with warn, that says so once).
 */
#define IMAGE_NOT_LOOKED_UP (-100000)
static int image_open(struct profile *p, uint32_t img, bool warn, int *root_out)
{
	struct profile_state *ps = p->state;
	struct profile_image *im = &p->images[img];
	const char *dir;
	int root = -1;

	*root_out = -1;
	/* "[vdso]", "//anon" (a JIT's code: the exact backend's emulator), "[heap]": names, not files. */
	if (!im->path || im->path[0] != '/' || im->path[1] == '/')
		return IMAGE_NOT_LOOKED_UP;
	if (!ps->istate[img].host_path) {
		dir = im->domain == KP_DOMAIN_GUEST ? ps->opt.guest_root : ps->opt.root;
		root = domain_root(p, im->domain);
		if (dir && root < 0)
			return IMAGE_NOT_LOOKED_UP;
		/* A guest's file names mean nothing on the host: only its root is searched. */
		if (!dir && im->domain == KP_DOMAIN_GUEST) {
			if (warn && !ps->guest_files_warned)
				profile_warn(p, "guest files are looked up only under --guest-root DIR; none given, so guest "
				     "programs and libraries have no symbols");
			ps->guest_files_warned = true;
			return IMAGE_NOT_LOOKED_UP;
		}
	}
	*root_out = root;
	/* Inside a root, every "..", absolute or relative symlink stays in it (openat2 RESOLVE_IN_ROOT). */
	return root >= 0 ? file_open_in_root(root, im->path) : file_open_regular(im->path);
}

struct symtab *profile_image_symtab(struct profile *p, uint32_t img)
{
	struct profile_state *ps = p->state;
	struct image_state *is = &ps->istate[img];
	struct profile_image *im = &p->images[img];
	char shown[KP_PATH_MAX + 4096];
	int root, fd, rc;

	if (is->tried)
		return is->st;
	is->tried = 1;
	fd = image_open(p, img, true, &root);
	if (fd == IMAGE_NOT_LOOKED_UP)
		return NULL;
	snprintf(shown, sizeof(shown), "%s%s", root >= 0 ? (im->domain == KP_DOMAIN_GUEST ? ps->opt.guest_root :
							     ps->opt.root) : "", im->path);
	rc = fd < 0 ? fd : symtab_open_fd(&is->st, fd, im->path, root, im->build_id, im->build_id_size);
	if (rc == -ESTALE)
		profile_warn(p, "%s: build-id differs from the recorded one; not using it for symbols", shown);
	else if (rc == -ENOEXEC)
		profile_warn(p, "%s: not an ELF executable or shared object; no symbols", shown);
	else if (rc)
		profile_warn(p, "%s: %s; no symbols", shown, file_open_strerror(rc));
	if (rc)
		is->st = NULL;
	else
		im->has_symbols = true;
	return is->st;
}

/* A new descriptor of an image's file, found as its symbols were (*root: the root it is in, or -1); -errno if none. */
static int image_reopen(struct profile *p, uint32_t img, int *root)
{
	int fd;

	if (!profile_image_symtab(p, img))
		return -ENOENT;
	fd = image_open(p, img, false, root);
	return fd == IMAGE_NOT_LOOKED_UP ? -ENOENT : fd;
}

int profile_image_fd(struct profile *p, uint32_t img)
{
	int root;

	return image_reopen(p, img, &root);
}

ssize_t profile_image_code(struct profile *p, uint32_t img, uint64_t vaddr, void *buf, size_t len)
{
	int root, fd = image_reopen(p, img, &root);
	ssize_t n;

	if (fd < 0)
		return fd;
	n = symtab_read_code(profile_image_symtab(p, img), fd, vaddr, buf, len);
	close(fd);
	return n;
}

int profile_image_src(struct profile *p, uint32_t img, struct symtab_src **out)
{
	int root, fd = image_reopen(p, img, &root);

	if (fd < 0)
		return fd;
	return symtab_src_open(out, profile_image_symtab(p, img), fd, p->images[img].path, root);
}

int profile_func_extent(struct profile *p, uint32_t func, uint64_t *start, uint64_t *size)
{
	const struct profile_func *fn = &p->funcs[func];
	struct symtab *st = fn->name ? profile_image_symtab(p, fn->image) : NULL;
	const struct symtab_sym *sym = st ? symtab_lookup(st, fn->addr) : NULL;

	/* Kernel symbols from kallsyms have no symtab: their extent is not known. */
	if (!sym || sym->addr != fn->addr)
		return -ENOENT;
	*start = sym->addr;
	*size = sym->size;
	return 0;
}

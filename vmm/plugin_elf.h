/* SPDX-License-Identifier: MIT */
/*
 * What a plugin file needs before it is dlopen'ed: a library built with
 * AddressSanitizer (or another sanitizer whose runtime must be the first
 * library of the process) makes that runtime end the whole process inside
 * dlopen when the VMM was not built with it. The loader asks first.
 */
#ifndef KVMPROF_PLUGIN_ELF_H
#define KVMPROF_PLUGIN_ELF_H

#include <stddef.h>
#include <stdint.h>

/*
 * If the ELF file at path lists a sanitizer runtime that must come first
 * (libasan, libtsan, libhwasan) among its DT_NEEDED libraries, copies that
 * library's name into runtime, points *init_symbol at the symbol a process
 * that has the runtime defines ("__asan_init"), and returns 1; 0 if it lists none, or when
 * the file is not an ELF64 library this reader can follow (dlopen then says
 * what is wrong with it). Every offset is checked against the file's size.
 */
int plugin_elf_sanitizer_runtime(const char *path, char *runtime, size_t size, const char **init_symbol);

/* The same over the file's bytes (for the fuzzer): f[0..size). */
int plugin_elf_scan(const uint8_t *f, size_t size, char *runtime, size_t rsize, const char **init_symbol);

#endif

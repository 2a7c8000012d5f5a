/* SPDX-License-Identifier: MIT */
/*
 * A recording's output file, as perf record treats one that exists: an
 * earlier recording at FILE is kept as FILE.old (replacing the FILE.old
 * before it) and the new one goes to a new FILE. Both record commands
 * (kvmprof-agent record, kvmprof record) go through here.
 */
#ifndef KVMPROF_RECORD_FILE_H
#define KVMPROF_RECORD_FILE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Renames FILE to FILE.old when FILE has something to keep: a file with
 * data in it, as perf's check_backup (an empty file, a device such as
 * /dev/null or a pipe is written over). 1 when it kept one, 0 when there
 * was nothing to keep, -errno when it could not (err then says what, in
 * one line without the program's name).
 */
int record_file_keep_old(const char *path, char *err, size_t errlen);

/*
 * record_file_keep_old, then FILE opened for writing (created, or an
 * empty or special file as it is): the descriptor, or -errno with err
 * saying what failed. *kept_old: whether an earlier recording went to
 * FILE.old (for record_file_undo).
 */
int record_file_create(const char *path, bool *kept_old, char *err, size_t errlen);

/*
 * A recording that never began (its command could not start, the VM
 * refused): FILE removed and, when kept_old, the earlier recording put
 * back from FILE.old, so a failed start leaves the last recording where it
 * was. Best effort: what it cannot undo stays as it is.
 */
void record_file_undo(const char *path, bool kept_old);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof record --all-domains`: every running domain of a connection at
 * once, a recording per domain (DIR/NAME.data, each a whole `record
 * --domain` file the report reads on its own too), in one child process
 * each so that one domain's work never holds up another's. `kvmprof
 * report -i DIR` shows host CPU per domain, then a section per domain.
 * An existing DIR becomes DIR.old first, as perf keeps perf.data.old.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_record.h"
#include "virt.h"

#define ALL_DOMAINS_DEFAULT_DIR "kvmprof.domains"
#define MAX_CHILDREN 256

static pid_t children[MAX_CHILDREN];
static int nchildren;

/* Ctrl-C reaches the children from the terminal; a kill of the parent alone is passed on. */
static void forward(int sig)
{
	for (int i = 0; i < nchildren; i++)
		if (children[i] > 0)
			kill(children[i], sig);
}

/* Removes a directory of recordings: its *.data files, then it; fails when anything else is in it. */
static int remove_recordings(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4400];
	int rc = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len > 5 && !strcmp(de->d_name + len - 5, ".data")) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (unlink(path))
				rc = -errno;
		}
	}
	closedir(d);
	if (!rc && rmdir(dir))
		rc = -errno;
	return rc;
}

/* A fresh DIR, an earlier one kept as DIR.old (and the DIR.old before that removed). 0, or 1 after a message. */
static int fresh_dir(const char *dir)
{
	char old[4200];
	struct stat st;
	int r;

	if (!lstat(dir, &st)) {
		if (!S_ISDIR(st.st_mode)) {
			fprintf(stderr, "kvmprof: --all-domains: %s exists and is not a directory\n", dir);
			return 1;
		}
		snprintf(old, sizeof(old), "%s.old", dir);
		if (!lstat(old, &st) && (r = S_ISDIR(st.st_mode) ? remove_recordings(old) : -ENOTDIR)) {
			fprintf(stderr, "kvmprof: --all-domains: cannot replace %s: %s\n", old,
				r == -ENOTEMPTY ? "it holds files that are not recordings" : strerror(-r));
			return 1;
		}
		if (rename(dir, old)) {
			fprintf(stderr, "kvmprof: --all-domains: cannot move %s to %s: %s\n", dir, old, strerror(errno));
			return 1;
		}
	}
	if (mkdir(dir, 0755)) {
		fprintf(stderr, "kvmprof: --all-domains: cannot create %s: %s\n", dir, strerror(errno));
		return 1;
	}
	return 0;
}

int host_record_all_domains(const struct host_record_opts *o)
{
	const char *dir = o->rec.output ? o->rec.output : ALL_DOMAINS_DEFAULT_DIR;
	struct virt_conn conn;
	struct sigaction sa = { .sa_handler = forward };
	char err[512], **names;
	int n, failed = 0;

	if (virt_connect(&conn, o->connect, err, sizeof(err)) || virt_running_names(&conn, &names, &n, err, sizeof(err))) {
		fprintf(stderr, "kvmprof: %s\n", err);
		virt_disconnect(&conn);
		return 1;
	}
	virt_disconnect(&conn);
	if (!n) {
		fprintf(stderr, "kvmprof: --all-domains: no running domains at %s\n", o->connect ? o->connect : VIRT_DEFAULT_URI);
		virt_free_names(names, n);
		return 1;
	}
	if (n > MAX_CHILDREN)
		n = MAX_CHILDREN;
	if (!strcmp(dir, "-") || fresh_dir(dir)) {
		if (!strcmp(dir, "-"))
			fprintf(stderr, "kvmprof: --all-domains writes a directory of recordings: -o DIR, not '-'\n");
		virt_free_names(names, n);
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGINT, SIG_IGN); /* the children get it from the terminal and stop with their files whole */
	fprintf(stderr, "kvmprof: recording %d domain%s into %s/\n", n, n == 1 ? "" : "s", dir);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			static struct host_record_opts one;
			static char path[4200];

			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			one = *o;
			one.all_domains = false;
			one.target = (struct vm_target_choice){ vm_target_kind_of("domain"), names[i], 1 };
			one.rec.quiet = true;
			snprintf(path, sizeof(path), "%s/%s.data", dir, names[i]);
			one.rec.output = path;
			_exit(host_record_run(&one));
		}
		if (pid < 0) {
			fprintf(stderr, "kvmprof: --all-domains: fork for domain %s: %s\n", names[i], strerror(errno));
			failed++;
			continue;
		}
		children[nchildren++] = pid;
	}
	for (int i = 0; i < nchildren; i++) {
		int status = 0;

		while (waitpid(children[i], &status, 0) < 0 && errno == EINTR)
			;
		children[i] = 0;
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	}
	fprintf(stderr, "kvmprof: %d of %d domains recorded into %s/ (kvmprof report -i %s)\n", n - failed, n, dir, dir);
	virt_free_names(names, n);
	return failed ? 1 : 0;
}

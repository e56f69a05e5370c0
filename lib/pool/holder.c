/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pool lock holder: who holds the flock a pool open could not take.
 * Linux lists every file lock in /proc/locks with the pid that took it and
 * the file's device and inode; flock(2) locks are invisible to F_GETLK and
 * F_OFD_GETLK (those report POSIX/OFD locks only), so /proc/locks is the
 * one place that names a flock holder. pmad names itself "pmad"
 * (PR_SET_NAME) so /proc/PID/comm tells it apart from any other holder,
 * whatever its binary is called or whether it runs under valgrind.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "pool/internal.h"
#include "util/errmsg.h"

#ifndef POOL_PROC_LOCKS
#define POOL_PROC_LOCKS "/proc/locks"
#endif

/* one /proc/locks line: "1: FLOCK  ADVISORY  WRITE 1234 00:2d:5678 0 EOF";
 * waiters ("1: -> FLOCK ...") hold nothing and do not match */
static int holder_line(const char *line, const struct stat *st, pid_t *ret_pid)
{
	unsigned maj, mnr;
	unsigned long long ino;
	char type[16], kind[16], mode[16];
	int pid;

	if (sscanf(line, "%*d: %15s %15s %15s %d %x:%x:%llu", type, kind, mode,
		   &pid, &maj, &mnr, &ino) != 7)
		return 0;
	if (strcmp(type, "FLOCK") != 0 || pid <= 0)
		return 0;
	if (maj != major(st->st_dev) || mnr != minor(st->st_dev) ||
	    ino != (unsigned long long)st->st_ino)
		return 0;
	*ret_pid = (pid_t)pid;
	return 1;
}

int pool_lock_holder(int fd, pid_t *ret_pid)
{
	char line[256];
	struct stat st;
	pid_t pid;
	FILE *f;
	int found = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	f = fopen(POOL_PROC_LOCKS, "re");
	if (!f)
		return -errno;
	/* several may hold it shared (pmad and its clients): pmad first */
	while (fgets(line, sizeof(line), f)) {
		if (!holder_line(line, &st, &pid))
			continue;
		if (!found || pool_pid_is_pmad(pid))
			*ret_pid = pid;
		found = 1;
		if (pool_pid_is_pmad(pid))
			break;
	}
	(void)fclose(f); /* read-only */
	return found ? 0 : -ESRCH;
}

int pool_pid_is_pmad(pid_t pid)
{
	char path[64], comm[32];
	FILE *f;
	int is = 0;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(comm, sizeof(comm), f))
		is = strcmp(comm, "pmad\n") == 0;
	(void)fclose(f); /* read-only */
	return is;
}

int pool_lock_busy(int fd, const char *label)
{
	const char *sep = label && *label ? ": " : "";
	pid_t pid = 0;

	if (!label)
		label = "";
	if (pool_lock_holder(fd, &pid) == 0 && pool_pid_is_pmad(pid))
		return util_errmsg_set(EBUSY,
				       "%s%spool is held by pmad (pid %d); "
				       "use --socket",
				       label, sep, (int)pid);
	return util_errmsg_set(EBUSY, "%s%spool is in use by another process",
			       label, sep);
}

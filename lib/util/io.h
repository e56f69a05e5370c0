/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util io: write-all/read-all that loop on short transfers and EINTR, and
 * the fault-injection hook tests use to fail the Nth allocation or I/O.
 */
#ifndef PMAD_UTIL_IO_H
#define PMAD_UTIL_IO_H

#include <stddef.h>
#include <sys/types.h>

/* 0 or -errno; a short write is retried until done */
int util_write_all(int fd, const void *buf, size_t len);
int util_pwrite_all(int fd, const void *buf, size_t len, off_t off);
/* 0, -errno, or -EIO on EOF before len bytes */
int util_read_all(int fd, void *buf, size_t len);
int util_pread_all(int fd, void *buf, size_t len, off_t off);
/* flush and close stdout at exit; returns 0 or -EIO (EPIPE is not an error) */
int util_close_stdout(void);

/*
 * Fault injection for tests: after util_fault_inject_at(point, n), the nth
 * call of util_fault_hit(point) (counting from 1) returns 1, once.
 */
enum util_fault_point {
	UTIL_FAULT_ALLOC,
	UTIL_FAULT_IO,
	UTIL_FAULT_NPOINTS,
};
void util_fault_inject_at(enum util_fault_point point, unsigned n);
int util_fault_hit(enum util_fault_point point);

/*
 * Crash points for tests of multi-step protocols (pool create): with
 * PMAD_TEST_CRASH_AT="name:n" in the environment, the nth call of
 * util_crash_point(name) (counting from 1) kills the process with SIGKILL,
 * as `kill -9` would. Without the variable a call costs one getenv.
 */
void util_crash_point(const char *name);

#endif

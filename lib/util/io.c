/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util io: whole-buffer read/write that retry short transfers and EINTR,
 * closing stdout with error detection, and the fault-injection counters.
 * Each *_all call is one UTIL_FAULT_IO point: when it fires, the call fails
 * with -EIO before transferring anything.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/errmsg.h"
#include "util/io.h"

/* calls of util_fault_hit(point) left until it fires; 0 = disarmed */
static atomic_uint fault_countdown[UTIL_FAULT_NPOINTS];

void util_fault_inject_at(enum util_fault_point point, unsigned n)
{
	if ((unsigned)point < UTIL_FAULT_NPOINTS)
		atomic_store(&fault_countdown[point], n);
}

/* lock-free: of all threads racing, exactly one sees the count go 1 -> 0 */
int util_fault_hit(enum util_fault_point point)
{
	atomic_uint *cnt;
	unsigned v;

	if ((unsigned)point >= UTIL_FAULT_NPOINTS)
		return 0;
	cnt = &fault_countdown[point];
	v = atomic_load_explicit(cnt, memory_order_relaxed);
	while (v) {
		if (atomic_compare_exchange_weak(cnt, &v, v - 1))
			return v == 1;
	}
	return 0;
}

/* calls of util_crash_point() whose name matched PMAD_TEST_CRASH_AT */
static atomic_uint crash_calls;

void util_crash_point(const char *name)
{
	const char *spec = getenv("PMAD_TEST_CRASH_AT");
	size_t len = strlen(name);
	unsigned long n;
	char *end;

	if (!spec || strncmp(spec, name, len) != 0 || spec[len] != ':')
		return;
	n = strtoul(spec + len + 1, &end, 10);
	if (*end || !n)
		return;
	if (atomic_fetch_add(&crash_calls, 1) + 1 == n)
		raise(SIGKILL);
}

static int io_injected(const char *op)
{
	return util_errmsg_set(EIO, "%s: injected I/O fault", op);
}

/* -errno of a failed call; off < 0 for calls without an offset */
static int io_error(const char *op, off_t off)
{
	int err = errno;

	if (off < 0)
		return util_errmsg_set(err, "%s: %s", op, strerror(err));
	return util_errmsg_set(err, "%s at offset %lld: %s", op, (long long)off,
			       strerror(err));
}

/* a call that returned 0: EOF for reads, no progress for writes */
static int io_short(const char *op, off_t off, size_t left)
{
	if (off < 0)
		return util_errmsg_set(EIO, "%s: %zu bytes short", op, left);
	return util_errmsg_set(EIO, "%s at offset %lld: %zu bytes short", op,
			       (long long)off, left);
}

int util_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	if (util_fault_hit(UTIL_FAULT_IO))
		return io_injected("write");
	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return io_error("write", -1);
		if (n == 0) /* would loop forever; no errno to report */
			return io_short("write", -1, len);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int util_pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;
	ssize_t n;

	if (util_fault_hit(UTIL_FAULT_IO))
		return io_injected("pwrite");
	while (len) {
		n = pwrite(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return io_error("pwrite", off);
		if (n == 0)
			return io_short("pwrite", off, len);
		p += n;
		off += n;
		len -= (size_t)n;
	}
	return 0;
}

int util_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	ssize_t n;

	if (util_fault_hit(UTIL_FAULT_IO))
		return io_injected("read");
	while (len) {
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return io_error("read", -1);
		if (n == 0) /* end of file */
			return io_short("read", -1, len);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int util_pread_all(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;
	ssize_t n;

	if (util_fault_hit(UTIL_FAULT_IO))
		return io_injected("pread");
	while (len) {
		n = pread(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return io_error("pread", off);
		if (n == 0) /* end of file */
			return io_short("pread", off, len);
		p += n;
		off += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Like gnulib's close_stdout: an earlier failed write (ferror) or a failed
 * final flush is an error, except EPIPE (the reader went away, as with
 * `pmactl ... | head`) and EBADF with nothing to write (stdout was closed
 * by the parent and we never printed).
 */
int util_close_stdout(void)
{
	int prev_fail = ferror(stdout) != 0;
	int pending = __fpending(stdout) != 0;
	int err;

	errno = 0;
	if (fclose(stdout) == 0) {
		if (!prev_fail)
			return 0;
		return util_errmsg_set(EIO, "write error on standard output");
	}
	err = errno;
	if (err == EPIPE || (err == EBADF && !pending && !prev_fail))
		return 0;
	return util_errmsg_set(EIO, "write error on standard output: %s",
			       strerror(err));
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util errmsg: the per-thread last-error message shared by all layers.
 * A message longer than the buffer (long paths) loses its middle, never
 * its end: the reason comes last.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/errmsg.h"

#define ERRMSG_ELLIPSIS "..."

static __thread char errmsg_buf[UTIL_ERRMSG_MAX];

/* store msg (len bytes), cutting its middle if it does not fit */
static void errmsg_store(const char *msg, size_t len)
{
	size_t room = sizeof(errmsg_buf) - 1, head, tail;

	if (len <= room) {
		memcpy(errmsg_buf, msg, len + 1);
		return;
	}
	head = (room - strlen(ERRMSG_ELLIPSIS)) / 2;
	tail = room - strlen(ERRMSG_ELLIPSIS) - head;
	snprintf(errmsg_buf, sizeof(errmsg_buf), "%.*s%s%s", (int)head, msg,
		 ERRMSG_ELLIPSIS, msg + len - tail);
}

int util_errmsg_set(int err_no, const char *fmt, ...)
{
	char *msg;
	va_list ap;
	int len;

	va_start(ap, fmt);
	/* va_start is right above (an analyzer false positive) */
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	len = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (len < 0) {
		/* out of memory: the start of the message is better than none */
		va_start(ap, fmt);
		/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
		vsnprintf(errmsg_buf, sizeof(errmsg_buf), fmt, ap);
		va_end(ap);
		return -err_no;
	}
	errmsg_store(msg, (size_t)len);
	free(msg);
	return -err_no;
}

void util_errmsg_prefix(const char *fmt, ...)
{
	char old[UTIL_ERRMSG_MAX], *prefix, *msg;
	va_list ap;
	int len;

	memcpy(old, errmsg_buf, sizeof(old));
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	len = vasprintf(&prefix, fmt, ap);
	va_end(ap);
	if (len >= 0 && !old[0]) {
		errmsg_store(prefix, (size_t)len);
		free(prefix);
		return;
	}
	if (len >= 0) {
		len = asprintf(&msg, "%s: %s", prefix, old);
		free(prefix);
	}
	/* out of memory: keep the old message (the reason) */
	if (len < 0)
		return;
	errmsg_store(msg, (size_t)len);
	free(msg);
}

const char *util_errmsg(void)
{
	return errmsg_buf;
}

void util_errmsg_clear(void)
{
	errmsg_buf[0] = '\0';
}

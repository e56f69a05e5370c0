/* SPDX-License-Identifier: BSD-3-Clause */
/* util errmsg: the per-thread last-error message shared by all layers. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/errmsg.h"

static __thread char errmsg_buf[UTIL_ERRMSG_MAX];

int util_errmsg_set(int err_no, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	/* va_start is right above (an analyzer false positive) */
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vsnprintf(errmsg_buf, sizeof(errmsg_buf), fmt, ap);
	va_end(ap);
	return -err_no;
}

/* append s at *pos, truncating at the end of the buffer */
static void errmsg_append(size_t *pos, const char *s)
{
	size_t room = sizeof(errmsg_buf) - 1 - *pos;
	size_t len = strlen(s);

	if (len > room)
		len = room;
	memcpy(errmsg_buf + *pos, s, len);
	*pos += len;
	errmsg_buf[*pos] = '\0';
}

void util_errmsg_prefix(const char *fmt, ...)
{
	char old[UTIL_ERRMSG_MAX];
	size_t pos = 0;
	va_list ap;

	memcpy(old, errmsg_buf, sizeof(old));
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vsnprintf(errmsg_buf, sizeof(errmsg_buf), fmt, ap);
	va_end(ap);
	if (!old[0])
		return;
	pos = strlen(errmsg_buf);
	errmsg_append(&pos, ": ");
	errmsg_append(&pos, old);
}

const char *util_errmsg(void)
{
	return errmsg_buf;
}

void util_errmsg_clear(void)
{
	errmsg_buf[0] = '\0';
}

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
	vsnprintf(errmsg_buf, sizeof(errmsg_buf), fmt, ap);
	va_end(ap);
	return -err_no;
}

void util_errmsg_prefix(const char *fmt, ...)
{
	char prefix[UTIL_ERRMSG_MAX];
	char old[UTIL_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, errmsg_buf, sizeof(old));
	if (old[0])
		snprintf(errmsg_buf, sizeof(errmsg_buf), "%s: %s", prefix, old);
	else
		snprintf(errmsg_buf, sizeof(errmsg_buf), "%s", prefix);
}

const char *util_errmsg(void)
{
	return errmsg_buf;
}

void util_errmsg_clear(void)
{
	errmsg_buf[0] = '\0';
}

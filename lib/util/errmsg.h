/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util errmsg: one per-thread "last error" message shared by every library
 * layer (pm_errormsg, pool_errormsg, ns_errormsg, pma_errormsg return it).
 * The failing function sets it once, at the point that knows the cause;
 * callers that add context use util_errmsg_prefix().
 */
#ifndef PMAD_UTIL_ERRMSG_H
#define PMAD_UTIL_ERRMSG_H

#define UTIL_ERRMSG_MAX 512

/* replace the message and return -err_no: pass a positive errno and get
 * -errno back, so `return util_errmsg_set(ENOENT, "...")` works */
int util_errmsg_set(int err_no, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* prepend "<prefix>: " to the current message */
void util_errmsg_prefix(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
const char *util_errmsg(void);
void util_errmsg_clear(void);

#endif

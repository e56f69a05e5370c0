/* SPDX-License-Identifier: BSD-3-Clause */
/* util tls: thread-local variables on the operation fast paths. */
#ifndef PMAD_UTIL_TLS_H
#define PMAD_UTIL_TLS_H

/*
 * A thread-local variable read on every operation, in the initial-exec
 * model: code in libpmalloc.so reads it at a fixed offset from the thread
 * pointer instead of calling __tls_get_addr. The variables are small, so a
 * dlopen'ed library still gets them from glibc's static TLS reserve.
 */
#define UTIL_TLS_FAST __thread __attribute__((tls_model("initial-exec")))

#endif

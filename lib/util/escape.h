/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util escape: make untrusted text (paths, option arguments) safe to
 * print. Newlines, tabs, carriage returns and backslashes become \n, \t,
 * \r and \\, other control bytes and DEL \xNN; every other byte is kept.
 */
#ifndef PMAD_UTIL_ESCAPE_H
#define PMAD_UTIL_ESCAPE_H

/* the escape of byte c, or NULL if it prints as itself (buf: 5 bytes) */
const char *util_escape_char(unsigned char c, char buf[5]);
/* a malloc'd escaped copy of s, or NULL if out of memory */
char *util_escape(const char *s);

#endif

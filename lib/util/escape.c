/* SPDX-License-Identifier: BSD-3-Clause */
/* util escape: see escape.h */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"

const char *util_escape_char(unsigned char c, char buf[5])
{
	switch (c) {
	case '\n':
		return "\\n";
	case '\t':
		return "\\t";
	case '\r':
		return "\\r";
	case '\\':
		return "\\\\";
	default:
		if (c >= 0x20 && c != 0x7f)
			return NULL;
		snprintf(buf, 5, "\\x%02x", c);
		return buf;
	}
}

char *util_escape(const char *s)
{
	char buf[5], *out, *p;
	const char *esc;

	/* every byte becomes at most 4 */
	out = malloc(strlen(s) * 4 + 1);
	if (!out)
		return NULL;
	for (p = out; *s; s++) {
		esc = util_escape_char((unsigned char)*s, buf);
		if (esc)
			p = stpcpy(p, esc);
		else
			*p++ = *s;
	}
	*p = '\0';
	return out;
}

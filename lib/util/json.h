/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util json: thin helpers over json-c for machine-readable output.
 * Keys are snake_case; sizes and counts are integers; offsets are "0x..."
 * strings (STYLE.md, JSON output).
 */
#ifndef PMAD_UTIL_JSON_H
#define PMAD_UTIL_JSON_H

#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

enum util_json_flags {
	UTIL_JSON_PRETTY = 1 << 0, /* indented output (default is one line) */
};

/* print obj plus a newline; returns 0 or -EIO if the stream failed */
int util_json_print(FILE *f, struct json_object *obj, unsigned flags);
/* obj[key] = value helpers; they return 0 or -ENOMEM */
int util_json_add_u64(struct json_object *obj, const char *key, uint64_t v);
int util_json_add_i64(struct json_object *obj, const char *key, int64_t v);
int util_json_add_str(struct json_object *obj, const char *key, const char *s);
int util_json_add_bool(struct json_object *obj, const char *key, int v);
/* "0x%llx" string */
int util_json_add_hex(struct json_object *obj, const char *key, uint64_t v);
/* add a child object/array (takes ownership of child even on failure) */
int util_json_add_obj(struct json_object *obj, const char *key,
		      struct json_object *child);

#endif

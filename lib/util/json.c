/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util json: helpers over json-c. Every helper that allocates is a fault
 * injection point (UTIL_FAULT_ALLOC), so tests reach the -ENOMEM paths.
 * A NULL string value is omitted rather than stored as null (STYLE.md:
 * unknown values are omitted).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/errmsg.h"
#include "util/io.h"
#include "util/json.h"

int util_json_print(FILE *f, struct json_object *obj, unsigned flags)
{
	int jflags = JSON_C_TO_STRING_NOSLASHESCAPE;
	const char *s;

	jflags |= (flags & UTIL_JSON_PRETTY) ? JSON_C_TO_STRING_PRETTY :
					       JSON_C_TO_STRING_PLAIN;
	s = json_object_to_json_string_ext(obj, jflags);
	if (!s)
		return util_errmsg_set(ENOMEM, "cannot serialize JSON");
	/* fflush so a failed write is reported here, not at exit */
	if (fputs(s, f) == EOF || fputc('\n', f) == EOF || fflush(f) == EOF ||
	    ferror(f))
		return util_errmsg_set(EIO, "cannot write JSON output: %s",
				       strerror(errno));
	return 0;
}

/* obj[key] = val; val is consumed (put) on failure */
static int json_add(struct json_object *obj, const char *key,
		    struct json_object *val)
{
	if (!obj || !key) {
		json_object_put(val);
		return util_errmsg_set(EINVAL, "JSON: no object or key");
	}
	if (!val || util_fault_hit(UTIL_FAULT_ALLOC) ||
	    json_object_object_add(obj, key, val) != 0) {
		json_object_put(val);
		return util_errmsg_set(ENOMEM, "JSON: cannot add key '%s'",
				       key);
	}
	return 0;
}

int util_json_add_u64(struct json_object *obj, const char *key, uint64_t v)
{
	return json_add(obj, key, json_object_new_uint64(v));
}

int util_json_add_i64(struct json_object *obj, const char *key, int64_t v)
{
	return json_add(obj, key, json_object_new_int64(v));
}

int util_json_add_str(struct json_object *obj, const char *key, const char *s)
{
	if (!s)
		return 0;
	return json_add(obj, key, json_object_new_string(s));
}

int util_json_add_bool(struct json_object *obj, const char *key, int v)
{
	return json_add(obj, key, json_object_new_boolean(v != 0));
}

int util_json_add_hex(struct json_object *obj, const char *key, uint64_t v)
{
	char buf[sizeof("0x") + 16];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_add(obj, key, json_object_new_string(buf));
}

/* a NULL child (its constructor failed) is reported as -ENOMEM */
int util_json_add_obj(struct json_object *obj, const char *key,
		      struct json_object *child)
{
	return json_add(obj, key, child);
}

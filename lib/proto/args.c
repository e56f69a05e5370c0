/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/proto args: the arguments of the requests that read or change a
 * pool's HDPM file system, bookkeeping logs and slabs (pool_files,
 * pool_log, gc, morph), encoded by pmactl and decoded by pmad with the
 * same code, so both ends agree on the keys and their checks (and
 * fuzz-proto covers them).
 */
#include <errno.h>
#include <stdint.h>

#include "proto/proto.h"
#include "util/errmsg.h"
#include "util/json.h"

int proto_files_args_add(struct json_object *args, int pages)
{
	if (!pages)
		return 0;
	return util_json_add_bool(args, "pages", 1) < 0 ?
		       util_errmsg_set(ENOMEM, "out of memory") :
		       0;
}

int proto_files_args_decode(struct json_object *args, int *ret_pages)
{
	struct json_object *v;

	*ret_pages = 0;
	if (!json_object_object_get_ex(args, "pages", &v))
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return util_errmsg_set(EINVAL, "\"pages\" must be a boolean");
	*ret_pages = json_object_get_boolean(v);
	return 0;
}

int proto_log_args_add(struct json_object *args, const struct proto_log_args *a)
{
	int err = 0;

	if (a->arena < 0)
		return 0;
	if (a->part < 0 || a->part > PROTO_INDEX_MAX ||
	    a->arena > PROTO_INDEX_MAX)
		return util_errmsg_set(EINVAL, "part or arena out of range");
	err |= util_json_add_u64(args, "part", (uint64_t)a->part);
	err |= util_json_add_u64(args, "arena", (uint64_t)a->arena);
	return err ? util_errmsg_set(ENOMEM, "out of memory") : 0;
}

/* args[key]: an integer lo..hi into *ret when present (else *ret is
 * left as it is) */
static int int_decode(struct json_object *args, const char *key, int64_t lo,
		      int64_t hi, int64_t *ret)
{
	struct json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(args, key, &v))
		return 0;
	n = json_object_get_int64(v);
	if (!json_object_is_type(v, json_type_int) || n < lo || n > hi)
		return util_errmsg_set(EINVAL,
				       "\"%s\" must be an integer %lld..%lld",
				       key, (long long)lo, (long long)hi);
	*ret = n;
	return 0;
}

/* args[key]: an integer 0..PROTO_INDEX_MAX when present */
static int index_decode(struct json_object *args, const char *key, long *ret)
{
	int64_t n = *ret;
	int rc = int_decode(args, key, 0, PROTO_INDEX_MAX, &n);

	*ret = (long)n;
	return rc;
}

int proto_log_args_decode(struct json_object *args, struct proto_log_args *ret)
{
	struct proto_log_args a = { .part = 0, .arena = -1 };
	int rc;

	rc = index_decode(args, "part", &a.part);
	if (rc == 0)
		rc = index_decode(args, "arena", &a.arena);
	if (rc == 0 && a.arena < 0 &&
	    json_object_object_get_ex(args, "part", NULL))
		rc = util_errmsg_set(EINVAL, "\"part\" needs \"arena\"");
	if (rc < 0)
		return rc;
	*ret = a;
	return 0;
}

int proto_morph_args_add(struct json_object *args,
			 const struct proto_morph_args *a)
{
	int err = 0;

	if (a->class_size > PROTO_MORPH_CLASS_MAX || a->used_pct > 100)
		return util_errmsg_set(EINVAL, "class size or percentage out "
					       "of range");
	if (a->class_size)
		err |= util_json_add_u64(args, "class_size", a->class_size);
	if (a->used_pct)
		err |= util_json_add_u64(args, "used_pct", a->used_pct);
	if (a->dry_run)
		err |= util_json_add_bool(args, "dry_run", 1);
	return err ? util_errmsg_set(ENOMEM, "out of memory") : 0;
}

int proto_morph_args_decode(struct json_object *args,
			    struct proto_morph_args *ret)
{
	struct proto_morph_args a = { 0 };
	struct json_object *v;
	int64_t size = 0, pct = 0;
	int rc;

	rc = int_decode(args, "class_size", 1, PROTO_MORPH_CLASS_MAX, &size);
	if (rc == 0)
		rc = int_decode(args, "used_pct", 1, 100, &pct);
	if (rc == 0 && json_object_object_get_ex(args, "dry_run", &v)) {
		if (!json_object_is_type(v, json_type_boolean))
			rc = util_errmsg_set(EINVAL,
					     "\"dry_run\" must be a boolean");
		else
			a.dry_run = json_object_get_boolean(v);
	}
	if (rc < 0)
		return rc;
	a.class_size = (uint64_t)size;
	a.used_pct = (unsigned)pct;
	*ret = a;
	return 0;
}

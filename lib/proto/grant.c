/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto grant: what a pool_open reply hands a client besides the pool's
 * descriptors, i.e. which part of the heap it may use and how. One struct
 * and one JSON object, versioned on their own ("grant": {"version": 2}):
 * version 2 replaced the whole-heap grant of version 1 by region leases
 * without touching the envelope.
 */
#include <errno.h>
#include <string.h>

#include "proto/proto.h"
#include "util/errmsg.h"

static const char *const scope_names[] = {
	[PROTO_GRANT_REGIONS] = "regions",
};

static const char *access_name(unsigned access)
{
	switch (access) {
	case PROTO_GRANT_READ:
		return "r";
	case PROTO_GRANT_READ | PROTO_GRANT_WRITE:
		return "rw";
	default:
		return NULL;
	}
}

int proto_grant_encode(const struct proto_grant *g,
		       struct json_object **ret_obj)
{
	const char *access = access_name(g->access);
	struct json_object *o;
	int err;

	struct json_object *regions;
	unsigned s;

	if (g->scope != PROTO_GRANT_REGIONS || !access || !g->nparts ||
	    g->nparts > PROTO_FDS_MAX || !g->mask)
		return util_errmsg_set(EINVAL, "invalid grant");
	o = json_object_new_object();
	regions = json_object_new_array();
	if (!o || !regions) {
		json_object_put(o);
		json_object_put(regions);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	err = json_object_object_add(o, "regions", regions);
	for (s = 0; s < PROTO_GRANT_SLOTS; s++)
		if (g->mask >> s & 1)
			err |= json_object_array_add(
				regions, json_object_new_int((int)s));
	err |= json_object_object_add(o, "version",
				      json_object_new_int(PROTO_GRANT_VERSION));
	err |= json_object_object_add(
		o, "scope", json_object_new_string(scope_names[g->scope]));
	err |= json_object_object_add(o, "access",
				      json_object_new_string(access));
	err |= json_object_object_add(o, "parts",
				      json_object_new_int((int)g->nparts));
	if (err) {
		json_object_put(o);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	*ret_obj = o;
	return 0;
}

/* o[key] as a string, or NULL */
static const char *get_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int get_int(struct json_object *o, const char *key, int64_t *ret)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return -1;
	*ret = json_object_get_int64(v);
	return 0;
}

/* o["regions"]: slot numbers 0..63, at least one, each once */
static int regions_decode(struct json_object *o, uint64_t *ret_mask)
{
	struct json_object *a, *v;
	uint64_t mask = 0;
	size_t i, n;
	int64_t s;

	if (!json_object_object_get_ex(o, "regions", &a) ||
	    !json_object_is_type(a, json_type_array) ||
	    !(n = json_object_array_length(a)))
		return util_errmsg_set(EPROTO,
				       "grant has no \"regions\" array of "
				       "slots");
	for (i = 0; i < n; i++) {
		v = json_object_array_get_idx(a, i);
		if (!json_object_is_type(v, json_type_int) ||
		    (s = json_object_get_int64(v)) < 0 ||
		    s >= PROTO_GRANT_SLOTS)
			return util_errmsg_set(EPROTO,
					       "grant \"regions\"[%zu] is not "
					       "a slot 0..%d",
					       i, PROTO_GRANT_SLOTS - 1);
		if (mask >> s & 1)
			return util_errmsg_set(EPROTO,
					       "grant \"regions\" names slot "
					       "%lld twice",
					       (long long)s);
		mask |= 1ULL << s;
	}
	*ret_mask = mask;
	return 0;
}

int proto_grant_decode(struct json_object *result, struct proto_grant *ret)
{
	struct proto_grant g = { 0 };
	struct json_object *o;
	const char *s;
	int64_t n;

	if (!result || !json_object_object_get_ex(result, "grant", &o) ||
	    !json_object_is_type(o, json_type_object))
		return util_errmsg_set(EPROTO, "reply has no \"grant\" object");
	if (get_int(o, "version", &n) < 0)
		return util_errmsg_set(EPROTO,
				       "grant has no integer \"version\"");
	if (n != PROTO_GRANT_VERSION)
		return util_errmsg_set(EPROTONOSUPPORT,
				       "grant version %lld is not supported "
				       "(this end knows version %d)",
				       (long long)n, PROTO_GRANT_VERSION);
	g.version = PROTO_GRANT_VERSION;
	s = get_str(o, "scope");
	if (!s || strcmp(s, scope_names[PROTO_GRANT_REGIONS]) != 0)
		return util_errmsg_set(EPROTONOSUPPORT,
				       "grant scope %s%s%s is not supported "
				       "(this end knows \"regions\")",
				       s ? "\"" : "", s ? s : "(none)",
				       s ? "\"" : "");
	g.scope = PROTO_GRANT_REGIONS;
	if (regions_decode(o, &g.mask) < 0)
		return -EPROTO;
	s = get_str(o, "access");
	if (s && strcmp(s, "r") == 0)
		g.access = PROTO_GRANT_READ;
	else if (s && strcmp(s, "rw") == 0)
		g.access = PROTO_GRANT_READ | PROTO_GRANT_WRITE;
	else
		return util_errmsg_set(EPROTO,
				       "grant \"access\" must be \"r\" or "
				       "\"rw\"");
	if (get_int(o, "parts", &n) < 0 || n < 1 || n > PROTO_FDS_MAX)
		return util_errmsg_set(EPROTO,
				       "grant \"parts\" must be an integer "
				       "1..%d",
				       PROTO_FDS_MAX);
	g.nparts = (unsigned)n;
	*ret = g;
	return 0;
}

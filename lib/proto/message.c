/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto messages: decode (size cap first, then one bounded json-c parse in
 * strict mode, then the envelope) and encode (json-c, checked against the
 * same cap). The errno travels by name so that both ends agree on it
 * whatever their libc numbers are.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "util/errmsg.h"

/* highest errno value proto_errno_parse() looks at */
#define PROTO_ERRNO_SCAN 200

const char *proto_errormsg(void)
{
	return util_errmsg();
}

const char *proto_errno_name(int err)
{
	const char *name = err > 0 ? strerrorname_np(err) : NULL;

	return name ? name : "E?";
}

int proto_errno_parse(const char *s)
{
	const char *name;
	int e;

	if (!s || s[0] != 'E')
		return 0;
	for (e = 1; e < PROTO_ERRNO_SCAN; e++) {
		name = strerrorname_np(e);
		if (name && strcmp(name, s) == 0)
			return e;
	}
	return 0;
}

/* only JSON whitespace may follow the object */
static int only_blanks(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strchr(" \t\r\n", p[i]) || p[i] == '\0')
			return 0;
	return 1;
}

static int parse_bounded(const char *buf, size_t len,
			 struct json_object **ret_obj)
{
	struct json_tokener *tok = json_tokener_new_ex(PROTO_DEPTH_MAX);
	enum json_tokener_error jerr;
	struct json_object *obj;
	size_t end;

	if (!tok)
		return util_errmsg_set(ENOMEM, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	/* len <= PROTO_MSG_MAX, checked by the caller */
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!obj && jerr == json_tokener_continue)
		return util_errmsg_set(EBADMSG, "truncated JSON message");
	if (!obj)
		return util_errmsg_set(EBADMSG,
				       "malformed JSON at byte %zu: %s", end,
				       json_tokener_error_desc(jerr));
	if (end > len || !only_blanks(buf + end, len - end)) {
		json_object_put(obj);
		return util_errmsg_set(EBADMSG,
				       "trailing bytes after the JSON object "
				       "(at byte %zu)",
				       end);
	}
	*ret_obj = obj;
	return 0;
}

static int check_version(struct json_object *obj)
{
	struct json_object *v;
	int64_t version;

	if (!json_object_object_get_ex(obj, "version", &v) ||
	    !json_object_is_type(v, json_type_int))
		return util_errmsg_set(EPROTO,
				       "message has no integer \"version\"");
	version = json_object_get_int64(v);
	if (version != PROTO_VERSION)
		return util_errmsg_set(EPROTONOSUPPORT,
				       "protocol version %lld is not supported "
				       "(this end speaks version %d)",
				       (long long)version, PROTO_VERSION);
	return 0;
}

int proto_decode(const void *buf, size_t len, struct json_object **ret_obj)
{
	struct json_object *obj = NULL;
	int rc;

	if (len == 0 || len > PROTO_MSG_MAX)
		return util_errmsg_set(EMSGSIZE,
				       "message of %zu bytes (expected 1..%d)",
				       len, PROTO_MSG_MAX);
	rc = parse_bounded(buf, len, &obj);
	if (rc < 0)
		return rc;
	if (!json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		return util_errmsg_set(EBADMSG, "message is not a JSON object");
	}
	rc = check_version(obj);
	if (rc < 0) {
		json_object_put(obj);
		return rc;
	}
	*ret_obj = obj;
	return 0;
}

/* root[key] as an object, an empty new one when absent (owned by root) */
static int get_object(struct json_object *root, const char *key,
		      struct json_object **ret_obj)
{
	struct json_object *o;

	if (!json_object_object_get_ex(root, key, &o) || !o) {
		o = json_object_new_object();
		if (!o || json_object_object_add(root, key, o) < 0)
			return util_errmsg_set(ENOMEM, "out of memory");
	}
	if (!json_object_is_type(o, json_type_object))
		return util_errmsg_set(EPROTO, "\"%s\" is not an object", key);
	*ret_obj = o;
	return 0;
}

static int get_op(struct json_object *root, const char **ret_op)
{
	struct json_object *o;
	size_t n;

	if (!json_object_object_get_ex(root, "op", &o) ||
	    !json_object_is_type(o, json_type_string))
		return util_errmsg_set(EPROTO, "request has no string \"op\"");
	n = (size_t)json_object_get_string_len(o);
	if (n == 0 || n > PROTO_OP_MAX ||
	    strlen(json_object_get_string(o)) != n)
		return util_errmsg_set(EPROTO,
				       "\"op\" must be 1..%d printable bytes",
				       PROTO_OP_MAX);
	*ret_op = json_object_get_string(o);
	return 0;
}

int proto_request_decode(const void *buf, size_t len, struct proto_request *req)
{
	int rc;

	memset(req, 0, sizeof(*req));
	rc = proto_decode(buf, len, &req->root);
	if (rc < 0)
		return rc;
	rc = get_op(req->root, &req->op);
	if (rc == 0)
		rc = get_object(req->root, "args", &req->args);
	if (rc < 0)
		proto_request_release(req);
	return rc;
}

void proto_request_release(struct proto_request *req)
{
	json_object_put(req->root);
	memset(req, 0, sizeof(*req));
}

static int get_error(struct json_object *e, struct proto_reply *rep)
{
	struct json_object *name, *msg;

	if (!json_object_is_type(e, json_type_object) ||
	    !json_object_object_get_ex(e, "errno", &name) ||
	    !json_object_is_type(name, json_type_string) ||
	    !json_object_object_get_ex(e, "message", &msg) ||
	    !json_object_is_type(msg, json_type_string))
		return util_errmsg_set(EPROTO,
				       "\"error\" needs string \"errno\" and "
				       "\"message\"");
	rep->err = proto_errno_parse(json_object_get_string(name));
	if (!rep->err)
		rep->err = EIO; /* a name this libc lacks: still an error */
	rep->message = json_object_get_string(msg);
	return 0;
}

int proto_reply_decode(const void *buf, size_t len, struct proto_reply *rep)
{
	struct json_object *e;
	int rc;

	memset(rep, 0, sizeof(*rep));
	rep->message = "";
	rc = proto_decode(buf, len, &rep->root);
	if (rc < 0)
		return rc;
	if (json_object_object_get_ex(rep->root, "error", &e))
		rc = get_error(e, rep);
	if (rc == 0)
		rc = get_object(rep->root, "result", &rep->result);
	if (rc < 0)
		proto_reply_release(rep);
	return rc;
}

void proto_reply_release(struct proto_reply *rep)
{
	json_object_put(rep->root);
	memset(rep, 0, sizeof(*rep));
	rep->message = "";
}

/* serialize root (dropping it) into a malloc'ed buffer within the cap */
static int encode(struct json_object *root, char **ret_buf, size_t *ret_len)
{
	const char *s;
	size_t n = 0;
	char *copy;

	s = json_object_to_json_string_length(root, JSON_C_TO_STRING_PLAIN, &n);
	if (!s) {
		json_object_put(root);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	if (n > PROTO_MSG_MAX) {
		json_object_put(root);
		return util_errmsg_set(EMSGSIZE,
				       "message of %zu bytes exceeds %d", n,
				       PROTO_MSG_MAX);
	}
	copy = strndup(s, n);
	json_object_put(root);
	if (!copy)
		return util_errmsg_set(ENOMEM, "out of memory");
	*ret_buf = copy;
	*ret_len = n;
	return 0;
}

/* {"version": 1} with key = child added (child is taken) */
static struct json_object *envelope(const char *key, struct json_object *child)
{
	struct json_object *root = json_object_new_object();
	struct json_object *v = json_object_new_int(PROTO_VERSION);

	if (!root || !v || json_object_object_add(root, "version", v) < 0) {
		json_object_put(v);
		goto fail;
	}
	if (child && json_object_object_add(root, key, child) < 0)
		goto fail;
	return root;
fail:
	json_object_put(child);
	json_object_put(root);
	return NULL;
}

int proto_request_encode(const char *op, struct json_object *args,
			 char **ret_buf, size_t *ret_len)
{
	struct json_object *root, *o;

	if (!op || !*op || strlen(op) > PROTO_OP_MAX) {
		json_object_put(args);
		return util_errmsg_set(EINVAL, "invalid op name");
	}
	root = envelope("args", args);
	if (!root)
		return util_errmsg_set(ENOMEM, "out of memory");
	o = json_object_new_string(op);
	if (!o || json_object_object_add(root, "op", o) < 0) {
		json_object_put(o);
		json_object_put(root);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	return encode(root, ret_buf, ret_len);
}

int proto_reply_encode(struct json_object *result, char **ret_buf,
		       size_t *ret_len)
{
	struct json_object *root = envelope("result", result);

	if (!root)
		return util_errmsg_set(ENOMEM, "out of memory");
	return encode(root, ret_buf, ret_len);
}

int proto_error_encode(int err, const char *message, char **ret_buf,
		       size_t *ret_len)
{
	struct json_object *e = json_object_new_object();
	struct json_object *root;
	int bad = !e;

	if (e) {
		bad |= json_object_object_add(
			e, "errno",
			json_object_new_string(proto_errno_name(err)));
		bad |= json_object_object_add(e, "code",
					      json_object_new_int(err));
		bad |= json_object_object_add(
			e, "message",
			json_object_new_string(message ? message : ""));
	}
	if (bad) {
		json_object_put(e);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	root = envelope("error", e);
	if (!root)
		return util_errmsg_set(ENOMEM, "out of memory");
	return encode(root, ret_buf, ret_len);
}

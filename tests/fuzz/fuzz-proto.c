/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz-proto: libFuzzer target for lib/proto's decoders, the code that
 * parses every packet a client sends to pmad. Each input is decoded as a
 * request and as a reply; whatever is accepted is re-encoded and decoded
 * again, and must come back the same (op, errno, message). A reply's
 * "grant" (pool_open) is decoded too; an accepted grant must be valid and
 * survive the same round trip. A request's args are decoded as those of
 * pool_files and pool_log too (args.c): accepted ones must be in range
 * and survive encoding again.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"

/* the args of morph, decoded, encoded, decoded again */
static void morph_again(struct json_object *args)
{
	struct proto_morph_args m, again;
	struct json_object *o;

	if (proto_morph_args_decode(args, &m) < 0)
		return;
	if (m.class_size > PROTO_MORPH_CLASS_MAX || m.used_pct > 100 ||
	    (m.dry_run != 0 && m.dry_run != 1))
		abort();
	o = json_object_new_object();
	if (!o || proto_morph_args_add(o, &m) < 0 ||
	    proto_morph_args_decode(o, &again) < 0 ||
	    memcmp(&m, &again, sizeof(m)) != 0)
		abort();
	json_object_put(o);
}

/* the args of pool_files, pool_log and morph, decoded, encoded, decoded
 * again */
static void args_again(struct json_object *args)
{
	struct proto_log_args a, again;
	struct json_object *o;
	int pages, pages2;

	if (proto_files_args_decode(args, &pages) == 0) {
		o = json_object_new_object();
		if (!o || (pages != 0 && pages != 1) ||
		    proto_files_args_add(o, pages) < 0 ||
		    proto_files_args_decode(o, &pages2) < 0 || pages2 != pages)
			abort();
		json_object_put(o);
	}
	if (proto_log_args_decode(args, &a) == 0) {
		if (a.arena < -1 || a.arena > PROTO_INDEX_MAX || a.part < 0 ||
		    a.part > PROTO_INDEX_MAX || (a.arena < 0 && a.part))
			abort();
		o = json_object_new_object();
		if (!o || proto_log_args_add(o, &a) < 0 ||
		    proto_log_args_decode(o, &again) < 0 ||
		    again.arena != a.arena || again.part != a.part)
			abort();
		json_object_put(o);
	}
	morph_again(args);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void request_again(const struct proto_request *req)
{
	struct proto_request again;
	size_t len;
	char *buf;

	if (proto_request_encode(req->op, json_object_get(req->args), &buf,
				 &len) < 0)
		return; /* may be too big once re-serialized */
	if (proto_request_decode(buf, len, &again) < 0 ||
	    strcmp(again.op, req->op) != 0)
		abort();
	proto_request_release(&again);
	free(buf);
}

static void reply_again(const struct proto_reply *rep)
{
	struct proto_reply again;
	size_t len;
	char *buf;
	int rc;

	if (rep->err)
		rc = proto_error_encode(rep->err, rep->message, &buf, &len);
	else
		rc = proto_reply_encode(json_object_get(rep->result), &buf,
					&len);
	if (rc < 0)
		return;
	if (proto_reply_decode(buf, len, &again) < 0 || again.err != rep->err ||
	    strcmp(again.message, rep->message) != 0)
		abort();
	proto_reply_release(&again);
	free(buf);
}

static void grant_again(const struct proto_reply *rep)
{
	struct proto_grant g, again;
	struct json_object *o, *result;

	if (proto_grant_decode(rep->result, &g) < 0)
		return;
	if (g.version != PROTO_GRANT_VERSION ||
	    g.scope != PROTO_GRANT_REGIONS || !(g.access & PROTO_GRANT_READ) ||
	    !g.nparts || g.nparts > PROTO_FDS_MAX || !g.mask)
		abort();
	if (proto_grant_encode(&g, &o) < 0)
		abort();
	result = json_object_new_object();
	if (!result || json_object_object_add(result, "grant", o) < 0)
		abort();
	if (proto_grant_decode(result, &again) < 0 ||
	    memcmp(&g, &again, sizeof(g)) != 0)
		abort();
	json_object_put(result);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_request req;
	struct proto_reply rep;

	if (proto_request_decode(data, size, &req) == 0) {
		if (!req.op || !req.args || strlen(req.op) > PROTO_OP_MAX)
			abort();
		request_again(&req);
		args_again(req.args);
		proto_request_release(&req);
	}
	if (proto_reply_decode(data, size, &rep) == 0) {
		if (!rep.message || !rep.result)
			abort();
		reply_again(&rep);
		grant_again(&rep);
		proto_reply_release(&rep);
	}
	if (strlen(proto_errormsg()) >= 4096)
		abort();
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/proto: the wire format of pmad's control socket, shared by the daemon
 * and its clients. AF_UNIX SOCK_SEQPACKET; one JSON object per packet, at
 * most PROTO_MSG_MAX bytes (checked before anything is parsed):
 *   request  {"version": 1, "op": "pool_stat", "args": {...}}
 *   reply    {"version": 1, "result": {...}}
 *   error    {"version": 1, "error": {"errno": "EACCES", "code": 13,
 *                                      "message": "..."}}
 * "args" and "result" are optional objects. Functions return 0 or a
 * negative errno and set the util errmsg (proto_errormsg()); nothing here
 * logs or prints. Decoders accept any bytes: they never trust a length,
 * a type or a terminator they did not check.
 */
#ifndef PMAD_PROTO_PROTO_H
#define PMAD_PROTO_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#define PROTO_VERSION 1
/* largest packet either end sends or accepts, in bytes */
#define PROTO_MSG_MAX 65536
/* longest op name */
#define PROTO_OP_MAX 32
/* deepest JSON nesting accepted (objects and arrays) */
#define PROTO_DEPTH_MAX 16

/* a decoded request; root owns op and args */
struct proto_request {
	const char *op; /* the "op" string */
	struct json_object *args; /* an object (empty if absent) */
	struct json_object *root;
};

/* a decoded reply: either err != 0 (positive errno) or result */
struct proto_reply {
	int err; /* 0 or the errno the peer named */
	const char *message; /* the error message, "" on success */
	struct json_object *result; /* an object (empty if absent) */
	struct json_object *root;
};

/*
 * Parse one packet of len bytes into a JSON object, checking the size cap,
 * that the whole buffer is exactly one JSON object, the nesting depth and
 * "version". Errors: -EMSGSIZE (len == 0 or > PROTO_MSG_MAX), -EBADMSG
 * (not JSON, trailing bytes, not an object), -EPROTO (version missing or
 * not an integer), -EPROTONOSUPPORT (another version), -ENOMEM.
 */
int proto_decode(const void *buf, size_t len, struct json_object **ret_obj);

/* proto_decode, then "op" (a non-empty string of at most PROTO_OP_MAX
 * bytes) and "args" (an object when present): -EPROTO otherwise */
int proto_request_decode(const void *buf, size_t len,
			 struct proto_request *req);
void proto_request_release(struct proto_request *req);

/* proto_decode, then either "error" {"errno" string, "message" string} or
 * "result" (an object when present): -EPROTO otherwise */
int proto_reply_decode(const void *buf, size_t len, struct proto_reply *rep);
void proto_reply_release(struct proto_reply *rep);

/*
 * Encoders return a malloc'ed string of *ret_len bytes (NUL-terminated,
 * the NUL not counted), or -EMSGSIZE when it would exceed PROTO_MSG_MAX.
 * They take ownership of args / result (NULL: none) even on failure.
 */
int proto_request_encode(const char *op, struct json_object *args,
			 char **ret_buf, size_t *ret_len);
int proto_reply_encode(struct json_object *result, char **ret_buf,
		       size_t *ret_len);
/* err is a positive errno; message says what failed, on what */
int proto_error_encode(int err, const char *message, char **ret_buf,
		       size_t *ret_len);

/* "EACCES" for EACCES; "E?" for an errno without a name */
const char *proto_errno_name(int err);
/* the errno named s ("EACCES"), or 0 when s names none */
int proto_errno_parse(const char *s);

/* ------------------------------------------------------------- sockets */

/* the socket path when none is given: $PMAD_SOCKET, else
 * $XDG_RUNTIME_DIR/pmad/pmad.sock for a non-root user with one, else
 * /run/pmad/pmad.sock; -ENAMETOOLONG if it does not fit len */
int proto_default_socket(char *buf, size_t len);

/* a connected, close-on-exec SOCK_SEQPACKET socket to path, or -errno */
int proto_connect(const char *path);

/* send one packet (EINTR retried, no SIGPIPE): 0 or -errno */
int proto_send(int fd, const void *buf, size_t len);

/*
 * Receive one packet into buf (cap bytes, at least PROTO_MSG_MAX + 1 is
 * not needed: a longer packet is detected and dropped whole). Returns its
 * length, 0 at end of stream (peer closed, or an empty packet), -EMSGSIZE
 * for a packet longer than cap (consumed), -EAGAIN, or -errno.
 */
long proto_recv(int fd, void *buf, size_t cap);

/* client round trip on a connected fd: encode, send, receive, decode;
 * takes args; rep->err carries the daemon's error (the call returns 0) */
int proto_call(int fd, const char *op, struct json_object *args,
	       struct proto_reply *rep);

/* ----------------------------------------------------------- pool_open */

/*
 * A pool_open reply grants its client part of a pool and carries
 * descriptors of the pool's parts, one per part, as SCM_RIGHTS on the
 * reply packet:
 *   {"version": 1, "result": {..., "grant": {"version": 2,
 *    "scope": "regions", "access": "rw", "parts": N,
 *    "regions": [S, ...]}}}
 * The grant has its own version: a client refuses one it does not know
 * (EPROTONOSUPPORT) instead of using a heap in a way pmad did not mean.
 * Scope "regions": the heap region slots listed (slot s: part s / K,
 * region s % K, K regions per part), which the client opens with a
 * region mask (pma_config_set_region_mask), taking their locks itself
 * on the descriptors, which pmad opened anew for it (its own open file
 * descriptions; doc/shared-heaps.md, "Leases"). Several clients hold
 * disjoint regions of one pool. Version 1 (scope "heap", the whole heap
 * to one client) is gone.
 */
#define PROTO_GRANT_VERSION 2
/* most descriptors a packet carries (a pool's parts) */
#define PROTO_FDS_MAX 16
/* region slots of a heap (PMA_MAX_SLOTS) */
#define PROTO_GRANT_SLOTS 64

enum proto_grant_scope {
	PROTO_GRANT_REGIONS = 2, /* the regions of mask */
};

enum proto_grant_access {
	PROTO_GRANT_READ = 4,
	PROTO_GRANT_WRITE = 2,
};

struct proto_grant {
	unsigned version; /* PROTO_GRANT_VERSION */
	unsigned scope; /* enum proto_grant_scope */
	unsigned access; /* enum proto_grant_access bits: r or rw */
	unsigned nparts; /* descriptors with the reply, part 0 first */
	uint64_t mask; /* region slots granted (bit s: slot s), not 0 */
};

/* the grant as a JSON object (new), -EINVAL for an invalid one */
int proto_grant_encode(const struct proto_grant *grant,
		       struct json_object **ret_obj);
/* result["grant"] checked and decoded: -EPROTO for a malformed one,
 * -EPROTONOSUPPORT for another version or an unknown scope */
int proto_grant_decode(struct json_object *result, struct proto_grant *ret);

/* proto_send with nfds descriptors (0..PROTO_FDS_MAX) as SCM_RIGHTS */
int proto_send_fds(int fd, const void *buf, size_t len, const int *fds,
		   unsigned nfds);

/*
 * proto_call, and the descriptors that came with the reply: up to max
 * (<= PROTO_FDS_MAX) into ret_fds (close-on-exec, the caller's to close),
 * their count in *ret_nfds. A reply with more than max descriptors is
 * refused (-EPROTO) and every descriptor it carried closed.
 */
int proto_call_fds(int fd, const char *op, struct json_object *args,
		   struct proto_reply *rep, int *ret_fds, unsigned max,
		   unsigned *ret_nfds);

/* ------------------------------------------- files, log and gc (args.c) */

/*
 * pool_files {"name", "pages": bool}: the HDPM file system in the pool's
 * heap (with "pages": every page log); pool_log {"name", "arena": N,
 * "part": P}: the bookkeeping-log records (of arena N of part P; part
 * needs arena); gc {"name"}: one HDPM gc pass. Decoders check the types
 * and ranges (-EINVAL with a message naming the key); encoders add the
 * keys to a request's args (-ENOMEM, -EINVAL).
 */
#define PROTO_INDEX_MAX 65535 /* largest part or arena number */

int proto_files_args_add(struct json_object *args, int pages);
int proto_files_args_decode(struct json_object *args, int *ret_pages);

struct proto_log_args {
	long part; /* 0.. (0 when arena is -1) */
	long arena; /* -1: every arena */
};
int proto_log_args_add(struct json_object *args,
		       const struct proto_log_args *a);
int proto_log_args_decode(struct json_object *args, struct proto_log_args *ret);

/* the morph request (pmactl morph through pmad; pma_morph_req):
 * class_size 0 (not given) or 1..PROTO_MORPH_CLASS_MAX bytes, used_pct 0
 * (not given) or 1..100 */
#define PROTO_MORPH_CLASS_MAX (1ULL << 30)
struct proto_morph_args {
	uint64_t class_size;
	unsigned used_pct;
	int dry_run;
};
int proto_morph_args_add(struct json_object *args,
			 const struct proto_morph_args *a);
int proto_morph_args_decode(struct json_object *args,
			    struct proto_morph_args *ret);

/* last error message of this thread */
const char *proto_errormsg(void);

#endif

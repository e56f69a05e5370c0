/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of lib/proto: request/reply round trips, every way a packet
 * is rejected (size, garbage, truncation, trailing bytes, depth, version,
 * envelope types) with its errno and message, errno names, and one-packet
 * send/receive over a real SOCK_SEQPACKET pair including an oversized
 * packet that must be dropped whole; pool_open's grant, and descriptors
 * passed with a reply (SCM_RIGHTS), none leaked when refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/proto.h"

static int decode_str(const char *s)
{
	struct proto_request req;
	int rc = proto_request_decode(s, strlen(s), &req);

	if (rc == 0)
		proto_request_release(&req);
	return rc;
}

static void test_request_round_trip(void **state)
{
	struct json_object *args = json_object_new_object();
	struct proto_request req;
	size_t len;
	char *buf;

	(void)state;
	json_object_object_add(args, "name", json_object_new_string("db"));
	assert_int_equal(proto_request_encode("pool_stat", args, &buf, &len),
			 0);
	assert_int_equal(strlen(buf), len);
	assert_int_equal(proto_request_decode(buf, len, &req), 0);
	assert_string_equal(req.op, "pool_stat");
	assert_string_equal(json_object_get_string(
				    json_object_object_get(req.args, "name")),
			    "db");
	proto_request_release(&req);
	free(buf);
}

static void test_request_without_args(void **state)
{
	struct proto_request req;
	const char *s = "{\"version\":1,\"op\":\"stats\"}";

	(void)state;
	assert_int_equal(proto_request_decode(s, strlen(s), &req), 0);
	assert_non_null(req.args);
	assert_int_equal(json_object_object_length(req.args), 0);
	proto_request_release(&req);
}

static void test_reply_round_trip(void **state)
{
	struct json_object *res = json_object_new_object();
	struct proto_reply rep;
	size_t len;
	char *buf;

	(void)state;
	json_object_object_add(res, "pools", json_object_new_array());
	assert_int_equal(proto_reply_encode(res, &buf, &len), 0);
	assert_int_equal(proto_reply_decode(buf, len, &rep), 0);
	assert_int_equal(rep.err, 0);
	assert_string_equal(rep.message, "");
	assert_true(json_object_object_get_ex(rep.result, "pools", NULL));
	proto_reply_release(&rep);
	free(buf);
}

static void test_error_round_trip(void **state)
{
	struct proto_reply rep;
	size_t len;
	char *buf;

	(void)state;
	assert_int_equal(proto_error_encode(EACCES,
					    "pool 'db': permission "
					    "denied",
					    &buf, &len),
			 0);
	assert_non_null(strstr(buf, "\"errno\":\"EACCES\""));
	assert_int_equal(proto_reply_decode(buf, len, &rep), 0);
	assert_int_equal(rep.err, EACCES);
	assert_string_equal(rep.message, "pool 'db': permission denied");
	proto_reply_release(&rep);
	free(buf);
}

static void test_errno_names(void **state)
{
	(void)state;
	assert_string_equal(proto_errno_name(ENOENT), "ENOENT");
	assert_string_equal(proto_errno_name(ENOTSUP), "EOPNOTSUPP");
	assert_string_equal(proto_errno_name(-1), "E?");
	assert_int_equal(proto_errno_parse("EMSGSIZE"), EMSGSIZE);
	assert_int_equal(proto_errno_parse("EBOGUS"), 0);
	assert_int_equal(proto_errno_parse(""), 0);
	assert_int_equal(proto_errno_parse(NULL), 0);
}

static void test_size_cap(void **state)
{
	size_t n = PROTO_MSG_MAX + 1;
	char *big = malloc(n);
	struct json_object *obj;

	(void)state;
	assert_non_null(big);
	memset(big, ' ', n);
	memcpy(big, "{\"version\":1}", 13);
	assert_int_equal(proto_decode(big, n, &obj), -EMSGSIZE);
	assert_non_null(strstr(proto_errormsg(), "65537 bytes"));
	/* exactly the cap is fine */
	assert_int_equal(proto_decode(big, n - 1, &obj), 0);
	json_object_put(obj);
	assert_int_equal(proto_decode(big, 0, &obj), -EMSGSIZE);
	free(big);
}

static void test_garbage(void **state)
{
	(void)state;
	assert_int_equal(decode_str("hello"), -EBADMSG);
	assert_non_null(strstr(proto_errormsg(), "malformed JSON"));
	assert_int_equal(decode_str("{\"version\":1,"), -EBADMSG);
	assert_string_equal(proto_errormsg(), "truncated JSON message");
	assert_int_equal(decode_str("{\"version\":1} {}"), -EBADMSG);
	/* strict mode stops at the second object: the byte is named */
	assert_string_equal(proto_errormsg(),
			    "malformed JSON at byte 14: unexpected character");
	assert_int_equal(decode_str("{\"version\":1}\n"), -EPROTO); /* no op */
	assert_int_equal(decode_str("[1,2]"), -EBADMSG);
	assert_string_equal(proto_errormsg(), "message is not a JSON object");
	/* json-c's lenient extensions are off */
	assert_int_equal(decode_str("{'version':1,'op':'x'}"), -EBADMSG);
}

static void test_embedded_nul(void **state)
{
	static const char msg[] = "{\"version\":1,\"op\":\"stats\"}\0garbage";
	struct proto_request req;

	(void)state;
	assert_int_equal(proto_request_decode(msg, sizeof(msg) - 1, &req),
			 -EBADMSG);
}

static void test_depth(void **state)
{
	char buf[256];
	int i, n = 0;

	(void)state;
	n += sprintf(buf + n, "{\"version\":1,\"op\":\"x\",\"args\":");
	for (i = 0; i < PROTO_DEPTH_MAX + 2; i++)
		n += sprintf(buf + n, "[");
	for (i = 0; i < PROTO_DEPTH_MAX + 2; i++)
		n += sprintf(buf + n, "]");
	sprintf(buf + n, "}");
	assert_int_equal(decode_str(buf), -EBADMSG);
}

static void test_version(void **state)
{
	(void)state;
	assert_int_equal(decode_str("{\"op\":\"stats\"}"), -EPROTO);
	assert_int_equal(decode_str("{\"version\":\"1\",\"op\":\"stats\"}"),
			 -EPROTO);
	assert_int_equal(decode_str("{\"version\":2,\"op\":\"stats\"}"),
			 -EPROTONOSUPPORT);
	assert_non_null(strstr(proto_errormsg(), "version 2"));
}

static void test_envelope_types(void **state)
{
	struct proto_reply rep;
	const char *s;

	(void)state;
	assert_int_equal(decode_str("{\"version\":1,\"op\":7}"), -EPROTO);
	assert_int_equal(decode_str("{\"version\":1,\"op\":\"\"}"), -EPROTO);
	assert_int_equal(decode_str("{\"version\":1,\"op\":\"a\\u0000b\"}"),
			 -EPROTO);
	assert_int_equal(
		decode_str("{\"version\":1,\"op\":"
			   "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}"),
		-EPROTO);
	assert_int_equal(decode_str("{\"version\":1,\"op\":\"x\",\"args\":[]}"),
			 -EPROTO);
	s = "{\"version\":1,\"error\":{\"errno\":5}}";
	assert_int_equal(proto_reply_decode(s, strlen(s), &rep), -EPROTO);
	s = "{\"version\":1,\"result\":3}";
	assert_int_equal(proto_reply_decode(s, strlen(s), &rep), -EPROTO);
	/* an errno name this end does not know still reads as an error */
	s = "{\"version\":1,\"error\":{\"errno\":\"EFUTURE\",\"message\":\"m\"}}";
	assert_int_equal(proto_reply_decode(s, strlen(s), &rep), 0);
	assert_int_equal(rep.err, EIO);
	proto_reply_release(&rep);
}

static void test_encode_too_big(void **state)
{
	struct json_object *args = json_object_new_object();
	char *big = malloc(PROTO_MSG_MAX + 1);
	size_t len;
	char *buf;

	(void)state;
	memset(big, 'a', PROTO_MSG_MAX);
	big[PROTO_MSG_MAX] = '\0';
	json_object_object_add(args, "blob", json_object_new_string(big));
	free(big);
	assert_int_equal(proto_request_encode("x", args, &buf, &len),
			 -EMSGSIZE);
	assert_int_equal(proto_request_encode("", NULL, &buf, &len), -EINVAL);
}

static void test_socket_packets(void **state)
{
	char *big = calloc(1, PROTO_MSG_MAX + 100);
	char buf[64];
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(proto_recv(sv[1], buf, sizeof(buf)), -EAGAIN);
	assert_int_equal(proto_send(sv[0], big, PROTO_MSG_MAX + 100), 0);
	assert_int_equal(proto_send(sv[0], "{}", 2), 0);
	/* the big packet is reported and dropped; the next one is intact */
	assert_int_equal(proto_recv(sv[1], buf, sizeof(buf)), -EMSGSIZE);
	assert_int_equal(proto_recv(sv[1], buf, sizeof(buf)), 2);
	assert_memory_equal(buf, "{}", 2);
	close(sv[0]);
	assert_int_equal(proto_recv(sv[1], buf, sizeof(buf)), 0);
	close(sv[1]);
	free(big);
}

static void test_default_socket(void **state)
{
	char buf[128];

	(void)state;
	setenv("PMAD_SOCKET", "/tmp/x.sock", 1);
	assert_int_equal(proto_default_socket(buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/tmp/x.sock");
	assert_int_equal(proto_default_socket(buf, 4), -ENAMETOOLONG);
	unsetenv("PMAD_SOCKET");
	assert_int_equal(proto_default_socket(buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "pmad/pmad.sock"));
	assert_int_equal(proto_connect("/nonexistent/pmad.sock"), -ENOENT);
	assert_non_null(strstr(proto_errormsg(), "/nonexistent/pmad.sock"));
}

static void test_grant(void **state)
{
	struct proto_grant g = { .version = PROTO_GRANT_VERSION,
				 .scope = PROTO_GRANT_REGIONS,
				 .access = PROTO_GRANT_READ | PROTO_GRANT_WRITE,
				 .nparts = 3,
				 .mask = 1ULL << 63 | 1ULL << 8 | 1 },
			   again;
	struct json_object *o, *result = json_object_new_object(), *a;

	(void)state;
	assert_int_equal(proto_grant_encode(&g, &o), 0);
	assert_string_equal(
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
		"{\"regions\":[0,8,63],\"version\":2,\"scope\":\"regions\","
		"\"access\":\"rw\",\"parts\":3}");
	json_object_object_add(result, "grant", o);
	assert_int_equal(proto_grant_decode(result, &again), 0);
	assert_memory_equal(&g, &again, sizeof(g));
	/* another version, scope, parts out of range, no grant */
	json_object_object_add(o, "version", json_object_new_int(1));
	assert_int_equal(proto_grant_decode(result, &again), -EPROTONOSUPPORT);
	json_object_object_add(o, "version", json_object_new_int(2));
	json_object_object_add(o, "scope", json_object_new_string("heap"));
	assert_int_equal(proto_grant_decode(result, &again), -EPROTONOSUPPORT);
	json_object_object_add(o, "scope", json_object_new_string("regions"));
	json_object_object_add(o, "parts", json_object_new_int(17));
	assert_int_equal(proto_grant_decode(result, &again), -EPROTO);
	assert_non_null(strstr(proto_errormsg(), "\"parts\""));
	json_object_object_add(o, "parts", json_object_new_int(1));
	/* regions: a slot out of range, twice, none, not an array */
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_int(64));
	json_object_object_add(o, "regions", a);
	assert_int_equal(proto_grant_decode(result, &again), -EPROTO);
	assert_non_null(strstr(proto_errormsg(), "slot 0..63"));
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_int(3));
	json_object_array_add(a, json_object_new_int(3));
	json_object_object_add(o, "regions", a);
	assert_int_equal(proto_grant_decode(result, &again), -EPROTO);
	assert_non_null(strstr(proto_errormsg(), "slot 3 twice"));
	json_object_object_add(o, "regions", json_object_new_array());
	assert_int_equal(proto_grant_decode(result, &again), -EPROTO);
	json_object_object_add(o, "regions", json_object_new_int(1));
	assert_int_equal(proto_grant_decode(result, &again), -EPROTO);
	json_object_object_del(result, "grant");
	assert_int_equal(proto_grant_decode(result, &again), -EPROTO);
	json_object_put(result);
	g.nparts = 0;
	assert_int_equal(proto_grant_encode(&g, &o), -EINVAL);
	g.nparts = 1;
	g.mask = 0;
	assert_int_equal(proto_grant_encode(&g, &o), -EINVAL);
}

static int count_fds(void)
{
	int n = 0, fd;

	for (fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* a reply queued with two descriptors, then proto_call_fds with max */
static int call_with(int max, int *fds, unsigned *nfds)
{
	struct proto_reply rep;
	int sv[2], p[2], rc;
	char *buf;
	size_t len;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(proto_reply_encode(NULL, &buf, &len), 0);
	assert_int_equal(proto_send_fds(sv[1], buf, len, p, 2), 0);
	free(buf);
	close(p[0]);
	close(p[1]);
	rc = max < 0 ? proto_call(sv[0], "x", NULL, &rep) :
		       proto_call_fds(sv[0], "x", NULL, &rep, fds,
				      (unsigned)max, nfds);
	if (rc == 0)
		proto_reply_release(&rep);
	close(sv[0]);
	close(sv[1]);
	return rc;
}

static void test_call_fds(void **state)
{
	int before = count_fds(), fds[PROTO_FDS_MAX];
	unsigned nfds = 99;

	(void)state;
	assert_int_equal(call_with(2, fds, &nfds), 0);
	assert_int_equal(nfds, 2);
	/* the pipe arrived whole: write one end, read the other */
	assert_int_equal(write(fds[1], "x", 1), 1);
	assert_int_equal(read(fds[0], &nfds, 1), 1);
	assert_true(fcntl(fds[0], F_GETFD) & FD_CLOEXEC);
	close(fds[0]);
	close(fds[1]);
	/* more than asked for: refused, nothing leaks */
	assert_int_equal(call_with(1, fds, &nfds), -EPROTO);
	assert_int_equal(nfds, 0);
	assert_int_equal(call_with(-1, NULL, NULL), -EPROTO);
	assert_int_equal(count_fds(), before);
	assert_int_equal(proto_send_fds(0, "", 0, fds, PROTO_FDS_MAX + 1),
			 -EINVAL);
}

/* args of pool_log decoded from JSON text (rc, and the values) */
static int log_args(const char *text, struct proto_log_args *a)
{
	struct json_object *o = json_tokener_parse(text);
	int rc;

	assert_non_null(o);
	rc = proto_log_args_decode(o, a);
	json_object_put(o);
	return rc;
}

static void test_files_log_args(void **state)
{
	struct proto_log_args a = { 0 }, b = { .part = 2, .arena = 7 };
	struct json_object *o = json_object_new_object();
	int pages = -1;

	(void)state;
	assert_int_equal(log_args("{}", &a), 0);
	assert_int_equal(a.arena, -1);
	assert_int_equal(a.part, 0);
	assert_int_equal(log_args("{\"arena\": 3}", &a), 0);
	assert_int_equal(a.arena, 3);
	assert_int_equal(log_args("{\"arena\": 3, \"part\": 1}", &a), 0);
	assert_int_equal(a.part, 1);
	assert_int_equal(log_args("{\"part\": 1}", &a), -EINVAL);
	assert_string_equal(proto_errormsg(), "\"part\" needs \"arena\"");
	assert_int_equal(log_args("{\"arena\": -1}", &a), -EINVAL);
	assert_int_equal(log_args("{\"arena\": 65536}", &a), -EINVAL);
	assert_int_equal(log_args("{\"arena\": \"1\"}", &a), -EINVAL);
	assert_int_equal(log_args("{\"arena\": 1, \"part\": 1.0}", &a),
			 -EINVAL);
	/* encode, decode: the same */
	assert_int_equal(proto_log_args_add(o, &b), 0);
	assert_int_equal(proto_log_args_decode(o, &a), 0);
	assert_int_equal(a.part, 2);
	assert_int_equal(a.arena, 7);
	b.arena = 70000;
	assert_int_equal(proto_log_args_add(o, &b), -EINVAL);
	/* pages: a boolean, false when absent */
	assert_int_equal(proto_files_args_decode(o, &pages), 0);
	assert_int_equal(pages, 0);
	assert_int_equal(proto_files_args_add(o, 1), 0);
	assert_int_equal(proto_files_args_decode(o, &pages), 0);
	assert_int_equal(pages, 1);
	json_object_object_add(o, "pages", json_object_new_int(1));
	assert_int_equal(proto_files_args_decode(o, &pages), -EINVAL);
	json_object_put(o);
}

/* args of morph decoded from JSON text */
static int morph_args(const char *text, struct proto_morph_args *a)
{
	struct json_object *o = json_tokener_parse(text);
	int rc;

	assert_non_null(o);
	rc = proto_morph_args_decode(o, a);
	json_object_put(o);
	return rc;
}

static void test_morph_args(void **state)
{
	struct proto_morph_args a,
		b = { .class_size = 192, .used_pct = 30, .dry_run = 1 };
	struct json_object *o = json_object_new_object();

	(void)state;
	assert_int_equal(morph_args("{}", &a), 0);
	assert_true(a.class_size == 0 && a.used_pct == 0 && a.dry_run == 0);
	assert_int_equal(morph_args("{\"class_size\": 144, \"used_pct\": 100, "
				    "\"dry_run\": false}",
				    &a),
			 0);
	assert_true(a.class_size == 144 && a.used_pct == 100 && !a.dry_run);
	assert_int_equal(morph_args("{\"used_pct\": 101}", &a), -EINVAL);
	assert_string_equal(proto_errormsg(),
			    "\"used_pct\" must be an integer 1..100");
	assert_int_equal(morph_args("{\"used_pct\": 0}", &a), -EINVAL);
	assert_int_equal(morph_args("{\"class_size\": -64}", &a), -EINVAL);
	assert_int_equal(morph_args("{\"class_size\": 2147483648}", &a),
			 -EINVAL);
	assert_int_equal(morph_args("{\"class_size\": \"192\"}", &a), -EINVAL);
	assert_int_equal(morph_args("{\"dry_run\": 1}", &a), -EINVAL);
	assert_string_equal(proto_errormsg(), "\"dry_run\" must be a boolean");
	/* encode, decode: the same; nothing given adds nothing */
	assert_int_equal(proto_morph_args_add(o, &b), 0);
	assert_int_equal(proto_morph_args_decode(o, &a), 0);
	assert_memory_equal(&a, &b, sizeof(a));
	json_object_put(o);
	o = json_object_new_object();
	memset(&b, 0, sizeof(b));
	assert_int_equal(proto_morph_args_add(o, &b), 0);
	assert_int_equal(json_object_object_length(o), 0);
	b.used_pct = 101;
	assert_int_equal(proto_morph_args_add(o, &b), -EINVAL);
	json_object_put(o);
}

#define T(f) cmocka_unit_test(f)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_request_round_trip),
		T(test_request_without_args),
		T(test_reply_round_trip),
		T(test_error_round_trip),
		T(test_errno_names),
		T(test_size_cap),
		T(test_garbage),
		T(test_embedded_nul),
		T(test_depth),
		T(test_version),
		T(test_envelope_types),
		T(test_encode_too_big),
		T(test_socket_packets),
		T(test_default_socket),
		T(test_grant),
		T(test_call_fds),
		T(test_files_log_args),
		T(test_morph_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

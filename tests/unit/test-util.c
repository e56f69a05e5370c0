/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of lib/util: size parse/format, crc32c, log, errmsg, json, io
 * and fault injection. This file also defines read/write/pread/pwrite: they
 * pass through to the kernel unless a test turns on "chaos" mode, in which
 * they fail with EINTR every other call and move at most a few bytes, to
 * prove the *_all loops.
 */
/* fortify turns read() into an inline wrapper we could not interpose */
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/crc.h"
#include "util/errmsg.h"
#include "util/io.h"
#include "util/json.h"
#include "util/log.h"
#include "util/size.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define CHAOS_CHUNK 7

/* ------------------------------------------------ syscall interposition */

static atomic_int chaos; /* 1: EINTR + short transfers */
static atomic_uint chaos_calls; /* interposed calls while chaos is on */

/* in chaos mode: 1 if this call fails with EINTR, else *len is clipped */
static int chaos_step(size_t *len)
{
	if (!atomic_load(&chaos))
		return 0;
	if (atomic_fetch_add(&chaos_calls, 1) % 2 == 0) {
		errno = EINTR;
		return 1;
	}
	if (*len > CHAOS_CHUNK)
		*len = CHAOS_CHUNK;
	return 0;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	if (chaos_step(&len))
		return -1;
	return syscall(SYS_write, fd, buf, len);
}

ssize_t read(int fd, void *buf, size_t len)
{
	if (chaos_step(&len))
		return -1;
	return syscall(SYS_read, fd, buf, len);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	if (chaos_step(&len))
		return -1;
	return syscall(SYS_pwrite64, fd, buf, len, off);
}

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	if (chaos_step(&len))
		return -1;
	return syscall(SYS_pread64, fd, buf, len, off);
}

/* ------------------------------------------------------------- fixture */

static int reset_util(void **state)
{
	(void)state;
	util_log_set_sink(NULL);
	util_log_set_priority(LOG_ERR);
	unsetenv("PMAD_LOG");
	util_fault_inject_at(UTIL_FAULT_ALLOC, 0);
	util_fault_inject_at(UTIL_FAULT_IO, 0);
	util_errmsg_clear();
	atomic_store(&chaos, 0);
	return 0;
}

/* ---------------------------------------------------------------- size */

/* strings util_size_parse accepts, and their value */
static const struct {
	const char *s;
	uint64_t v;
} size_valid[] = {
	{ "0", 0 },
	{ "4096", 4096 },
	{ "007", 7 },
	{ "4096B", 4096 },
	{ "4096b", 4096 },
	{ "4096 B", 4096 },
	{ "4K", 4096 },
	{ "4k", 4096 },
	{ "4KiB", 4096 },
	{ "4kib", 4096 },
	{ "4 KiB", 4096 },
	{ "1kB", 1000 },
	{ "1KB", 1000 },
	{ "512MiB", 512ull << 20 },
	{ "512m", 512ull << 20 },
	{ "4G", 4ull << 30 },
	{ "1GB", 1000000000ull },
	{ "1gb", 1000000000ull },
	{ "1TB", 1000000000000ull },
	{ "2T", 2ull << 40 },
	{ "3PiB", 3ull << 50 },
	{ "1PB", 1000000000000000ull },
	{ "15E", 15ull << 60 },
	{ "1.5G", 3ull << 29 },
	{ "1.5 GiB", 3ull << 29 },
	{ "1.5GB", 1500000000ull },
	{ "0.5K", 512 },
	{ "1.25K", 1280 },
	{ "2.000", 2 },
	{ "1.0009765625K", 1025 },
	{ "18446744073709551615", UINT64_MAX },
	{ "18446744073709551615B", UINT64_MAX },
	{ "0.3KB", 300 },
	{ "15.9999980926513671875E", UINT64_MAX - ((1ull << 41) - 1) },
	{ "15.99999809265136718750000000E", UINT64_MAX - ((1ull << 41) - 1) },
};

static void test_size_parse_valid(void **state)
{
	uint64_t v;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(size_valid); i++) {
		v = 12345;
		if (util_size_parse(size_valid[i].s, &v) != 0)
			fail_msg("'%s' rejected: %s", size_valid[i].s,
				 util_errmsg());
		if (v != size_valid[i].v)
			fail_msg("'%s' = %llu, expected %llu", size_valid[i].s,
				 (unsigned long long)v,
				 (unsigned long long)size_valid[i].v);
	}
}

static void test_size_parse_invalid(void **state)
{
	static const char *const t[] = {
		"",
		" ",
		"G",
		"B",
		"KiB",
		"-1",
		"+1",
		" 4K",
		"4K ",
		"4 ",
		"4  K",
		"4X",
		"4GiBx",
		"4Gi",
		"4GBB",
		"4iB",
		"4bK",
		"0x10",
		"1e3",
		"1.",
		".5G",
		"1..5G",
		"1.5",
		"1.1K",
		"1.5B",
		"1,5G",
		"4\tK",
		"4K\n",
		"4 kb ",
		"1.0001K",
		"1.00000000000000000001G",
	};
	uint64_t v = 42;
	size_t i;

	(void)state;
	assert_int_equal(util_size_parse(NULL, &v), -EINVAL);
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		util_errmsg_clear();
		if (util_size_parse(t[i], &v) != -EINVAL)
			fail_msg("'%s' not rejected with -EINVAL", t[i]);
		assert_true(strlen(util_errmsg()) > 0);
	}
	assert_int_equal(v, 42); /* untouched on failure */
	util_size_parse("4X", &v);
	assert_non_null(strstr(util_errmsg(), "'4X'"));
}

static void test_size_parse_overflow(void **state)
{
	static const char *const t[] = {
		"18446744073709551616",
		"99999999999999999999999",
		"16E",
		"16EiB",
		"17179869184G",
		"19EB",
		"18446744073709551616B",
		"16384P",
		"16.5E",
		"18446744073709551615.5K",
	};
	uint64_t v;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		if (util_size_parse(t[i], &v) != -ERANGE)
			fail_msg("'%s' not rejected with -ERANGE", t[i]);
	}
	assert_non_null(strstr(util_errmsg(), "too large"));
	/* just below the limit still parses */
	assert_int_equal(util_size_parse("16383P", &v), 0);
	assert_int_equal(v, 16383ull << 50);
	assert_int_equal(util_size_parse("18EB", &v), 0);
	assert_int_equal(v, 18000000000000000000ull);
}

static void test_size_format(void **state)
{
	static const struct {
		uint64_t v;
		const char *s;
	} t[] = {
		{ 0, "0 B" },
		{ 1, "1 B" },
		{ 512, "512 B" },
		{ 1023, "1023 B" },
		{ 1024, "1 KiB" },
		{ 1536, "1.5 KiB" },
		{ 4096, "4 KiB" },
		{ 1025, "1.001 KiB" },
		{ 1280, "1.25 KiB" },
		{ 1234567, "1.177 MiB" },
		{ 512ull << 20, "512 MiB" },
		{ 3ull << 29, "1.5 GiB" },
		{ (1ull << 30) - 1, "1 GiB" },
		{ (1ull << 20) - 1, "1023.999 KiB" },
		{ 1ull << 40, "1 TiB" },
		{ 5ull << 50, "5 PiB" },
		{ 1ull << 60, "1 EiB" },
		{ UINT64_MAX, "16 EiB" },
		{ 1000000000ull, "953.674 MiB" },
	};
	char buf[UTIL_SIZE_BUF];
	char small[4];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		memset(buf, 'x', sizeof(buf));
		assert_ptr_equal(util_size_format(t[i].v, buf, sizeof(buf)),
				 buf);
		if (strcmp(buf, t[i].s) != 0)
			fail_msg("%llu formatted as '%s', expected '%s'",
				 (unsigned long long)t[i].v, buf, t[i].s);
	}
	/* a short buffer is truncated, never overrun */
	util_size_format(3ull << 29, small, sizeof(small));
	assert_string_equal(small, "1.5");
}

/* what util_size_format prints exactly, util_size_parse reads back */
static void test_size_round_trip(void **state)
{
	static const uint64_t t[] = { 0,	  1,	     512,  1024,
				      1536,	  1280,	     4096, 3ull << 29,
				      5ull << 50, 1ull << 60 };
	char buf[UTIL_SIZE_BUF];
	uint64_t v;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		util_size_format(t[i], buf, sizeof(buf));
		assert_int_equal(util_size_parse(buf, &v), 0);
		assert_int_equal(v, t[i]);
	}
}

/* ----------------------------------------------------------------- crc */

static void test_crc32c_vectors(void **state)
{
	unsigned char buf[32];
	unsigned i;

	(void)state;
	assert_int_equal(util_crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(util_crc32c(0, "", 0), 0);
	assert_int_equal(util_crc32c(0, "a", 1), 0xC1D04330u);
	/* RFC 3720 B.4 test patterns */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(util_crc32c(0, buf, sizeof(buf)), 0x8A9136AAu);
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(util_crc32c(0, buf, sizeof(buf)), 0x62A8AB43u);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)i;
	assert_int_equal(util_crc32c(0, buf, sizeof(buf)), 0x46DD794Eu);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(31 - i);
	assert_int_equal(util_crc32c(0, buf, sizeof(buf)), 0x113FDB5Cu);
}

/* the three-word form (inline and out of line) equals the buffer form,
 * for hw and table paths */
static void test_crc32c_3w(void **state)
{
	uint64_t w[3], x = 0x9e3779b97f4a7c15ULL;
	unsigned i, j;

	(void)state;
	for (i = 0; i < 1000; i++) {
		for (j = 0; j < 3; j++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			w[j] = i < 3 ? (i == 0 ? 0 : ~0ULL) : x;
		}
		assert_int_equal(util_crc32c_3w(w[0], w[1], w[2]),
				 util_crc32c(0, w, sizeof(w)));
		assert_int_equal(util_crc32c_3w(w[0], w[1], w[2]),
				 util_crc32c_sw(0, w, sizeof(w)));
		assert_int_equal(util_crc32c_3w_call(w[0], w[1], w[2]),
				 util_crc32c_sw(0, w, sizeof(w)));
	}
}

static void test_crc32c_incremental(void **state)
{
	unsigned char buf[1000];
	uint32_t whole, crc;
	size_t i, split;

	(void)state;
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 131 + 7);
	whole = util_crc32c(0, buf, sizeof(buf));
	for (split = 0; split <= sizeof(buf); split += 37) {
		crc = util_crc32c(0, buf, split);
		crc = util_crc32c(crc, buf + split, sizeof(buf) - split);
		assert_int_equal(crc, whole);
	}
	crc = 0;
	for (i = 0; i < sizeof(buf); i++)
		crc = util_crc32c(crc, buf + i, 1);
	assert_int_equal(crc, whole);
	buf[500] ^= 1;
	assert_int_not_equal(util_crc32c(0, buf, sizeof(buf)), whole);
}

/* the fast path (crc32 instruction where available) equals the table one
 * for every length and alignment */
static void test_crc32c_fast_matches_table(void **state)
{
	unsigned char buf[300];
	size_t off, len;

	(void)state;
	for (off = 0; off < sizeof(buf); off++)
		buf[off] = (unsigned char)(off * 37 + 11);
	for (off = 0; off < 9; off++)
		for (len = 0; len + off <= sizeof(buf); len += 7)
			assert_int_equal(util_crc32c(0x1234, buf + off, len),
					 util_crc32c_sw(0x1234, buf + off,
							len));
}

/* ----------------------------------------------------------------- log */

static struct {
	int calls;
	int priority;
	int line;
	char func[64];
	char msg[256];
} captured;

__attribute__((format(printf, 5, 0))) static void
capture_sink(int priority, const char *file, int line, const char *func,
	     const char *fmt, va_list ap)
{
	(void)file;
	captured.calls++;
	captured.priority = priority;
	captured.line = line;
	snprintf(captured.func, sizeof(captured.func), "%s", func);
	vsnprintf(captured.msg, sizeof(captured.msg), fmt, ap);
}

static void test_log_default_silent(void **state)
{
	(void)state;
	memset(&captured, 0, sizeof(captured));
	assert_int_equal(util_log_get_priority(), LOG_ERR);
	/* no sink installed: nothing happens, nothing crashes */
	util_err("nobody hears %d", 1);
	util_log(LOG_DEBUG, "nor %s", "this");
	assert_int_equal(captured.calls, 0);
}

static void test_log_sink_filter(void **state)
{
	int line;

	(void)state;
	memset(&captured, 0, sizeof(captured));
	util_log_set_sink(capture_sink);
	util_info("filtered %d", 1);
	assert_int_equal(captured.calls, 0);
	line = __LINE__ + 1;
	util_err("disk %s is %d%% full", "pm0", 99);
	assert_int_equal(captured.calls, 1);
	assert_int_equal(captured.priority, LOG_ERR);
	assert_string_equal(captured.msg, "disk pm0 is 99% full");
	assert_string_equal(captured.func, __func__);
	assert_int_equal(captured.line, line);

	util_log_set_priority(LOG_INFO);
	util_info("now %s", "visible");
	util_log(LOG_DEBUG, "still filtered");
	assert_int_equal(captured.calls, 2);
	assert_int_equal(captured.priority, LOG_INFO);
	assert_string_equal(captured.msg, "now visible");

	/* out-of-range levels are clamped */
	util_log_set_priority(100);
	assert_int_equal(util_log_get_priority(), LOG_DEBUG);
	util_log_set_priority(-3);
	assert_int_equal(util_log_get_priority(), LOG_EMERG);

	util_log_set_sink(NULL);
	util_err("silent again");
	assert_int_equal(captured.calls, 2);
}

static void test_log_parse_priority(void **state)
{
	static const struct {
		const char *s;
		int prio;
	} t[] = {
		{ "err", LOG_ERR },
		{ "error", LOG_ERR },
		{ "warning", LOG_WARNING },
		{ "warn", LOG_WARNING },
		{ "notice", LOG_NOTICE },
		{ "info", LOG_INFO },
		{ "debug", LOG_DEBUG },
		{ "DEBUG", LOG_DEBUG },
		{ "emerg", LOG_EMERG },
		{ "0", 0 },
		{ "3", 3 },
		{ "7", 7 },
		{ "8", -EINVAL },
		{ "-1", -EINVAL },
		{ "07", -EINVAL },
		{ "3x", -EINVAL },
		{ "", -EINVAL },
		{ " debug", -EINVAL },
		{ "verbose", -EINVAL },
		{ "debugx", -EINVAL },
	};
	size_t i;

	(void)state;
	assert_int_equal(util_log_parse_priority(NULL), -EINVAL);
	for (i = 0; i < ARRAY_SIZE(t); i++)
		if (util_log_parse_priority(t[i].s) != t[i].prio)
			fail_msg("'%s' parsed as %d, expected %d", t[i].s,
				 util_log_parse_priority(t[i].s), t[i].prio);
}

static void test_log_env(void **state)
{
	(void)state;
	memset(&captured, 0, sizeof(captured));
	util_log_set_sink(capture_sink);
	util_log_init(); /* unset: default kept */
	assert_int_equal(util_log_get_priority(), LOG_ERR);

	setenv("PMAD_LOG", "debug", 1);
	util_log_init();
	assert_int_equal(util_log_get_priority(), LOG_DEBUG);
	util_log(LOG_DEBUG, "dbg %d", 7);
	assert_int_equal(captured.calls, 1);
	assert_string_equal(captured.msg, "dbg 7");

	setenv("PMAD_LOG", "4", 1);
	util_log_init();
	assert_int_equal(util_log_get_priority(), LOG_WARNING);

	/* invalid values are ignored: the level stays */
	setenv("PMAD_LOG", "loud", 1);
	util_log_init();
	assert_int_equal(util_log_get_priority(), LOG_WARNING);
	setenv("PMAD_LOG", "", 1);
	util_log_init();
	assert_int_equal(util_log_get_priority(), LOG_WARNING);

	/* init keeps the installed sink */
	util_warn("kept");
	assert_int_equal(captured.calls, 2);
}

/* run util_log_msg with stderr redirected to a file; return what it wrote */
static void log_to_stderr_capture(char *out, size_t out_size)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	ssize_t n;

	assert_non_null(tmp);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	util_log_set_sink(util_log_stderr);
	util_log_set_priority(LOG_DEBUG);
	util_err("pool %s: bad magic", "p0");
	util_warn("trailing newline\n");
	util_log(LOG_DEBUG, "x=%d", 3);
	util_log_set_sink(NULL);
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	n = pread(fileno(tmp), out, out_size - 1, 0);
	assert_true(n >= 0);
	out[n] = '\0';
	fclose(tmp);
}

static void test_log_stderr_sink(void **state)
{
	char out[512];

	(void)state;
	log_to_stderr_capture(out, sizeof(out));
	assert_string_equal(out, "pmad: error: pool p0: bad magic\n"
				 "pmad: warning: trailing newline\n"
				 "pmad: debug: x=3\n");
}

static void test_log_preserves_errno(void **state)
{
	(void)state;
	util_log_set_sink(capture_sink);
	errno = ENOSPC;
	util_err("%s", "whatever");
	assert_int_equal(errno, ENOSPC);
}

/* -------------------------------------------------------------- errmsg */

static void *errmsg_thread(void *arg)
{
	(void)arg;
	/* a fresh thread starts with an empty message */
	if (util_errmsg()[0] != '\0')
		return (void *)1;
	util_errmsg_set(EIO, "thread message");
	return NULL;
}

static void test_errmsg(void **state)
{
	char big[UTIL_ERRMSG_MAX * 2];
	pthread_t th;
	void *res;

	(void)state;
	assert_string_equal(util_errmsg(), "");
	assert_int_equal(util_errmsg_set(ENOENT, "no pool at %s", "/x"),
			 -ENOENT);
	assert_string_equal(util_errmsg(), "no pool at /x");
	util_errmsg_prefix("open %s", "p1");
	assert_string_equal(util_errmsg(), "open p1: no pool at /x");
	util_errmsg_prefix("pmactl");
	assert_string_equal(util_errmsg(), "pmactl: open p1: no pool at /x");

	/* per thread: another thread neither sees nor changes ours */
	assert_int_equal(pthread_create(&th, NULL, errmsg_thread, NULL), 0);
	assert_int_equal(pthread_join(th, &res), 0);
	assert_null(res);
	assert_string_equal(util_errmsg(), "pmactl: open p1: no pool at /x");

	util_errmsg_clear();
	assert_string_equal(util_errmsg(), "");
	util_errmsg_prefix("only %d", 1); /* no old message: no ": " */
	assert_string_equal(util_errmsg(), "only 1");

	/* overlong messages are truncated, still terminated */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	util_errmsg_set(E2BIG, "%s", big);
	assert_int_equal(strlen(util_errmsg()), UTIL_ERRMSG_MAX - 1);
	util_errmsg_prefix("pre");
	assert_int_equal(strlen(util_errmsg()), UTIL_ERRMSG_MAX - 1);
	assert_memory_equal(util_errmsg(), "pre: aaa", 8);
}

/* ---------------------------------------------------------------- json */

static struct json_object *json_sample(void)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *arr = json_object_new_array();

	assert_non_null(obj);
	assert_non_null(arr);
	json_object_array_add(arr, json_object_new_int(1));
	json_object_array_add(arr, json_object_new_int(2));
	assert_int_equal(util_json_add_u64(obj, "size", UINT64_MAX), 0);
	assert_int_equal(util_json_add_i64(obj, "delta", -5), 0);
	assert_int_equal(util_json_add_str(obj, "path", "/dev/dax0.0"), 0);
	assert_int_equal(util_json_add_bool(obj, "ok", 7), 0);
	assert_int_equal(util_json_add_bool(obj, "bad", 0), 0);
	assert_int_equal(util_json_add_hex(obj, "offset", 0x1000), 0);
	assert_int_equal(util_json_add_hex(obj, "max", UINT64_MAX), 0);
	assert_int_equal(util_json_add_obj(obj, "parts", arr), 0);
	return obj;
}

/* print obj to a memory stream; the caller frees the text */
static char *json_print_mem(struct json_object *obj, unsigned flags)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(util_json_print(f, obj, flags), 0);
	assert_int_equal(fclose(f), 0);
	return text;
}

static void json_check_sample(struct json_object *p)
{
	struct json_object *v;

	assert_non_null(p);
	assert_true(json_object_object_get_ex(p, "size", &v));
	assert_true(json_object_get_uint64(v) == UINT64_MAX);
	assert_true(json_object_object_get_ex(p, "delta", &v));
	assert_int_equal(json_object_get_int64(v), -5);
	assert_true(json_object_object_get_ex(p, "path", &v));
	assert_string_equal(json_object_get_string(v), "/dev/dax0.0");
	assert_true(json_object_object_get_ex(p, "ok", &v));
	assert_true(json_object_is_type(v, json_type_boolean));
	assert_true(json_object_get_boolean(v));
	assert_true(json_object_object_get_ex(p, "bad", &v));
	assert_false(json_object_get_boolean(v));
	assert_true(json_object_object_get_ex(p, "offset", &v));
	assert_string_equal(json_object_get_string(v), "0x1000");
	assert_true(json_object_object_get_ex(p, "max", &v));
	assert_string_equal(json_object_get_string(v), "0xffffffffffffffff");
	assert_true(json_object_object_get_ex(p, "parts", &v));
	assert_int_equal(json_object_array_length(v), 2);
}

static void test_json_plain(void **state)
{
	struct json_object *obj = json_sample();
	struct json_object *parsed;
	char *text = json_print_mem(obj, 0);

	(void)state;
	/* one line, newline-terminated, slashes not escaped */
	assert_non_null(strchr(text, '\n'));
	assert_ptr_equal(strchr(text, '\n'), text + strlen(text) - 1);
	assert_null(strstr(text, "\\/"));
	assert_non_null(strstr(text, "\"/dev/dax0.0\""));
	assert_non_null(strstr(text, "\"size\":18446744073709551615"));
	parsed = json_tokener_parse(text);
	json_check_sample(parsed);
	assert_true(json_object_equal(parsed, obj));
	json_object_put(parsed);
	json_object_put(obj);
	free(text);
}

static void test_json_pretty(void **state)
{
	struct json_object *obj = json_sample();
	struct json_object *parsed;
	char *text = json_print_mem(obj, UTIL_JSON_PRETTY);
	size_t len = strlen(text);

	(void)state;
	assert_non_null(strstr(text, "{\n  \"size\""));
	assert_true(len > 2 && text[len - 1] == '\n' && text[len - 2] == '}');
	assert_null(strstr(text, "\\/"));
	parsed = json_tokener_parse(text);
	json_check_sample(parsed);
	assert_true(json_object_equal(parsed, obj));
	json_object_put(parsed);
	json_object_put(obj);
	free(text);
}

static void test_json_print_errors(void **state)
{
	struct json_object *obj = json_sample();
	FILE *f;

	(void)state;
	f = fopen("/dev/full", "w");
	if (f) {
		assert_int_equal(util_json_print(f, obj, 0), -EIO);
		assert_true(strlen(util_errmsg()) > 0);
		fclose(f);
	}
	/* a stream opened read-only fails every write */
	f = fopen("/dev/null", "r");
	assert_non_null(f);
	assert_int_equal(util_json_print(f, obj, UTIL_JSON_PRETTY), -EIO);
	fclose(f);
	json_object_put(obj);
}

static void test_json_add_failures(void **state)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *v;

	(void)state;
	/* a NULL string is omitted, not stored as null */
	assert_int_equal(util_json_add_str(obj, "mount", NULL), 0);
	assert_false(json_object_object_get_ex(obj, "mount", NULL));
	/* a failed child constructor shows up as -ENOMEM */
	assert_int_equal(util_json_add_obj(obj, "child", NULL), -ENOMEM);
	assert_int_equal(util_json_add_u64(NULL, "x", 1), -EINVAL);
	assert_int_equal(util_json_add_obj(obj, NULL, json_object_new_array()),
			 -EINVAL); /* child freed: ASan would see a leak */
	/* an injected allocation fault fails exactly the 2nd add */
	util_fault_inject_at(UTIL_FAULT_ALLOC, 2);
	assert_int_equal(util_json_add_u64(obj, "a", 1), 0);
	assert_int_equal(util_json_add_hex(obj, "b", 2), -ENOMEM);
	assert_non_null(strstr(util_errmsg(), "'b'"));
	assert_int_equal(util_json_add_obj(obj, "c", json_object_new_object()),
			 0);
	assert_true(json_object_object_get_ex(obj, "a", &v));
	assert_false(json_object_object_get_ex(obj, "b", NULL));
	assert_true(json_object_object_get_ex(obj, "c", &v));
	util_fault_inject_at(UTIL_FAULT_ALLOC, 1);
	assert_int_equal(util_json_add_obj(obj, "d", json_object_new_array()),
			 -ENOMEM);
	assert_false(json_object_object_get_ex(obj, "d", NULL));
	json_object_put(obj);
}

/* ------------------------------------------------------------------ io */

#define PIPE_DATA (1u << 20) /* well above the 64 KiB pipe buffer */

struct pipe_writer {
	int fd;
	const unsigned char *buf;
	size_t len;
	int ret;
};

static void *pipe_writer_main(void *arg)
{
	struct pipe_writer *w = arg;

	w->ret = util_write_all(w->fd, w->buf, w->len);
	return NULL;
}

static unsigned char *pattern(size_t len, unsigned seed)
{
	unsigned char *buf = malloc(len);
	size_t i;

	assert_non_null(buf);
	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 2654435761u + seed);
	return buf;
}

static void test_io_pipe_round_trip(void **state)
{
	unsigned char *out = pattern(PIPE_DATA, 1);
	unsigned char *in = malloc(PIPE_DATA);
	struct pipe_writer w;
	pthread_t th;
	int fds[2];
	char c;

	(void)state;
	assert_non_null(in);
	assert_int_equal(pipe(fds), 0);
	w = (struct pipe_writer){ .fd = fds[1], .buf = out, .len = PIPE_DATA };
	assert_int_equal(pthread_create(&th, NULL, pipe_writer_main, &w), 0);
	assert_int_equal(util_read_all(fds[0], in, PIPE_DATA), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.ret, 0);
	assert_memory_equal(in, out, PIPE_DATA);
	/* EOF before the buffer is full is -EIO */
	assert_int_equal(util_write_all(fds[1], "ab", 2), 0);
	close(fds[1]);
	assert_int_equal(util_read_all(fds[0], in, 3), -EIO);
	assert_non_null(strstr(util_errmsg(), "1 bytes short"));
	assert_int_equal(util_read_all(fds[0], &c, 0), 0);
	close(fds[0]);
	free(in);
	free(out);
}

/* a file through the chaos syscalls: every loop must retry and resume */
static void test_io_short_and_eintr(void **state)
{
	unsigned char *out = pattern(1000, 3);
	unsigned char in[1000];
	FILE *tmp = tmpfile();
	int fd;

	(void)state;
	assert_non_null(tmp);
	fd = fileno(tmp);
	atomic_store(&chaos_calls, 0);
	atomic_store(&chaos, 1);
	assert_int_equal(util_write_all(fd, out, 500), 0);
	assert_int_equal(util_pwrite_all(fd, out + 500, 500, 500), 0);
	assert_int_equal(util_pread_all(fd, in, 1000, 0), 0);
	atomic_store(&chaos, 0);
	/* 4 * ceil(500/7) (+ the pread of 1000) short calls, each after EINTR */
	assert_true(atomic_load(&chaos_calls) >= 2 * (72 + 72 + 143));
	assert_memory_equal(in, out, 1000);

	memset(in, 0, sizeof(in));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	atomic_store(&chaos, 1);
	assert_int_equal(util_read_all(fd, in, 1000), 0);
	atomic_store(&chaos, 0);
	assert_memory_equal(in, out, 1000);
	fclose(tmp);
	free(out);
}

static void test_io_file_offsets(void **state)
{
	FILE *tmp = tmpfile();
	char buf[16];
	int fd, devnull;

	(void)state;
	assert_non_null(tmp);
	fd = fileno(tmp);
	assert_int_equal(util_pwrite_all(fd, "world", 5, 4096), 0);
	assert_int_equal(util_pwrite_all(fd, "hello", 5, 0), 0);
	assert_int_equal(util_pread_all(fd, buf, 5, 4096), 0);
	assert_memory_equal(buf, "world", 5);
	assert_int_equal(util_pread_all(fd, buf, 5, 0), 0);
	assert_memory_equal(buf, "hello", 5);
	/* hole reads as zeros; the file position was never moved */
	assert_int_equal(util_pread_all(fd, buf, 4, 100), 0);
	assert_memory_equal(buf, "\0\0\0\0", 4);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
	/* past EOF */
	assert_int_equal(util_pread_all(fd, buf, 8, 4098), -EIO);
	assert_non_null(strstr(util_errmsg(), "offset 4101"));
	fclose(tmp);

	/* errors come back as -errno with a message */
	assert_int_equal(util_write_all(-1, "x", 1), -EBADF);
	assert_non_null(strstr(util_errmsg(), "write"));
	assert_int_equal(util_read_all(-1, buf, 1), -EBADF);
	assert_int_equal(util_pwrite_all(-1, "x", 1, 0), -EBADF);
	assert_int_equal(util_pread_all(-1, buf, 1, 0), -EBADF);
	devnull = open("/dev/null", O_RDONLY);
	assert_true(devnull >= 0);
	assert_int_equal(util_write_all(devnull, "x", 1), -EBADF);
	close(devnull);
	devnull = open("/dev/full", O_WRONLY);
	if (devnull >= 0) {
		assert_int_equal(util_write_all(devnull, "x", 1), -ENOSPC);
		close(devnull);
	}
}

/* ---------------------------------------------------- fault injection */

static void test_fault_nth(void **state)
{
	int i;

	(void)state;
	/* disarmed: never fires */
	for (i = 0; i < 100; i++)
		assert_int_equal(util_fault_hit(UTIL_FAULT_ALLOC), 0);
	util_fault_inject_at(UTIL_FAULT_ALLOC, 3);
	assert_int_equal(util_fault_hit(UTIL_FAULT_ALLOC), 0);
	assert_int_equal(util_fault_hit(UTIL_FAULT_IO), 0); /* other point */
	assert_int_equal(util_fault_hit(UTIL_FAULT_ALLOC), 0);
	assert_int_equal(util_fault_hit(UTIL_FAULT_ALLOC), 1);
	for (i = 0; i < 100; i++) /* once only */
		assert_int_equal(util_fault_hit(UTIL_FAULT_ALLOC), 0);
	util_fault_inject_at(UTIL_FAULT_IO, 1);
	assert_int_equal(util_fault_hit(UTIL_FAULT_IO), 1);
	/* re-arming and disarming */
	util_fault_inject_at(UTIL_FAULT_IO, 2);
	util_fault_inject_at(UTIL_FAULT_IO, 0);
	assert_int_equal(util_fault_hit(UTIL_FAULT_IO), 0);
	assert_int_equal(util_fault_hit(UTIL_FAULT_IO), 0);
	/* invalid points are ignored */
	util_fault_inject_at(UTIL_FAULT_NPOINTS, 1);
	assert_int_equal(util_fault_hit(UTIL_FAULT_NPOINTS), 0);
}

#define FAULT_THREADS 4
#define FAULT_HITS 20000

static atomic_int fault_fired;

static void *fault_thread(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < FAULT_HITS; i++)
		if (util_fault_hit(UTIL_FAULT_ALLOC))
			atomic_fetch_add(&fault_fired, 1);
	return NULL;
}

static void test_fault_threads(void **state)
{
	pthread_t th[FAULT_THREADS];
	int round, i;

	(void)state;
	for (round = 0; round < 5; round++) {
		atomic_store(&fault_fired, 0);
		util_fault_inject_at(UTIL_FAULT_ALLOC,
				     FAULT_THREADS * FAULT_HITS / 2 + round);
		for (i = 0; i < FAULT_THREADS; i++)
			assert_int_equal(pthread_create(&th[i], NULL,
							fault_thread, NULL),
					 0);
		for (i = 0; i < FAULT_THREADS; i++)
			assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(atomic_load(&fault_fired), 1);
	}
}

static void test_fault_io(void **state)
{
	FILE *tmp = tmpfile();
	char buf[8];
	int fd;

	(void)state;
	assert_non_null(tmp);
	fd = fileno(tmp);
	util_fault_inject_at(UTIL_FAULT_IO, 2);
	assert_int_equal(util_write_all(fd, "abcd", 4), 0);
	assert_int_equal(util_write_all(fd, "efgh", 4), -EIO);
	assert_non_null(strstr(util_errmsg(), "injected"));
	assert_int_equal(lseek(fd, 0, SEEK_END), 4); /* nothing written */
	util_fault_inject_at(UTIL_FAULT_IO, 1);
	assert_int_equal(util_pwrite_all(fd, "xy", 2, 0), -EIO);
	util_fault_inject_at(UTIL_FAULT_IO, 1);
	assert_int_equal(util_pread_all(fd, buf, 4, 0), -EIO);
	util_fault_inject_at(UTIL_FAULT_IO, 1);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(util_read_all(fd, buf, 4), -EIO);
	assert_int_equal(util_pread_all(fd, buf, 4, 0), 0);
	assert_memory_equal(buf, "abcd", 4);
	fclose(tmp);
}

/* ------------------------------------------------------- close stdout */

enum stdout_case {
	STDOUT_OK, /* a regular file: 0 */
	STDOUT_FULL, /* /dev/full: -EIO */
	STDOUT_EPIPE, /* reader gone, SIGPIPE ignored: 0 */
	STDOUT_CLOSED, /* closed, nothing printed: 0 */
	STDOUT_CLOSED_OUT, /* closed, something printed: -EIO */
};

/* in a child: set up stdout, print, return util_close_stdout() */
static int close_stdout_child(enum stdout_case c)
{
	int fds[2], fd = -1;

	if (c == STDOUT_OK)
		fd = open("/dev/null", O_WRONLY);
	else if (c == STDOUT_FULL)
		fd = open("/dev/full", O_WRONLY);
	else if (c == STDOUT_EPIPE && pipe(fds) == 0) {
		close(fds[0]);
		signal(SIGPIPE, SIG_IGN);
		fd = fds[1];
	}
	if (fd >= 0 && dup2(fd, STDOUT_FILENO) < 0)
		return 100;
	if (fd < 0)
		close(STDOUT_FILENO);
	if (c != STDOUT_CLOSED)
		printf("some output\n");
	return util_close_stdout();
}

static int close_stdout_in_child(enum stdout_case c)
{
	int status;
	pid_t pid;

	fflush(stdout); /* the child must not print our buffered TAP lines */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(-close_stdout_child(c));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return -WEXITSTATUS(status);
}

static void test_close_stdout(void **state)
{
	(void)state;
	assert_int_equal(close_stdout_in_child(STDOUT_OK), 0);
	assert_int_equal(close_stdout_in_child(STDOUT_FULL), -EIO);
	assert_int_equal(close_stdout_in_child(STDOUT_EPIPE), 0);
	assert_int_equal(close_stdout_in_child(STDOUT_CLOSED), 0);
	assert_int_equal(close_stdout_in_child(STDOUT_CLOSED_OUT), -EIO);
}

/* ---------------------------------------------------------------- main */

#define T(fn) cmocka_unit_test_setup_teardown(fn, reset_util, reset_util)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_size_parse_valid),
		T(test_size_parse_invalid),
		T(test_size_parse_overflow),
		T(test_size_format),
		T(test_size_round_trip),
		T(test_crc32c_vectors),
		T(test_crc32c_incremental),
		T(test_crc32c_3w),
		T(test_crc32c_fast_matches_table),
		T(test_log_default_silent),
		T(test_log_sink_filter),
		T(test_log_parse_priority),
		T(test_log_env),
		T(test_log_stderr_sink),
		T(test_log_preserves_errno),
		T(test_errmsg),
		T(test_json_plain),
		T(test_json_pretty),
		T(test_json_print_errors),
		T(test_json_add_failures),
		T(test_io_pipe_round_trip),
		T(test_io_short_and_eintr),
		T(test_io_file_offsets),
		T(test_fault_nth),
		T(test_fault_threads),
		T(test_fault_io),
		T(test_close_stdout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

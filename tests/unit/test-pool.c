/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pool: lib/pool create/open round trips (1 and 3 parts), every open
 * error with its errno and its own message naming the path, create errors
 * (including ENOSPC on a tiny tmpfs in a private mount namespace when we
 * may mount), locking, regions, raw header checks, and crash safety of a
 * header update (every fence of a region add, via the crash simulator).
 * Pools live in a fresh directory under /dev/shm per test.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmem/crash.h"
#include "pool/fsck.h"
#include "pool/internal.h"
#include "pool/pool.h"
#include "util/errmsg.h"

#define MIB (1024ULL * 1024)

/* this program, to re-run it as a crash child (argv[0] if it has a '/') */
static const char *self_path = "/proc/self/exe";
#define PART_SIZE MIB

struct fx {
	char dir[64];
	char path[POOL_MAX_PARTS][128];
	const char *paths[POOL_MAX_PARTS];
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	unsigned i;

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/dev/shm/test-pool.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	for (i = 0; i < POOL_MAX_PARTS; i++) {
		snprintf(f->path[i], sizeof(f->path[i]), "%s/part%u", f->dir,
			 i);
		f->paths[i] = f->path[i];
	}
	*state = f;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void params_init(struct pool_create_params *p, const struct fx *f,
			unsigned nparts, uint64_t size)
{
	memset(p, 0, sizeof(*p));
	p->nparts = nparts;
	p->paths = f->paths;
	p->part_size = size;
	p->mode = 0600;
}

static struct pool *mk(const struct fx *f, unsigned nparts, uint64_t size)
{
	struct pool_create_params p;
	struct pool *pool = NULL;
	int rc;

	params_init(&p, f, nparts, size);
	rc = pool_create(&p, &pool);
	if (rc)
		fail_msg("pool_create: %d %s", rc, pool_errormsg());
	return pool;
}

static void mk_closed(const struct fx *f, unsigned nparts, uint64_t size)
{
	struct pool *pool = mk(f, nparts, size);

	pool_close(&pool);
}

static struct pool *opn(const char *path, unsigned flags)
{
	struct pool *pool = NULL;
	int rc = pool_open(path, flags, &pool);

	if (rc)
		fail_msg("pool_open %s: %d %s", path, rc, pool_errormsg());
	return pool;
}

static void file_write(const char *path, uint64_t off, const void *buf,
		       size_t len)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

static void file_read(const char *path, uint64_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

static void flip_byte(const char *path, uint64_t off)
{
	unsigned char c;

	file_read(path, off, &c, 1);
	c ^= 0x5a;
	file_write(path, off, &c, 1);
}

/* read, change and re-checksum a part header / pool header copy */
typedef void (*phdr_edit_fn)(struct pool_part_hdr *h);
typedef void (*hdr_edit_fn)(struct pool_hdr *h);

static void phdr_edit(const char *path, phdr_edit_fn fn)
{
	struct pool_part_hdr h;

	file_read(path, POOL_PART_HDR_OFF, &h, sizeof(h));
	fn(&h);
	h.checksum = pool_part_hdr_checksum(&h);
	file_write(path, POOL_PART_HDR_OFF, &h, sizeof(h));
}

static void hdr_edit(const char *path, unsigned copy, hdr_edit_fn fn)
{
	struct pool_hdr *h = malloc(sizeof(*h));

	assert_non_null(h);
	file_read(path, pool_hdr_copy_off(copy), h, sizeof(*h));
	fn(h);
	h->checksum = pool_hdr_checksum(h);
	file_write(path, pool_hdr_copy_off(copy), h, sizeof(*h));
	free(h);
}

/* ------------------------------------------------------------ round trip */

static void check_part_hdr(const char *path, const struct pool_hdr *h,
			   unsigned i)
{
	struct pool_part_hdr ph;

	file_read(path, POOL_PART_HDR_OFF, &ph, sizeof(ph));
	assert_int_equal(pool_part_hdr_check(&ph, sizeof(ph)), 0);
	assert_memory_equal(ph.magic, POOL_PART_MAGIC, POOL_MAGIC_LEN);
	assert_int_equal(ph.major, POOL_FORMAT_MAJOR);
	assert_int_equal(ph.minor, POOL_FORMAT_MINOR);
	assert_int_equal(ph.part_index, i);
	assert_memory_equal(ph.pool_uuid, h->uuid, 16);
	assert_memory_equal(ph.part_uuid, h->parts[i].uuid, 16);
	assert_int_equal(ph.size, h->parts[i].size);
	assert_int_equal(ph.nparts, h->nparts);
	assert_int_equal(ph.create_time, h->create_time);
}

static void check_fresh_hdr(const struct fx *f, const struct pool_hdr *h,
			    unsigned nparts, uint64_t size)
{
	static const uint8_t zero[16];
	char *real;
	unsigned i;

	assert_memory_equal(h->magic, POOL_HDR_MAGIC, POOL_MAGIC_LEN);
	assert_int_equal(h->major, POOL_FORMAT_MAJOR);
	assert_int_equal(h->minor, POOL_FORMAT_MINOR);
	assert_int_equal(h->hdr_size, POOL_HDR_SIZE);
	assert_int_equal(h->generation, 1);
	assert_memory_not_equal(h->uuid, zero, 16);
	assert_int_equal(h->feat_incompat, 0);
	assert_true(h->create_time > 1600000000ULL);
	assert_int_equal(h->nparts, nparts);
	assert_int_equal(h->nregions, 0);
	for (i = 0; i < nparts; i++) {
		real = realpath(f->path[i], NULL);
		assert_non_null(real);
		assert_string_equal(h->parts[i].path_hint, real);
		free(real);
		assert_int_equal(h->parts[i].size, size);
		assert_int_equal(h->parts[i].flags, 0);
		assert_true(h->parts[i].node >= 0);
		assert_memory_not_equal(h->parts[i].uuid, zero, 16);
		assert_int_equal(file_size(f->path[i]), size);
		check_part_hdr(f->path[i], h, i);
	}
}

static void roundtrip(const struct fx *f, unsigned nparts)
{
	struct pool *pool = mk(f, nparts, PART_SIZE);
	struct pool_hdr *saved = malloc(sizeof(*saved));
	unsigned i;

	assert_non_null(saved);
	check_fresh_hdr(f, pool_header(pool), nparts, PART_SIZE);
	/* create writes both copies */
	assert_int_equal(pool_header_copy(pool), 0);
	assert_int_equal(pool_header_other_valid(pool), 1);
	*saved = *pool_header(pool);
	pool_close(&pool);
	assert_null(pool);

	pool = opn(f->path[0], 0);
	assert_memory_equal(pool_header(pool), saved, sizeof(*saved));
	assert_int_equal(pool_header_copy(pool), 0);
	assert_int_equal(pool_header_other_valid(pool), 1);
	assert_int_equal(pool_part_count(pool), nparts);
	for (i = 0; i < nparts; i++) {
		assert_non_null(pool_part_map(pool, i));
		assert_true(pm_map_size(pool_part_map(pool, i)) >= PART_SIZE);
		assert_int_equal(pool_part_node(pool, i), saved->parts[i].node);
	}
	assert_string_equal(pool_part_path(pool, 0), f->path[0]);
	if (nparts > 1)
		assert_string_equal(pool_part_path(pool, 1),
				    saved->parts[1].path_hint);
	assert_null(pool_part_map(pool, nparts));
	assert_null(pool_part_path(pool, nparts));
	assert_int_equal(pool_part_node(pool, nparts), -1);
	assert_true(pool_granularity(pool) <= PM_GRAN_PAGE);
	pool_close(&pool);
	pool_close(&pool); /* NULL is fine */
	free(saved);
}

static void test_roundtrip_1part(void **state)
{
	roundtrip(*state, 1);
}

static void test_roundtrip_3parts(void **state)
{
	roundtrip(*state, 3);
}

static void test_nodes_and_mode(void **state)
{
	const struct fx *f = *state;
	static const int nodes[] = { 7, -1, 3 };
	struct pool_create_params p;
	struct pool *pool = NULL;
	mode_t old = umask(077);
	struct stat st;

	params_init(&p, f, 3, PART_SIZE);
	p.nodes = nodes;
	p.mode = 0640;
	assert_int_equal(pool_create(&p, &pool), 0);
	umask(old);
	assert_int_equal(pool_part_node(pool, 0), 7);
	assert_true(pool_part_node(pool, 1) >= 0);
	assert_int_equal(pool_part_node(pool, 2), 3);
	pool_close(&pool);
	assert_int_equal(stat(f->path[1], &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	pool = opn(f->path[0], 0);
	assert_int_equal(pool_part_node(pool, 0), 7);
	assert_int_equal(pool_part_node(pool, 2), 3);
	pool_close(&pool);
}

struct progress {
	unsigned calls;
	uint64_t last_done, total;
	int monotonic;
};

static void progress_cb(uint64_t done, uint64_t total, void *arg)
{
	struct progress *pr = arg;

	if (done < pr->last_done)
		pr->monotonic = 0;
	pr->calls++;
	pr->last_done = done;
	pr->total = total;
}

static void test_progress(void **state)
{
	const struct fx *f = *state;
	struct progress pr = { .monotonic = 1 };
	struct pool_create_params p;
	struct pool *pool = NULL;

	/* 2 x 80 MiB: two 64 MiB chunks per part */
	params_init(&p, f, 2, 80 * MIB);
	p.progress = progress_cb;
	p.progress_arg = &pr;
	assert_int_equal(pool_create(&p, &pool), 0);
	assert_int_equal(pr.calls, 4);
	assert_true(pr.monotonic);
	assert_int_equal(pr.total, 160 * MIB);
	assert_int_equal(pr.last_done, 160 * MIB);
	pool_close(&pool);
}

static void test_direct_offset(void **state)
{
	const struct fx *f = *state;
	struct pool *pool = mk(f, 3, PART_SIZE);
	char *base2 = pm_map_addr(pool_part_map(pool, 2));
	uint64_t off = pool_off_make(2, POOL_DATA_OFF + 100);
	int local;

	assert_ptr_equal(pool_direct(pool, off), base2 + POOL_DATA_OFF + 100);
	assert_int_equal(pool_offset(pool, base2 + POOL_DATA_OFF + 100), off);
	assert_int_equal(pool_off_part(off), 2);
	assert_int_equal(pool_off_byte(off), POOL_DATA_OFF + 100);
	assert_null(pool_direct(pool, 0));
	assert_null(pool_direct(pool, pool_off_make(3, POOL_DATA_OFF)));
	assert_null(pool_direct(pool, pool_off_make(1, PART_SIZE)));
	assert_non_null(pool_direct(pool, pool_off_make(1, PART_SIZE - 1)));
	assert_int_equal(pool_offset(pool, &local), 0);
	assert_int_equal(pool_offset(pool, base2 + PART_SIZE), 0);
	pool_close(&pool);
}

static void test_uuid_format(void **state)
{
	static const uint8_t u[16] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55,
				       0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
				       0xcc, 0xdd, 0xee, 0xff };
	char s[37];

	(void)state;
	pool_uuid_format(u, s);
	assert_string_equal(s, "00112233-4455-6677-8899-aabbccddeeff");
}

/* ------------------------------------------------------------ open errors */

/*
 * One row per way open can fail: break a fresh 3-part pool with mutate,
 * open the path it names, expect errno and a message naming the culprit.
 * The messages of all rows must differ from each other.
 */
struct open_case {
	const char *name;
	/* break the pool; may return a pool to keep open during the open */
	struct pool *(*mutate)(struct fx *f, const char **ret_open_path);
	unsigned flags;
	int rc;
	const char *msg; /* expected substring */
	int named_part; /* f->path[i] the message names; -1: open path */
};

static void set_major2(struct pool_part_hdr *h)
{
	h->major = 2;
}

static void set_incompat(struct pool_hdr *h)
{
	h->feat_incompat = 1ULL << 40;
}

static void set_nparts17(struct pool_hdr *h)
{
	h->nparts = 17;
}

static void set_hdr_major2(struct pool_hdr *h)
{
	h->major = 2;
}

static void add_one_region(const struct fx *f)
{
	struct pool *pool = opn(f->path[0], 0);
	unsigned idx;

	assert_int_equal(
		pool_region_add(pool, POOL_REGION_USER, 0, 1, "r", &idx), 0);
	pool_close(&pool);
}

static struct pool *m_magic(struct fx *f, const char **p)
{
	(void)p;
	file_write(f->path[0], 0, "XXXX", 4);
	return NULL;
}

static struct pool *m_version(struct fx *f, const char **p)
{
	(void)p;
	phdr_edit(f->path[0], set_major2);
	return NULL;
}

static struct pool *m_hdr_version(struct fx *f, const char **p)
{
	(void)p;
	hdr_edit(f->path[0], 0, set_hdr_major2);
	hdr_edit(f->path[0], 1, set_hdr_major2); /* create wrote both copies */
	return NULL;
}

static struct pool *m_part_csum(struct fx *f, const char **p)
{
	(void)p;
	flip_byte(f->path[0], 100);
	return NULL;
}

static struct pool *m_both_csum(struct fx *f, const char **p)
{
	(void)p;
	add_one_region(f); /* now both copies are valid */
	flip_byte(f->path[0], POOL_HDR_A_OFF + 7000);
	flip_byte(f->path[0], POOL_HDR_B_OFF + 7000);
	return NULL;
}

static struct pool *m_no_hdr(struct fx *f, const char **p)
{
	static const char zero[2 * POOL_HDR_SIZE];

	(void)p;
	/* what a crash in the middle of create leaves */
	file_write(f->path[0], POOL_HDR_A_OFF, zero, sizeof(zero));
	return NULL;
}

static struct pool *m_incompat(struct fx *f, const char **p)
{
	(void)p;
	hdr_edit(f->path[0], 0, set_incompat);
	hdr_edit(f->path[0], 1, set_incompat); /* create wrote both copies */
	return NULL;
}

static struct pool *m_nparts(struct fx *f, const char **p)
{
	(void)p;
	hdr_edit(f->path[0], 0, set_nparts17);
	hdr_edit(f->path[0], 1, set_nparts17); /* create wrote both copies */
	return NULL;
}

static struct pool *m_missing(struct fx *f, const char **p)
{
	(void)p;
	assert_int_equal(unlink(f->path[2]), 0);
	return NULL;
}

static struct pool *m_foreign(struct fx *f, const char **p)
{
	struct fx other = *f;
	char buf[4096];
	unsigned i;
	int in, out;
	ssize_t n;

	(void)p;
	for (i = 0; i < 3; i++) {
		snprintf(other.path[i], sizeof(other.path[i]), "%s/other%u",
			 f->dir, i);
		other.paths[i] = other.path[i];
	}
	mk_closed(&other, 3, PART_SIZE);
	in = open(other.path[1], O_RDONLY);
	out = open(f->path[1], O_WRONLY | O_TRUNC);
	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	return NULL;
}

static struct pool *m_swapped(struct fx *f, const char **p)
{
	char tmp[160];

	(void)p;
	snprintf(tmp, sizeof(tmp), "%s/tmp", f->dir);
	assert_int_equal(rename(f->path[1], tmp), 0);
	assert_int_equal(rename(f->path[2], f->path[1]), 0);
	assert_int_equal(rename(tmp, f->path[2]), 0);
	return NULL;
}

static struct pool *m_trunc0(struct fx *f, const char **p)
{
	(void)p;
	assert_int_equal(truncate(f->path[0], PART_SIZE / 2), 0);
	return NULL;
}

static struct pool *m_trunc2(struct fx *f, const char **p)
{
	(void)p;
	assert_int_equal(truncate(f->path[2], PART_SIZE - POOL_ALIGN), 0);
	return NULL;
}

static struct pool *m_tiny(struct fx *f, const char **p)
{
	(void)p;
	assert_int_equal(truncate(f->path[0], 10), 0);
	return NULL;
}

static struct pool *m_rofile(struct fx *f, const char **p)
{
	(void)p;
	assert_int_equal(chmod(f->path[0], 0444), 0);
	return NULL;
}

static struct pool *m_nofile(struct fx *f, const char **p)
{
	static char path[160];

	snprintf(path, sizeof(path), "%s/nonexistent", f->dir);
	*p = path;
	return NULL;
}

static struct pool *m_part1(struct fx *f, const char **p)
{
	*p = f->path[1];
	return NULL;
}

static struct pool *m_locked(struct fx *f, const char **p)
{
	(void)p;
	return opn(f->path[0], 0);
}

static struct pool *m_locked_shared(struct fx *f, const char **p)
{
	(void)p;
	return opn(f->path[0], POOL_OPEN_RDONLY);
}

static const struct open_case open_cases[] = {
	{ "no such file", m_nofile, 0, -ENOENT, "no such file", -1 },
	{ "bad magic", m_magic, 0, -EINVAL, "bad part header magic", 0 },
	{ "tiny file", m_tiny, 0, -EINVAL, "file is 10 bytes", 0 },
	{ "no pool header", m_no_hdr, 0, -EINVAL, "no pool header", 0 },
	{ "part version", m_version, 0, -EPROTONOSUPPORT,
	  "version 2.0 is not supported", 0 },
	{ "header version", m_hdr_version, 0, -EPROTONOSUPPORT,
	  "pool format version 2.0 is not supported (this build reads 1.x) (both copies)",
	  0 },
	{ "incompat feature", m_incompat, 0, -EPROTONOSUPPORT,
	  "unknown incompatible features", 0 },
	{ "part header checksum", m_part_csum, 0, -EBADMSG,
	  "part header checksum mismatch", 0 },
	{ "both header checksums", m_both_csum, 0, -EBADMSG,
	  "pool header checksum mismatch (both copies)", 0 },
	{ "bad table", m_nparts, 0, -EBADMSG, "names 17 parts", 0 },
	{ "missing part", m_missing, 0, -ENOENT, "part 2 (", 2 },
	{ "foreign part", m_foreign, 0, -EXDEV, "belongs to another pool", 1 },
	{ "swapped parts", m_swapped, 0, -EXDEV, "is part 2, expected 1", 1 },
	{ "truncated part 0", m_trunc0, 0, -EIO,
	  "file is 524288 bytes, smaller than the 1048576 its header claims",
	  0 },
	{ "truncated part 2", m_trunc2, 0, -EIO,
	  "file is 983040 bytes, smaller than the 1048576", 2 },
	{ "read-only file", m_rofile, 0, -EROFS, "read-only (mode 0444)", 0 },
	{ "part 1 as pool", m_part1, 0, -EXDEV, "is part 1 of a pool", 1 },
	{ "locked", m_locked, 0, -EBUSY, "in use by another process", 0 },
	{ "locked, ro open", m_locked, POOL_OPEN_RDONLY, -EBUSY,
	  "in use by another process", 0 },
	{ "shared-locked, rw open", m_locked_shared, 0, -EBUSY,
	  "in use by another process", 0 },
};
#define NCASES (sizeof(open_cases) / sizeof(open_cases[0]))

/* replace every occurrence of dir (longer than 3) in msg by "DIR" */
static void strip_dir(char *msg, const char *dir)
{
	size_t dlen = strlen(dir);
	char *hit;

	while ((hit = strstr(msg, dir))) {
		memcpy(hit, "DIR", 3);
		memmove(hit + 3, hit + dlen, strlen(hit + dlen) + 1);
	}
}

static void run_open_case(struct fx *f, const struct open_case *c,
			  char *ret_msg, size_t len)
{
	const char *open_path = f->path[0];
	struct pool *keep, *pool = NULL;
	int rc;

	mk_closed(f, 3, PART_SIZE);
	keep = c->mutate(f, &open_path);
	rc = pool_open(open_path, c->flags, &pool);
	snprintf(ret_msg, len, "%s", pool_errormsg());
	print_message("# %-22s %d %s\n", c->name, rc, ret_msg);
	if (rc != c->rc)
		fail_msg("%s: rc %d, expected %d (%s)", c->name, rc, c->rc,
			 ret_msg);
	assert_null(pool);
	if (!strstr(ret_msg, c->msg))
		fail_msg("%s: '%s' lacks '%s'", c->name, ret_msg, c->msg);
	if (!strstr(ret_msg,
		    c->named_part < 0 ? open_path : f->path[c->named_part]))
		fail_msg("%s: '%s' does not name the path", c->name, ret_msg);
	pool_close(&keep);
	strip_dir(ret_msg, f->dir);
}

static void test_open_errors(void **state)
{
	static char msgs[NCASES][UTIL_ERRMSG_MAX];
	struct fx *f = *state;
	unsigned i, j;

	for (i = 0; i < NCASES; i++) {
		run_open_case(f, &open_cases[i], msgs[i], sizeof(msgs[i]));
		/* next case starts from nothing */
		fx_teardown(state);
		fx_setup(state);
		f = *state;
	}
	for (i = 0; i < NCASES; i++)
		for (j = i + 1; j < NCASES; j++)
			if (strcmp(open_cases[i].msg, open_cases[j].msg) &&
			    !strcmp(msgs[i], msgs[j]))
				fail_msg("cases '%s' and '%s' share a message",
					 open_cases[i].name,
					 open_cases[j].name);
}

/* a fresh pool survives the loss of either header copy */
static void test_fresh_pool_copy_lost(void **state)
{
	const struct fx *f = *state;
	struct pool *pool = mk(f, 1, PART_SIZE);
	struct pool_hdr *saved = malloc(sizeof(*saved));

	assert_non_null(saved);
	*saved = *pool_header(pool);
	pool_close(&pool);
	flip_byte(f->path[0], POOL_HDR_A_OFF + 50);
	pool = opn(f->path[0], 0);
	assert_int_equal(pool_header_copy(pool), 1);
	assert_int_equal(pool_header_other_valid(pool), 0);
	assert_memory_equal(pool_header(pool), saved, sizeof(*saved));
	pool_close(&pool);
	free(saved);
}

static void test_one_copy_corrupt(void **state)
{
	const struct fx *f = *state;
	struct pool *pool = mk(f, 1, PART_SIZE);
	unsigned idx;

	assert_int_equal(
		pool_region_add(pool, POOL_REGION_USER, 0, 1, "x", &idx), 0);
	/* an update leaves both copies equal: generation 2, one region */
	assert_int_equal(pool_header_copy(pool), 1);
	pool_close(&pool);

	flip_byte(f->path[0], POOL_HDR_B_OFF + 50);
	pool = opn(f->path[0], 0);
	assert_int_equal(pool_header_copy(pool), 0);
	assert_int_equal(pool_header_other_valid(pool), 0);
	/* the damaged copy held the same state: nothing rolled back */
	assert_int_equal(pool_header(pool)->generation, 2);
	assert_int_equal(pool_header(pool)->nregions, 1);
	assert_null(pool_header_damage(pool));
	/* the writable open rewrote the broken copy */
	pool_close(&pool);
	flip_byte(f->path[0], POOL_HDR_A_OFF + 50);
	pool = opn(f->path[0], 0);
	assert_int_equal(pool_header_copy(pool), 1);
	assert_int_equal(pool_header(pool)->generation, 2);
	assert_int_equal(pool_header(pool)->nregions, 1);
	assert_string_equal(pool_header(pool)->regions[0].name, "x");
	pool_close(&pool);
}

static void test_locking(void **state)
{
	const struct fx *f = *state;
	struct pool *rw, *ro1, *ro2, *nl, *tmp = NULL;

	mk_closed(f, 2, PART_SIZE);
	ro1 = opn(f->path[0], POOL_OPEN_RDONLY);
	ro2 = opn(f->path[0], POOL_OPEN_RDONLY);
	assert_int_equal(pool_open(f->path[0], 0, &tmp), -EBUSY);
	nl = opn(f->path[0], POOL_OPEN_NOLOCK);
	pool_close(&nl);
	pool_close(&ro1);
	pool_close(&ro2);
	/* closing released the shared locks */
	rw = opn(f->path[0], 0);
	nl = opn(f->path[0], POOL_OPEN_NOLOCK | POOL_OPEN_RDONLY);
	pool_close(&nl);
	pool_close(&rw);
	rw = opn(f->path[0], 0);
	pool_close(&rw);
	assert_null(tmp);
}

static void test_rdonly(void **state)
{
	const struct fx *f = *state;
	struct pool *pool;
	unsigned idx = 99;

	mk_closed(f, 2, PART_SIZE);
	assert_int_equal(chmod(f->path[0], 0444), 0);
	assert_int_equal(chmod(f->path[1], 0444), 0);
	pool = opn(f->path[0], POOL_OPEN_RDONLY);
	assert_int_equal(pool_region_add(pool, POOL_REGION_USER, 0, 1, "x",
					 &idx),
			 -EROFS);
	assert_non_null(strstr(pool_errormsg(), "read-only"));
	assert_int_equal(idx, 99);
	assert_int_equal(pool_header(pool)->nregions, 0);
	pool_close(&pool);
	/* part 0 writable, part 1 not */
	assert_int_equal(chmod(f->path[0], 0600), 0);
	assert_int_equal(pool_open(f->path[0], 0, &pool), -EROFS);
	assert_non_null(strstr(pool_errormsg(), "part 1 ("));
}

/* a read-only open shares the flock with shared (masked) opens, but not
 * while one of them holds a region: it would read a pool being written */
static void test_rdonly_vs_regions(void **state)
{
	const struct fx *f = *state;
	struct pool *sh, *ro;

	mk_closed(f, 1, PART_SIZE);
	sh = opn(f->path[0], POOL_OPEN_SHARED);
	ro = opn(f->path[0], POOL_OPEN_RDONLY); /* no region held yet */
	pool_close(&ro);
	assert_int_equal(pool_slot_lock(sh, 5, "region 5"), 0);
	assert_int_equal(pool_slot_busy(sh, 5), 0); /* its own lock */
	assert_int_equal(pool_open(f->path[0], POOL_OPEN_RDONLY, &ro), -EBUSY);
	assert_non_null(strstr(pool_errormsg(), "in use by another process"));
	/* the shared open itself, and an exclusive one */
	assert_int_equal(pool_open(f->path[0], 0, &ro), -EBUSY);
	pool_close(&sh);
	ro = opn(f->path[0], POOL_OPEN_RDONLY);
	pool_close(&ro);
}

static void set_ro_compat(struct pool_hdr *h)
{
	h->feat_ro_compat = 1ULL << 63;
}

static void test_ro_compat_feature(void **state)
{
	const struct fx *f = *state;
	struct pool *pool = NULL;

	mk_closed(f, 1, PART_SIZE);
	hdr_edit(f->path[0], 0, set_ro_compat);
	hdr_edit(f->path[0], 1, set_ro_compat); /* create wrote both copies */
	assert_int_equal(pool_open(f->path[0], 0, &pool), -EPROTONOSUPPORT);
	assert_non_null(strstr(pool_errormsg(), "read-only compatible"));
	pool = opn(f->path[0], POOL_OPEN_RDONLY);
	pool_close(&pool);
}

/* ------------------------------------------------------------ create errors */

static int create_rc(const struct pool_create_params *p)
{
	struct pool *pool = NULL;
	int rc = pool_create(p, &pool);

	if (!rc)
		pool_close(&pool);
	else
		assert_null(pool);
	return rc;
}

static void expect_create(const struct pool_create_params *p, int rc,
			  const char *msg)
{
	int got = create_rc(p);

	if (got != rc || !strstr(pool_errormsg(), msg))
		fail_msg("create: %d '%s', expected %d '%s'", got,
			 pool_errormsg(), rc, msg);
}

static void test_create_bad_params(void **state)
{
	const struct fx *f = *state;
	const char *dup[2] = { f->path[0], f->path[0] };
	struct pool_create_params p;

	params_init(&p, f, 0, PART_SIZE);
	expect_create(&p, -EINVAL, "1..16 parts, not 0");
	p.nparts = 17;
	expect_create(&p, -EINVAL, "1..16 parts, not 17");
	params_init(&p, f, 1, PART_SIZE + 4096);
	expect_create(&p, -EINVAL, "multiple of 64 KiB");
	p.part_size = POOL_ALIGN;
	expect_create(&p, -EINVAL, "at least 128 KiB");
	p.part_size = 0;
	expect_create(&p, -EINVAL, "part size is required");
	params_init(&p, f, 2, PART_SIZE);
	p.paths = dup;
	expect_create(&p, -EINVAL, "listed twice");
	assert_int_equal(access(f->path[0], F_OK), -1);
	/* the smallest pool works */
	params_init(&p, f, 1, POOL_PART_MIN_SIZE);
	expect_create(&p, 0, "");
}

static void test_create_exists(void **state)
{
	const struct fx *f = *state;
	struct pool_create_params p;
	struct pool *pool, *holder;
	uint8_t uuid[16];

	pool = mk(f, 2, PART_SIZE);
	memcpy(uuid, pool_header(pool)->uuid, 16);
	pool_close(&pool);
	params_init(&p, f, 2, 2 * PART_SIZE);
	expect_create(&p, -EEXIST, "already exists");
	pool = opn(f->path[0], 0);
	assert_memory_equal(pool_header(pool)->uuid, uuid, 16);
	/* force does not destroy a pool that is in use */
	holder = pool;
	p.flags = POOL_CREATE_FORCE;
	expect_create(&p, -EBUSY, "in use by another process");
	pool_close(&holder);
	assert_int_equal(file_size(f->path[0]), PART_SIZE);
	pool = opn(f->path[0], 0);
	assert_memory_equal(pool_header(pool)->uuid, uuid, 16);
	pool_close(&pool);
	/* now force overwrites it: a new pool with the new size */
	assert_int_equal(pool_create(&p, &pool), 0);
	assert_memory_not_equal(pool_header(pool)->uuid, uuid, 16);
	pool_close(&pool);
	assert_int_equal(file_size(f->path[0]), 2 * PART_SIZE);
	pool = opn(f->path[0], 0);
	check_fresh_hdr(f, pool_header(pool), 2, 2 * PART_SIZE);
	pool_close(&pool);
	/* a plain file is refused too, and left alone */
	file_write(f->path[0], 0, "data", 4);
	p.flags = 0;
	expect_create(&p, -EEXIST, f->path[0]);
	assert_int_equal(file_size(f->path[0]), 2 * PART_SIZE);
}

static void test_create_cleanup(void **state)
{
	struct fx *f = *state;
	struct pool_create_params p;
	char lp[320];
	const char *paths[2] = { f->path[0], lp };
	size_t n;

	/* part 2 cannot be created: parts 0 and 1 are removed again */
	snprintf(f->path[2], sizeof(f->path[2]), "%s/nodir/part2", f->dir);
	params_init(&p, f, 3, PART_SIZE);
	expect_create(&p, -ENOENT, "nodir/part2");
	assert_int_equal(access(f->path[0], F_OK), -1);
	assert_int_equal(access(f->path[1], F_OK), -1);

	/* an absolute path that does not fit the part table */
	n = (size_t)snprintf(lp, sizeof(lp), "%s/", f->dir);
	memset(lp + n, 'n', 240);
	lp[n + 240] = '\0';
	params_init(&p, f, 2, PART_SIZE);
	p.paths = paths;
	expect_create(&p, -ENAMETOOLONG, "fit in the part table");
	assert_int_equal(access(lp, F_OK), -1);
	assert_int_equal(access(f->path[0], F_OK), -1);
}

/* in a child: a private mount namespace with a 1 MiB tmpfs */
static int enospc_child(const char *dir)
{
	char small[160], path[200];
	const char *paths[1] = { path };
	struct pool_create_params p = {
		.nparts = 1, .paths = paths, .part_size = 4 * MIB, .mode = 0600
	};
	struct pool *pool = NULL;
	int rc;

	snprintf(small, sizeof(small), "%s/small", dir);
	snprintf(path, sizeof(path), "%s/pool", small);
	if (mkdir(small, 0700) || unshare(CLONE_NEWNS) ||
	    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", small, "tmpfs", 0, "size=1m"))
		return 77;
	rc = pool_create(&p, &pool);
	if (rc != -ENOSPC) {
		fprintf(stderr, "# rc %d: %s\n", rc, pool_errormsg());
		return 1;
	}
	if (!strstr(pool_errormsg(), "not enough space on file system") ||
	    !strstr(pool_errormsg(), path))
		return 2;
	return access(path, F_OK) == 0 ? 3 : 0; /* the file is gone */
}

static void test_create_enospc(void **state)
{
	const struct fx *f = *state;
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(enospc_child(f->dir));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip(); /* may not mount here */
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ------------------------------------------------------------ regions */

static void region_expect(const struct pool_region *r, uint32_t type,
			  unsigned part, uint64_t off, uint64_t size,
			  const char *name)
{
	assert_non_null(r);
	assert_int_equal(r->type, type);
	assert_int_equal(r->part, part);
	assert_int_equal(r->off, off);
	assert_int_equal(r->size, size);
	assert_int_equal(r->flags, 0);
	assert_int_equal(strncmp(r->name, name, POOL_REGION_NAME_LEN), 0);
}

static void test_region_add_find(void **state)
{
	const struct fx *f = *state;
	struct pool *pool = mk(f, 3, 2 * PART_SIZE);
	unsigned idx;

	assert_int_equal(pool_region_add(pool, POOL_REGION_PMALLOC, 0, 100,
					 "heap", &idx),
			 0);
	assert_int_equal(idx, 0);
	assert_int_equal(pool_header_copy(pool), 1);
	assert_int_equal(pool_region_add(pool, POOL_REGION_HDPM, 0,
					 POOL_ALIGN * 2, "files", &idx),
			 0);
	assert_int_equal(idx, 1);
	assert_int_equal(pool_header_copy(pool), 0);
	assert_int_equal(pool_region_add(pool, POOL_REGION_PMALLOC, 2,
					 POOL_ALIGN + 1, "heap2", &idx),
			 0);
	assert_int_equal(idx, 2);
	/* exactly 16 bytes of name: stored without a NUL */
	assert_int_equal(pool_region_add(pool, POOL_REGION_USER, 1, 1,
					 "0123456789abcdef", NULL),
			 0);
	assert_int_equal(pool_header(pool)->generation, 5);
	pool_close(&pool);

	pool = opn(f->path[0], 0);
	assert_int_equal(pool_header(pool)->nregions, 4);
	assert_int_equal(pool_header(pool)->generation, 5);
	assert_int_equal(pool_header_copy(pool), 0);
	assert_int_equal(pool_header_other_valid(pool), 1);
	region_expect(pool_region_find(pool, POOL_REGION_PMALLOC, 0),
		      POOL_REGION_PMALLOC, 0, POOL_DATA_OFF, POOL_ALIGN,
		      "heap");
	region_expect(pool_region_find(pool, POOL_REGION_HDPM, 0),
		      POOL_REGION_HDPM, 0, POOL_DATA_OFF + POOL_ALIGN,
		      2 * POOL_ALIGN, "files");
	region_expect(pool_region_find(pool, POOL_REGION_PMALLOC, 2),
		      POOL_REGION_PMALLOC, 2, POOL_DATA_OFF, 2 * POOL_ALIGN,
		      "heap2");
	region_expect(pool_region_find(pool, POOL_REGION_USER, 1),
		      POOL_REGION_USER, 1, POOL_DATA_OFF, POOL_ALIGN,
		      "0123456789abcdef");
	assert_null(pool_region_find(pool, POOL_REGION_HDPM, 2));
	assert_null(pool_region_find(pool, POOL_REGION_PMALLOC, 1));
	pool_close(&pool);
}

static void test_region_errors(void **state)
{
	const struct fx *f = *state;
	struct pool *pool = mk(f, 1, PART_SIZE);
	unsigned idx = 77;

	assert_int_equal(pool_region_add(pool, POOL_REGION_FREE, 0, 1, "x",
					 &idx),
			 -EINVAL);
	assert_int_equal(pool_region_add(pool, POOL_REGION_USER, 1, 1, "x",
					 &idx),
			 -EINVAL);
	assert_non_null(strstr(pool_errormsg(), "no part 1"));
	assert_int_equal(pool_region_add(pool, POOL_REGION_USER, 0, 0, "x",
					 &idx),
			 -EINVAL);
	assert_int_equal(pool_region_add(pool, POOL_REGION_USER, 0, 1,
					 "0123456789abcdefg", &idx),
			 -EINVAL);
	assert_int_equal(pool_region_add(pool, POOL_REGION_USER, 0, UINT64_MAX,
					 "x", &idx),
			 -ENOSPC);
	/* the data area is 15 units: 16 do not fit, 15 do, then nothing */
	assert_int_equal(pool_region_add(pool, POOL_REGION_USER, 0,
					 16 * POOL_ALIGN, "x", &idx),
			 -ENOSPC);
	assert_int_equal(pool_region_add(pool, POOL_REGION_USER, 0,
					 15 * POOL_ALIGN, "x", &idx),
			 0);
	assert_int_equal(pool_region_add(pool, POOL_REGION_USER, 0, 1, "y",
					 &idx),
			 -ENOSPC);
	assert_non_null(strstr(pool_errormsg(), "no free space"));
	assert_int_equal(idx, 0);
	assert_int_equal(pool_header(pool)->nregions, 1);
	assert_int_equal(pool_header(pool)->generation, 2);
	pool_close(&pool);
}

static void test_region_table_full(void **state)
{
	const struct fx *f = *state;
	struct pool *pool = mk(f, 1, 5 * PART_SIZE);
	unsigned i, idx;

	for (i = 0; i < POOL_MAX_REGIONS; i++) {
		assert_int_equal(pool_region_add(pool, POOL_REGION_USER, 0, 1,
						 "r", &idx),
				 0);
		assert_int_equal(idx, i);
	}
	assert_int_equal(pool_region_add(pool, POOL_REGION_USER, 0, 1, "r",
					 &idx),
			 -ENFILE);
	assert_non_null(strstr(pool_errormsg(), "region table is full"));
	pool_close(&pool);
	pool = opn(f->path[0], 0);
	assert_int_equal(pool_header(pool)->nregions, POOL_MAX_REGIONS);
	assert_int_equal(pool_header(pool)->regions[63].off,
			 POOL_DATA_OFF + 63 * POOL_ALIGN);
	pool_close(&pool);
}

/* first fit: a hole between two regions is used before the tail */
static void test_region_first_fit(void **state)
{
	const struct fx *f = *state;
	struct pool *pool = mk(f, 1, PART_SIZE);
	struct pool_hdr *h = malloc(sizeof(*h));
	struct pool_region *r;
	unsigned idx;

	assert_non_null(h);
	*h = *pool_header(pool);
	r = h->regions;
	/* out of order on purpose: [D+3u, +1u) then [D, +1u) */
	r[0] = (struct pool_region){ .type = POOL_REGION_USER,
				     .off = POOL_DATA_OFF + 3 * POOL_ALIGN,
				     .size = POOL_ALIGN };
	r[1] = (struct pool_region){ .type = POOL_REGION_USER,
				     .off = POOL_DATA_OFF,
				     .size = POOL_ALIGN };
	h->nregions = 2;
	assert_int_equal(pool_hdr_write(pool, h), 0);
	free(h);
	assert_int_equal(pool_region_add(pool, POOL_REGION_HDPM, 0,
					 2 * POOL_ALIGN, "gap", &idx),
			 0);
	assert_int_equal(pool_header(pool)->regions[idx].off,
			 POOL_DATA_OFF + POOL_ALIGN);
	assert_int_equal(pool_region_add(pool, POOL_REGION_HDPM, 0, POOL_ALIGN,
					 "tail", &idx),
			 0);
	assert_int_equal(pool_header(pool)->regions[idx].off,
			 POOL_DATA_OFF + 4 * POOL_ALIGN);
	pool_close(&pool);
	pool = opn(f->path[0], 0);
	assert_int_equal(pool_header(pool)->nregions, 4);
	pool_close(&pool);
}

/* ------------------------------------------------------------ raw checks */

struct hdr_case {
	const char *name;
	void (*edit)(struct pool_hdr *h);
	int rc;
	const char *msg;
};

static void e_none(struct pool_hdr *h)
{
	(void)h;
}
static void e_hdr_size(struct pool_hdr *h)
{
	h->hdr_size = 100;
}
static void e_nparts0(struct pool_hdr *h)
{
	h->nparts = 0;
}
static void e_nregions(struct pool_hdr *h)
{
	h->nregions = POOL_MAX_REGIONS + 1;
}
static void e_reg_part(struct pool_hdr *h)
{
	h->regions[0].part = 5;
}
static void e_reg_end(struct pool_hdr *h)
{
	h->regions[0].off = PART_SIZE;
}
static void e_reg_zero(struct pool_hdr *h)
{
	h->regions[0].size = 0;
}
static void e_reg_wrap(struct pool_hdr *h)
{
	h->regions[0].off = (uint64_t)0 - POOL_ALIGN;
	h->regions[0].size = 2 * POOL_ALIGN;
}
static void e_reg_hdr_area(struct pool_hdr *h)
{
	h->regions[0].off = POOL_HDR_A_OFF;
}
static void e_reg_unaligned(struct pool_hdr *h)
{
	h->regions[0].off += 4096;
}
static void e_overlap(struct pool_hdr *h)
{
	h->regions[1].off = h->regions[0].off;
}
static void e_free(struct pool_hdr *h)
{
	h->regions[1].type = POOL_REGION_FREE;
}
static void e_hint(struct pool_hdr *h)
{
	memset(h->parts[1].path_hint, 'x', POOL_PATH_HINT_LEN);
}
static void e_part_size(struct pool_hdr *h)
{
	h->parts[1].size += 4096;
}
static void e_part_small(struct pool_hdr *h)
{
	h->parts[1].size = POOL_ALIGN;
}

static const struct hdr_case hdr_cases[] = {
	{ "valid", e_none, 0, "" },
	{ "hdr_size", e_hdr_size, -EBADMSG, "pool header size 100" },
	{ "incompat", set_incompat, -EPROTONOSUPPORT, "incompatible" },
	{ "nparts 0", e_nparts0, -EBADMSG, "names 0 parts" },
	{ "nparts 17", set_nparts17, -EBADMSG, "names 17 parts" },
	{ "nregions", e_nregions, -EBADMSG, "names 65 regions" },
	{ "region part", e_reg_part, -EBADMSG, "names part 5" },
	{ "region end", e_reg_end, -EBADMSG, "outside" },
	{ "region zero", e_reg_zero, -EBADMSG, "outside" },
	{ "region wrap", e_reg_wrap, -EBADMSG, "outside" },
	{ "region in header", e_reg_hdr_area, -EBADMSG, "outside" },
	{ "region unaligned", e_reg_unaligned, -EBADMSG, "outside" },
	{ "overlap", e_overlap, -EBADMSG, "regions 0 and 1 overlap" },
	{ "free below count", e_free, -EBADMSG, "is free" },
	{ "path hint", e_hint, -EBADMSG, "NUL-terminated" },
	{ "part size", e_part_size, -EBADMSG, "bad part size" },
	{ "part small", e_part_small, -EBADMSG, "bad part size" },
};

static void test_hdr_check(void **state)
{
	const struct fx *f = *state;
	struct pool_hdr *orig = malloc(sizeof(*orig));
	unsigned char *buf = malloc(sizeof(*orig) + 1);
	struct pool_hdr *h = malloc(sizeof(*h));
	struct pool *pool = mk(f, 2, PART_SIZE);
	unsigned i;
	int rc;

	assert_non_null(orig);
	assert_non_null(buf);
	assert_non_null(h);
	assert_int_equal(pool_region_add(pool, 1, 0, 1, "a", NULL), 0);
	assert_int_equal(pool_region_add(pool, 1, 0, 1, "b", NULL), 0);
	*orig = *pool_header(pool);
	pool_close(&pool);
	for (i = 0; i < sizeof(hdr_cases) / sizeof(hdr_cases[0]); i++) {
		*h = *orig;
		hdr_cases[i].edit(h);
		h->checksum = pool_hdr_checksum(h);
		rc = pool_hdr_check(h, sizeof(*h));
		if (rc != hdr_cases[i].rc ||
		    !strstr(pool_errormsg(), hdr_cases[i].msg))
			fail_msg("%s: %d '%s'", hdr_cases[i].name, rc,
				 pool_errormsg());
	}
	/* unaligned input is fine */
	memcpy(buf + 1, orig, sizeof(*orig));
	assert_int_equal(pool_hdr_check(buf + 1, sizeof(*orig)), 0);
	assert_int_equal(pool_hdr_check(orig, sizeof(*orig) - 1), -EINVAL);
	assert_int_equal(pool_hdr_check(orig, 0), -EINVAL);
	*h = *orig;
	h->major = 3; /* no reseal: version is checked before the sum */
	assert_int_equal(pool_hdr_check(h, sizeof(*h)), -EPROTONOSUPPORT);
	*h = *orig;
	h->reserved[5] ^= 1;
	assert_int_equal(pool_hdr_check(h, sizeof(*h)), -EBADMSG);
	assert_non_null(strstr(pool_errormsg(), "checksum mismatch"));
	*h = *orig;
	h->magic[0] = 'X';
	assert_int_equal(pool_hdr_check(h, sizeof(*h)), -EINVAL);
	free(h);
	free(buf);
	free(orig);
}

static void test_part_hdr_check(void **state)
{
	const struct fx *f = *state;
	struct pool_part_hdr orig, h;

	mk_closed(f, 2, PART_SIZE);
	file_read(f->path[1], 0, &orig, sizeof(orig));
	assert_int_equal(pool_part_hdr_check(&orig, sizeof(orig)), 0);
	assert_int_equal(pool_part_hdr_check(&orig, sizeof(orig) - 1), -EINVAL);
	h = orig;
	h.part_index = 2;
	h.checksum = pool_part_hdr_checksum(&h);
	assert_int_equal(pool_part_hdr_check(&h, sizeof(h)), -EBADMSG);
	assert_non_null(strstr(pool_errormsg(), "index 2"));
	h = orig;
	h.nparts = 17;
	h.checksum = pool_part_hdr_checksum(&h);
	assert_int_equal(pool_part_hdr_check(&h, sizeof(h)), -EBADMSG);
	h = orig;
	h.size = POOL_PART_MIN_SIZE - POOL_ALIGN;
	h.checksum = pool_part_hdr_checksum(&h);
	assert_int_equal(pool_part_hdr_check(&h, sizeof(h)), -EBADMSG);
	h = orig;
	h.checksum ^= 1;
	assert_int_equal(pool_part_hdr_check(&h, sizeof(h)), -EBADMSG);
	h = orig;
	h.major = 0;
	assert_int_equal(pool_part_hdr_check(&h, sizeof(h)), -EPROTONOSUPPORT);
}

/* ------------------------------------------------------------ crash */

#define CRASH_SEEDS 4 /* seed 0 (durable image) + 3 torn variants */

struct crash_sweep {
	struct pm_map *map; /* part 0 of the pool being updated */
	const char *dir;
	unsigned nimages;
};

static void crash_hook(uint64_t fence_no, void *arg)
{
	struct crash_sweep *cs = arg;
	char path[200];
	uint64_t seed;

	for (seed = 0; seed < CRASH_SEEDS; seed++) {
		snprintf(path, sizeof(path), "%s/crash-%u", cs->dir,
			 cs->nimages++);
		/* seed 0: the durable image alone */
		assert_int_equal(
			pm_crash_write_image(cs->map,
					     seed ? seed * 7919 + fence_no : 0,
					     path),
			0);
	}
}

/* what pool_fsck told: findings per severity, the first of min or more */
struct fsck_seen {
	enum pool_fsck_severity min;
	char first[256];
	unsigned long torn; /* pool-hdr-torn-update findings */
};

static int fsck_note(const struct pool_fsck_finding *f, void *arg)
{
	struct fsck_seen *seen = arg;

	seen->torn += !strcmp(f->code, "pool-hdr-torn-update");
	if (f->severity >= seen->min && !seen->first[0])
		snprintf(seen->first, sizeof(seen->first), "%s %s: %s",
			 pool_fsck_severity_name(f->severity), f->code,
			 f->message);
	return 0;
}

/*
 * pmactl fsck's check of the pool format at path finds nothing of
 * severity min or more (when: "before open" ...); the findings of a
 * lower severity are added to counts (may be NULL). Returns how many of
 * them were pool-hdr-torn-update.
 */
static unsigned long fsck_expect(const char *path, enum pool_fsck_severity min,
				 const char *when, unsigned long *counts)
{
	struct fsck_seen seen = { .min = min };
	struct pool_fsck_sink sink = { .fn = fsck_note, .arg = &seen };
	unsigned s;
	int rc = pool_fsck(path, &sink);

	if (rc < 0)
		fail_msg("%s: fsck %s could not run: %d %s", path, when, rc,
			 pool_errormsg());
	if (seen.first[0])
		fail_msg("%s: fsck %s: %s", path, when, seen.first);
	for (s = 0; counts && s < min; s++)
		counts[s] += sink.counts[s];
	return seen.torn;
}

/*
 * Every image checks without an error (a crash leaves only states open
 * accepts: a header copy torn by the update is a warning), opens
 * (writable), with either the old (1) or new (2) region table, and
 * checks with no finding at all once that open closed it. Returns the
 * pool-hdr-torn-update findings before the open.
 */
static unsigned long crash_check_image(const char *path, unsigned *ret_old,
				       unsigned *ret_new, unsigned long *counts)
{
	struct pool *pool;
	const struct pool_hdr *h;
	unsigned long torn;

	torn = fsck_expect(path, POOL_FSCK_ERROR, "before open", counts);
	pool = opn(path, 0);
	h = pool_header(pool);

	if (h->nregions == 1 && h->generation == 2) {
		(*ret_old)++;
	} else {
		assert_int_equal(h->nregions, 2);
		assert_int_equal(h->generation, 3);
		region_expect(&h->regions[1], POOL_REGION_HDPM, 0,
			      POOL_DATA_OFF + POOL_ALIGN, POOL_ALIGN, "new");
		(*ret_new)++;
	}
	region_expect(&h->regions[0], POOL_REGION_USER, 0, POOL_DATA_OFF,
		      POOL_ALIGN, "old");
	pool_close(&pool);
	fsck_expect(path, POOL_FSCK_INFO, "after a writable open", NULL);
	return torn;
}

static void test_crash_region_add(void **state)
{
	const struct fx *f = *state;
	struct crash_sweep cs = { .dir = f->dir };
	unsigned i, n_old = 0, n_new = 0;
	unsigned long counts[POOL_FSCK_ERROR + 1] = { 0 }, torn = 0;
	struct pool *pool;
	char path[200];

	if (!pm_crash_enabled())
		skip();
	pool = mk(f, 1, PART_SIZE);
	assert_int_equal(
		pool_region_add(pool, POOL_REGION_USER, 0, 1, "old", NULL), 0);
	pool_close(&pool);
	assert_int_equal(pm_crash_arm(1), 0);
	pool = opn(f->path[0], 0);
	cs.map = pool_part_map(pool, 0);
	assert_int_equal(pm_crash_set_hook(crash_hook, &cs), 0);
	assert_int_equal(
		pool_region_add(pool, POOL_REGION_HDPM, 0, 1, "new", NULL), 0);
	assert_int_equal(pm_crash_set_hook(NULL, NULL), 0);
	assert_true(cs.nimages >= CRASH_SEEDS);
	/* and the state after the last fence */
	snprintf(path, sizeof(path), "%s/crash-%u", f->dir, cs.nimages++);
	assert_int_equal(pm_crash_write_image(cs.map, 0, path), 0);
	assert_int_equal(pm_crash_arm(0), 0);
	pool_close(&pool);
	for (i = 0; i < cs.nimages; i++) {
		snprintf(path, sizeof(path), "%s/crash-%u", f->dir, i);
		torn += crash_check_image(path, &n_old, &n_new, counts);
	}
	print_message("# %u images: %u old, %u new; before open: %lu "
		      "warnings (%lu torn header copies), %lu info "
		      "findings\n",
		      cs.nimages, n_old, n_new, counts[POOL_FSCK_WARNING], torn,
		      counts[POOL_FSCK_INFO]);
	assert_true(n_old >= 1);
	assert_true(n_new >= 1);
	assert_true(torn >= 1);
}

/* the one finding pool_fsck makes of the pool at path, and its severity */
static void fsck_one(const char *path, const char *code,
		     enum pool_fsck_severity sev)
{
	struct fsck_seen seen = { .min = POOL_FSCK_INFO };
	struct pool_fsck_sink sink = { .fn = fsck_note, .arg = &seen };
	char want[128];

	assert_int_equal(pool_fsck(path, &sink), 0);
	snprintf(want, sizeof(want), "%s %s: ", pool_fsck_severity_name(sev),
		 code);
	if (strncmp(seen.first, want, strlen(want)) ||
	    sink.counts[0] + sink.counts[1] + sink.counts[2] != 1)
		fail_msg("%s: want only '%s', got %lu findings, the first: %s",
			 path, want,
			 sink.counts[0] + sink.counts[1] + sink.counts[2],
			 seen.first);
}

/* a writable open and close of the pool at path */
static void reopen(const char *path)
{
	struct pool *pool = opn(path, 0);

	pool_close(&pool);
}

/*
 * A header copy that fails its checksum is a torn update (a warning) when
 * it has the other copy's seal and a generation one away from it, as an
 * update leaves it; with the other copy's generation it is damage (an
 * error). Either way open uses the other copy and a writable open
 * rewrites it.
 */
static void test_fsck_torn_copy(void **state)
{
	const struct fx *f = *state;
	uint64_t gen, off_gen = offsetof(struct pool_hdr, generation);
	uint64_t off_b = pool_hdr_copy_off(1), off_a = pool_hdr_copy_off(0);
	struct pool *pool = mk(f, 1, PART_SIZE);
	uint8_t byte;

	gen = pool_header(pool)->generation;
	pool_close(&pool);
	fsck_expect(f->path[0], POOL_FSCK_INFO, "after create", NULL);
	/* damage at rest of copy B's body */
	byte = 0x5a;
	file_write(f->path[0], off_b + 0x1000, &byte, 1);
	fsck_one(f->path[0], "pool-hdr-checksum", POOL_FSCK_ERROR);
	reopen(f->path[0]);
	fsck_expect(f->path[0], POOL_FSCK_INFO, "after a writable open", NULL);
	/* an update that wrote copy B's generation word, not its seal */
	gen++;
	file_write(f->path[0], off_b + off_gen, &gen, sizeof(gen));
	fsck_one(f->path[0], "pool-hdr-torn-update", POOL_FSCK_WARNING);
	reopen(f->path[0]);
	fsck_expect(f->path[0], POOL_FSCK_INFO, "after a writable open", NULL);
	/* a second copy written seal first: copy A's generation is one
	 * behind the committed copy B's */
	pool = opn(f->path[0], 0);
	assert_int_equal(pool_hdr_write(pool, pool_header(pool)), 0);
	gen = pool_header(pool)->generation;
	pool_close(&pool);
	gen--;
	file_write(f->path[0], off_a + off_gen, &gen, sizeof(gen));
	fsck_one(f->path[0], "pool-hdr-torn-update", POOL_FSCK_WARNING);
	reopen(f->path[0]);
	fsck_expect(f->path[0], POOL_FSCK_INFO, "after a writable open", NULL);
	/* two away: damage */
	gen -= 1;
	file_write(f->path[0], off_a + off_gen, &gen, sizeof(gen));
	fsck_one(f->path[0], "pool-hdr-checksum", POOL_FSCK_ERROR);
}

/* pool_fsck_parts of paths: 0, the findings counted; the first error's
 * code and message in seen */
static void fsck_parts_run(const char *const *paths, unsigned n,
			   struct pool_fsck_sink *sink, struct fsck_seen *seen)
{
	memset(seen, 0, sizeof(*seen));
	seen->min = POOL_FSCK_ERROR;
	memset(sink, 0, sizeof(*sink));
	sink->fn = fsck_note;
	sink->arg = seen;
	assert_int_equal(pool_fsck_parts(paths, n, sink, 0), 0);
}

/*
 * pool_fsck_parts checks the files it is given (a copy of a pool's parts
 * elsewhere, as crash images are), not the parts at the path hints:
 * moved away, pool_fsck misses them and pool_fsck_parts does not.
 */
static void test_fsck_parts(void **state)
{
	const struct fx *f = *state;
	char moved[3][160];
	const char *paths[3] = { moved[0], moved[1], moved[2] };
	struct pool_fsck_sink sink;
	struct fsck_seen seen;
	unsigned i;

	mk_closed(f, 3, PART_SIZE);
	for (i = 0; i < 3; i++) {
		snprintf(moved[i], sizeof(moved[i]), "%s/moved%u", f->dir, i);
		assert_int_equal(rename(f->path[i], moved[i]), 0);
	}
	/* pool_fsck = pool_fsck_parts of part 0 alone: the hints */
	fsck_parts_run(paths, 1, &sink, &seen);
	assert_int_equal(sink.counts[POOL_FSCK_ERROR], 2);
	assert_non_null(strstr(seen.first, "error part-missing: "));
	fsck_parts_run(paths, 3, &sink, &seen);
	if (sink.counts[POOL_FSCK_ERROR] || sink.counts[POOL_FSCK_WARNING] ||
	    sink.counts[POOL_FSCK_INFO])
		fail_msg("pool_fsck_parts: %s", seen.first);
	/* the given part 1 is the one read */
	file_write(moved[1], 100, "x", 1);
	fsck_parts_run(paths, 3, &sink, &seen);
	assert_int_equal(sink.counts[POOL_FSCK_ERROR], 1);
	assert_non_null(strstr(seen.first, "error part-hdr-checksum: "));
}

/* child of test_crash_create: create a 3-part pool in dir (force) */
static int crash_create_child(const char *dir)
{
	char path[3][160];
	const char *paths[3] = { path[0], path[1], path[2] };
	struct pool_create_params p = { .nparts = 3,
					.paths = paths,
					.part_size = PART_SIZE,
					.mode = 0600,
					.flags = POOL_CREATE_FORCE };
	struct pool *pool = NULL;
	unsigned i;

	for (i = 0; i < 3; i++)
		snprintf(path[i], sizeof(path[i]), "%s/part%u", dir, i);
	if (pool_create(&p, &pool)) {
		fprintf(stderr, "# create: %s\n", pool_errormsg());
		return 1;
	}
	pool_close(&pool);
	return 0;
}

/* run the create child with PM_CRASH_AT=n; its exit status */
static int crash_create_run(const struct fx *f, unsigned n)
{
	char at[16];
	int status;
	pid_t pid;

	snprintf(at, sizeof(at), "%u", n);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("PM_CRASH_AT", at, 1);
		execl(self_path, "test-pool", "--crash-create", f->dir,
		      (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* a crash at any fence of create leaves nothing at the paths or the whole
 * pool, never a bad pool (the commit is a rename, after every fence) */
static void test_crash_create(void **state)
{
	const struct fx *f = *state;
	struct pool_fsck_sink sink = { 0 };
	struct pool *pool = NULL;
	unsigned n, crashes = 0;
	int status, rc;

	if (!pm_crash_enabled())
		skip();
	for (n = 1; n < 100; n++) {
		status = crash_create_run(f, n);
		if (status == 0)
			break;
		assert_int_equal(status, PM_CRASH_EXIT_CODE);
		crashes++;
		/* fsck agrees: nothing to check, or no error */
		if (access(f->path[0], F_OK) == 0)
			fsck_expect(f->path[0], POOL_FSCK_ERROR, "before open",
				    NULL);
		else
			assert_int_equal(pool_fsck(f->path[0], &sink), -ENOENT);
		rc = pool_open(f->path[0], 0, &pool);
		if (rc == 0) {
			/* committed (copy B durable): complete pool */
			assert_int_equal(pool_part_count(pool), 3);
			pool_close(&pool);
			fsck_expect(f->path[0], POOL_FSCK_INFO,
				    "after a writable open", NULL);
			continue;
		}
		/* before the commit (part 0's rename) nothing is in place:
		 * the parts are still being built aside */
		if (rc != -ENOENT || access(f->path[1], F_OK) == 0 ||
		    access(f->path[2], F_OK) == 0)
			fail_msg("crash at fence %u: %d %s", n, rc,
				 pool_errormsg());
	}
	print_message("# create has %u fences\n", crashes);
	assert_true(crashes >= 3); /* zero headers, part headers, header A */
	fsck_expect(f->path[0], POOL_FSCK_INFO, "after create", NULL);
	pool = opn(f->path[0], 0);
	assert_int_equal(pool_part_count(pool), 3);
	pool_close(&pool);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
		T(test_roundtrip_1part),
		T(test_roundtrip_3parts),
		T(test_nodes_and_mode),
		T(test_progress),
		T(test_direct_offset),
		T(test_uuid_format),
		T(test_open_errors),
		T(test_one_copy_corrupt),
		T(test_fresh_pool_copy_lost),
		T(test_locking),
		T(test_rdonly),
		T(test_rdonly_vs_regions),
		T(test_ro_compat_feature),
		T(test_create_bad_params),
		T(test_create_exists),
		T(test_create_cleanup),
		T(test_create_enospc),
		T(test_region_add_find),
		T(test_region_errors),
		T(test_region_table_full),
		T(test_region_first_fit),
		T(test_hdr_check),
		T(test_part_hdr_check),
		T(test_fsck_torn_copy),
		T(test_fsck_parts),
		T(test_crash_region_add),
		T(test_crash_create),
#undef T
	};

	if (strchr(argv[0], '/'))
		self_path = argv[0];
	if (argc == 3 && !strcmp(argv[1], "--crash-create"))
		return crash_create_child(argv[2]);

	return cmocka_run_group_tests(tests, NULL, NULL);
}

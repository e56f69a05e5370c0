/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fsx-lite: a file-operation exerciser of the fsx kind. Random writes,
 * truncates, reads and reopens of one file, checked against a shadow copy
 * in memory; the first mismatch is reported with the offending bytes and
 * the last operations. Seeded and bounded, so a failure replays.
 *
 *   fsx-lite [-n OPS] [-s SEED] [-l MAXLEN] [-m MAXSIZE] [-S] [-a ACKLOG] FILE
 *   fsx-lite --verify ACKLOG [-s SEED] [-l MAXLEN] [-m MAXSIZE] FILE
 *
 * With -S every operation is followed by fsync, and with -a the number of
 * operations acknowledged so far is appended to ACKLOG after each one.
 * After a crash of the file system under FILE, --verify replays the
 * acknowledged operations (same seed and bounds) and requires FILE to
 * equal the state after them, or after the one in flight too (each
 * operation is atomic). Exit status: 0 ok, 1 mismatch or I/O error,
 * 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HIST 32

enum op_kind { OP_WRITE, OP_TRUNC, OP_READ, OP_REOPEN };
static const char *const op_names[] = { "write", "truncate", "read", "reopen" };

struct op {
	enum op_kind kind;
	uint64_t off, len; /* truncate: off is the new size */
	uint64_t seed; /* write: the data stream */
};

struct fsx {
	const char *path;
	int fd;
	uint64_t rng;
	uint64_t maxlen, maxsize;
	unsigned char *shadow, *buf;
	uint64_t size; /* the shadow's size */
	struct op hist[HIST];
	uint64_t nops;
	int do_fsync;
	int ack_fd;
};

static uint64_t rnd(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static void fill(unsigned char *p, uint64_t len, uint64_t seed)
{
	uint64_t s = seed | 1, i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(rnd(&s) >> 56);
}

/* the next operation; depends only on the seed and the bounds */
static void op_next(struct fsx *f, struct op *op)
{
	uint64_t r = rnd(&f->rng) % 100;

	memset(op, 0, sizeof(*op));
	if (r < 55) {
		op->kind = OP_WRITE;
		op->len = 1 + rnd(&f->rng) % f->maxlen;
		op->off = rnd(&f->rng) % (f->maxsize - op->len + 1);
		op->seed = rnd(&f->rng);
	} else if (r < 65) {
		op->kind = OP_TRUNC;
		op->off = rnd(&f->rng) % (f->maxsize + 1);
	} else if (r < 97) {
		op->kind = OP_READ;
		op->off = rnd(&f->rng) % f->maxsize;
		op->len = 1 + rnd(&f->rng) % f->maxlen;
	} else {
		op->kind = OP_REOPEN;
	}
}

/* apply op to the shadow */
static void shadow_apply(struct fsx *f, const struct op *op)
{
	if (op->kind == OP_WRITE) {
		if (op->off > f->size)
			memset(f->shadow + f->size, 0, op->off - f->size);
		fill(f->shadow + op->off, op->len, op->seed);
		if (op->off + op->len > f->size)
			f->size = op->off + op->len;
	} else if (op->kind == OP_TRUNC) {
		if (op->off > f->size)
			memset(f->shadow + f->size, 0, op->off - f->size);
		f->size = op->off;
	}
}

static void hist_dump(const struct fsx *f)
{
	uint64_t i = f->nops > HIST ? f->nops - HIST : 0;
	const struct op *op;

	fprintf(stderr, "fsx-lite: last operations (oldest first):\n");
	for (; i < f->nops; i++) {
		op = &f->hist[i % HIST];
		fprintf(stderr,
			"  %6" PRIu64 " %-8s off %" PRIu64 " len %" PRIu64 "\n",
			i + 1, op_names[op->kind], op->off, op->len);
	}
}

static int fail(struct fsx *f, const char *what)
{
	fprintf(stderr, "fsx-lite: op %" PRIu64 ": %s: %s\n", f->nops, what,
		errno ? strerror(errno) : "");
	hist_dump(f);
	return 1;
}

/* compare [off, off+len) of the file (already in f->buf) to the shadow */
static int compare(struct fsx *f, uint64_t off, uint64_t len, ssize_t got)
{
	uint64_t want = off < f->size ? f->size - off : 0, i;

	if (want > len)
		want = len;
	if ((uint64_t)got != want) {
		fprintf(stderr,
			"fsx-lite: short read at %" PRIu64 ": got %zd, want "
			"%" PRIu64 " (size %" PRIu64 ")\n",
			off, got, want, f->size);
		errno = 0;
		return fail(f, "size mismatch");
	}
	for (i = 0; i < want; i++) {
		if (f->buf[i] != f->shadow[off + i]) {
			fprintf(stderr,
				"fsx-lite: byte %" PRIu64 ": got 0x%02x, want "
				"0x%02x\n",
				off + i, f->buf[i], f->shadow[off + i]);
			errno = 0;
			return fail(f, "data mismatch");
		}
	}
	return 0;
}

static int check_range(struct fsx *f, uint64_t off, uint64_t len)
{
	ssize_t got;

	errno = 0;
	got = pread(f->fd, f->buf, len, (off_t)off);
	if (got < 0)
		return fail(f, "read");
	return compare(f, off, len, got);
}

static int check_all(struct fsx *f)
{
	struct stat st;

	if (fstat(f->fd, &st) < 0)
		return fail(f, "fstat");
	if ((uint64_t)st.st_size != f->size) {
		fprintf(stderr, "fsx-lite: size %jd, want %" PRIu64 "\n",
			(intmax_t)st.st_size, f->size);
		errno = 0;
		return fail(f, "size mismatch");
	}
	return check_range(f, 0, f->maxsize);
}

static int file_open(struct fsx *f, int flags)
{
	if (f->fd >= 0 && close(f->fd) < 0)
		return fail(f, "close");
	f->fd = open(f->path, O_RDWR | flags, 0644);
	if (f->fd < 0)
		return fail(f, "open");
	return 0;
}

static int op_do(struct fsx *f, const struct op *op)
{
	ssize_t n;

	switch (op->kind) {
	case OP_WRITE:
		fill(f->buf, op->len, op->seed);
		n = pwrite(f->fd, f->buf, op->len, (off_t)op->off);
		if (n != (ssize_t)op->len)
			return fail(f, "write");
		break;
	case OP_TRUNC:
		if (ftruncate(f->fd, (off_t)op->off) < 0)
			return fail(f, "truncate");
		break;
	case OP_READ:
		return check_range(f, op->off, op->len);
	case OP_REOPEN:
		return file_open(f, 0) || check_all(f);
	}
	if (f->do_fsync && fsync(f->fd) < 0)
		return fail(f, "fsync");
	return 0;
}

static int ack(struct fsx *f)
{
	char line[32];
	int len;

	if (f->ack_fd < 0)
		return 0;
	len = snprintf(line, sizeof(line), "%" PRIu64 "\n", f->nops);
	if (write(f->ack_fd, line, (size_t)len) != len)
		return fail(f, "ack log");
	return 0;
}

static int run(struct fsx *f, uint64_t nops)
{
	struct op op;

	if (file_open(f, O_CREAT | O_TRUNC))
		return 1;
	while (f->nops < nops) {
		op_next(f, &op);
		f->hist[f->nops % HIST] = op;
		f->nops++;
		shadow_apply(f, &op);
		if (op_do(f, &op) || ack(f))
			return 1;
	}
	if (check_all(f))
		return 1;
	printf("fsx-lite: %" PRIu64 " operations passed, size %" PRIu64 "\n",
	       f->nops, f->size);
	return close(f->fd) < 0 ? fail(f, "close") : 0;
}

/* the last complete count in the ack log */
static int ack_read(const char *path, uint64_t *ret_n)
{
	char line[64];
	uint64_t n = 0;
	FILE *fp = fopen(path, "r");

	if (!fp) {
		fprintf(stderr, "fsx-lite: cannot open '%s': %s\n", path,
			strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), fp))
		if (strchr(line, '\n'))
			n = strtoull(line, NULL, 10);
	fclose(fp);
	*ret_n = n;
	return 0;
}

/* FILE must be the state after n ops, or after n + 1 */
static int verify(struct fsx *f, const char *acklog)
{
	unsigned char *after_n;
	uint64_t n, size_n;
	struct op op;
	int rc;

	if (ack_read(acklog, &n))
		return 1;
	for (f->nops = 0; f->nops < n; f->nops++) {
		op_next(f, &op);
		f->hist[f->nops % HIST] = op;
		shadow_apply(f, &op);
	}
	if (file_open(f, 0))
		return 1;
	after_n = malloc(f->maxsize);
	if (!after_n)
		return fail(f, "out of memory");
	memcpy(after_n, f->shadow, f->maxsize);
	size_n = f->size;
	op_next(f, &op);
	shadow_apply(f, &op); /* the op in flight, if it happened */
	rc = check_all(f);
	if (rc) {
		fputs("fsx-lite: (not the state after the op in flight; "
		      "trying the state before it)\n",
		      stderr);
		memcpy(f->shadow, after_n, f->maxsize);
		f->size = size_n;
		rc = check_all(f);
	}
	free(after_n);
	if (rc == 0)
		printf("fsx-lite: %" PRIu64 " acknowledged operations "
		       "verified, size %" PRIu64 "\n",
		       n, f->size);
	return rc;
}

static int usage(FILE *out, int rc)
{
	fputs("usage: fsx-lite [-n OPS] [-s SEED] [-l MAXLEN] [-m MAXSIZE] "
	      "[-S] [-a ACKLOG] FILE\n"
	      "       fsx-lite --verify ACKLOG [-s SEED] [-l MAXLEN] "
	      "[-m MAXSIZE] FILE\n",
	      out);
	return rc;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;

	errno = 0;
	*ret = strtoull(s, &end, 0);
	return errno || end == s || *end || s[0] == '-';
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "verify", required_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct fsx f = {
		.fd = -1, .ack_fd = -1, .maxlen = 65536, .maxsize = 262144
	};
	uint64_t nops = 10000, seed = 1;
	const char *acklog = NULL, *verify_log = NULL;
	int c, bad = 0, rc;

	while ((c = getopt_long(argc, argv, "n:s:l:m:Sa:h", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'n':
			bad |= parse_u64(optarg, &nops);
			break;
		case 's':
			bad |= parse_u64(optarg, &seed);
			break;
		case 'l':
			bad |= parse_u64(optarg, &f.maxlen);
			break;
		case 'm':
			bad |= parse_u64(optarg, &f.maxsize);
			break;
		case 'S':
			f.do_fsync = 1;
			break;
		case 'a':
			acklog = optarg;
			break;
		case 'v':
			verify_log = optarg;
			break;
		case 'h':
			return usage(stdout, 0);
		default:
			return usage(stderr, 2);
		}
	}
	if (bad || optind + 1 != argc || !f.maxlen || !f.maxsize ||
	    f.maxlen > f.maxsize || f.maxsize > (1ULL << 30))
		return usage(stderr, 2);
	f.path = argv[optind];
	f.rng = seed * 0x9E3779B97F4A7C15ULL + 1;
	f.shadow = calloc(1, f.maxsize);
	f.buf = calloc(1, f.maxsize);
	if (!f.shadow || !f.buf) {
		fputs("fsx-lite: out of memory\n", stderr);
		return 1;
	}
	if (acklog) {
		f.ack_fd = open(acklog, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND,
				0644);
		if (f.ack_fd < 0) {
			fprintf(stderr, "fsx-lite: cannot open '%s': %s\n",
				acklog, strerror(errno));
			return 1;
		}
	}
	rc = verify_log ? verify(&f, verify_log) : run(&f, nops);
	free(f.shadow);
	free(f.buf);
	return rc;
}

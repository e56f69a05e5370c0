/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pool fsck: check a pool's format structure by structure and report
 * every finding (fsck.h) instead of stopping at the first, as open does.
 * Parts are read with pread into DRAM copies: no field is trusted before
 * it was checked, nothing is mapped or written. Order: part 0's header,
 * the two pool header copies, the choice open would make between them,
 * the other parts, the region table, then open itself (read-only) as the
 * last word on what the checks above passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns/ns.h"
#include "pool/fsck.h"
#include "pool/internal.h"
#include "util/errmsg.h"
#include "util/io.h"

/* one check run: part 0 and the two header copies */
struct pfsck {
	struct pool_fsck_sink *sink;
	const char *path;
	/* every part's path (pool_fsck_parts; part 0's is path), or NULL:
	 * the part table's path hints */
	const char *const *paths;
	unsigned npaths;
	int fd0;
	uint64_t size0; /* bytes of part 0's file */
	struct pool_part_hdr phdr0;
	int phdr0_ok; /* part 0's header passed its checks */
	struct pool_hdr *copies; /* [2] */
	int valid[2];
	int cur; /* the copy open would use, -1 if none */
};

static int vreport(struct pool_fsck_sink *sink, const char *code,
		   enum pool_fsck_severity severity, unsigned flags,
		   unsigned part, uint64_t off, const char *fmt, va_list ap)
	__attribute__((format(printf, 7, 0)));

static int vreport(struct pool_fsck_sink *sink, const char *code,
		   enum pool_fsck_severity severity, unsigned flags,
		   unsigned part, uint64_t off, const char *fmt, va_list ap)
{
	struct pool_fsck_finding f = { code, severity, part, off, NULL, flags };
	char msg[2 * UTIL_ERRMSG_MAX];
	int rc;

	if (sink->rc < 0)
		return sink->rc;
	/* ap comes initialized from the caller's va_start (an analyzer
	 * false positive) */
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	f.message = msg;
	sink->counts[severity]++;
	rc = sink->fn ? sink->fn(&f, sink->arg) : 0;
	if (rc < 0)
		sink->rc = rc;
	return sink->rc;
}

int pool_fsck_report(struct pool_fsck_sink *sink, const char *code,
		     enum pool_fsck_severity severity, unsigned part,
		     uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	/* va_start is right above (an analyzer false positive) */
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	rc = vreport(sink, code, severity, 0, part, off, fmt, ap);
	va_end(ap);
	return rc;
}

int pool_fsck_report_flags(struct pool_fsck_sink *sink, const char *code,
			   enum pool_fsck_severity severity, unsigned flags,
			   unsigned part, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	rc = vreport(sink, code, severity, flags, part, off, fmt, ap);
	va_end(ap);
	return rc;
}

const char *pool_fsck_severity_name(enum pool_fsck_severity severity)
{
	static const char *const names[] = { "info", "warning", "error" };

	return severity <= POOL_FSCK_ERROR ? names[severity] : "unknown";
}

static int error(struct pfsck *c, const char *code, unsigned part, uint64_t off,
		 const char *msg)
{
	return pool_fsck_report(c->sink, code, POOL_FSCK_ERROR, part, off, "%s",
				msg);
}

/* len bytes at off of fd (zeros past the end of a short file) */
static int read_at(int fd, uint64_t file_size, void *buf, size_t len,
		   uint64_t off)
{
	size_t n = off >= file_size		   ? 0 :
		   file_size - off < (uint64_t)len ? (size_t)(file_size - off) :
						     len;
	int rc;

	memset(buf, 0, len);
	if (!n)
		return 0;
	rc = util_pread_all(fd, buf, n, (off_t)off);
	if (rc < 0)
		return util_errmsg_set(-rc, "read failed: %s", strerror(-rc));
	return 0;
}

/* a part header: magic, version, checksum, then its fields; 0 if it
 * passed, 1 if not (reported), < 0 if the callback stopped the check */
static int part_hdr_fsck(struct pfsck *c, unsigned i,
			 const struct pool_part_hdr *h, uint64_t file_size,
			 const char *label)
{
	char msg[UTIL_ERRMSG_MAX + 300];
	const char *code = NULL;

	if (memcmp(h->magic, POOL_PART_MAGIC, POOL_MAGIC_LEN) != 0)
		code = "part-hdr-magic";
	else if (h->major != POOL_FORMAT_MAJOR)
		code = "part-hdr-version";
	else if (h->checksum != pool_part_hdr_checksum(h))
		code = "part-hdr-checksum";
	else if (pool_part_hdr_check(h, sizeof(*h)) < 0)
		code = "part-hdr-invalid";
	if (code) {
		pool_part_hdr_check(h, sizeof(*h));
		snprintf(msg, sizeof(msg), "%s: part header at 0x0: %s", label,
			 !strcmp(code, "part-hdr-magic") ?
				 "no part header magic (not a pmad pool part)" :
				 util_errmsg());
		return error(c, code, i, POOL_PART_HDR_OFF, msg) < 0 ? -1 : 1;
	}
	if (h->size > file_size) {
		snprintf(msg, sizeof(msg),
			 "%s: file is %llu bytes, its part header at 0x0 "
			 "claims %llu (truncated)",
			 label, (unsigned long long)file_size,
			 (unsigned long long)h->size);
		return error(c, "part-truncated", i, POOL_PART_HDR_OFF, msg) <
				       0 ?
			       -1 :
			       1;
	}
	return 0;
}

/* the fields of a checksummed header copy (as pool_hdr_check, except
 * the region table: region_fsck reports that one structure by
 * structure); NULL if fine, else why */
static const char *hdr_fields_bad(const struct pool_hdr *h)
{
	unsigned i;

	if (h->feat_incompat & ~POOL_FEAT_INCOMPAT_KNOWN)
		return "unknown incompatible features";
	if (h->hdr_size != POOL_HDR_SIZE)
		return "bad header size";
	if (h->nparts < 1 || h->nparts > POOL_MAX_PARTS)
		return "bad part count";
	if (h->nregions > POOL_MAX_REGIONS)
		return "bad region count";
	for (i = 0; i < h->nparts; i++)
		if (h->parts[i].size < POOL_PART_MIN_SIZE ||
		    h->parts[i].size % POOL_ALIGN ||
		    h->parts[i].size > POOL_OFF_MASK + 1 ||
		    !memchr(h->parts[i].path_hint, '\0',
			    sizeof(h->parts[i].path_hint)))
			return "bad part table entry";
	return NULL;
}

/*
 * Copy h fails its checksum because a crash tore an update of it: the
 * other copy o is valid, h holds o's seal (so open accepts h as the same
 * state) and a generation one away from o's. An update writes the
 * generation word first when it writes the seal last, and last when it
 * writes the seal first (layout.h), so every torn copy is of this kind;
 * damage at rest leaves the generation alone.
 */
static int hdr_torn_update(const struct pool_hdr *h, const struct pool_hdr *o)
{
	if (pool_hdr_check(o, sizeof(*o)) < 0 ||
	    memcmp((const char *)h + POOL_HDR_SEAL_OFF,
		   (const char *)o + POOL_HDR_SEAL_OFF,
		   POOL_HDR_SEAL_SIZE) != 0)
		return 0;
	return h->generation == o->generation + 1 ||
	       h->generation + 1 == o->generation;
}

/* copy i of the pool header: valid[i] set if it passes */
static int hdr_copy_fsck(struct pfsck *c, unsigned i)
{
	const struct pool_hdr *h = &c->copies[i];
	uint64_t off = pool_hdr_copy_off(i);
	char msg[400];
	const char *code = NULL, *why = NULL;
	size_t k;

	for (k = 0; k < sizeof(*h) && !((const char *)h)[k]; k++)
		;
	if (k == sizeof(*h))
		code = "pool-hdr-unwritten", why = "all zero (never written)";
	else if (memcmp(h->magic, POOL_HDR_MAGIC, POOL_MAGIC_LEN) != 0)
		code = "pool-hdr-magic", why = "no pool header magic";
	else if (h->major != POOL_FORMAT_MAJOR)
		code = "pool-hdr-version", why = "unsupported format version";
	else if (h->checksum != pool_hdr_checksum(h))
		code = "pool-hdr-checksum", why = "checksum mismatch";
	else if ((why = hdr_fields_bad(h)) != NULL)
		code = "pool-hdr-invalid";
	if (!code) {
		c->valid[i] = 1;
		return 0;
	}
	if (!strcmp(code, "pool-hdr-checksum") &&
	    hdr_torn_update(h, &c->copies[!i]))
		return pool_fsck_report(
			c->sink, "pool-hdr-torn-update", POOL_FSCK_WARNING, 0,
			off,
			"pool header copy %c at 0x%llx (generation %llu): an "
			"update was interrupted while it was written; open "
			"uses copy %c (generation %llu) and a writable open "
			"rewrites it",
			i ? 'B' : 'A', (unsigned long long)off,
			(unsigned long long)h->generation, i ? 'A' : 'B',
			(unsigned long long)c->copies[!i].generation);
	snprintf(msg, sizeof(msg), "pool header copy %c at 0x%llx: %s",
		 i ? 'B' : 'A', (unsigned long long)off, why);
	return error(c, code, 0, off, msg);
}

/*
 * One copy is invalid: open falls back to the other only if the invalid
 * copy held the same state (a torn update or damage, see layout.h), and a
 * writable open then rewrites it (its finding is repairable). Otherwise
 * it may be a newer state: open refuses to roll back, and so does fsck.
 */
static int damaged_copy_fsck(struct pfsck *c)
{
	const struct pool_hdr *d = &c->copies[!c->cur], *v = &c->copies[c->cur];
	uint64_t seal;
	char msg[300];
	int rc;

	memcpy(&seal, (const char *)d + POOL_HDR_SEAL_OFF, sizeof(seal));
	rc = seal ? pool_hdr_check(d, sizeof(*d)) : -EINVAL;
	if (!(rc == -EPROTONOSUPPORT && d->checksum == pool_hdr_checksum(d)) &&
	    pool_hdr_same_state(d, v))
		return 0;
	snprintf(msg, sizeof(msg),
		 "pool header copy %c is damaged and may hold a newer state "
		 "than copy %c (generation %llu): open refuses to roll the "
		 "pool back; restore part 0 from a backup",
		 c->cur ? 'A' : 'B', c->cur ? 'B' : 'A',
		 (unsigned long long)v->generation);
	return error(c, "pool-hdr-damaged-state", 0,
		     pool_hdr_copy_off((unsigned)!c->cur), msg);
}

/* read-only compatible features this build does not know: the pool
 * opens read-only only, so nothing (not --repair either) can write it */
static int ro_compat_fsck(struct pfsck *c)
{
	const struct pool_hdr *h = &c->copies[c->cur];
	uint64_t ro = h->feat_ro_compat & ~POOL_FEAT_RO_COMPAT_KNOWN;

	if (!ro)
		return 0;
	return pool_fsck_report(c->sink, "pool-feature-ro-compat",
				POOL_FSCK_WARNING, 0,
				pool_hdr_copy_off((unsigned)c->cur),
				"pool header copy %c: the pool uses read-only "
				"compatible features 0x%llx this build does "
				"not know: it opens read-only only, and is not "
				"repaired",
				c->cur ? 'B' : 'A', (unsigned long long)ro);
}

/* which copy open uses, and whether the two agree */
static int hdr_choose_fsck(struct pfsck *c)
{
	const struct pool_hdr *a = &c->copies[0], *b = &c->copies[1];
	char msg[300];

	if (!c->valid[0] && !c->valid[1])
		return error(c, "pool-hdr-none", 0, POOL_HDR_A_OFF,
			     "no valid pool header copy: the pool cannot be "
			     "opened and its parts and regions are unknown");
	c->cur = !c->valid[0] || (c->valid[1] && b->generation > a->generation);
	if (!c->valid[0] || !c->valid[1])
		return damaged_copy_fsck(c);
	if (!memcmp(a, b, sizeof(*a)))
		return 0;
	if (a->generation == b->generation) {
		snprintf(msg, sizeof(msg),
			 "pool header copies A and B differ with the same "
			 "generation %llu",
			 (unsigned long long)a->generation);
		return error(c, "pool-hdr-generation", 0, POOL_HDR_A_OFF, msg);
	}
	snprintf(msg, sizeof(msg),
		 "pool header copy %c (generation %llu) is older than copy "
		 "%c (generation %llu): an update was interrupted; the next "
		 "writable open rewrites it",
		 c->cur ? 'A' : 'B',
		 (unsigned long long)c->copies[!c->cur].generation,
		 c->cur ? 'B' : 'A',
		 (unsigned long long)c->copies[c->cur].generation);
	return pool_fsck_report(c->sink, "pool-hdr-stale-copy",
				POOL_FSCK_WARNING, 0,
				pool_hdr_copy_off((unsigned)!c->cur), "%s",
				msg);
}

/* a part header and the part table entry i of the chosen header agree */
static int part_link_fsck(struct pfsck *c, unsigned i,
			  const struct pool_part_hdr *ph, const char *label)
{
	const struct pool_hdr *h = &c->copies[c->cur];
	char msg[POOL_PATH_HINT_LEN + 300];

	if (pool_uuid_cmp(ph->pool_uuid, h->uuid) ||
	    pool_uuid_cmp(ph->part_uuid, h->parts[i].uuid) ||
	    ph->part_index != i) {
		snprintf(msg, sizeof(msg),
			 "%s: part header at 0x0 names pool UUID, part UUID or "
			 "index %u that the pool header's part table entry %u "
			 "does not",
			 label, ph->part_index, i);
		return error(c, "part-uuid-mismatch", i, POOL_PART_HDR_OFF,
			     msg);
	}
	if (ph->size != h->parts[i].size || ph->nparts != h->nparts) {
		snprintf(msg, sizeof(msg),
			 "%s: part header at 0x0 says %llu bytes and %u parts, "
			 "the part table %llu bytes and %u parts",
			 label, (unsigned long long)ph->size, ph->nparts,
			 (unsigned long long)h->parts[i].size, h->nparts);
		return error(c, "part-size-mismatch", i, POOL_PART_HDR_OFF,
			     msg);
	}
	return 0;
}

/* part i's file is on the node its part table entry records (a part
 * moved to another node's namespace: its heap is placed by where it is,
 * and the threads of the recorded node allocate remotely) */
static int node_fsck(struct pfsck *c, unsigned i, const char *path,
		     const char *label)
{
	int rec = c->copies[c->cur].parts[i].node, now = ns_path_node(path);

	if (now < 0 || rec < 0 || now == rec)
		return 0;
	return pool_fsck_report(
		c->sink, "part-node", POOL_FSCK_WARNING, i, 0,
		"%s is on NUMA node %d, the pool header records "
		"node %d (moved to another node's namespace?): "
		"its heap is placed by node %d",
		label, now, rec, now);
}

/* part i >= 1, opened from its path hint */
static int part_fsck(struct pfsck *c, unsigned i)
{
	const char *hint = i < c->npaths ? c->paths[i] :
					   c->copies[c->cur].parts[i].path_hint;
	char label[POOL_PATH_HINT_LEN + 32], msg[POOL_PATH_HINT_LEN + 300];
	struct pool_part_hdr ph;
	struct stat st;
	int fd, rc;

	snprintf(label, sizeof(label), "part %u ('%s')", i, hint);
	fd = open(hint, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(msg, sizeof(msg), "%s: %s", label,
			 fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return error(c, "part-missing", i, 0, msg);
	}
	rc = read_at(fd, (uint64_t)st.st_size, &ph, sizeof(ph),
		     POOL_PART_HDR_OFF);
	close(fd);
	if (rc < 0)
		return rc;
	rc = part_hdr_fsck(c, i, &ph, (uint64_t)st.st_size, label);
	if (rc)
		return rc < 0 ? rc : 0;
	rc = part_link_fsck(c, i, &ph, label);
	return rc ? rc : node_fsck(c, i, hint, label);
}

/* region i of the chosen header lies in its part's data area */
static int region_bounds_fsck(struct pfsck *c, unsigned i)
{
	const struct pool_hdr *h = &c->copies[c->cur];
	const struct pool_region *r = &h->regions[i];
	uint64_t off = pool_hdr_copy_off((unsigned)c->cur) +
		       offsetof(struct pool_hdr, regions) + i * sizeof(*r);
	char msg[300];

	if (r->type == POOL_REGION_FREE || r->part >= h->nparts) {
		snprintf(msg, sizeof(msg),
			 "region %u (table entry at 0x%llx): type %u, part "
			 "%u of %u",
			 i, (unsigned long long)off, r->type, r->part,
			 h->nparts);
		return error(c, "region-invalid", 0, off, msg);
	}
	if (r->off < POOL_DATA_OFF || r->off % POOL_ALIGN || !r->size ||
	    r->size % POOL_ALIGN || r->off > h->parts[r->part].size ||
	    r->size > h->parts[r->part].size - r->off) {
		snprintf(msg, sizeof(msg),
			 "region %u (table entry at 0x%llx) [0x%llx, +0x%llx) "
			 "is outside the data area of part %u (0x%llx bytes)",
			 i, (unsigned long long)off, (unsigned long long)r->off,
			 (unsigned long long)r->size, r->part,
			 (unsigned long long)h->parts[r->part].size);
		return error(c, "region-range", 0, off, msg);
	}
	return 0;
}

/* the region table: every region, then overlaps of the sound ones */
static int regions_fsck(struct pfsck *c)
{
	const struct pool_hdr *h = &c->copies[c->cur];
	uint64_t bad = 0; /* regions that failed (at most 64) */
	const struct pool_region *a, *b;
	char msg[200];
	unsigned i, j;
	int rc;

	for (i = 0; i < h->nregions; i++) {
		uint64_t before = c->sink->counts[POOL_FSCK_ERROR];

		rc = region_bounds_fsck(c, i);
		if (rc < 0)
			return rc;
		if (c->sink->counts[POOL_FSCK_ERROR] != before)
			bad |= 1ULL << i;
	}
	for (i = 0; i < h->nregions; i++) {
		for (j = i + 1; j < h->nregions; j++) {
			a = &h->regions[i];
			b = &h->regions[j];
			if ((bad >> i & 1) || (bad >> j & 1) ||
			    a->part != b->part || a->off >= b->off + b->size ||
			    b->off >= a->off + a->size)
				continue;
			snprintf(msg, sizeof(msg),
				 "regions %u and %u of part %u overlap at "
				 "0x%llx",
				 i, j, a->part,
				 (unsigned long long)(a->off > b->off ?
							      a->off :
							      b->off));
			rc = error(c, "region-overlap", a->part,
				   a->off > b->off ? a->off : b->off, msg);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/* part 0's own header, and its agreement with the chosen pool header */
static int part0_fsck(struct pfsck *c)
{
	char label[64];
	int rc;

	snprintf(label, sizeof(label), "part 0");
	rc = read_at(c->fd0, c->size0, &c->phdr0, sizeof(c->phdr0),
		     POOL_PART_HDR_OFF);
	if (rc < 0)
		return rc;
	rc = part_hdr_fsck(c, 0, &c->phdr0, c->size0, label);
	if (rc < 0)
		return rc;
	c->phdr0_ok = rc == 0;
	return 0;
}

/* the structures of the pool, in order (see pool_fsck) */
static int pool_walk(struct pfsck *c)
{
	unsigned i;
	int rc;

	rc = part0_fsck(c);
	/* both copies first: a torn one is told by the other */
	for (i = 0; rc == 0 && i < 2; i++)
		rc = read_at(c->fd0, c->size0, &c->copies[i],
			     sizeof(c->copies[i]), pool_hdr_copy_off(i));
	for (i = 0; rc == 0 && i < 2; i++)
		rc = hdr_copy_fsck(c, i);
	if (rc == 0)
		rc = hdr_choose_fsck(c);
	if (rc < 0 || c->cur < 0)
		return rc;
	rc = ro_compat_fsck(c);
	if (rc == 0 && c->phdr0_ok)
		rc = part_link_fsck(c, 0, &c->phdr0, "part 0");
	if (rc == 0 && c->phdr0_ok)
		rc = node_fsck(c, 0, c->path, "part 0");
	for (i = 1; rc == 0 && i < c->copies[c->cur].nparts; i++)
		rc = part_fsck(c, i);
	return rc < 0 ? rc : regions_fsck(c);
}

/* what the checks passed, open must accept */
static int open_fsck(struct pfsck *c)
{
	struct pool *pool;
	char msg[UTIL_ERRMSG_MAX + 64];

	if ((c->paths ? pool_open_parts(c->paths, c->npaths, POOL_OPEN_RDONLY,
					&pool) :
			pool_open(c->path, POOL_OPEN_RDONLY, &pool)) == 0) {
		pool_close(&pool);
		return 0;
	}
	if (c->sink->counts[POOL_FSCK_ERROR])
		return 0; /* reported already */
	snprintf(msg, sizeof(msg), "open refuses the pool: %s",
		 pool_errormsg());
	return error(c, "pool-open-refused", 0, 0, msg);
}

/* part 0: open, a regular file, locked shared (unless held: the caller
 * holds the pool open, locked) */
static int part0_open(struct pfsck *c, int held)
{
	struct stat st;

	c->fd0 = open(c->path, O_RDONLY | O_CLOEXEC);
	if (c->fd0 < 0)
		return util_errmsg_set(errno, "%s", strerror(errno));
	if (fstat(c->fd0, &st) < 0)
		return util_errmsg_set(errno, "cannot stat: %s",
				       strerror(errno));
	if (!S_ISREG(st.st_mode))
		return util_errmsg_set(EOPNOTSUPP,
				       "not a regular file (fsck of devdax "
				       "parts is not supported yet)");
	c->size0 = (uint64_t)st.st_size;
	while (!held && flock(c->fd0, LOCK_SH | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK)
			return pool_lock_busy(c->fd0, NULL);
		return util_errmsg_set(errno, "cannot lock: %s",
				       strerror(errno));
	}
	return 0;
}

int pool_fsck(const char *path, struct pool_fsck_sink *sink)
{
	return pool_fsck_flags(path, sink, 0);
}

/* the check of c's pool (see pool_fsck_flags) */
static int fsck_run(struct pfsck *cp, unsigned flags)
{
	struct pfsck c = *cp;
	struct pool_fsck_sink *sink = c.sink;
	const char *path = c.path;
	int held = !!(flags & POOL_FSCK_HELD);
	int rc;

	c.copies = calloc(2, sizeof(*c.copies));
	if (!c.copies)
		return util_errmsg_set(ENOMEM, "out of memory");
	rc = part0_open(&c, held);
	if (rc == 0 && c.size0 < sizeof(struct pool_part_hdr))
		rc = pool_fsck_report(sink, "pool-too-small", POOL_FSCK_ERROR,
				      0, 0,
				      "'%s' is %llu bytes: not a pmad pool",
				      path, (unsigned long long)c.size0);
	else if (rc == 0)
		rc = pool_walk(&c);
	if (rc == 0 && !held)
		rc = open_fsck(&c);
	if (rc < 0 && sink->rc < 0)
		util_errmsg_set(-rc, "stopped by the caller");
	if (c.fd0 >= 0)
		close(c.fd0);
	free(c.copies);
	return rc;
}

int pool_fsck_flags(const char *path, struct pool_fsck_sink *sink,
		    unsigned flags)
{
	struct pfsck c = { .sink = sink, .path = path, .fd0 = -1, .cur = -1 };

	return fsck_run(&c, flags);
}

int pool_fsck_parts(const char *const *paths, unsigned npaths,
		    struct pool_fsck_sink *sink, unsigned flags)
{
	struct pfsck c = { .sink = sink,
			   .path = paths[0],
			   .paths = paths,
			   .npaths = npaths,
			   .fd0 = -1,
			   .cur = -1 };

	return fsck_run(&c, flags);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm page: one page object (header + 4 KiB base data) and its log.
 *
 * Small writes append an entry (header + data) to the page's log (inline
 * in the page object, then an overflow chunk), persist it (its commit
 * point: one fence), then publish the new log tail with one 8-byte store
 * that is not flushed (the mount finds the end from the entries). Reads
 * walk the entries newest first and copy only the bytes no newer entry
 * has supplied, straight into the caller's buffer, then the remaining
 * gaps from the base page: no page is rebuilt to read it. A page whose
 * log is past HDPM_LOG_GC (or full) is merged: base + log into a new
 * page object, swapped in copy-on-write.
 */
#include <string.h>

#include "hdpm/internal.h"
#include "util/crc.h"
#include "util/errmsg.h"
#include "util/log.h"

#define MAX_ENTS (HDPM_LOG_TOTAL / HDPM_LOG_ALIGN)

struct hdpm_page_hdr *hdpm_page_hdr(struct hdpm_fs *fs, uint64_t page_off)
{
	return hdpm_direct(fs, page_off);
}

static char *page_data(struct hdpm_fs *fs, uint64_t page_off)
{
	return (char *)hdpm_page_hdr(fs, page_off) +
	       sizeof(struct hdpm_page_hdr);
}

/* the stored part of the base data: [0, end) (zero_tail is past it) */
static unsigned base_end(const struct hdpm_page_hdr *hdr)
{
	uint64_t z = hdr->zero_tail;

	/* a bad value (fsck reports it) hides no stored byte */
	return z <= HDPM_PAGE_SIZE ? HDPM_PAGE_SIZE - (unsigned)z :
				     HDPM_PAGE_SIZE;
}

/* base bytes [lo, hi) into dst: stored ones up to end, zeros past it */
static void base_copy(char *dst, const char *base, unsigned lo, unsigned hi,
		      unsigned end)
{
	unsigned mid = end < lo ? lo : end > hi ? hi : end;

	memcpy(dst, base + lo, mid - lo);
	memset(dst + (mid - lo), 0, hi - mid);
}

static unsigned ent_size(unsigned len)
{
	return (unsigned)sizeof(struct hdpm_log_ent) +
	       ((len + HDPM_LOG_ALIGN - 1) & ~(HDPM_LOG_ALIGN - 1));
}

/* where an entry of len bytes goes when the log ends at tail: at the
 * tail, or at the chunk's start if it does not fit in the inline rest */
static uint64_t ent_place(uint64_t tail, unsigned len)
{
	if (tail < HDPM_LOG_INLINE && tail + ent_size(len) > HDPM_LOG_INLINE)
		return HDPM_LOG_INLINE;
	return tail;
}

/* a page's log: positions [0, INLINE) in the object, the rest in the
 * chunk (NULL: none) */
struct log_view {
	uint64_t page_off;
	uint64_t nonce;
	char *inl;
	char *chunk;
};

static void view_init(struct hdpm_fs *fs, uint64_t page_off, uint64_t log_off,
		      struct log_view *v)
{
	v->page_off = page_off;
	v->nonce = hdpm_page_hdr(fs, page_off)->nonce;
	v->inl = (char *)hdpm_page_hdr(fs, page_off) + HDPM_PAGE_LOG_OFF;
	v->chunk = log_off ? hdpm_direct(fs, log_off) : NULL;
}

static struct hdpm_log_ent *ent_at(const struct log_view *v, uint64_t pos)
{
	if (pos < HDPM_LOG_INLINE)
		return (void *)(v->inl + pos);
	if (!v->chunk || pos >= HDPM_LOG_TOTAL)
		return NULL;
	return (void *)(v->chunk + (pos - HDPM_LOG_INLINE));
}

static uint32_t ent_crc(const struct log_view *v,
			const struct hdpm_log_ent *ent, const void *data)
{
	struct hdpm_log_ent h = *ent;
	uint32_t crc = (uint32_t)(v->page_off ^ v->page_off >> 32);

	h.crc = 0;
	crc = util_crc32c(crc, &v->nonce, sizeof(v->nonce));
	crc = util_crc32c(crc, &h, sizeof(h));
	return util_crc32c(crc, data, h.len);
}

/* an entry's seq: 1 + its slot (its position / 16), so the append path
 * need not count the entries before it */
static uint32_t ent_seq(uint64_t pos)
{
	return (uint32_t)(pos / HDPM_LOG_ALIGN) + 1;
}

static int is_pad(const struct hdpm_log_ent *ent, uint64_t pos)
{
	return pos < HDPM_LOG_INLINE && ent->seq == HDPM_LOG_PAD && !ent->len &&
	       !ent->off;
}

/* a real entry at pos, inside limit */
static int ent_ok(const struct log_view *v, const struct hdpm_log_ent *ent,
		  uint64_t pos, uint64_t limit, int verify)
{
	uint64_t seg_end = pos < HDPM_LOG_INLINE ? HDPM_LOG_INLINE :
						   HDPM_LOG_TOTAL;

	return ent->seq == ent_seq(pos) && ent->len &&
	       ent->len <= HDPM_LOG_DATA_MAX &&
	       ent->off + ent->len <= HDPM_PAGE_SIZE &&
	       pos + ent_size(ent->len) <= limit &&
	       pos + ent_size(ent->len) <= seg_end &&
	       (!verify || ent->crc == ent_crc(v, ent, ent + 1));
}

/*
 * The entries of a log: their positions in ret_pos (oldest first), up to
 * limit; stops at the first bad one. Returns the count; *ret_end is where
 * the last valid entry ends (a pad alone does not count). Without verify
 * the checksums are not computed (the shape still is): entries before
 * the published tail were durable before it, and the mount checked them.
 * The mount check, the inspection views and read-only mounts verify and
 * look past the stored tail (it is not flushed by appends).
 */
static unsigned log_scan(const struct log_view *v, uint64_t limit, int verify,
			 uint16_t *ret_pos, uint64_t *ret_end)
{
	const struct hdpm_log_ent *ent;
	uint64_t pos = 0, end = 0;
	unsigned n = 0;

	while (pos + sizeof(*ent) <= limit && n < MAX_ENTS) {
		ent = ent_at(v, pos);
		if (!ent)
			break;
		if (is_pad(ent, pos)) {
			if (verify && ent->crc != ent_crc(v, ent, ent + 1))
				break;
			pos = HDPM_LOG_INLINE;
			continue;
		}
		if (!ent_ok(v, ent, pos, limit, verify))
			break;
		ret_pos[n++] = (uint16_t)pos;
		pos += ent_size(ent->len);
		end = pos;
	}
	*ret_end = end;
	return n;
}

/* the not yet filled parts of [a, b), sorted */
struct gaps {
	unsigned n;
	unsigned lo[MAX_ENTS + 1], hi[MAX_ENTS + 1];
};

static void gaps_add(struct gaps *g, unsigned lo, unsigned hi)
{
	if (g->n <= MAX_ENTS) {
		g->lo[g->n] = lo;
		g->hi[g->n++] = hi;
	}
}

/* copy the part of entry [eo, eo+el) that falls in a gap; shrink gaps */
static void gaps_fill(struct gaps *g, unsigned a, char *dst, unsigned eo,
		      unsigned el, const char *src)
{
	unsigned i, lo, hi, e = eo + el;
	struct gaps out;

	out.n = 0;
	for (i = 0; i < g->n; i++) {
		lo = g->lo[i] > eo ? g->lo[i] : eo;
		hi = g->hi[i] < e ? g->hi[i] : e;
		if (lo >= hi) {
			gaps_add(&out, g->lo[i], g->hi[i]);
			continue;
		}
		memcpy(dst + (lo - a), src + (lo - eo), hi - lo);
		if (g->lo[i] < lo)
			gaps_add(&out, g->lo[i], lo);
		if (hi < g->hi[i])
			gaps_add(&out, hi, g->hi[i]);
	}
	/* only the gaps in use: the arrays are 1 KiB */
	g->n = out.n;
	memcpy(g->lo, out.lo, out.n * sizeof(out.lo[0]));
	memcpy(g->hi, out.hi, out.n * sizeof(out.hi[0]));
}

void hdpm_page_read(struct hdpm_fs *fs, uint64_t page_off, unsigned a,
		    unsigned b, char *dst)
{
	struct hdpm_page_hdr *hdr;
	uint64_t tail = 0, log_off = 0;

	if (page_off) {
		hdr = hdpm_page_hdr(fs, page_off);
		tail = __atomic_load_n(&hdr->log_tail, __ATOMIC_ACQUIRE);
		log_off = __atomic_load_n(&hdr->log_off, __ATOMIC_ACQUIRE);
	}
	hdpm_page_read_at(fs, page_off, log_off, tail, a, b, dst);
}

void hdpm_page_read_at(struct hdpm_fs *fs, uint64_t page_off, uint64_t log_off,
		       uint64_t tail, unsigned a, unsigned b, char *dst)
{
	const struct hdpm_log_ent *ent;
	uint16_t pos[MAX_ENTS];
	struct log_view v;
	struct gaps g;
	const char *base;
	uint64_t end;
	unsigned n, i, stored;

	if (!page_off) {
		memset(dst, 0, b - a);
		return;
	}
	base = page_data(fs, page_off);
	stored = base_end(hdpm_page_hdr(fs, page_off));
	/* a read-only mount did not check the logs: it verifies them and
	 * looks past the stored tail */
	if (fs->rdonly)
		tail = HDPM_LOG_TOTAL;
	if (!tail || tail > HDPM_LOG_TOTAL) {
		base_copy(dst, base, a, b, stored);
		return;
	}
	g.n = 1;
	g.lo[0] = a;
	g.hi[0] = b;
	view_init(fs, page_off, log_off, &v);
	n = log_scan(&v, tail, fs->rdonly, pos, &end);
	/* newest first: a byte comes from the newest entry that has it */
	for (i = n; i-- > 0 && g.n;) {
		ent = ent_at(&v, pos[i]);
		gaps_fill(&g, a, dst, ent->off, ent->len,
			  (const char *)(ent + 1));
	}
	for (i = 0; i < g.n; i++)
		base_copy(dst + (g.lo[i] - a), base, g.lo[i], g.hi[i], stored);
}

int hdpm_page_log_fits(struct hdpm_fs *fs, uint64_t page_off, unsigned len)
{
	struct hdpm_page_hdr *hdr = hdpm_page_hdr(fs, page_off);

	return len <= HDPM_LOG_DATA_MAX && hdr->log_tail <= HDPM_LOG_GC &&
	       ent_place(hdr->log_tail, len) + ent_size(len) <= HDPM_LOG_TOTAL;
}

int hdpm_page_log_fast(struct hdpm_fs *fs, uint64_t page_off, unsigned len)
{
	struct hdpm_page_hdr *hdr = hdpm_page_hdr(fs, page_off);

	return hdpm_page_log_fits(fs, page_off, len) &&
	       (hdr->log_off || ent_place(hdr->log_tail, len) + ent_size(len) <=
					HDPM_LOG_INLINE);
}

unsigned hdpm_page_log_entries(struct hdpm_fs *fs, uint64_t page_off,
			       struct hdpm_log_ent **ret_ents,
			       uint64_t *ret_end)
{
	struct hdpm_page_hdr *hdr = hdpm_page_hdr(fs, page_off);
	uint64_t end, limit = fs->rdonly ? HDPM_LOG_TOTAL : hdr->log_tail;
	uint16_t pos[MAX_ENTS];
	struct log_view v;
	unsigned n, i;

	*ret_end = 0;
	if (!limit || limit > HDPM_LOG_TOTAL)
		return 0;
	view_init(fs, page_off, hdr->log_off, &v);
	n = log_scan(&v, limit, 1, pos, &end);
	*ret_end = end;
	for (i = 0; i < n; i++)
		ret_ents[i] = ent_at(&v, pos[i]);
	return n;
}

/* write (and flush) a pad at tail and the entry at place */
static void log_write(struct hdpm_fs *fs, uint64_t page_off, uint64_t place,
		      unsigned a, const char *data, unsigned len)
{
	struct hdpm_page_hdr *hdr = hdpm_page_hdr(fs, page_off);
	struct hdpm_log_ent *ent;
	struct log_view v;

	view_init(fs, page_off, hdr->log_off, &v);
	if (place != hdr->log_tail) {
		ent = ent_at(&v, hdr->log_tail);
		memset(ent, 0, sizeof(*ent));
		ent->seq = HDPM_LOG_PAD;
		ent->crc = ent_crc(&v, ent, ent + 1);
		pma_flush(fs->heap, ent, sizeof(*ent));
	}
	ent = ent_at(&v, place);
	ent->seq = ent_seq(place);
	ent->off = (uint16_t)a;
	ent->len = (uint16_t)len;
	ent->rsvd = 0;
	memcpy(ent + 1, data, len);
	ent->crc = ent_crc(&v, ent, data);
	pma_flush(fs->heap, ent, ent_size(len));
}

int hdpm_page_log_append(struct hdpm_fs *fs, struct hdpm_tx *tx,
			 uint64_t page_off, unsigned a, const char *data,
			 unsigned len)
{
	struct hdpm_page_hdr *hdr = hdpm_page_hdr(fs, page_off);
	uint64_t place = ent_place(hdr->log_tail, len);
	int rc;

	if (place + ent_size(len) > HDPM_LOG_INLINE && !hdr->log_off) {
		/* the first entry past the inline part: the overflow chunk,
		 * journaled (undo frees it) */
		if (!tx)
			return util_errmsg_set(EINVAL, "log chunk needed");
		rc = hdpm_tx_log(tx, HDPM_REC_BLOCK, &hdr->log_off);
		if (rc == 0)
			rc = hdpm_tx_alloc(tx, HDPM_LOG_SIZE, &hdr->log_off);
		if (rc < 0)
			return rc;
	}
	if (tx) {
		rc = hdpm_tx_log(tx, HDPM_REC_TAIL, &hdr->log_tail);
		if (rc < 0)
			return rc;
	}
	log_write(fs, page_off, place, a, data, len);
	hdpm_stat_add(fs, log_appends, 1);
	if (tx) {
		hdpm_tx_set(fs, &hdr->log_tail, place + ent_size(len));
		return 0;
	}
	/* durable, so committed: the mount finds it past a stale tail. The
	 * tail store publishes it to readers and is not flushed */
	pma_drain(fs->heap);
	__atomic_store_n(&hdr->log_tail, place + ent_size(len),
			 __ATOMIC_RELEASE);
	return 0;
}

void hdpm_page_void_entry(struct hdpm_fs *fs, uint64_t page_off, uint64_t pos)
{
	struct hdpm_page_hdr *hdr = hdpm_page_hdr(fs, page_off);
	struct hdpm_log_ent *ent;
	struct log_view v;

	view_init(fs, page_off,
		  hdpm_block_live(fs, hdr->log_off) ? hdr->log_off : 0, &v);
	ent = ent_at(&v, pos);
	if (!ent)
		return;
	memset(ent, 0, sizeof(*ent));
	pma_flush(fs->heap, ent, sizeof(*ent));
}

size_t hdpm_page_prepare(struct hdpm_fs *fs, char *obj)
{
	struct hdpm_page_hdr *hdr = (void *)obj;

	memset(hdr, 0, sizeof(*hdr));
	hdr->nonce = fs->nonce_base |
		     (__atomic_add_fetch(&fs->nonce_next, 1, __ATOMIC_RELAXED) &
		      0xffffffffULL);
	/* an empty log: the first entry slot is zero */
	memset(obj + HDPM_PAGE_LOG_OFF, 0, sizeof(struct hdpm_log_ent));
	return HDPM_PAGE_NEW_SIZE;
}

uint64_t hdpm_page_write_new(struct hdpm_fs *fs, void *dst, char *obj)
{
	struct hdpm_page_hdr *hdr = (void *)obj;
	const char *data = obj + sizeof(*hdr);
	unsigned keep = HDPM_PAGE_SIZE;
	uint64_t w;

	/* the last non-zero 8 bytes, rounded up to a cache line */
	while (keep >= 8) {
		memcpy(&w, data + keep - 8, 8);
		if (w)
			break;
		keep -= 8;
	}
	keep = (keep + 63u) & ~63u;
	hdr->zero_tail = HDPM_PAGE_SIZE - keep;
	if (keep == HDPM_PAGE_SIZE) {
		pma_memcpy_flush(fs->heap, dst, obj, HDPM_PAGE_NEW_SIZE);
		return 0;
	}
	pma_memcpy_flush(fs->heap, dst, obj, sizeof(*hdr) + keep);
	/* the empty log's first slot */
	pma_memcpy_flush(fs->heap, (char *)dst + HDPM_PAGE_LOG_OFF,
			 obj + HDPM_PAGE_LOG_OFF, sizeof(struct hdpm_log_ent));
	__atomic_add_fetch(&fs->zero_tail_bytes, hdr->zero_tail,
			   __ATOMIC_RELAXED);
	return hdr->zero_tail;
}

int hdpm_page_cow(struct hdpm_tx *tx, uint64_t *entry, unsigned a,
		  const char *data, unsigned len)
{
	struct hdpm_fs *fs = tx->fs;
	char buf[HDPM_PAGE_NEW_SIZE];
	char *pdata = buf + sizeof(struct hdpm_page_hdr);
	uint64_t old = *entry;
	int rc;

	(void)hdpm_page_prepare(fs, buf);
	if (a > 0 || len < HDPM_PAGE_SIZE || !data)
		hdpm_page_read(fs, old, 0, HDPM_PAGE_SIZE, pdata);
	if (data)
		memcpy(pdata + a, data, len);
	else
		memset(pdata + a, 0, len);
	rc = hdpm_tx_log(tx, HDPM_REC_PAGE, entry);
	if (rc == 0)
		rc = hdpm_tx_alloc(tx, HDPM_PAGE_OBJ_SIZE, entry);
	if (rc < 0)
		return rc;
	/* the new page is flushed here and fenced at commit, before the
	 * journal lets the swap stand */
	(void)hdpm_page_write_new(fs, hdpm_direct(fs, *entry), buf);
	hdpm_stat_add(fs, cow_pages, 1);
	return 0;
}

int hdpm_page_merge(struct hdpm_fs *fs, uint64_t *entry)
{
	struct hdpm_tx *tx = hdpm_tx_begin(fs);
	int rc;

	rc = hdpm_page_cow(tx, entry, 0, NULL, 0);
	if (rc < 0) {
		hdpm_tx_abort(tx);
		return rc;
	}
	rc = hdpm_tx_commit(tx);
	if (rc == 0)
		hdpm_stat_add(fs, gc_merges, 1);
	return rc;
}

int hdpm_page_log_check(struct hdpm_fs *fs, uint64_t page_off)
{
	struct hdpm_page_hdr *hdr = hdpm_page_hdr(fs, page_off);
	uint16_t pos[MAX_ENTS];
	struct log_view v;
	uint64_t end;
	int cut;

	/* appends do not flush the tail: the valid entries say where the
	 * log ends (a chunk that is not live holds none) */
	view_init(fs, page_off,
		  hdpm_block_live(fs, hdr->log_off) ? hdr->log_off : 0, &v);
	log_scan(&v, HDPM_LOG_TOTAL, 1, pos, &end);
	if (end == hdr->log_tail)
		return 0;
	cut = end < hdr->log_tail;
	if (cut)
		util_warn("hdpm: page 0x%llx: log tail %llu cut to %llu",
			  (unsigned long long)page_off,
			  (unsigned long long)hdr->log_tail,
			  (unsigned long long)end);
	hdr->log_tail = end;
	pma_persist(fs->heap, &hdr->log_tail, sizeof(hdr->log_tail));
	return cut;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm page: one page object (header + 4 KiB base data) and its log.
 *
 * Small writes append an entry (header + data) to the page's log chunk,
 * persist it, then publish the new log tail with one 8-byte store. Reads
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

#define MAX_ENTS (HDPM_LOG_SIZE / HDPM_LOG_ALIGN)

struct hdpm_page_hdr *hdpm_page_hdr(struct hdpm_fs *fs, uint64_t page_off)
{
	return hdpm_direct(fs, page_off);
}

static char *page_data(struct hdpm_fs *fs, uint64_t page_off)
{
	return (char *)hdpm_page_hdr(fs, page_off) +
	       sizeof(struct hdpm_page_hdr);
}

static unsigned ent_size(unsigned len)
{
	return (unsigned)sizeof(struct hdpm_log_ent) +
	       ((len + HDPM_LOG_ALIGN - 1) & ~(HDPM_LOG_ALIGN - 1));
}

static uint32_t ent_crc(uint64_t page_off, const struct hdpm_log_ent *ent,
			const void *data)
{
	struct hdpm_log_ent h = *ent;
	uint32_t crc = (uint32_t)(page_off ^ page_off >> 32);

	h.crc = 0;
	crc = util_crc32c(crc, &h, sizeof(h));
	return util_crc32c(crc, data, h.len);
}

/*
 * The entries of a log: their positions in ret_pos (oldest first), valid
 * up to tail; stops at the first bad one. Returns the count; *ret_end is
 * where the valid entries end. Without verify the checksums are not
 * computed (the shape still is): entries before the tail were durable
 * before it was published and the mount checked them, so the read and
 * append paths trust them; the mount check and the inspection views
 * verify.
 */
static unsigned log_scan(struct hdpm_fs *fs, uint64_t page_off, const char *log,
			 uint64_t tail, int verify, uint16_t *ret_pos,
			 uint64_t *ret_end)
{
	const struct hdpm_log_ent *ent;
	uint64_t pos = 0;
	unsigned n = 0;

	(void)fs;
	while (pos + sizeof(*ent) <= tail && n < MAX_ENTS) {
		ent = (const void *)(log + pos);
		if (ent->seq != n + 1 || !ent->len ||
		    ent->len > HDPM_LOG_DATA_MAX ||
		    ent->off + ent->len > HDPM_PAGE_SIZE ||
		    pos + ent_size(ent->len) > tail ||
		    (verify && ent->crc != ent_crc(page_off, ent, ent + 1)))
			break;
		ret_pos[n++] = (uint16_t)pos;
		pos += ent_size(ent->len);
	}
	*ret_end = pos;
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
	struct gaps g;
	const char *log, *base;
	uint64_t end;
	unsigned n, i;

	if (!page_off) {
		memset(dst, 0, b - a);
		return;
	}
	base = page_data(fs, page_off);
	if (!tail || tail > HDPM_LOG_SIZE) {
		memcpy(dst, base + a, b - a);
		return;
	}
	g.n = 1;
	g.lo[0] = a;
	g.hi[0] = b;
	log = log_off ? hdpm_direct(fs, log_off) : NULL;
	/* a read-only mount did not check the logs: it verifies them here */
	n = log ? log_scan(fs, page_off, log, tail, fs->rdonly, pos, &end) : 0;
	/* newest first: a byte comes from the newest entry that has it */
	for (i = n; i-- > 0 && g.n;) {
		ent = (const void *)(log + pos[i]);
		gaps_fill(&g, a, dst, ent->off, ent->len,
			  (const char *)(ent + 1));
	}
	for (i = 0; i < g.n; i++)
		memcpy(dst + (g.lo[i] - a), base + g.lo[i], g.hi[i] - g.lo[i]);
}

int hdpm_page_log_fits(struct hdpm_fs *fs, uint64_t page_off, unsigned len)
{
	struct hdpm_page_hdr *hdr = hdpm_page_hdr(fs, page_off);

	return len <= HDPM_LOG_DATA_MAX && hdr->log_tail <= HDPM_LOG_GC &&
	       hdr->log_tail + ent_size(len) <= HDPM_LOG_SIZE;
}

/* entries in the log up to its tail */
static unsigned log_count(struct hdpm_fs *fs, uint64_t page_off)
{
	struct hdpm_page_hdr *hdr = hdpm_page_hdr(fs, page_off);
	uint16_t pos[MAX_ENTS];
	uint64_t end;

	if (!hdr->log_off || !hdr->log_tail)
		return 0;
	return log_scan(fs, page_off, hdpm_direct(fs, hdr->log_off),
			hdr->log_tail, 0, pos, &end);
}

unsigned hdpm_page_log_entries(struct hdpm_fs *fs, uint64_t page_off,
			       struct hdpm_log_ent **ret_ents)
{
	struct hdpm_page_hdr *hdr = hdpm_page_hdr(fs, page_off);
	uint16_t pos[MAX_ENTS];
	uint64_t end;
	char *log;
	unsigned n, i;

	if (!hdr->log_off || !hdr->log_tail || hdr->log_tail > HDPM_LOG_SIZE)
		return 0;
	log = hdpm_direct(fs, hdr->log_off);
	n = log_scan(fs, page_off, log, hdr->log_tail, 1, pos, &end);
	for (i = 0; i < n; i++)
		ret_ents[i] = (void *)(log + pos[i]);
	return n;
}

int hdpm_page_log_append(struct hdpm_fs *fs, uint64_t page_off, unsigned a,
			 const char *data, unsigned len, int journal)
{
	struct hdpm_page_hdr *hdr = hdpm_page_hdr(fs, page_off);
	struct hdpm_log_ent *ent;
	int rc;

	if (!hdr->log_off) {
		/* the first append: a log chunk, journaled (undo frees it) */
		rc = hdpm_tx_log(fs, HDPM_REC_BLOCK, &hdr->log_off);
		if (rc == 0)
			rc = hdpm_tx_alloc(fs, HDPM_LOG_SIZE, &hdr->log_off);
		if (rc < 0)
			return rc;
	}
	if (journal) {
		rc = hdpm_tx_log(fs, HDPM_REC_WORD, &hdr->log_tail);
		if (rc < 0)
			return rc;
	}
	ent = (void *)((char *)hdpm_direct(fs, hdr->log_off) + hdr->log_tail);
	ent->seq = log_count(fs, page_off) + 1;
	ent->off = (uint16_t)a;
	ent->len = (uint16_t)len;
	ent->rsvd = 0;
	memcpy(ent + 1, data, len);
	ent->crc = ent_crc(page_off, ent, data);
	pma_flush(fs->heap, ent, ent_size(len));
	/* the entry is durable before the tail that publishes it */
	if (!journal)
		pma_drain(fs->heap);
	hdpm_tx_set(fs, &hdr->log_tail, hdr->log_tail + ent_size(len));
	if (!journal)
		pma_drain(fs->heap);
	fs->stats.log_appends++;
	return 0;
}

int hdpm_page_cow(struct hdpm_fs *fs, uint64_t *entry, unsigned a,
		  const char *data, unsigned len)
{
	char buf[HDPM_PAGE_OBJ_SIZE];
	uint64_t old = *entry;
	int rc;

	memset(buf, 0, sizeof(struct hdpm_page_hdr));
	if (a > 0 || len < HDPM_PAGE_SIZE || !data)
		hdpm_page_read(fs, old, 0, HDPM_PAGE_SIZE,
			       buf + sizeof(struct hdpm_page_hdr));
	if (data)
		memcpy(buf + sizeof(struct hdpm_page_hdr) + a, data, len);
	else
		memset(buf + sizeof(struct hdpm_page_hdr) + a, 0, len);
	rc = hdpm_tx_log(fs, HDPM_REC_PAGE, entry);
	if (rc == 0)
		rc = hdpm_tx_alloc(fs, HDPM_PAGE_OBJ_SIZE, entry);
	if (rc < 0)
		return rc;
	/* the new page is flushed here and fenced at commit, before the
	 * journal lets the swap stand */
	pma_memcpy_flush(fs->heap, hdpm_direct(fs, *entry), buf, sizeof(buf));
	fs->stats.cow_pages++;
	return 0;
}

int hdpm_page_merge(struct hdpm_fs *fs, uint64_t *entry)
{
	int rc;

	hdpm_tx_begin(fs);
	rc = hdpm_page_cow(fs, entry, 0, NULL, 0);
	if (rc < 0) {
		hdpm_tx_abort(fs);
		return rc;
	}
	rc = hdpm_tx_commit(fs);
	if (rc == 0)
		fs->stats.gc_merges++;
	return rc;
}

int hdpm_page_log_check(struct hdpm_fs *fs, uint64_t page_off)
{
	struct hdpm_page_hdr *hdr = hdpm_page_hdr(fs, page_off);
	uint16_t pos[MAX_ENTS];
	uint64_t end;
	const char *log;

	if (!hdr->log_tail)
		return 0;
	log = hdr->log_off ? hdpm_direct(fs, hdr->log_off) : NULL;
	end = 0;
	if (log && hdr->log_tail <= HDPM_LOG_SIZE)
		log_scan(fs, page_off, log, hdr->log_tail, 1, pos, &end);
	if (end == hdr->log_tail)
		return 0;
	util_warn("hdpm: page 0x%llx: log tail %llu cut to %llu",
		  (unsigned long long)page_off,
		  (unsigned long long)hdr->log_tail, (unsigned long long)end);
	hdr->log_tail = end;
	pma_persist(fs->heap, &hdr->log_tail, sizeof(hdr->log_tail));
	return 1;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc bookkeeping log: record encoding, interleaved slot mapping and
 * validation. A log is a ring of 16-byte slots; record k goes to slot
 * k % cap, with consecutive k in different cache lines (NBANKS lines per
 * group). Validity (epoch, tag, checksum) is defined in layout.h; the log
 * ends at the first invalid record (or the first incomplete extent pair).
 * An extent op is one record (EXT_ALLOC1 ..., version 4) or two (EXT_ALLOC
 * ... then EXT_LEN); read_op gives both as the same pma_op.
 */
#include <errno.h>
#include <stddef.h>

#include "pmalloc/internal.h"
#include "util/crc.h"

/* r -> (r % NBANKS) lines of 4 slots, then slot r / NBANKS in the line */
#define GOFF(r)                                                   \
	((r) % PMA_NBANKS * (PMA_LINE / sizeof(struct pma_rec)) + \
	 (r) / PMA_NBANKS)
const uint8_t pma_log_group_off[PMA_LOG_GROUP] = {
	GOFF(0),  GOFF(1),  GOFF(2),  GOFF(3),	GOFF(4),  GOFF(5),
	GOFF(6),  GOFF(7),  GOFF(8),  GOFF(9),	GOFF(10), GOFF(11),
	GOFF(12), GOFF(13), GOFF(14), GOFF(15), GOFF(16), GOFF(17),
	GOFF(18), GOFF(19), GOFF(20), GOFF(21), GOFF(22), GOFF(23),
};
_Static_assert(PMA_LOG_GROUP == 24, "pma_log_group_off has 24 entries");

struct pma_rec *pma_booklog_slot(struct pma_rec *log, uint32_t cap, uint64_t k)
{
	return pma_booklog_slot_at(log, (uint32_t)(k % cap));
}

void pma_booklog_encode(uint64_t k, uint32_t cap, unsigned type,
			uint64_t payload, uint64_t value,
			struct pma_rec *ret_rec)
{
	pma_booklog_encode_bits(k, pma_booklog_lap_epoch(k / cap),
				pma_booklog_lap_tag(k / cap), type, payload,
				value, ret_rec);
}

int pma_booklog_decode(const struct pma_rec *log, uint32_t cap, uint64_t k,
		       unsigned *ret_type, uint64_t *ret_payload,
		       uint64_t *ret_value)
{
	const struct pma_rec *slot =
		pma_booklog_slot((struct pma_rec *)log, cap, k);
	uint64_t w0 = __atomic_load_n(&slot->word0, __ATOMIC_RELAXED);
	uint64_t w1 = __atomic_load_n(&slot->word1, __ATOMIC_RELAXED);
	unsigned type = (unsigned)(w0 & ((1u << PMA_REC_TYPE_BITS) - 1));

	if (type == PMA_REC_NONE || type >= PMA_REC_NTYPES)
		return -EBADMSG;
	if ((w0 & PMA_REC_EPOCH_MASK << PMA_REC_EPOCH_SHIFT) !=
	    pma_booklog_lap_epoch(k / cap))
		return -EBADMSG;
	if ((w1 & PMA_REC_TAG_MASK) != pma_booklog_lap_tag(k / cap))
		return -EBADMSG;
	if (((w0 >> PMA_REC_CSUM_SHIFT) & PMA_REC_CSUM_MASK) !=
	    pma_booklog_csum(w0, w1, k))
		return -EBADMSG;
	*ret_type = type;
	*ret_payload = w0 >> PMA_REC_PAYLOAD_SHIFT;
	*ret_value = w1 & ~PMA_REC_TAG_MASK;
	return 0;
}

/* the EXT_LEN half of an extent op */
static int read_ext_len(const struct pma_rec *log, uint32_t cap, uint64_t k,
			struct pma_op *op)
{
	unsigned type;
	uint64_t payload, value;
	int rc;

	rc = pma_booklog_decode(log, cap, k + 1, &type, &payload, &value);
	if (rc < 0 || type != PMA_REC_EXT_LEN || payload == 0)
		return -EBADMSG;
	op->npages = payload;
	op->nrecs = 2;
	return 0;
}

int pma_booklog_read_op(const struct pma_rec *log, uint32_t cap, uint64_t k,
			unsigned osh, struct pma_op *ret_op)
{
	struct pma_op op = { .index = k, .nrecs = 1 };
	unsigned type;
	uint64_t payload, value;
	int rc;

	rc = pma_booklog_decode(log, cap, k, &type, &payload, &value);
	if (rc < 0)
		return rc;
	op.type = type;
	op.off = payload << osh;
	switch (type) {
	case PMA_REC_ALLOC:
	case PMA_REC_FREE:
	case PMA_REC_RFREE:
		op.dest = value;
		break;
	case PMA_REC_SYNC_FREE:
		if (value) /* no dest: written 0 */
			return -EBADMSG;
		break;
	case PMA_REC_XFREE:
		/* another part's block: its offset in that part, the part
		 * in op.owner */
		op.off = (payload & ((1ULL << PMA_REC_XFREE_OFF_BITS) - 1))
			 << osh;
		op.owner = (unsigned)(payload >> PMA_REC_XFREE_OFF_BITS);
		op.dest = value;
		break;
	case PMA_REC_SLAB_NEW:
	case PMA_REC_SLAB_FREE:
		op.cls = (unsigned)((value >> 8) & 0xff);
		op.owner = (unsigned)((value >> 16) & 0xffff);
		break;
	case PMA_REC_SLAB_MORPH:
		op.cls = (unsigned)((value >> 8) & 0xff);
		op.owner = (unsigned)((value >> 16) & 0xffff);
		op.old_cls = (unsigned)((value >> 32) & 0xff);
		break;
	case PMA_REC_EXT_ALLOC:
	case PMA_REC_EXT_FREE:
	case PMA_REC_EXT_LFREE:
		op.dest = value;
		rc = read_ext_len(log, cap, k, &op);
		if (rc < 0)
			return rc;
		break;
	case PMA_REC_EXT_ALLOC1:
	case PMA_REC_EXT_FREE1:
	case PMA_REC_EXT_LFREE1:
		/* the op is the same as its two-record form */
		op.type = type == PMA_REC_EXT_ALLOC1 ? PMA_REC_EXT_ALLOC :
			  type == PMA_REC_EXT_FREE1  ? PMA_REC_EXT_FREE :
						       PMA_REC_EXT_LFREE;
		op.off = (payload & ((1ULL << PMA_REC_EXT1_OFF_BITS) - 1))
			 << PMA_PAGE_SHIFT;
		op.npages = (payload >> PMA_REC_EXT1_OFF_BITS) + 1;
		op.dest = value;
		break;
	default: /* a lone EXT_LEN */
		return -EBADMSG;
	}
	*ret_op = op;
	return 0;
}

uint64_t pma_booklog_find_tail(const struct pma_rec *log, uint32_t cap,
			       uint64_t head)
{
	struct pma_op op;
	uint64_t k = head;

	/* never run past a full ring: older slots belong to the last lap */
	while (k - head < cap &&
	       pma_booklog_read_op(log, cap, k, PMA_REC_OSH, &op) == 0 &&
	       k + op.nrecs - head <= cap)
		k += op.nrecs;
	return k;
}

/* 0: word is 0 or of the previous lap, 1: of lap's, -1: neither */
static int word_lap(uint64_t w, uint64_t field, uint64_t cur, uint64_t prev,
		    uint64_t lap)
{
	if (!w || (lap && field == prev))
		return 0;
	return field == cur ? 1 : -1;
}

/* word_lap of slot k's two words (epoch, tag) into *a, *b */
static void slot_laps(const struct pma_rec *log, uint32_t cap, uint64_t k,
		      int *a, int *b)
{
	const struct pma_rec *slot =
		pma_booklog_slot((struct pma_rec *)log, cap, k);
	uint64_t w0 = __atomic_load_n(&slot->word0, __ATOMIC_RELAXED);
	uint64_t w1 = __atomic_load_n(&slot->word1, __ATOMIC_RELAXED);
	uint64_t lap = k / cap, prev = lap ? lap - 1 : 0;

	*a = word_lap(w0, w0 & PMA_REC_EPOCH_MASK << PMA_REC_EPOCH_SHIFT,
		      pma_booklog_lap_epoch(lap), pma_booklog_lap_epoch(prev),
		      lap);
	*b = word_lap(w1, w1 & PMA_REC_TAG_MASK, pma_booklog_lap_tag(lap),
		      pma_booklog_lap_tag(prev), lap);
}

int pma_booklog_slot_damaged(const struct pma_rec *log, uint32_t cap,
			     uint64_t k)
{
	unsigned type;
	uint64_t payload, value;
	int a, b;

	slot_laps(log, cap, k, &a, &b);
	if (a < 0 || b < 0)
		return 1; /* a word no write of this slot can have left */
	/* both words of this lap: the whole record was written */
	return a == 1 && b == 1 &&
	       pma_booklog_decode(log, cap, k, &type, &payload, &value) < 0;
}

uint64_t pma_booklog_first_valid(const struct pma_rec *log, uint32_t cap,
				 uint64_t from, uint64_t end)
{
	/* slot j holds record base + j, or base + cap + j if j < from's
	 * slot: the slots in memory order, a record decoded only if its
	 * first word has the epoch of its lap (a stale slot rarely does) */
	uint64_t base = from - from % cap, best = end, k, w0;
	uint64_t epoch[2] = { pma_booklog_lap_epoch(base / cap),
			      pma_booklog_lap_epoch(base / cap + 1) };
	uint32_t f = (uint32_t)(from % cap), line, i, j, nlines;
	const uint32_t per = PMA_LINE / sizeof(struct pma_rec);
	unsigned type;
	uint64_t payload, value;

	pma_assert(end - from <= cap && cap % PMA_LOG_GROUP == 0);
	nlines = cap / per;
	for (line = 0; line < nlines; line++)
		for (i = 0; i < per; i++) {
			/* pma_booklog_slot_at backwards */
			j = (uint32_t)(line / PMA_NBANKS * PMA_LOG_GROUP +
				       (uint64_t)i * PMA_NBANKS +
				       line % PMA_NBANKS);
			k = base + j + (j < f ? cap : 0);
			if (k >= best)
				continue;
			w0 = __atomic_load_n(&log[line * per + i].word0,
					     __ATOMIC_RELAXED);
			if ((w0 & PMA_REC_EPOCH_MASK << PMA_REC_EPOCH_SHIFT) ==
				    epoch[j < f] &&
			    pma_booklog_decode(log, cap, k, &type, &payload,
					       &value) == 0)
				best = k;
		}
	return best;
}

/* slot k holds a write of record k that stopped between its two stores
 * (a process killed there; power lost before the line was flushed): one
 * word of k's lap, the other of the previous lap or 0 */
static int slot_torn(const struct pma_rec *log, uint32_t cap, uint64_t k)
{
	int a, b;

	slot_laps(log, cap, k, &a, &b);
	return a >= 0 && b >= 0 && a != b;
}

int pma_booklog_head_ok(const struct pma_rec *log, uint32_t cap, uint64_t h)
{
	unsigned type;
	uint64_t payload, value;

	if (h == 0 ||
	    pma_booklog_decode(log, cap, h - 1, &type, &payload, &value) == 0 ||
	    pma_booklog_decode(log, cap, h - 1 + cap, &type, &payload,
			       &value) == 0)
		return 1;
	/* the last record of a full log (its op of 1 or 2 records ends at
	 * h - 1 + cap) torn in the slot of record h - 1: found by kill -9
	 * of two threads with per-arena checkpoints (2026-12-07) */
	return slot_torn(log, cap, h - 1 + cap) &&
	       pma_booklog_find_tail(log, cap, h) + 2 >= h + cap;
}

int pma_booklog_type_unknown(const struct pma_rec *log, uint32_t cap,
			     uint64_t k, unsigned *ret_type)
{
	const struct pma_rec *slot =
		pma_booklog_slot((struct pma_rec *)log, cap, k);
	uint64_t w0 = __atomic_load_n(&slot->word0, __ATOMIC_RELAXED);
	uint64_t w1 = __atomic_load_n(&slot->word1, __ATOMIC_RELAXED);
	unsigned type = (unsigned)(w0 & ((1u << PMA_REC_TYPE_BITS) - 1));

	if (type != PMA_REC_NONE && type < PMA_REC_NTYPES)
		return 0;
	if ((w0 & PMA_REC_EPOCH_MASK << PMA_REC_EPOCH_SHIFT) !=
		    pma_booklog_lap_epoch(k / cap) ||
	    (w1 & PMA_REC_TAG_MASK) != pma_booklog_lap_tag(k / cap) ||
	    ((w0 >> PMA_REC_CSUM_SHIFT) & PMA_REC_CSUM_MASK) !=
		    pma_booklog_csum(w0, w1, k))
		return 0;
	*ret_type = type;
	return 1;
}

const char *pma_booklog_type_name(unsigned type)
{
	static const char *const names[PMA_REC_NTYPES] = {
		[PMA_REC_NONE] = "none",
		[PMA_REC_ALLOC] = "alloc",
		[PMA_REC_FREE] = "free",
		[PMA_REC_RFREE] = "rfree",
		[PMA_REC_SLAB_NEW] = "slab_new",
		[PMA_REC_EXT_ALLOC] = "ext_alloc",
		[PMA_REC_EXT_FREE] = "ext_free",
		[PMA_REC_EXT_LEN] = "ext_len",
		[PMA_REC_EXT_LFREE] = "ext_lfree",
		[PMA_REC_EXT_ALLOC1] = "ext_alloc1",
		[PMA_REC_EXT_FREE1] = "ext_free1",
		[PMA_REC_EXT_LFREE1] = "ext_lfree1",
		[PMA_REC_SLAB_FREE] = "slab_free",
		[PMA_REC_SYNC_FREE] = "sync_free",
		[PMA_REC_SLAB_MORPH] = "slab_morph",
		[PMA_REC_XFREE] = "xfree",
	};

	return type < PMA_REC_NTYPES ? names[type] : "unknown";
}

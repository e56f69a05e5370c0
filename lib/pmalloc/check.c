/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmalloc check: the version 7 checks of the words recovery trusts
 * (layout.h, "checks"): head_gen, the arena generations (version 8)
 * and heads, the root word, page map
 * entries and slab bitmap banks. Each is a crc32c of the word and of
 * where it lives. Pure functions: the callers store and flush.
 */
#include <stdint.h>

#include "pmalloc/internal.h"
#include "util/crc.h"

uint64_t pma_check_gen(uint64_t gen)
{
	uint64_t c = util_crc32c_3w(gen & PMA_GEN_MASK, PMA_CHECK_SEED, 1);

	return (gen & PMA_GEN_MASK) | (c | 0x8000) << PMA_GEN_BITS;
}

int pma_check_gen_decode(uint64_t word, uint64_t *ret_gen)
{
	if (pma_check_gen(word & PMA_GEN_MASK) != word)
		return -1;
	*ret_gen = word & PMA_GEN_MASK;
	return 0;
}

/* a 48-bit value of item idx with its 16-bit check on top */
static uint64_t check48(uint64_t v, unsigned idx, uint64_t seed)
{
	uint64_t c = util_crc32c_3w(v & PMA_GEN_MASK, idx, seed);

	return (v & PMA_GEN_MASK) | (c | 0x8000) << PMA_GEN_BITS;
}

uint64_t pma_check_lgen(uint64_t gen, unsigned arena)
{
	return check48(gen, arena, PMA_CHECK_SEED + 6);
}

int pma_check_lgen_decode(uint64_t word, unsigned arena, uint64_t *ret_gen)
{
	if (pma_check_lgen(word & PMA_GEN_MASK, arena) != word)
		return -1;
	*ret_gen = word & PMA_GEN_MASK;
	return 0;
}

uint64_t pma_check_cons(uint64_t n, unsigned slot)
{
	return check48(n, slot, PMA_CHECK_SEED + 11);
}

int pma_check_cons_decode(uint64_t word, unsigned slot, uint64_t *ret_n)
{
	if (!word) { /* never written */
		*ret_n = 0;
		return 0;
	}
	if (pma_check_cons(word & PMA_GEN_MASK, slot) != word)
		return -1;
	*ret_n = word & PMA_GEN_MASK;
	return 0;
}

uint64_t pma_check_head(uint64_t head, unsigned arena, uint64_t gen)
{
	return PMA_CHECK_MARK |
	       util_crc32c_3w(head,
			      (uint64_t)arena << 48 | (gen & PMA_GEN_MASK),
			      PMA_CHECK_SEED + 2);
}

uint64_t pma_check_root(uint64_t root_off)
{
	return PMA_CHECK_MARK |
	       util_crc32c_3w(root_off, PMA_ROOT_WORD_OFF, PMA_CHECK_SEED + 3);
}

uint64_t pma_check_pmap(uint64_t e, uint64_t page)
{
	uint64_t v = e & ~PMA_PMAP_CHECK_MASK;

	if (!v)
		return 0;
	return v | (util_crc32c_3w(v, page, PMA_CHECK_SEED + 4) & 0xfffULL)
			   << PMA_PMAP_CHECK_SHIFT;
}

uint64_t pma_check_bank(const uint64_t *line, uint64_t slab_off, unsigned bank)
{
	uint64_t c = util_crc32c_3w(line[0], line[1], line[2]);

	_Static_assert(PMA_SLAB_BANK_WORDS == 3,
		       "a bank's check covers 3 words");
	return PMA_CHECK_MARK |
	       util_crc32c_3w(c, slab_off << 4 | bank, PMA_CHECK_SEED + 5);
}

uint64_t pma_check_old(const uint64_t *words, uint64_t slab_off, unsigned bank)
{
	uint64_t c = util_crc32c_3w(words[0], words[1], words[2]);

	return PMA_CHECK_MARK |
	       util_crc32c_3w(c, slab_off << 4 | bank, PMA_CHECK_SEED + 6);
}

int pma_check_unsure(uint64_t check, const uint64_t *pre,
		     const uint64_t *unsure, uint64_t slab_off, unsigned bank,
		     int old)
{
	uint64_t (*fn)(const uint64_t *, uint64_t, unsigned) =
		old ? pma_check_old : pma_check_bank;
	uint64_t bits[PMA_SLAB_BANK_WORDS], sub;
	unsigned w, n = 0, i, j, pos[PMA_CHECK_UNSURE_TRY] = { 0 };
	uint64_t u;

	if (check == fn(pre, slab_off, bank))
		return 1;
	for (w = 0; w < PMA_SLAB_BANK_WORDS; w++)
		n += (unsigned)__builtin_popcountll(unsure[w] & ~pre[w]);
	if (!n)
		return 0;
	if (n > PMA_CHECK_UNSURE_TRY) {
		for (w = 0; w < PMA_SLAB_BANK_WORDS; w++)
			bits[w] = pre[w] | unsure[w];
		return check == fn(bits, slab_off, bank);
	}
	for (i = 0, w = 0; w < PMA_SLAB_BANK_WORDS; w++)
		for (u = unsure[w] & ~pre[w]; u; u &= u - 1)
			pos[i++] = w * 64 + (unsigned)__builtin_ctzll(u);
	for (sub = 1; sub < 1ULL << n; sub++) {
		for (w = 0; w < PMA_SLAB_BANK_WORDS; w++)
			bits[w] = pre[w];
		for (j = 0; j < n; j++)
			if (sub >> j & 1)
				bits[pos[j] / 64] |= 1ULL << (pos[j] % 64);
		if (check == fn(bits, slab_off, bank))
			return 1;
	}
	return 0;
}

int pma_check_prefix(uint64_t check, const uint64_t *start, const uint16_t *ops,
		     unsigned nops, uint64_t slab_off, unsigned bank, int old)
{
	uint64_t (*fn)(const uint64_t *, uint64_t, unsigned) =
		old ? pma_check_old : pma_check_bank;
	uint64_t bits[PMA_SLAB_BANK_WORDS];
	unsigned w, i, b;

	if (nops > PMA_CHECK_OPS)
		return 0;
	for (w = 0; w < PMA_SLAB_BANK_WORDS; w++)
		bits[w] = start[w];
	for (i = 0; i < nops; i++) {
		b = ops[i] & ~PMA_CHECK_OP_SET;
		if (b >= PMA_SLAB_BANK_WORDS * 64)
			return 0;
		if (ops[i] & PMA_CHECK_OP_SET)
			bits[b / 64] |= 1ULL << (b % 64);
		else
			bits[b / 64] &= ~(1ULL << (b % 64));
		if (check == fn(bits, slab_off, bank))
			return 1;
	}
	return 0;
}

int pma_check_olds(const void *slab_meta, uint64_t slab_off)
{
	const uint64_t *line;
	unsigned l;

	for (l = 0; l < PMA_NBANKS; l++) {
		line = (const uint64_t *)(const void *)((const char *)slab_meta +
							PMA_SLAB_BITMAP_OFF +
							l * PMA_LINE);
		if (line[PMA_SLAB_OLD_CHECK] !=
		    pma_check_old(line + PMA_SLAB_OLD_WORD, slab_off, l))
			return (int)l;
	}
	return -1;
}

static uint64_t *bank_line(void *slab_meta, unsigned bank)
{
	return (uint64_t *)(void *)((char *)slab_meta + PMA_SLAB_BITMAP_OFF +
				    bank * PMA_LINE);
}

void pma_check_bank_seal(void *slab_meta, uint64_t slab_off, unsigned bank)
{
	uint64_t *line = bank_line(slab_meta, bank);

	__atomic_store_n(&line[PMA_SLAB_BANK_CHECK],
			 pma_check_bank(line, slab_off, bank),
			 __ATOMIC_RELAXED);
}

void pma_check_bank_seal_word(void *slab_meta, uint64_t slab_off,
			      const uint64_t *word)
{
	uint64_t rel = (uint64_t)((const char *)word - (char *)slab_meta) -
		       PMA_SLAB_BITMAP_OFF;

	pma_check_bank_seal(slab_meta, slab_off, (unsigned)(rel / PMA_LINE));
}

int pma_check_banks(const void *slab_meta, uint64_t slab_off)
{
	unsigned l;

	for (l = 0; l < PMA_NBANKS; l++) {
		const uint64_t *line =
			(const uint64_t *)(const void *)((const char *)
								 slab_meta +
							 PMA_SLAB_BITMAP_OFF +
							 l * PMA_LINE);

		if (line[PMA_SLAB_BANK_CHECK] !=
		    pma_check_bank(line, slab_off, l))
			return (int)l;
	}
	return -1;
}

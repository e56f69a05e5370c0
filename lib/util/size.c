/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util size: byte sizes as users type them and as humans read them.
 * Grammar (suffixes case-insensitive):
 *   size := DIGITS [ "." DIGITS ] [ [ " " ] unit ]
 *   unit := "B" | P | P "iB" (binary, 1024^n) | P "B" (decimal, 1000^n)
 *   P    := K | M | G | T | P | E
 * Decimal only (no "0x"), no sign, no other whitespace. A fraction is
 * accepted only when the result is a whole number of bytes ("1.5G", "0.5K";
 * not "1.1K", not "1.5") and has at most 19 significant decimals. One space
 * before the unit lets util_size_format() output ("1.5 GiB") parse back.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/errmsg.h"
#include "util/size.h"

/* at most this many significant fraction digits: 10^19 still fits a u64 */
#define SIZE_FRAC_DIGITS_MAX 19
#define SIZE_UNIT_PREFIXES "kmgtpe"

struct size_num {
	uint64_t whole;
	uint64_t frac; /* fraction digits as an integer, trailing zeros cut */
	unsigned frac_digits;
	int overflow; /* whole part does not fit 64 bits */
};

typedef unsigned __int128 size_u128;

static int digit(char c)
{
	return c >= '0' && c <= '9';
}

/* the fraction digits at p..p+len, trailing zeros removed */
static int size_parse_frac(const char *p, size_t len, struct size_num *num)
{
	size_t i;

	while (len && p[len - 1] == '0')
		len--;
	if (len > SIZE_FRAC_DIGITS_MAX)
		return -EINVAL;
	for (i = 0; i < len; i++)
		num->frac = num->frac * 10 + (uint64_t)(p[i] - '0');
	num->frac_digits = (unsigned)len;
	return 0;
}

/* DIGITS [ "." DIGITS ]; *pp is moved past it */
static int size_parse_number(const char **pp, struct size_num *num)
{
	const char *p = *pp;
	const char *frac;
	uint64_t d;

	memset(num, 0, sizeof(*num));
	if (!digit(*p))
		return -EINVAL;
	for (; digit(*p); p++) {
		d = (uint64_t)(*p - '0');
		if (num->whole > (UINT64_MAX - d) / 10)
			num->overflow = 1;
		num->whole = num->whole * 10 + d;
	}
	if (*p == '.') {
		frac = ++p;
		while (digit(*p))
			p++;
		if (p == frac || size_parse_frac(frac, (size_t)(p - frac), num))
			return -EINVAL;
	}
	*pp = p;
	return 0;
}

/* the unit at p (maybe empty, maybe after one space) as a multiplier */
static int size_parse_unit(const char *p, uint64_t *ret_mult)
{
	const char *prefix;
	uint64_t mult = 1;
	unsigned n, i;

	if (*p == ' ' && *++p == '\0')
		return -EINVAL;
	*ret_mult = 1;
	if (*p == '\0' || (tolower((unsigned char)*p) == 'b' && !p[1]))
		return 0;
	prefix = strchr(SIZE_UNIT_PREFIXES, tolower((unsigned char)*p));
	if (!prefix)
		return -EINVAL;
	n = (unsigned)(prefix - SIZE_UNIT_PREFIXES) + 1;
	p++;
	if (*p == '\0' || strcasecmp(p, "ib") == 0) {
		*ret_mult = UINT64_C(1) << (10 * n);
		return 0;
	}
	if (strcasecmp(p, "b") != 0)
		return -EINVAL;
	for (i = 0; i < n; i++)
		mult *= 1000;
	*ret_mult = mult;
	return 0;
}

/* whole * mult + frac / 10^frac_digits * mult, exactly */
static int size_scale(const struct size_num *num, uint64_t mult,
		      uint64_t *ret_size)
{
	size_u128 part = (size_u128)num->frac * mult;
	uint64_t pow10 = 1, whole;
	unsigned i;

	for (i = 0; i < num->frac_digits; i++)
		pow10 *= 10;
	if (part % pow10)
		return -EINVAL;
	part /= pow10;
	if (num->overflow || num->whole > UINT64_MAX / mult)
		return -ERANGE;
	whole = num->whole * mult;
	if (part > UINT64_MAX - whole)
		return -ERANGE;
	*ret_size = whole + (uint64_t)part;
	return 0;
}

int util_size_parse(const char *s, uint64_t *ret_size)
{
	struct size_num num;
	const char *p = s;
	uint64_t mult;
	int ret;

	if (!s)
		return util_errmsg_set(EINVAL, "no size given");
	if (size_parse_number(&p, &num) || size_parse_unit(p, &mult))
		return util_errmsg_set(
			EINVAL,
			"invalid size '%s': expected a number with an optional unit (K, MiB, GB, ...)",
			s);
	ret = size_scale(&num, mult, ret_size);
	if (ret == -EINVAL)
		return util_errmsg_set(
			EINVAL,
			"invalid size '%s': not a whole number of bytes", s);
	if (ret == -ERANGE)
		return util_errmsg_set(
			ERANGE,
			"size '%s' is too large (maximum %" PRIu64 " bytes)", s,
			UINT64_MAX);
	return 0;
}

/* the remainder below one unit (1 << shift) in rounded thousandths */
static unsigned size_milli(uint64_t rem, unsigned shift)
{
	if (!shift)
		return 0;
	return (unsigned)(((size_u128)rem * 1000 +
			   (UINT64_C(1) << (shift - 1))) >>
			  shift);
}

/*
 * Largest binary unit not above size; the value is rounded to the nearest
 * 1/1000 of that unit, trailing zeros dropped, and a value that rounds up to
 * 1024 moves to the next unit ("1 GiB", not "1024 MiB").
 */
const char *util_size_format(uint64_t size, char *buf, size_t buf_size)
{
	static const char *const units[] = { "B",   "KiB", "MiB", "GiB",
					     "TiB", "PiB", "EiB" };
	unsigned k = 0, milli, decimals = 3;
	uint64_t whole;

	while (k < 6 && size >= UINT64_C(1) << (10 * (k + 1)))
		k++;
	whole = size >> (10 * k);
	milli = size_milli(size - (whole << (10 * k)), 10 * k);
	if (milli == 1000) {
		whole++;
		milli = 0;
	}
	if (whole == 1024 && k < 6) {
		whole = 1;
		k++;
	}
	if (!milli) {
		snprintf(buf, buf_size, "%" PRIu64 " %s", whole, units[k]);
		return buf;
	}
	while (milli % 10 == 0) {
		milli /= 10;
		decimals--;
	}
	snprintf(buf, buf_size, "%" PRIu64 ".%0*u %s", whole, (int)decimals,
		 milli, units[k]);
	return buf;
}

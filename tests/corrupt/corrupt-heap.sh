#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# TAP wrapper: a few hundred seeded corruption trials (tests/corrupt/corrupt-heap.c)
bin=${PMAD_BUILDDIR:-.}/tests/corrupt/corrupt-heap
trials=${PMAD_CORRUPT_TRIALS:-150}
echo "1..2"
n=0
for seed in 1 2; do
	n=$((n + 1))
	if out=$("$bin" --trials "$trials" --seed "$seed" 2>&1); then
		echo "ok $n - $trials corruption trials, seed $seed"
	else
		echo "not ok $n - $trials corruption trials, seed $seed"
	fi
	printf '%s\n' "$out" | sed 's/^/# /'
done

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# abba.sh: compare two pmabench builds on one row, pmalloc only, in pairs
# whose order alternates (A B, B A, A B, ...), so that neither build is
# always the one run first; prints the B/A throughput ratio of each pair
# and their median. On a VM whose speed drifts by tens of percent within
# minutes, compare within pairs, never sorted columns of separate runs.
#
#   bench/abba.sh [-n PAIRS] A_PMABENCH B_PMABENCH -- PMABENCH_ARGS...
#   e.g. bench/abba.sh -n 16 /tmp/old/bench/pmabench ./bench/pmabench \
#            -- -b larson-q -t 2 -m byte --ops 4M
set -eu

pairs=10
if [ "${1:-}" = "-n" ]; then
	pairs=$2
	shift 2
fi
if [ $# -lt 3 ] || [ "$3" != "--" ]; then
	echo "usage: $0 [-n PAIRS] A_PMABENCH B_PMABENCH -- PMABENCH_ARGS..." >&2
	exit 2
fi
a=$1
b=$2
shift 3
for bin in "$a" "$b"; do
	if [ ! -x "$bin" ]; then
		echo "$0: $bin: not an executable" >&2
		exit 2
	fi
done

# ops/s of one pmalloc run (the one row the arguments select)
rate() {
	bin=$1
	shift
	"$bin" -a pmalloc -j "$@" 2>/dev/null | sed -n 's/.*"ops_per_sec":\([0-9.]*\).*/\1/p' | head -n 1
}

i=1
ratios=""
while [ "$i" -le "$pairs" ]; do
	if [ $((i % 2)) -eq 1 ]; then
		ra=$(rate "$a" "$@")
		rb=$(rate "$b" "$@")
	else
		rb=$(rate "$b" "$@")
		ra=$(rate "$a" "$@")
	fi
	if [ -z "$ra" ] || [ -z "$rb" ]; then
		echo "$0: pair $i: a run printed no ops_per_sec" >&2
		exit 1
	fi
	r=$(awk -v x="$ra" -v y="$rb" 'BEGIN { printf "%.3f", y / x }')
	printf 'pair %d: A %.1fM  B %.1fM  B/A %s\n' "$i" \
		"$(awk -v x="$ra" 'BEGIN { print x / 1e6 }')" \
		"$(awk -v x="$rb" 'BEGIN { print x / 1e6 }')" "$r"
	ratios="$ratios $r"
	i=$((i + 1))
done
echo "$ratios" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk '
	{ v[NR] = $1 }
	END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
	      printf "median B/A over %d pairs: %.3f (min %.3f, max %.3f)\n", NR, m, v[1], v[NR] }'

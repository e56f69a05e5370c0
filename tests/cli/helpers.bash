# SPDX-License-Identifier: BSD-3-Clause
# Shared setup for the pmactl bats tests: bats-support/bats-assert, the
# build's cmd/ on PATH (make check sets PATH; by hand set PMAD_BUILDDIR),
# and helpers to make pools and patch their on-media bytes.
# Layout constants mirror lib/pool/layout.h.

load /usr/lib/bats/bats-support/load
load /usr/lib/bats/bats-assert/load

bats_require_minimum_version 1.5.0

if [ -n "${PMAD_BUILDDIR:-}" ]; then
	PATH="$PMAD_BUILDDIR/cmd:$PATH"
fi

PART_HDR_OFF=$((0x0000))
PART_HDR_CSUM_LEN=252       # crc32c of bytes [0, 252) at offset 252
POOL_HDR_A_OFF=$((0x2000))
POOL_HDR_B_OFF=$((0x4000))
POOL_HDR_CSUM_LEN=$((0x2000 - 4))
MAJOR_OFF=8                 # uint16 major after the 8-byte magic

common_setup() {
	command -v pmactl >/dev/null ||
		fail "pmactl not on PATH: set PMAD_BUILDDIR to the build directory"
	command -v jq >/dev/null || fail "jq is required"
	T="$BATS_TEST_TMPDIR"
}

# common_setup, plus WORKLOAD (tests/lib/pma-workload, a PMAlloc client)
# and CACHE_LINE persistence, for the PMAlloc suites
pmalloc_setup() {
	common_setup
	WORKLOAD="${PMAD_BUILDDIR:?set PMAD_BUILDDIR}/tests/lib/pma-workload"
	[ -x "$WORKLOAD" ] || fail "no $WORKLOAD: build it with make check"
	export PMEM2_FORCE_GRANULARITY=CACHE_LINE
}

# mkpool_size PATH SIZE: a one-part pool of SIZE, must succeed
mkpool_size() {
	run --separate-stderr pmactl create "$1" --size "$2"
	assert_success
}

# mkpool PATH [create options...]: a pool of 1 MiB parts, must succeed
mkpool() {
	local pool=$1
	shift
	run --separate-stderr pmactl create "$pool" --size 1M "$@"
	assert_success
}

# write a little-endian integer of nbytes at offset into file
put_le() {
	local file=$1 off=$2 nbytes=$3 value=$4 esc="" i
	for ((i = 0; i < nbytes; i++)); do
		esc+=$(printf '\\x%02x' $(((value >> (8 * i)) & 0xff)))
	done
	printf "$esc" | dd of="$file" bs=1 seek="$off" conv=notrunc status=none
}

# read one byte at offset (decimal)
get_byte() {
	od -An -tu1 -j "$2" -N1 "$1" | tr -d ' '
}

# flip every bit of the byte at offset
flip_byte() {
	local b
	b=$(get_byte "$1" "$2")
	put_le "$1" "$2" 1 $((b ^ 0xff))
}

# crc32c (Castagnoli, as lib/util/crc.c) of len bytes at offset
crc32c() {
	local file=$1 off=$2 len=$3 crc=$((0xffffffff)) i j c b
	local -a table
	for ((i = 0; i < 256; i++)); do
		c=$i
		for ((j = 0; j < 8; j++)); do
			if ((c & 1)); then c=$(((c >> 1) ^ 0x82F63B78)); else c=$((c >> 1)); fi
		done
		table[i]=$c
	done
	for b in $(od -An -v -tu1 -j "$off" -N "$len" "$file"); do
		crc=$((table[(crc ^ b) & 0xff] ^ (crc >> 8)))
	done
	echo $((crc ^ 0xffffffff))
}

# recompute the checksum of a header at off whose checksum follows len bytes
fix_csum() {
	local file=$1 off=$2 len=$3
	put_le "$file" $((off + len)) 4 "$(crc32c "$file" "$off" "$len")"
}

# set the format major of part 0's part header and both pool header copies,
# with valid checksums, so only the version is wrong
set_major() {
	local file=$1 major=$2 off
	put_le "$file" $((PART_HDR_OFF + MAJOR_OFF)) 2 "$major"
	fix_csum "$file" "$PART_HDR_OFF" "$PART_HDR_CSUM_LEN"
	for off in "$POOL_HDR_A_OFF" "$POOL_HDR_B_OFF"; do
		put_le "$file" $((off + MAJOR_OFF)) 2 "$major"
		fix_csum "$file" "$off" "$POOL_HDR_CSUM_LEN"
	done
}

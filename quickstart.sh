#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# quickstart.sh -- set up a fresh Debian 12 machine and run pmad.
#
#   ./quickstart.sh demo    install packages, build, run the demo on a
#                           file-backed pool in /dev/shm (tmpfs)
#   ./quickstart.sh test    install packages, build, run every test suite:
#                           make check (crash-sim build), the unit tests under
#                           ASan+UBSan, the 2-node NVDIMM VM suite,
#                           check-format, lint (cppcheck, clang-tidy),
#                           a benchmark smoke run and
#                           distcheck (the unit tests and the bats files
#                           that read the tree's files); the last line is
#                           "N passed, N failed[, N skipped]"
#
# Options (after the verb): --werror (configure --enable-werror),
# --no-vm (skip the VM suite), --no-asan (skip the sanitizer build),
# --no-distcheck, -j N (parallel make, default: nproc).
# Build trees: build/, build-asan/.
set -euo pipefail
cd "$(dirname "$0")"
top=$PWD

verb=${1:-}
[ $# -gt 0 ] && shift
werror="" vm=1 asan=1 distcheck=1 jobs=$(nproc)
while [ $# -gt 0 ]; do
	case "$1" in
	--werror) werror=--enable-werror ;;
	--no-vm) vm=0 ;;
	--no-asan) asan=0 ;;
	--no-distcheck) distcheck=0 ;;
	-j) jobs=$2; shift ;;
	-h|--help) awk 'NR >= 3 && !/^#/{exit} NR >= 3{sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
	*) echo "quickstart.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done
case "$verb" in
demo|test) ;;
-h|--help) awk 'NR >= 3 && !/^#/{exit} NR >= 3{sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
*) echo "usage: ./quickstart.sh demo|test [options] (try --help)" >&2; exit 2 ;;
esac

PKGS=(build-essential autoconf automake libtool pkg-config git
	libpmem2-dev libpmemobj-dev libndctl-dev libdaxctl-dev libnuma-dev
	libyaml-dev libjson-c-dev uuid-dev libcmocka-dev libjemalloc-dev
	libsystemd-dev systemd fuse3 libfuse3-dev fio
	bats bats-assert bats-support jq asciidoctor clang libclang-rt-14-dev
	clang-format clang-tidy cppcheck util-linux procps)

install_packages() {
	local missing=() p sudo=""
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" = 0 ] || sudo=sudo
	echo "quickstart: installing ${missing[*]}" >&2
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null
}

# build DIR CONFIGURE-ARGS...: out-of-tree build
build() {
	local dir=$1; shift
	mkdir -p "$dir"
	(cd "$dir" && { [ -f Makefile ] || "$top/configure" -q "$@"; } &&
		make -s -j"$jobs")
}

install_packages
[ -x configure ] || ./autogen.sh >/dev/null 2>&1

if [ "$verb" = demo ]; then
	build build $werror
	exec "$top/tests/demo.sh" "$top/build"
fi

# test: each suite appends "passed failed skipped" to $counts
counts=$(mktemp)
trap 'rm -f "$counts"' EXIT

# counts from automake's test-suite.log summary of a build dir; a missing
# log (the suite could not run) counts as one failure
suite_counts() {
	[ -f "$1/test-suite.log" ] || { echo "0 1 0"; return; }
	awk '/^# PASS:/{p=$3} /^# XFAIL:/{p+=$3} /^# SKIP:/{s=$3}
	     /^# FAIL:/{f=$3} /^# XPASS:/{f+=$3} /^# ERROR:/{f+=$3}
	     END{print p+0, f+0, s+0}' "$1/test-suite.log"
}

status=0
build build --enable-crash-sim $werror
(cd build && make -s -j"$jobs" check) || status=1
suite_counts build >>"$counts"

if [ "$asan" = 1 ]; then
	build build-asan --enable-crash-sim --enable-asan --enable-ubsan \
		--enable-debug --disable-docs $werror
	unit=$(cd build-asan && make -s print-unit-tests)
	# the crash sweeps run fsck on every 8th image here (every image in
	# the plain build above)
	(cd build-asan && ASAN_OPTIONS=detect_leaks=1 CRASH_FSCK_EVERY=8 \
		make -s -j"$jobs" check TESTS="$unit") || status=1
	suite_counts build-asan >>"$counts"
fi

if [ "$vm" = 1 ]; then
	vmlog=build/check-vm.log
	(cd build && make -s check-vm) 2>&1 | tee "$vmlog" || status=1
	# no TAP result at all (the VM did not boot) counts as one failure
	awk '/^ok .*# SKIP/{s++; next} /^ok /{p++} /^not ok /{f++}
	     END{if (p + f + s == 0) f = 1; print p+0, f+0, s+0}' \
		"$vmlog" >>"$counts"
fi

# whole-tree checks, one result each
one_check() {
	local name=$1; shift
	if "$@" >"build/$name.log" 2>&1; then
		echo "ok - $name"; echo "1 0 0" >>"$counts"
	else
		echo "not ok - $name (see build/$name.log)"; tail -20 "build/$name.log"
		echo "0 1 0" >>"$counts"; status=1
	fi
}
one_check check-format make -C build check-format
one_check lint make -C build lint
one_check bench-smoke make -C build bench-smoke
# distcheck builds every test program from the tarball and runs the C
# unit tests and the bats files that read the tree's own files (man pages,
# finding codes): what a tarball missing a file would fail; the plain
# build above ran every suite on the same sources (CI's 30 minutes)
quick=$(make -s -C build print-unit-tests | tr ' ' '\n' |
	grep -v '^tests/crash/' | tr '\n' ' ')
quick="$quick tests/cli/pmactl.bats tests/cli/fsck-audit.bats"
quick="$quick tests/cli/create.bats"
[ "$distcheck" = 1 ] &&
	one_check distcheck make -C build -j"$jobs" distcheck TESTS="$quick"

read -r passed failed skipped < <(awk '{p+=$1; f+=$2; s+=$3}
	END{print p+0, f+0, s+0}' "$counts")
[ "$failed" -eq 0 ] || status=1
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
exit $status

#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# The finding codes of pmactl fsck (issue 20: "man page pmactl-fsck(1)
# with every finding code"), audited from the sources: every code the
# code can emit (a "word-word" string literal of the fsck sources) is a
# term of man/pmactl-fsck.1.adoc, and every term of the man page is a
# code of the sources. A new finding without its man entry, or a man
# entry whose code is gone or renamed, fails here.

load helpers

setup() {
	[ -n "${PMAD_SRCDIR:-}" ] || PMAD_SRCDIR="$BATS_TEST_DIRNAME/../.."
	S="$PMAD_SRCDIR"
	[ -f "$S/man/pmactl-fsck.1.adoc" ] || fail "no sources at $S"
	T="$BATS_TEST_TMPDIR"
}

# the fsck sources: the checks, the repairs and the command
fsck_sources() {
	local f
	for f in "$S"/lib/*/fsck*.c "$S/cmd/fsck.c" "$S/daemon/fsck.c"; do
		[ -f "$f" ] && echo "$f"
	done
}

# every finding and repair note code in the sources, one a line: string
# literals of lowercase words joined by '-' (option names that match
# that pattern are not codes: listed here)
source_codes() {
	local notcodes='^(dry-run)$'
	fsck_sources | xargs grep -ho '"[a-z][a-z0-9]*\(-[a-z0-9]\+\)\+"' |
		tr -d '"' | grep -Ev "$notcodes" | sort -u
}

# every code the man page defines: the *code* terms of its definition
# lists (lines "*code*[, *code*...] (severity)::")
man_codes() {
	grep -E '^\*[a-z].*::$' "$S/man/pmactl-fsck.1.adoc" |
		grep -o '\*[a-z][a-z0-9]*\(-[a-z0-9]\+\)\+\*' | tr -d '*' |
		sort -u
}

@test "the audit finds the sources and the man page's codes" {
	source_codes >"$T/src"
	man_codes >"$T/man"
	# both lists are real: the codes every part of fsck emits
	[ "$(wc -l <"$T/src")" -gt 80 ] || fail "source codes: $(cat "$T/src")"
	[ "$(wc -l <"$T/man")" -gt 80 ] || fail "man codes: $(cat "$T/man")"
	grep -qx pool-hdr-checksum "$T/src" || fail "no pool code in sources"
	grep -qx log-record-type "$T/src" || fail "no heap code in sources"
	grep -qx hdpm-block-shared "$T/src" || fail "no hdpm code in sources"
	grep -qx repair-drops-record "$T/src" || fail "no repair note"
}

@test "every finding code the sources can emit is in pmactl-fsck(1)" {
	source_codes >"$T/src"
	man_codes >"$T/man"
	run comm -23 "$T/src" "$T/man"
	assert_success
	[ -z "$output" ] ||
		fail "codes missing from man/pmactl-fsck.1.adoc: $output"
}

@test "every code pmactl-fsck(1) lists exists in the sources" {
	source_codes >"$T/src"
	man_codes >"$T/man"
	run comm -13 "$T/src" "$T/man"
	assert_success
	[ -z "$output" ] ||
		fail "man codes no source emits: $output"
}

@test "every code the man page lists has a severity or is a repair note" {
	local line
	while IFS= read -r line; do
		case "$line" in
		*"(info"* | *"(warning"* | *"(error"* | "*repair-"*) ;;
		*) fail "no severity: $line" ;;
		esac
	done < <(grep -E '^\*[a-z].*::$' "$S/man/pmactl-fsck.1.adoc")
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pool fsck: the consistency check of a pool's format (part headers,
 * both pool header copies, UUID links, generations, region table), and
 * the finding type every checker layer (pool, pmalloc) reports through.
 * Checkers never print and never write the pool: each finding goes to the
 * caller's callback, with a stable code (documented in pmactl-fsck(1);
 * codes are API: add, never rename), a severity and a one-line message
 * naming the structure and its offset.
 */
#ifndef PMAD_POOL_FSCK_H
#define PMAD_POOL_FSCK_H

#include <stdint.h>

enum pool_fsck_severity {
	POOL_FSCK_INFO, /* a fact worth knowing, not damage */
	POOL_FSCK_WARNING, /* a state open accepts or completes itself */
	POOL_FSCK_ERROR, /* damage: the pool is inconsistent */
};

/* what --repair can do about a finding (pool_fsck_finding.flags) */
enum pool_fsck_flags {
	POOL_FSCK_REPAIRABLE = 1 << 0, /* this one is provably repairable */
	POOL_FSCK_ADVANCED = 1 << 1, /* only destructively (--advanced) */
};

struct pool_fsck_finding {
	const char *code; /* stable, e.g. "pool-hdr-checksum" */
	enum pool_fsck_severity severity;
	unsigned part; /* the part the structure is in */
	uint64_t off; /* its byte offset in that part */
	const char *message; /* one line, names the structure */
	unsigned flags; /* POOL_FSCK_REPAIRABLE, POOL_FSCK_ADVANCED */
};

/* called once per finding; 0 goes on, a negative errno stops the check
 * (the checker returns it) */
typedef int (*pool_fsck_fn)(const struct pool_fsck_finding *f, void *arg);

/* a callback and what it was told so far */
struct pool_fsck_sink {
	pool_fsck_fn fn;
	void *arg;
	unsigned long counts[3]; /* findings per severity */
	int rc; /* the first negative return of fn, else 0 */
	/* progress of a long check (may be NULL): done of total bytes of
	 * the structures walked so far */
	void (*progress)(uint64_t done, uint64_t total, void *arg);
	void *progress_arg;
};

/* format and report one finding; returns sink->rc */
int pool_fsck_report(struct pool_fsck_sink *sink, const char *code,
		     enum pool_fsck_severity severity, unsigned part,
		     uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* the same with pool_fsck_finding.flags */
int pool_fsck_report_flags(struct pool_fsck_sink *sink, const char *code,
			   enum pool_fsck_severity severity, unsigned flags,
			   unsigned part, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

const char *pool_fsck_severity_name(enum pool_fsck_severity severity);

/*
 * Check the format of the pool whose part 0 is at path, reading the parts
 * with pread (never mapped, never written; part 0 is locked shared, so a
 * writer holding the pool gives -EBUSY). In order: part 0's header, both
 * pool header copies (magic, version, checksum, tables, generation, which
 * one open would choose), the part header of every part (UUID links,
 * index, size, the file holds what the header claims), the region table
 * (bounds, overlaps), and last that pool_open(POOL_OPEN_RDONLY) accepts
 * what the checks passed. Returns 0 when the check ran (its findings went
 * to sink), a negative errno with a message when it could not (part 0
 * cannot be opened: -ENOENT, -EACCES ...; -EBUSY; -ENOMEM) or when the
 * callback stopped it.
 */
int pool_fsck(const char *path, struct pool_fsck_sink *sink);

/* pool_fsck_flags: flags for the pool's owner */
enum pool_fsck_run_flags {
	/* the caller holds the pool open (pmad, its exclusive lock) and
	 * quiesced: no lock is taken and no open tried (both would fail);
	 * the files are only read */
	POOL_FSCK_HELD = 1 << 0,
};
int pool_fsck_flags(const char *path, struct pool_fsck_sink *sink,
		    unsigned flags);
/* pool_fsck_flags with the path of every part given, as pool_open_parts
 * takes them (paths[0] part 0's; parts past npaths at their path hints):
 * a copy of a pool's files elsewhere (crash images, backups) */
int pool_fsck_parts(const char *const *paths, unsigned npaths,
		    struct pool_fsck_sink *sink, unsigned flags);

#endif

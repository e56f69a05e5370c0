/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm-env: the fixture the HDPM unit tests share. A fresh PMAlloc heap
 * in a /dev/shm file, an HDPM file system mounted on it, and the calls
 * to unmount, remount (close and reopen the heap: DRAM state rebuilt
 * from PM) and remove it. Mount failures are cmocka assertions.
 */
#ifndef PMAD_TESTS_HDPM_ENV_H
#define PMAD_TESTS_HDPM_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "hdpm.h"
#include "pmalloc.h"

struct hdpm_env {
	char path[96];
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	unsigned flags; /* for hdpm_mount */
};

/*
 * Create NAME's heap of SIZE bytes in /dev/shm and, if MOUNT, mount it
 * with FLAGS. For a cmocka setup: returns -1 on failure.
 */
int hdpm_env_init(struct hdpm_env *e, const char *name, uint64_t size,
		  unsigned flags, int mount);
void hdpm_env_mount(struct hdpm_env *e);
void hdpm_env_unmount(struct hdpm_env *e);
void hdpm_env_remount(struct hdpm_env *e);
/* unmount (if mounted), close and remove the heap file */
void hdpm_env_fini(struct hdpm_env *e);

/* a cmocka setup: *state a new env (hdpm_env_init's arguments) */
int hdpm_env_setup(void **state, const char *name, uint64_t size,
		   unsigned flags, int mount);
/* its teardown: hdpm_env_fini, freed */
int hdpm_env_teardown(void **state);

/* the next number of the xorshift sequence r */
uint64_t hdpm_env_rand(uint64_t *r);
/* len random bytes from r */
void hdpm_env_fill_rand(char *buf, size_t len, uint64_t *r);
/* the heap's used bytes (pma_heap_stats asserted) */
uint64_t hdpm_env_used_bytes(struct pma_heap *heap);

/* a file of a stress test's writer and its DRAM model */
#define HDPM_ENV_PRIV_MAX (8 * 4096)
struct hdpm_env_priv {
	char data[HDPM_ENV_PRIV_MAX];
	uint64_t size;
};

/*
 * One random op of 20 kinds on f and its model p: below small, a write
 * of 1 to 300 bytes anywhere; then till 17 a full page; till 19 an
 * extending write of 1 to extend_max bytes at the end (at 0 if it would
 * not fit); else a truncate anywhere. 0 or -1 (the file op failed).
 */
int hdpm_env_priv_op(struct hdpm_env_priv *p, struct hdpm_file *f,
		     unsigned small, unsigned extend_max, uint64_t *r);
/* f holds exactly p's bytes: 0, else -1 */
int hdpm_env_priv_check(const struct hdpm_env_priv *p, struct hdpm_file *f);

#endif

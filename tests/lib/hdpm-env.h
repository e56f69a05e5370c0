/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm-env: the fixture the HDPM unit tests share. A fresh PMAlloc heap
 * in a /dev/shm file, an HDPM file system mounted on it, and the calls
 * to unmount, remount (close and reopen the heap: DRAM state rebuilt
 * from PM) and remove it. Mount failures are cmocka assertions.
 */
#ifndef PMAD_TESTS_HDPM_ENV_H
#define PMAD_TESTS_HDPM_ENV_H

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

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A fresh directory under /dev/shm for the pool files of one cmocka test
 * (its fixture's setup makes it, its teardown removes it with every file
 * in it: parts, asides, a crash image). Include after cmocka.h.
 */
#ifndef TEST_DIR_H
#define TEST_DIR_H

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* dir (dlen bytes) := "/dev/shm/PREFIX.XXXXXX", made; path (plen bytes,
 * unless NULL) := "DIR/FILE" */
static inline void test_dir_make(char *dir, size_t dlen, char *path,
				 size_t plen, const char *prefix,
				 const char *file)
{
	int n = snprintf(dir, dlen, "/dev/shm/%s.XXXXXX", prefix);

	assert_true(n > 0 && (size_t)n < dlen);
	assert_non_null(mkdtemp(dir));
	if (!path)
		return;
	n = snprintf(path, plen, "%s/%s", dir, file);
	assert_true(n > 0 && (size_t)n < plen);
}

/* every file in dir, then dir itself (no subdirectories expected) */
static inline void test_dir_remove(const char *dir)
{
	char p[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		(void)unlink(p);
	}
	if (d)
		closedir(d);
	(void)rmdir(dir);
}

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl's local HDPM and log ops (files.c), the local seam's files, log
 * and gc (seam.h). Each returns the exit status after reporting any error.
 */
#ifndef PMAD_CMD_FILES_H
#define PMAD_CMD_FILES_H

#include <json-c/json.h>

#include "builtin.h"

struct files_view;

/* open the heap and its file system read-only (nothing is written) */
int cmd_files_open(const struct cmd_ctx *ctx, const char *path,
		   struct files_view **ret_view);
/* accepts NULL */
void cmd_files_close(struct files_view *v);

/* the file system (with_pages: and its page logs) as a document */
int cmd_local_files(struct cmd_ctx *ctx, const char *path, int with_pages,
		    struct json_object **ret_doc);
/* the bookkeeping-log records not checkpointed (arena -1: all) */
int cmd_local_log(struct cmd_ctx *ctx, const char *path, long part, long arena,
		  struct json_object **ret_doc);
/* a gc pass on the heap, opened for writing; its report */
int cmd_local_gc(struct cmd_ctx *ctx, const char *path,
		 struct json_object **ret_doc);

#endif

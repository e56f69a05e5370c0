/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl views of the HDPM file system in a pool's heap (files.c): for
 * inspect --files, log --files and gc. Each returns the exit status after
 * reporting any error.
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
/* add "hdpm": {the file system and its files} to root */
int cmd_files_json(const struct cmd_ctx *ctx, const char *path,
		   struct json_object *root);
/* the file system and its files as text */
int cmd_files_print(const struct cmd_ctx *ctx, const char *path);
/* every page log: text, or one JSON document with ctx->json */
int cmd_files_log(const struct cmd_ctx *ctx, const char *path);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl printers of the seam's JSON documents (seam.h), as text: the same
 * text whether the document came from a pool opened here or from pmad.
 * Documents for text output are built without VIEW_HUMAN (sizes are
 * integers). Each returns 0 or -ENOMEM / -EIO / -EPROTO (a document
 * without the keys it needs).
 */
#ifndef PMAD_CMD_SHOW_H
#define PMAD_CMD_SHOW_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

/* inspect: header, granularity, parts and regions (lib/view's pool) */
int cmd_show_pool(struct json_object *doc);
/* inspect --heap: the "heap" object of doc, when present */
int cmd_show_heap(struct json_object *doc);
/* the "slabs" object (inspect --slabs), if any */
int cmd_show_slabs(struct json_object *doc);
/* inspect --numa: the "numa" object of doc (the heap's parts) */
int cmd_show_numa(struct json_object *doc);
/* list: the pools pmad serves */
int cmd_show_list(struct json_object *doc);
/* stat: per pool usage, checkpoints, clients and services */
int cmd_show_stat(struct json_object *doc);
/* stat --prometheus: node_exporter textfile collector format */
int cmd_show_prometheus(struct json_object *doc);

/* inspect --files: the "hdpm" object of doc, when present */
int cmd_show_files(struct json_object *doc);
/* log --files: the file system's page logs */
int cmd_show_page_logs(struct json_object *doc);
/* log: the bookkeeping-log records */
int cmd_show_log(struct json_object *doc);
/* gc: the pass's report */
int cmd_show_gc(struct json_object *doc);

/*
 * Print doc (and drop it; NULL: nothing): with ctx->json as it is,
 * else through show. rc is the op's exit status, returned unless printing
 * fails.
 */
struct cmd_ctx;
int cmd_doc_print(const struct cmd_ctx *ctx, int rc, struct json_object *doc,
		  int (*show)(struct json_object *doc));

/* JSON accessors: NULL / 0 when the key is missing */
const char *cmd_jstr(struct json_object *o, const char *key);
uint64_t cmd_ju64(struct json_object *o, const char *key);
struct json_object *cmd_jobj(struct json_object *o, const char *key);
/* the length of an array; 0 for NULL or not an array */
size_t cmd_jlen(struct json_object *arr);

#endif

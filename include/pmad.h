/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libpmad: the client library of pmad, the pool daemon. A process
 * connects to pmad's control socket, opens a pool pmad serves, and gets a
 * PMAlloc heap (pmalloc.h) on which every pma_* call works, pma_root
 * included; allocation and free run in this process, without a round
 * trip to pmad. pmad checks the caller's uid/gid (SO_PEERCRED) against
 * the pool's owner, group and mode: opening needs read and write.
 *
 * Sharing (this version): pmad grants a pool to one process at a time.
 * While a client has it open, pmad stays away from the heap and another
 * client's pmad_pool_open fails with -EBUSY naming the holder. When the
 * client closes the pool, or its connection goes away (the process
 * exits or is killed), pmad opens the heap again and recovery runs:
 * what the client committed stays, what it had not committed vanishes.
 * Shared attachment by several processes comes with region leases.
 * See libpmad(3).
 *
 * Errors are negative errno values; pmad_errormsg() says what failed.
 */
#ifndef PMAD_H
#define PMAD_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PMAD_API __attribute__((visibility("default")))
#define PMAD_WUR __attribute__((warn_unused_result))
#else
#define PMAD_API
#define PMAD_WUR
#endif

struct pmad_client;
struct pma_heap;

/*
 * Connect to pmad at socket_path; NULL: $PMAD_SOCKET, else
 * $XDG_RUNTIME_DIR/pmad/pmad.sock for a user that has one, else
 * /run/pmad/pmad.sock. -ENOENT or -ECONNREFUSED when no pmad serves
 * there, -ENAMETOOLONG, -ENOMEM.
 */
PMAD_API PMAD_WUR int pmad_connect(const char *socket_path,
				   struct pmad_client **ret_client);

/* close every heap still open through client (pmad_pool_close) and the
 * connection; accepts NULL */
PMAD_API void pmad_disconnect(struct pmad_client *client);

/*
 * Open the pool named pool (as pmactl list shows it): pmad sends the
 * pool's descriptors, which are mapped here; recovery runs if needed.
 * -ENOENT: no such pool; -EACCES: the pool's mode denies read and write
 * to this uid/gid; -EBUSY: another process has it open (the message
 * names its pid); -EALREADY: already open through this client;
 * -ECONNRESET: pmad went away; -EPROTO, -EPROTONOSUPPORT: a reply this
 * library does not understand; plus the errors of pma_heap_open.
 */
PMAD_API PMAD_WUR int pmad_pool_open(struct pmad_client *client,
				     const char *pool,
				     struct pma_heap **ret_heap);

/*
 * Close a heap pmad_pool_open returned (pma_heap_close: checkpoint and
 * unmap) and give the pool back to pmad. No other call may be running on
 * the heap. -EINVAL if heap was not opened through client; the heap is
 * closed even when pmad's answer is an error.
 */
PMAD_API int pmad_pool_close(struct pmad_client *client, struct pma_heap *heap);

/* the last error message of this thread ("" if none) */
PMAD_API const char *pmad_errormsg(void);

#ifdef __cplusplus
}
#endif

#endif

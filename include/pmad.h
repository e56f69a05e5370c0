/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libpmad: the client library of pmad, the pool daemon. A process
 * connects to pmad's control socket, opens a pool pmad serves, and gets a
 * PMAlloc heap (pmalloc.h) on which every pma_* call works, pma_root
 * included; allocation and free run in this process, without a round
 * trip to pmad. pmad checks the caller's uid/gid (SO_PEERCRED) against
 * the pool's owner, group and mode: opening needs read and write.
 *
 * Sharing: a pool has parts x K heap regions (pmactl pool create
 * --regions K). Each pmad_pool_open gets free regions of its own (one per
 * part) and opens the heap with them (a region mask): up to K clients
 * share the pool, each allocating in its regions; a block of another
 * client's region is freed through a free ring that its holder applies.
 * When a client closes the pool its regions are free again; when its
 * connection goes away (the process exits or is killed) pmad recovers its
 * regions while the others go on: what it committed stays, what it had
 * not committed vanishes. See libpmad(3).
 *
 * Errors are negative errno values; pmad_errormsg() says what failed.
 */
#ifndef PMAD_H
#define PMAD_H

#include <stdint.h>

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
 * Create a pool named pool of size bytes (one part, one heap region, the
 * caller's uid and gid, pmad's default mode) in pmad's state directory,
 * as pmactl --socket S create does; the pool is closed when this
 * returns. -EEXIST: a pool of that name exists; -EINVAL: an empty name,
 * size 0 or over 2^63-1, or a name or size pmad refuses (the message
 * says why); -ENOSPC; -ECONNRESET: pmad went away.
 */
PMAD_API PMAD_WUR int pmad_pool_create(struct pmad_client *client,
				       const char *pool, uint64_t size);

/*
 * Open the pool named pool (as pmactl list shows it): pmad grants free
 * heap regions and sends descriptors of the pool's parts, which are
 * mapped here with those regions (their recovery runs if needed).
 * -ENOENT: no such pool; -EACCES: the pool's mode denies read and write
 * to this uid/gid; -EBUSY: every region is held by other clients (the
 * message names one's pid); -EALREADY: already open through this client;
 * -ECONNRESET: pmad went away; -EPROTO, -EPROTONOSUPPORT: a reply this
 * library does not understand; plus the errors of pma_heap_open.
 */
PMAD_API PMAD_WUR int pmad_pool_open(struct pmad_client *client,
				     const char *pool,
				     struct pma_heap **ret_heap);

/*
 * Close a heap pmad_pool_open returned (pma_heap_close: checkpoint and
 * unmap, the region locks released) and give its regions back to pmad.
 * No other call may be running on the heap. -EINVAL if heap was not
 * opened through client; the heap is closed even when pmad's answer is
 * an error; 0 if pmad went away meanwhile (the regions are free).
 */
PMAD_API int pmad_pool_close(struct pmad_client *client, struct pma_heap *heap);

/*
 * More room: pmad leases this client one more free region per part of
 * the pool heap is open on, and heap takes them (pma_heap_add_regions)
 * while other threads go on allocating and freeing on it. An allocation
 * that finds the heap's regions full does this by itself (see
 * pmad_client_set_grow) and returns -ENOMEM only when no region of the
 * pool is free. The regions go back with pmad_pool_close, or when the
 * client dies.
 * -EBUSY: every region of the pool is held; -EINVAL: heap was not opened
 * through client; -ECONNRESET; or pma_heap_add_regions' errors (then the
 * leased regions stay leased but unused until the close).
 */
PMAD_API PMAD_WUR int pmad_pool_grow(struct pmad_client *client,
				     struct pma_heap *heap);
/*
 * on = 1 (the default): an allocation on a heap of this client that
 * finds its regions full leases more (pmad_pool_grow) and goes on; 0: it
 * returns -ENOMEM, leaving the pool's free regions to other clients. For
 * every heap of the client, from the next allocation on. 0 or -EINVAL.
 */
PMAD_API PMAD_WUR int pmad_client_set_grow(struct pmad_client *client, int on);

/* what pmad counts of a pool's clients (pmactl list shows it too) */
struct pmad_pool_stats {
	uint64_t attaches; /* pmad_pool_open grants so far */
	uint64_t client_recoveries; /* recoveries of the regions of a
				       client that went away without
				       pmad_pool_close */
	uint64_t last_recovery_us; /* how long the last of those took in
				      pmad, microseconds (0: none yet) */
};

/*
 * Read pmad's counters of the pool named pool into *ret_stats (since pmad
 * started). -ENOENT: no such pool; -ECONNRESET: pmad went away; -EPROTO:
 * a reply this library does not understand; -EINVAL: a NULL argument.
 */
PMAD_API PMAD_WUR int pmad_pool_stats(struct pmad_client *client,
				      const char *pool,
				      struct pmad_pool_stats *ret_stats);

/* the last error message of this thread ("" if none) */
PMAD_API const char *pmad_errormsg(void);

#ifdef __cplusplus
}
#endif

#endif

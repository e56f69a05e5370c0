/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm names: the DRAM name index. The namespace lives in the inode table
 * (each inode names its parent and holds its own name); this index maps
 * (parent, name) to the inode number so that a path component is found
 * by its hash instead of a scan of the table. It is DRAM only: built at
 * mount from the table, and kept in step by namei.c, which takes an
 * inode out before an operation changes it and puts it back from what
 * the table says after the operation (committed or undone).
 *
 * Open addressing with linear probing over a power-of-two table at least
 * twice the inode count (so it never fills and never grows); a slot holds
 * the inode number + 1 (0: empty) and the top 32 bits of its hash. A
 * removal shifts the following entries of its run back (no tombstones).
 * Equal hashes are told apart by comparing the names themselves.
 *
 * Each directory also keeps its entries on a doubly linked list (per
 * inode next/prev, per directory first), so that readdir costs the
 * directory's entries, not the inode table.
 */
#include <stdlib.h>
#include <string.h>

#include "hdpm/internal.h"
#include "util/errmsg.h"

/* a slot: ino + 1 in the low half (0: empty), hash >> 32 in the high */
#define SLOT_INO(s) ((uint32_t)(s))
#define SLOT_TAG(s) ((uint32_t)((s) >> 32))

uint64_t hdpm_names_hash(const struct hdpm_names *nx, uint64_t dir,
			 const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (dir * 0x9e3779b97f4a7c15ULL);
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)name[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return (h & nx->hash_mask) | nx->hash_set;
}

static const char *entry_name(struct hdpm_fs *fs, const struct hdpm_inode *in)
{
	const char *name = in->name_off ? hdpm_direct(fs, in->name_off) : NULL;

	return name ? name : "";
}

static size_t home(const struct hdpm_names *nx, uint64_t h)
{
	/* the low bits pick the slot, the high ones are the tag */
	return (size_t)(h & (nx->cap - 1));
}

int hdpm_names_find(struct hdpm_fs *fs, uint64_t dir, const char *name,
		    size_t len, uint64_t *ret_ino)
{
	struct hdpm_names *nx = &fs->names;
	uint64_t h = hdpm_names_hash(nx, dir, name, len), s;
	const struct hdpm_inode *in;
	const char *n;
	size_t i;

	for (i = home(nx, h); (s = nx->slots[i]) != 0;
	     i = (i + 1) & (nx->cap - 1)) {
		__atomic_add_fetch(&nx->probes, 1, __ATOMIC_RELAXED);
		if (SLOT_TAG(s) != (uint32_t)(h >> 32))
			continue;
		in = hdpm_inode(fs, SLOT_INO(s) - 1);
		if (in->parent != dir)
			continue;
		n = entry_name(fs, in);
		if (strncmp(n, name, len) == 0 && n[len] == '\0') {
			*ret_ino = SLOT_INO(s) - 1;
			return 0;
		}
	}
	return -ENOENT;
}

void hdpm_names_add(struct hdpm_fs *fs, uint64_t ino)
{
	struct hdpm_names *nx = &fs->names;
	const struct hdpm_inode *in = hdpm_inode(fs, ino);
	const char *n;
	uint64_t h;
	size_t i;

	if (ino == 0 || ino >= fs->ninodes || !hdpm_mode(in) ||
	    nx->ref[ino].in || in->parent >= fs->ninodes)
		return;
	n = entry_name(fs, in);
	h = hdpm_names_hash(nx, in->parent, n, strnlen(n, HDPM_NAME_MAX + 1));
	for (i = home(nx, h); nx->slots[i]; i = (i + 1) & (nx->cap - 1))
		;
	nx->slots[i] = (h >> 32) << 32 | (ino + 1);
	nx->ref[ino].hash = h;
	nx->ref[ino].parent = in->parent;
	nx->ref[ino].in = 1;
	nx->nchild[in->parent]++;
	/* first on its directory's list */
	nx->ref[ino].prev = 0;
	nx->ref[ino].next = nx->first[in->parent];
	if (nx->first[in->parent])
		nx->ref[nx->first[in->parent] - 1].prev = ino + 1;
	nx->first[in->parent] = ino + 1;
}

void hdpm_names_del(struct hdpm_fs *fs, uint64_t ino)
{
	struct hdpm_names *nx = &fs->names;
	size_t mask = nx->cap - 1, i, j, want;

	if (ino >= fs->ninodes || !nx->ref[ino].in)
		return;
	for (i = home(nx, nx->ref[ino].hash); SLOT_INO(nx->slots[i]) != ino + 1;
	     i = (i + 1) & mask)
		;
	/* shift back every later entry of the run that may move to i */
	for (j = (i + 1) & mask; nx->slots[j]; j = (j + 1) & mask) {
		want = home(nx, nx->ref[SLOT_INO(nx->slots[j]) - 1].hash);
		/* j's entry stays if its home lies cyclically in (i, j] */
		if (((j - want) & mask) < ((j - i) & mask))
			continue;
		nx->slots[i] = nx->slots[j];
		i = j;
	}
	nx->slots[i] = 0;
	nx->nchild[nx->ref[ino].parent]--;
	if (nx->ref[ino].prev)
		nx->ref[nx->ref[ino].prev - 1].next = nx->ref[ino].next;
	else
		nx->first[nx->ref[ino].parent] = nx->ref[ino].next;
	if (nx->ref[ino].next)
		nx->ref[nx->ref[ino].next - 1].prev = nx->ref[ino].prev;
	nx->ref[ino].in = 0;
}

uint64_t hdpm_names_children(struct hdpm_fs *fs, uint64_t dir)
{
	return dir < fs->ninodes ? fs->names.nchild[dir] : 0;
}

uint64_t hdpm_names_first(struct hdpm_fs *fs, uint64_t dir)
{
	return dir < fs->ninodes ? fs->names.first[dir] : 0;
}

uint64_t hdpm_names_next(struct hdpm_fs *fs, uint64_t ino)
{
	return ino < fs->ninodes && fs->names.ref[ino].in ?
		       fs->names.ref[ino].next :
		       0;
}

int hdpm_names_rebuild(struct hdpm_fs *fs)
{
	struct hdpm_names *nx = &fs->names;
	uint64_t i;

	memset(nx->slots, 0, nx->cap * sizeof(*nx->slots));
	memset(nx->ref, 0, fs->ninodes * sizeof(*nx->ref));
	memset(nx->nchild, 0, fs->ninodes * sizeof(*nx->nchild));
	memset(nx->first, 0, fs->ninodes * sizeof(*nx->first));
	for (i = 1; i < fs->ninodes; i++)
		hdpm_names_add(fs, i);
	return 0;
}

int hdpm_names_alloc(uint64_t ninodes, struct hdpm_names_new *nn)
{
	size_t cap = 64;

	while (cap < 2 * ninodes)
		cap *= 2;
	nn->cap = cap;
	nn->slots = calloc(cap, sizeof(*nn->slots));
	nn->ref = calloc(ninodes, sizeof(*nn->ref));
	nn->nchild = calloc(ninodes, sizeof(*nn->nchild));
	nn->first = calloc(ninodes, sizeof(*nn->first));
	if (!nn->slots || !nn->ref || !nn->nchild || !nn->first) {
		hdpm_names_swap(NULL, nn, 0);
		(void)util_errmsg_set(ENOMEM, "no memory for the name index");
		return -ENOMEM;
	}
	return 0;
}

void hdpm_names_swap(struct hdpm_fs *fs, struct hdpm_names_new *nn, int install)
{
	struct hdpm_names *nx;

	if (install) {
		nx = &fs->names;
		free(nx->slots);
		free(nx->ref);
		free(nx->nchild);
		free(nx->first);
		nx->slots = nn->slots;
		nx->cap = nn->cap;
		nx->ref = nn->ref;
		nx->nchild = nn->nchild;
		nx->first = nn->first;
		(void)hdpm_names_rebuild(fs);
	} else {
		free(nn->slots);
		free(nn->ref);
		free(nn->nchild);
		free(nn->first);
	}
	memset(nn, 0, sizeof(*nn));
}

int hdpm_names_init(struct hdpm_fs *fs)
{
	struct hdpm_names_new nn;
	int rc;

	fs->names.hash_mask = UINT64_MAX;
	rc = hdpm_names_alloc(fs->ninodes, &nn);
	if (rc < 0)
		return rc;
	hdpm_names_swap(fs, &nn, 1);
	return 0;
}

void hdpm_names_fini(struct hdpm_fs *fs)
{
	free(fs->names.slots);
	free(fs->names.ref);
	free(fs->names.nchild);
	free(fs->names.first);
	memset(&fs->names, 0, sizeof(fs->names));
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pmem crash simulator (--enable-crash-sim; crash-off.c otherwise).
 * Armed maps keep a shadow durable image. A flush snapshots the flushed
 * lines into the calling thread's pending list; a fence copies that list
 * into the shadows. All bookkeeping runs under sim.lock, a recursive mutex
 * so that the fence hook (called with it held) may build images. It is a
 * leaf lock otherwise. Out of memory in the simulator aborts (test builds).
 *
 * A BYTE mapping is eADR: the caches are in the persistence domain, a
 * store is durable once it is visible, and nothing is flushed (the code
 * under test takes its BYTE-only paths). Modelled at fence granularity:
 * every fence makes the whole mapping as it is now the shadow. An image
 * taken at a fence is the shadow (a crash right after the previous fence)
 * plus, torn, a random subset of the words stored since (a crash between
 * the two): that includes every prefix of the stores, which is all eADR
 * can leave, and more (a later store without an earlier one), as the
 * CACHE_LINE model does for lines that were not flushed.
 *
 * Mappings of one file (same device and inode, same size: two opens of a
 * pool in one process) share one shadow: the media is the file's, so a
 * store one mapping flushed and fenced is durable for the other too, and
 * a mapping made while another is live starts from the durable image,
 * not from what is in the page cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmem/crash.h"
#include "pmem/internal.h"
#include "util/errmsg.h"
#include "util/io.h"

/* per armed mapping */
struct pm_crash_map {
	struct pm_map *map; /* owner */
	/* both shared by the live mappings of one file (dev, ino) */
	unsigned char *shadow; /* durable image, map->size bytes */
	uint64_t *line_seq; /* per line: flush number of its durable content */
	int fd; /* dup of the mapped fd (PM_CRASH_AT) */
	dev_t dev; /* the file's identity */
	ino_t ino;
	struct pm_crash_map *next; /* sim.maps */
};

/* lines [off, off+len) of cm as they were when flushed */
struct crash_snap {
	struct pm_crash_map *cm;
	size_t off, len;
	unsigned char *data;
	uint64_t seq; /* flush number: later flushes saw newer content */
};

/* per thread: flushed but not yet fenced snapshots, in flush order */
struct crash_thread {
	struct crash_snap *snaps;
	size_t nsnaps, cap;
	struct crash_thread *next; /* sim.threads */
};

static struct {
	pthread_mutex_t lock;
	pthread_key_t key; /* frees a thread's record at exit */
	int armed; /* new maps get a shadow */
	uint64_t crash_at; /* PM_CRASH_AT, 0 = never */
	uint64_t crash_seed; /* PM_CRASH_SEED */
	uint64_t fences; /* numbered fences so far */
	uint64_t flushes; /* numbered flushes so far */
	pm_crash_hook_fn hook;
	void *hook_arg;
	struct pm_crash_map *maps; /* live armed maps */
	struct crash_thread *threads; /* threads with a record */
} sim;

static pthread_once_t sim_once = PTHREAD_ONCE_INIT;
static __thread struct crash_thread *tls_thread;
static __thread int tls_in_hook;

static void sim_thread_exit(void *arg);

static uint64_t env_u64(const char *name)
{
	const char *s = getenv(name);

	return s ? strtoull(s, NULL, 0) : 0;
}

static void sim_init(void)
{
	pthread_mutexattr_t attr;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&sim.lock, &attr);
	pthread_mutexattr_destroy(&attr);
	if (pthread_key_create(&sim.key, sim_thread_exit))
		abort();
	sim.crash_at = env_u64("PM_CRASH_AT");
	sim.crash_seed = env_u64("PM_CRASH_SEED");
	sim.armed = sim.crash_at != 0 || env_u64("PM_CRASH_SIM") != 0;
}

static void sim_lock(void)
{
	pthread_once(&sim_once, sim_init);
	pthread_mutex_lock(&sim.lock);
}

static void sim_unlock(void)
{
	pthread_mutex_unlock(&sim.lock);
}

int pm_crash_enabled(void)
{
	return 1;
}

int pm_crash_arm(int on)
{
	sim_lock();
	sim.armed = !!on;
	sim_unlock();
	return 0;
}

uint64_t pm_crash_fence_count(void)
{
	return __atomic_load_n(&sim.fences, __ATOMIC_RELAXED);
}

int pm_crash_set_hook(pm_crash_hook_fn fn, void *arg)
{
	sim_lock();
	sim.hook = fn;
	sim.hook_arg = arg;
	sim_unlock();
	return 0;
}

/* ------------------------------------------------------------ mappings */

/* a live armed mapping of the same file and size as cm, or NULL */
static struct pm_crash_map *sim_twin_locked(const struct pm_crash_map *cm)
{
	struct pm_crash_map *o;

	for (o = sim.maps; o; o = o->next)
		if (o != cm && o->dev == cm->dev && o->ino == cm->ino &&
		    o->map->size == cm->map->size)
			return o;
	return NULL;
}

/* cm's shadow: another live mapping's of the file, or a new one holding
 * what the media holds now (durable by definition) */
static int sim_shadow_get_locked(struct pm_crash_map *cm)
{
	struct pm_crash_map *twin = sim_twin_locked(cm);
	size_t size = cm->map->size;
	unsigned char *shadow;
	uint64_t *line_seq;

	if (twin) {
		cm->shadow = twin->shadow;
		cm->line_seq = twin->line_seq;
		return 0;
	}
	shadow = malloc(size);
	line_seq = calloc(size / PM_CACHELINE + 1, sizeof(uint64_t));
	if (!shadow || !line_seq) {
		free(line_seq);
		free(shadow);
		util_errmsg_set(ENOMEM,
				"crash sim: no memory for a %zu-byte shadow "
				"image",
				size);
		return -ENOMEM;
	}
	memcpy(shadow, cm->map->addr, size);
	cm->shadow = shadow;
	cm->line_seq = line_seq;
	return 0;
}

static int sim_attach_locked(struct pm_map *map, int fd)
{
	struct pm_crash_map *cm = calloc(1, sizeof(*cm));
	struct stat st;
	int ret;

	if (!cm)
		return util_errmsg_set(ENOMEM, "crash sim: out of memory");
	if (fstat(fd, &st)) {
		free(cm);
		return util_errmsg_set(errno, "crash sim: fstat: %m");
	}
	cm->map = map;
	cm->dev = st.st_dev;
	cm->ino = st.st_ino;
	ret = sim_shadow_get_locked(cm);
	if (ret) {
		free(cm);
		return ret;
	}
	cm->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (cm->fd < 0) {
		ret = util_errmsg_set(errno, "crash sim: dup: %m");
		if (!sim_twin_locked(cm)) {
			free(cm->shadow);
			free(cm->line_seq);
		}
		free(cm);
		return ret;
	}
	cm->next = sim.maps;
	sim.maps = cm;
	map->crash = cm;
	pm_map_noflush_update(map);
	return 0;
}

int pm_crash_map_attach(struct pm_map *map, int fd)
{
	int ret = 0;

	if (map->flags & PM_MAP_RDONLY)
		return 0;
	sim_lock();
	if (sim.armed)
		ret = sim_attach_locked(map, fd);
	sim_unlock();
	return ret;
}

/* remove every pending snapshot of cm from t, keeping the order */
static void thread_drop_map(struct crash_thread *t, struct pm_crash_map *cm)
{
	size_t i, j = 0;

	for (i = 0; i < t->nsnaps; i++) {
		if (t->snaps[i].cm == cm)
			free(t->snaps[i].data);
		else
			t->snaps[j++] = t->snaps[i];
	}
	t->nsnaps = j;
}

void pm_crash_map_detach(struct pm_map *map)
{
	struct pm_crash_map *cm = map->crash, **pp;
	struct crash_thread *t;
	int shared;

	sim_lock();
	for (pp = &sim.maps; *pp; pp = &(*pp)->next) {
		if (*pp == cm) {
			*pp = cm->next;
			break;
		}
	}
	for (t = sim.threads; t; t = t->next)
		thread_drop_map(t, cm);
	/* (cm is off the list: a twin left is another mapping's) */
	shared = sim_twin_locked(cm) != NULL;
	sim_unlock();
	/* XXX: close of a dup'd fd cannot lose data we care about */
	(void)close(cm->fd);
	if (!shared) {
		free(cm->shadow);
		free(cm->line_seq);
	}
	free(cm);
	map->crash = NULL;
	pm_map_noflush_update(map);
}

/* ------------------------------------------------------------ threads */

static void sim_thread_exit(void *arg)
{
	struct crash_thread *t = arg, **pp;
	size_t i;

	/* unfenced flushes of an exiting thread never become durable */
	sim_lock();
	for (pp = &sim.threads; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	sim_unlock();
	for (i = 0; i < t->nsnaps; i++)
		free(t->snaps[i].data);
	free(t->snaps);
	free(t);
	tls_thread = NULL;
}

/* the calling thread's record, created on first use; sim.lock held */
static struct crash_thread *sim_self_locked(void)
{
	struct crash_thread *t = tls_thread;

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		abort();
	t->next = sim.threads;
	sim.threads = t;
	tls_thread = t;
	if (pthread_setspecific(sim.key, t))
		abort();
	return t;
}

static void thread_push(struct crash_thread *t, struct crash_snap snap)
{
	struct crash_snap *grown;

	if (t->nsnaps == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 16;
		grown = reallocarray(t->snaps, t->cap, sizeof(*grown));
		if (!grown)
			abort();
		t->snaps = grown;
	}
	t->snaps[t->nsnaps++] = snap;
}

void pm_crash_on_flush(struct pm_map *map, const void *addr, size_t len)
{
	struct pm_crash_map *cm = map->crash;
	size_t start = (size_t)((const unsigned char *)addr - map->addr);
	size_t end = start + len;
	struct crash_snap snap;

	/* whole lines, clipped to the mapping */
	start &= ~(size_t)(PM_CACHELINE - 1);
	end = (end + PM_CACHELINE - 1) & ~(size_t)(PM_CACHELINE - 1);
	if (end > map->size)
		end = map->size;
	if (start >= end)
		return;
	snap.cm = cm;
	snap.off = start;
	snap.len = end - start;
	snap.data = malloc(snap.len);
	if (!snap.data)
		abort();
	sim_lock();
	/* snapshot semantics: stores after the flush are not in it */
	memcpy(snap.data, map->addr + start, snap.len);
	snap.seq = ++sim.flushes;
	thread_push(sim_self_locked(), snap);
	sim_unlock();
}

void pm_crash_on_discard(struct pm_map *map, size_t off, size_t len)
{
	struct pm_crash_map *cm = map->crash;

	if (off >= map->size)
		return;
	if (len > map->size - off)
		len = map->size - off;
	sim_lock();
	memset(cm->shadow + off, 0, len);
	sim_unlock();
}

/* ------------------------------------------------------------ images */

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* copy the 8-byte words of a line selected by mask from cur into img */
static void tear_line(unsigned char *img, const unsigned char *cur, size_t len,
		      uint64_t mask)
{
	size_t w, n;

	for (w = 0; w * 8 < len; w++) {
		if (!(mask >> w & 1))
			continue;
		n = len - w * 8 < 8 ? len - w * 8 : 8;
		memcpy(img + w * 8, cur + w * 8, n);
	}
}

/*
 * Each non-durable dirty line reached media with probability 1/2; if it
 * did, half the time whole (an eviction), else a random set of its words.
 */
static void image_tear(const struct pm_crash_map *cm, unsigned char *img,
		       uint64_t seed)
{
	const unsigned char *cur = cm->map->addr;
	size_t off, len, size = cm->map->size;
	uint64_t rng = seed, r;

	for (off = 0; off < size; off += PM_CACHELINE) {
		len = size - off < PM_CACHELINE ? size - off : PM_CACHELINE;
		if (!memcmp(cur + off, cm->shadow + off, len))
			continue;
		r = splitmix64(&rng);
		if (!(r & 1))
			continue;
		tear_line(img + off, cur + off, len,
			  (r & 2) ? UINT64_MAX : r >> 8);
	}
}

static void image_build_locked(const struct pm_crash_map *cm, uint64_t seed,
			       unsigned char *img)
{
	memcpy(img, cm->shadow, cm->map->size);
	if (seed)
		image_tear(cm, img, seed);
}

int pm_crash_image(struct pm_map *map, uint64_t seed, void *buf)
{
	if (!map->crash)
		return util_errmsg_set(EINVAL,
				       "crash sim: mapping is not "
				       "armed (pm_crash_arm before mapping)");
	sim_lock();
	image_build_locked(map->crash, seed, buf);
	sim_unlock();
	return 0;
}

/* write an image of map over fd at offset 0 and fsync it */
static int image_write_fd(struct pm_map *map, uint64_t seed, int fd)
{
	unsigned char *img = malloc(map->size);
	int ret;

	if (!img)
		return util_errmsg_set(ENOMEM, "crash sim: out of memory");
	ret = pm_crash_image(map, seed, img);
	if (ret)
		goto out_img;
	ret = util_pwrite_all(fd, img, map->size, 0);
	if (ret) {
		util_errmsg_set(-ret, "crash sim: cannot write image: %s",
				strerror(-ret));
		goto out_img;
	}
	if (fsync(fd))
		ret = util_errmsg_set(errno, "crash sim: fsync: %m");
out_img:
	free(img);
	return ret;
}

int pm_crash_write_image(struct pm_map *map, uint64_t seed, const char *path)
{
	int fd, ret;

	if (!map->crash)
		return util_errmsg_set(EINVAL,
				       "crash sim: mapping is not "
				       "armed (pm_crash_arm before mapping)");
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return util_errmsg_set(errno, "crash sim: %s: %m", path);
	ret = image_write_fd(map, seed, fd);
	if (close(fd) && !ret)
		ret = util_errmsg_set(errno, "crash sim: close %s: %m", path);
	if (ret)
		util_errmsg_prefix("%s", path);
	return ret;
}

size_t pm_crash_dirty_lines(struct pm_map *map)
{
	struct pm_crash_map *cm = map->crash;
	size_t off, len, count = 0;

	if (!cm)
		return 0;
	sim_lock();
	for (off = 0; off < map->size; off += PM_CACHELINE) {
		len = map->size - off;
		if (len > PM_CACHELINE)
			len = PM_CACHELINE;
		if (memcmp(map->addr + off, cm->shadow + off, len) != 0)
			count++;
	}
	sim_unlock();
	return count;
}

/* ------------------------------------------------------------ fences */

/*
 * PM_CRASH_AT reached: every armed map's file gets its crash image, then
 * the process ends as if power failed. A devdax device takes no pwrite, so
 * the image goes through the mapping instead.
 */
static void sim_crash_now(void)
{
	struct pm_crash_map *cm, *o;
	unsigned char *img;
	size_t size;

	for (cm = sim.maps; cm; cm = cm->next) {
		/* a file once: its written image is what the other
		 * mappings would tear against */
		for (o = sim.maps; o != cm && o->shadow != cm->shadow;
		     o = o->next)
			;
		if (o != cm)
			continue;
		size = cm->map->size;
		img = malloc(size);
		if (!img)
			abort();
		image_build_locked(cm, sim.crash_seed, img);
		if (util_pwrite_all(cm->fd, img, size, 0) || fsync(cm->fd)) {
			memcpy(cm->map->addr, img, size);
			cm->map->persist_fn(cm->map->addr, size);
		}
		free(img);
	}
	_exit(PM_CRASH_EXIT_CODE);
}

/* a line becomes durable with the content of its newest flush: a fence
 * never rolls a line back to an older snapshot another thread took */
static void thread_apply_snap(const struct crash_snap *s)
{
	size_t off, len;

	for (off = 0; off < s->len; off += PM_CACHELINE) {
		uint64_t *seq = &s->cm->line_seq[(s->off + off) / PM_CACHELINE];

		if (*seq > s->seq)
			continue;
		*seq = s->seq;
		len = s->len - off < PM_CACHELINE ? s->len - off : PM_CACHELINE;
		memcpy(s->cm->shadow + s->off + off, s->data + off, len);
	}
}

/* make the calling thread's pending snapshots durable, in flush order */
static void thread_apply(struct crash_thread *t)
{
	struct crash_snap *s;
	size_t i;

	for (i = 0; i < t->nsnaps; i++) {
		s = &t->snaps[i];
		thread_apply_snap(s);
		free(s->data);
	}
	t->nsnaps = 0;
}

/* every store to a BYTE mapping so far is durable (see the top) */
static void sim_eadr_fence_locked(void)
{
	struct pm_crash_map *cm;

	for (cm = sim.maps; cm; cm = cm->next)
		if (cm->map->gran == PM_GRAN_BYTE)
			memcpy(cm->shadow, cm->map->addr, cm->map->size);
}

void pm_crash_on_fence(struct pm_map *map)
{
	uint64_t no;

	(void)map;
	sim_lock();
	no = __atomic_add_fetch(&sim.fences, 1, __ATOMIC_RELAXED);
	if (no == sim.crash_at)
		sim_crash_now();
	if (sim.hook && !tls_in_hook) {
		tls_in_hook = 1;
		sim.hook(no, sim.hook_arg);
		tls_in_hook = 0;
	}
	if (tls_thread)
		thread_apply(tls_thread);
	sim_eadr_fence_locked();
	sim_unlock();
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tests/lib/crash-sweep: fork a workload child, image it at every fence,
 * recover and check each image in the parent (see crash-sweep.h). The
 * child and the parent take turns: the child's fence hook writes the image
 * and blocks on a pipe until the parent has checked it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pmem/crash.h"
#include "crash-sweep.h"

static char dir[80];
static char path[112]; /* the workload's pool */
static char img_path[112]; /* crash image written by the child's hook */
static char work_path[112]; /* copy of the image that is recovered */
static char orig_path[112]; /* recrash: the image before the re-crash */
static const char *self_name = "test";
/* files per image: 1, or a multi-part pool's parts (FILE, FILE.1, ...) */
static unsigned sweep_nparts = 1;

/* the child's side */
static struct {
	struct pm_map *maps[CRASH_SWEEP_MAX_PARTS];
	unsigned nmaps;
	uint64_t base; /* fence count when the workload started */
	uint64_t seed_base; /* 0: durable images; else torn, seed + n */
	int to_parent, from_parent;
} child;

/* ------------------------------------------------------------ child */

/* at every workload fence: image to img_path, wait for the parent */
static void crash_hook(uint64_t fence_no, void *arg)
{
	uint64_t n = fence_no - child.base;
	char ack, file[128];
	unsigned i;

	(void)arg;
	if (fence_no <= child.base)
		return;
	for (i = 0; i < child.nmaps; i++) {
		crash_sweep_part_path(img_path, i, file, sizeof(file));
		if (pm_crash_write_image(child.maps[i],
					 child.seed_base ?
						 child.seed_base + n +
							 i * 0x9e3779b9ULL :
						 0,
					 file))
			_exit(3);
	}
	if (write(child.to_parent, &n, sizeof(n)) != sizeof(n) ||
	    read(child.from_parent, &ack, 1) != 1)
		_exit(0); /* the parent gave up */
}

void crash_sweep_arm(struct pm_map *map)
{
	crash_sweep_arm_parts(&map, 1);
}

void crash_sweep_arm_parts(struct pm_map *const *maps, unsigned n)
{
	unsigned i;

	if (n == 0 || n > CRASH_SWEEP_MAX_PARTS)
		_exit(7);
	for (i = 0; i < n; i++)
		child.maps[i] = maps[i];
	child.nmaps = n;
	child.base = pm_crash_fence_count();
	pm_crash_set_hook(crash_hook, NULL);
}

void crash_sweep_part_path(const char *file, unsigned part, char *buf,
			   size_t len)
{
	if (part == 0)
		snprintf(buf, len, "%s", file);
	else
		snprintf(buf, len, "%s.%u", file, part);
}

void crash_sweep_finish(uint64_t extra)
{
	uint64_t end = 0;

	pm_crash_set_hook(NULL, NULL);
	if (write(child.to_parent, &end, sizeof(end)) != sizeof(end) ||
	    write(child.to_parent, &extra, sizeof(extra)) != sizeof(extra))
		_exit(8);
	_exit(0);
}

/* ------------------------------------------------------------ files */

int crash_sweep_copy_file(const char *from, const char *to)
{
	char buf[1 << 16];
	int in, out, rc = 0;
	ssize_t len;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return -errno;
	}
	while ((len = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)len) != len) {
			rc = -EIO;
			break;
		}
	if (len < 0)
		rc = -errno;
	close(out);
	close(in);
	return rc;
}

/* copy an image of sweep_nparts files (a saved one: as many as exist) */
static int copy_image(const char *from, const char *to)
{
	char f[128], t[128];
	unsigned i;
	int rc = 0;

	for (i = 0; i < CRASH_SWEEP_MAX_PARTS && rc == 0; i++) {
		crash_sweep_part_path(from, i, f, sizeof(f));
		if (i >= sweep_nparts && access(f, F_OK) < 0)
			break;
		crash_sweep_part_path(to, i, t, sizeof(t));
		rc = crash_sweep_copy_file(f, t);
	}
	return rc;
}

/* ------------------------------------------------------------ parent */

/* re-exec ourselves to open (recover) img_path, crashing at fence n */
static int run_recover_crash(uint64_t n, uint64_t seed)
{
	char at[32], sd[32];
	int status;
	pid_t pid;

	snprintf(at, sizeof(at), "%llu", (unsigned long long)n);
	snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
	pid = fork();
	if (pid == 0) {
		setenv("PM_CRASH_AT", at, 1);
		setenv("PM_CRASH_SEED", sd, 1);
		execl("/proc/self/exe", self_name, "recover", img_path,
		      (char *)NULL);
		_exit(9);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* keep a failing image under /tmp/<name>-fail-N and dump it */
static void save_failure(const struct crash_sweep_ops *ops,
			 const struct crash_sweep *sw, uint64_t n,
			 const char *why)
{
	char fdir[80], file[112];
	unsigned i;
	FILE *f;

	for (i = 1; i < 10000; i++) {
		snprintf(fdir, sizeof(fdir), "/tmp/%s-fail-%u", ops->name, i);
		if (mkdir(fdir, 0700) == 0)
			break;
	}
	snprintf(file, sizeof(file), "%s/pool", fdir);
	copy_image(sw->recrash_every ? orig_path : img_path, file);
	if (sw->recrash_every) {
		snprintf(file, sizeof(file), "%s/pool.recrashed", fdir);
		copy_image(img_path, file);
	}
	snprintf(file, sizeof(file), "%s/info", fdir);
	f = fopen(file, "w");
	if (f) {
		fprintf(f, "sweep %s fence %llu seed %llu: %s\n", sw->name,
			(unsigned long long)n,
			(unsigned long long)(sw->seed_base ? sw->seed_base + n :
							     0),
			why);
		fclose(f);
	}
	printf("# FAIL %s at workload fence %llu: %s\n", sw->name,
	       (unsigned long long)n, why);
	snprintf(file, sizeof(file), "%s/pool", fdir);
	if (ops->dump)
		ops->dump(file);
	if (sw->recrash_every && ops->dump) {
		snprintf(file, sizeof(file), "%s/pool.recrashed", fdir);
		ops->dump(file);
	}
	printf("# saved in %s; replay: %s replay %s/pool%s\n", fdir, self_name,
	       fdir, sw->recrash_every ? ".recrashed" : "");
	fflush(stdout);
}

/* recover and check the image of workload fence n; 0 or -1 */
static int check_image(const struct crash_sweep_ops *ops,
		       struct crash_sweep *sw, uint64_t n)
{
	uint64_t seed = sw->seed_base ? sw->seed_base + n : 0;
	unsigned fences = sw->recrash_fences ? sw->recrash_fences : 1;
	char why[256] = "";
	unsigned stat = 0;
	int rc;

	if (sw->recrash_every && n % sw->recrash_every == 0) {
		copy_image(img_path, orig_path);
		rc = run_recover_crash(1 + n / sw->recrash_every % fences,
				       seed * 31 + 7);
		if (rc != PM_CRASH_EXIT_CODE && rc != 0) {
			snprintf(why, sizeof(why), "recovery exited %d", rc);
			save_failure(ops, sw, n, why);
			return -1;
		}
		sw->recrashes += rc == PM_CRASH_EXIT_CODE;
	}
	if (copy_image(img_path, work_path) < 0 ||
	    ops->check(work_path, &stat, why, sizeof(why)) < 0) {
		save_failure(ops, sw, n, why);
		return -1;
	}
	sw->images++;
	if (stat > sw->stat_max)
		sw->stat_max = stat;
	return 0;
}

static void child_start(const struct crash_sweep_ops *ops,
			const struct crash_sweep *sw, uint64_t rnd)
{
	if (pm_crash_arm(1) < 0)
		_exit(6);
	child.seed_base = sw->seed_base;
	ops->workload(path, rnd);
	_exit(10); /* the workload must end with crash_sweep_finish */
}

/* one workload run: check the image of each of its fences */
static int sweep_one(const struct crash_sweep_ops *ops, struct crash_sweep *sw,
		     uint64_t rnd)
{
	int to_parent[2], from_parent[2], status, rc = 0;
	uint64_t n;
	pid_t pid;
	char ack = 1;

	if (pipe(to_parent) || pipe(from_parent))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(to_parent[0]);
		close(from_parent[1]);
		child.to_parent = to_parent[1];
		child.from_parent = from_parent[0];
		child_start(ops, sw, rnd);
	}
	close(to_parent[1]);
	close(from_parent[0]);
	while (read(to_parent[0], &n, sizeof(n)) == sizeof(n) && n) {
		sw->fences++;
		rc = check_image(ops, sw, n);
		if (rc < 0 || write(from_parent[1], &ack, 1) != 1)
			break;
	}
	if (rc == 0 && read(to_parent[0], &n, sizeof(n)) == sizeof(n))
		sw->extra += n;
	close(to_parent[0]);
	close(from_parent[1]);
	if (rc < 0)
		kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid ||
	    (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status)))) {
		printf("# workload child failed (status 0x%x)\n", status);
		rc = -1;
	}
	return rc;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int crash_sweep_run(const struct crash_sweep_ops *ops, struct crash_sweep *sw)
{
	const char *gran = getenv("PMEM2_FORCE_GRANULARITY");
	char saved[32];
	double t0 = now();
	unsigned r;
	int rc = 0;

	/* the workload, the recoveries and the checks all map BYTE: the
	 * simulator's eADR model, the code's paths that flush nothing */
	snprintf(saved, sizeof(saved), "%s", gran ? gran : "CACHE_LINE");
	sweep_nparts = sw->nparts ? sw->nparts : 1;
	if (sw->byte)
		setenv("PMEM2_FORCE_GRANULARITY", "BYTE", 1);
	for (r = 0; r < sw->runs && rc == 0; r++)
		if (sweep_one(ops, sw, r * 0x1000193ULL) < 0) {
			printf("# %s: run %u failed\n", sw->name, r);
			rc = -1;
		}
	setenv("PMEM2_FORCE_GRANULARITY", saved, 1);
	printf("# %s: %u runs, %llu workload fences; %u crash images "
	       "checked (%u re-crashed in recovery), up to %u %s, %llu %s, "
	       "%.1f s\n",
	       sw->name, sw->runs, (unsigned long long)sw->fences, sw->images,
	       sw->recrashes, sw->stat_max, ops->stat_name,
	       (unsigned long long)sw->extra, ops->extra_name, now() - t0);
	fflush(stdout);
	return rc;
}

/* debug driver: dump, recover and check a saved image (on a copy) */
static int replay(const struct crash_sweep_ops *ops, const char *file)
{
	char why[256] = "";
	unsigned stat = 0;

	if (ops->dump)
		ops->dump(file);
	if (copy_image(file, work_path) < 0)
		return 1;
	if (ops->check(work_path, &stat, why, sizeof(why)) < 0) {
		printf("replay: FAIL: %s\n", why);
		return 1;
	}
	printf("replay: ok, %u %s\n", stat, ops->stat_name);
	return 0;
}

static int make_dir(const struct crash_sweep_ops *ops)
{
	snprintf(dir, sizeof(dir), "/dev/shm/test-%s-crash.XXXXXX", ops->name);
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/pool", dir);
	snprintf(img_path, sizeof(img_path), "%s/img", dir);
	snprintf(work_path, sizeof(work_path), "%s/work", dir);
	snprintf(orig_path, sizeof(orig_path), "%s/orig", dir);
	return 0;
}

void crash_sweep_cleanup(void)
{
	const char *files[] = { path, img_path, work_path, orig_path };
	char f[128];
	unsigned i, k;

	for (k = 0; k < 4; k++)
		for (i = 0; i < CRASH_SWEEP_MAX_PARTS; i++) {
			crash_sweep_part_path(files[k], i, f, sizeof(f));
			unlink(f);
		}
	rmdir(dir);
}

int crash_sweep_main(const struct crash_sweep_ops *ops, int argc, char **argv)
{
	int rc;

	self_name = argv[0];
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	if (argc == 3 && !strcmp(argv[1], "recover"))
		return ops->recover(argv[2]) ? 8 : 0;
	if (make_dir(ops) < 0)
		return 1;
	if (argc == 3 && !strcmp(argv[1], "replay")) {
		setenv("PMA_CRASH_VERBOSE", "1", 1);
		rc = replay(ops, argv[2]);
		crash_sweep_cleanup();
		return rc;
	}
	if (!pm_crash_enabled()) {
		printf("1..0 # SKIP built without --enable-crash-sim\n");
		crash_sweep_cleanup();
		return 0;
	}
	return -1;
}

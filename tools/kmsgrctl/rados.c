// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl rados - objects on a Ceph cluster's OSDs over kmsgr sessions,
 * with the rados tool's output:
 *
 *   rados put POOL OBJECT [FILE]   write-full, then writes of 4 MiB
 *   rados get POOL OBJECT [FILE]   reads of 4 MiB until a short one
 *   rados stat POOL OBJECT         size and mtime
 *   rados rm POOL OBJECT           delete
 *   rados bench POOL SECONDS write|seq|rand [-b SIZE] [-t DEPTH]
 *                                  rados_bench.c
 *
 * The object client itself is osdc.c.
 *
 * Copyright (C) 2026 The kmsgr authors
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cephenc.h"
#include "osdc.h"
#include "rados.h"

enum {
	OPT_HELP = CEPH_OPT_NEXT,
	OPT_NO_CLEANUP,
	OPT_NO_VERIFY,
	OPT_RUN_NAME,
};

/*
 * rados bench: -t at most; the buffer area (DEPTH objects to send, twice
 * DEPTH replies to read) within the module's default max_buf_size
 */
#define BENCH_DEPTH_MAX		64
#define BENCH_AREA_MAX		(240ULL << 20)

static void rados_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s rados put POOL OBJECT [FILE] [OPTS]\n"
		"       %s rados get POOL OBJECT [FILE] [OPTS]\n"
		"       %s rados put|get POOL OBJECT FILE OBJECT FILE... [-t DEPTH] [OPTS]\n"
		"       %s rados stat POOL OBJECT [OPTS]\n"
		"       %s rados rm POOL OBJECT [OPTS]\n"
		"       %s rados bench POOL SECONDS write|seq|rand [-b SIZE] [-t DEPTH]\n"
		"                [--no-cleanup] [--no-verify] [--run-name NAME] [OPTS]\n"
		"OPTS := [-c|--conf FILE] [-m|--mon-host ADDR] [-n|--name client.ID]\n"
		"        [--id ID] [-k|--keyring FILE | --key-desc DESC] [--secure]\n"
		"        [--timeout S] [--transport tcp|rdma]\n"
		"\n"
		"Objects on a Ceph cluster's OSDs, through kmsgr sessions: the map\n"
		"from the monitor, the placement group computed here (rjenkins,\n"
		"stable_mod), MOSDOp to the PG's primary OSD.\n"
		"put: FILE (default or \"-\": standard input) becomes the object.\n"
		"get: the object into FILE (default or \"-\": standard output).\n"
		"stat: prints \"POOL/OBJECT mtime TIME, size BYTES\" as rados does.\n"
		"rm: removes the object.\n"
		"put and get of several OBJECT FILE pairs: DEPTH (-t, default 8)\n"
		"objects at a time in one process; -j prints a line per object.\n"
		"bench: DEPTH (-t, default 16) requests of SIZE bytes (-b, default\n"
		"4 MiB) in flight for SECONDS, printed as rados bench prints;\n"
		"write leaves its objects and the metadata object NAME (default\n"
		"%s) for seq and rand with --no-cleanup.\n"
		"-j prints what was done as JSON, with the object's placement (pgid,\n"
		"raw_pgid, primary OSD, map epoch).  --timeout bounds each monitor\n"
		"step and each operation, resends on a new map included (default\n"
		"10 s).  The monitor, the entity and its key are found as for\n"
		"\"%s mon\"; with cephx the OSDs are shown the monitor's tickets.\n"
		"--secure runs the monitor and the OSD sessions in secure mode.\n",
		progname, progname, progname, progname, progname, progname,
		RADOS_BENCH_RUN_NAME, progname);
}

static const char *const rados_verbs[] = {
	"put", "get", "stat", "rm", "bench",
};

static const char *const bench_modes[] = { "write", "seq", "rand" };

/*
 * Read all of @fd (a file or a pipe) into a malloc'd buffer; a stop signal
 * ends it with -EINTR.
 */
static int read_all(int fd, __u8 **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	__u8 *buf = malloc(cap), *nb;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR && !ctl_stopped())
			continue;
		if (r < 0) {
			r = -errno;
			free(buf);
			return (int)r;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	return 0;
}

static int write_all(int fd, const __u8 *p, size_t len)
{
	ssize_t r;

	while (len) {
		r = write(fd, p, len);
		if (r < 0 && errno == EINTR && !ctl_stopped())
			continue;
		if (r < 0)
			return -errno;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

static void json_placement(const struct osdc_loc *loc)
{
	char pg[64];

	snprintf(pg, sizeof(pg), "%lld.%x", loc->pool, loc->ps);
	jw_string("pgid", pg);
	snprintf(pg, sizeof(pg), "%lld.%x", loc->pool, loc->hash);
	jw_string("raw_pgid", pg);
	jw_u64("primary", (__u64)(long long)loc->primary);
	jw_u64("epoch", loc->epoch);
}

/*
 * One op on @oid, as osdc_exec(); an OSD's error is printed here (osdc
 * prints its own failures: no answer in time, a signal), so that each
 * failure is told once, by whoever saw it.
 */
static int rados_exec(struct osdc *o, const struct osdc_pool *pool,
		      const char *verb, const char *oid, struct osdc_op *op,
		      bool write, struct osdc_loc *loc)
{
	int ret = osdc_exec(o, pool, oid, op, 1, write, loc);

	if (ret && ret != -ETIMEDOUT && ret != -EINTR)
		error("%s %s/%s: %s", verb, pool->name, oid,
		      osdc_strerror(ret));
	return ret;
}

static int rados_put(struct osdc *o, const struct osdc_pool *pool,
		     const char *oid, const char *path)
{
	struct osdc_op op = { .op = OSD_OP_WRITEFULL };
	struct osdc_loc loc;
	size_t len = 0, off = 0;
	__u8 *data = NULL;
	int fd = STDIN_FILENO, ret;

	if (path && strcmp(path, "-")) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			error("cannot open %s: %s", path, strerror(errno));
			return -errno;
		}
	}
	ret = read_all(fd, &data, &len);
	if (fd != STDIN_FILENO)
		close(fd);
	if (ret) {
		error("cannot read %s: %s", path ? path : "standard input",
		      strerror(-ret));
		return ret;
	}
	/* as rados: the first piece replaces the object, the rest extend it */
	do {
		op.offset = off;
		op.length = len - off < OSDC_OP_MAX ? len - off : OSDC_OP_MAX;
		op.in = data + off;
		ret = rados_exec(o, pool, "put", oid, &op, true, &loc);
		osdc_ops_free(&op, 1);
		op.op = OSD_OP_WRITE;
		off += op.length;
	} while (!ret && off < len);
	free(data);
	if (ret)
		return ret;
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("pool", pool->name);
		jw_string("object", oid);
		jw_u64("size", len);
		json_placement(&loc);
		jw_close('}');
	}
	return 0;
}

static int rados_get(struct osdc *o, const struct osdc_pool *pool,
		     const char *oid, const char *path)
{
	struct osdc_op op = { .op = OSD_OP_READ };
	bool to_stdout = !path || !strcmp(path, "-");
	int fd = STDOUT_FILENO, ret;
	struct osdc_loc loc;
	__u64 off = 0;

	if (!to_stdout) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			error("cannot create %s: %s", path, strerror(errno));
			return -errno;
		}
	}
	for (;;) {
		op.offset = off;
		op.length = OSDC_OP_MAX;
		ret = rados_exec(o, pool, "get", oid, &op, false, &loc);
		if (ret)
			break;
		if (op.out_len > OSDC_OP_MAX) {
			error("osd.%d returned %u bytes for a %u-byte read",
			      loc.primary, op.out_len, OSDC_OP_MAX);
			ret = -EBADMSG;
			break;
		}
		ret = write_all(fd, op.out, op.out_len);
		if (ret) {
			error("cannot write %s: %s",
			      to_stdout ? "standard output" : path,
			      strerror(-ret));
			break;
		}
		off += op.out_len;
		if (op.out_len < OSDC_OP_MAX)
			break;
		osdc_ops_free(&op, 1);
	}
	osdc_ops_free(&op, 1);
	if (!to_stdout && close(fd) && !ret) {
		error("cannot write %s: %s", path, strerror(errno));
		ret = -errno;
	}
	if (!ret && opt.json && !to_stdout) {
		jw_open(NULL, '{');
		jw_string("pool", pool->name);
		jw_string("object", oid);
		jw_u64("size", off);
		json_placement(&loc);
		jw_close('}');
	}
	return ret;
}

static int rados_stat(struct osdc *o, const struct osdc_pool *pool,
		      const char *oid)
{
	struct osdc_op op = { .op = OSD_OP_STAT };
	char when[64], zone[16], mtime[96];
	struct osdc_loc loc;
	__u64 size;
	__u32 nsec;
	time_t sec;
	struct tm tm;
	int ret;

	ret = rados_exec(o, pool, "stat", oid, &op, false, &loc);
	if (ret)
		return ret;
	/* le64 size, utime_t mtime (le32 sec, le32 nsec) */
	if (op.out_len < 16) {
		error("osd.%d: stat reply of %u bytes, want 16", loc.primary,
		      op.out_len);
		osdc_ops_free(&op, 1);
		return -EBADMSG;
	}
	size = get_le64(op.out);
	sec = (time_t)get_le32(op.out + 8);
	nsec = get_le32(op.out + 12);
	osdc_ops_free(&op, 1);
	localtime_r(&sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm);
	snprintf(mtime, sizeof(mtime), "%s.%06u%s", when, nsec / 1000, zone);
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("pool", pool->name);
		jw_string("object", oid);
		jw_u64("size", size);
		jw_string("mtime", mtime);
		json_placement(&loc);
		jw_close('}');
	} else {
		printf("%s/%s mtime %s, size %llu\n", pool->name, oid, mtime,
		       (unsigned long long)size);
	}
	return 0;
}

static int rados_rm(struct osdc *o, const struct osdc_pool *pool,
		    const char *oid)
{
	struct osdc_op op = { .op = OSD_OP_DELETE };
	struct osdc_loc loc;
	int ret;

	ret = rados_exec(o, pool, "rm", oid, &op, true, &loc);
	osdc_ops_free(&op, 1);
	if (!ret && opt.json) {
		jw_open(NULL, '{');
		jw_string("pool", pool->name);
		jw_string("object", oid);
		json_placement(&loc);
		jw_close('}');
	}
	return ret;
}

/* One object of a batch put or get, and where it stands. */
struct batch_job {
	const char *oid, *path;
	__u8 *data;		/* put: the file's bytes */
	size_t len;		/* put: their length */
	int fd;			/* get: the file being written */
	__u64 off;		/* bytes done */
};

struct batch_slot {
	struct osdc_req rq;
	struct osdc_op op;
	struct batch_job *job;
};

/* Send @s's next op for its job: a write (-full first) or a read. */
static int batch_next(struct osdc *o, const struct osdc_pool *pool,
		      struct batch_slot *s, unsigned int slot, bool put)
{
	struct batch_job *j = s->job;

	if (put)
		s->op = (struct osdc_op){
			.op = j->off ? OSD_OP_WRITE : OSD_OP_WRITEFULL,
			.offset = j->off,
			.length = j->len - j->off < OSDC_OP_MAX ?
				  j->len - j->off : OSDC_OP_MAX,
			.in = j->data + j->off,
		};
	else
		s->op = (struct osdc_op){
			.op = OSD_OP_READ, .offset = j->off,
			.length = OSDC_OP_MAX,
		};
	s->rq = (struct osdc_req){
		.oid = j->oid, .ops = &s->op, .n = 1, .write = put,
		.slot = slot, .priv = s,
	};
	return osdc_start(o, pool, &s->rq);
}

/* Open or read @j's file: 0, or -errno (printed). */
static int batch_open(struct batch_job *j, bool put)
{
	int fd, ret;

	if (!put) {
		j->fd = open(j->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			     0644);
		if (j->fd < 0) {
			error("cannot create %s: %s", j->path, strerror(errno));
			return -errno;
		}
		return 0;
	}
	fd = open(j->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		error("cannot open %s: %s", j->path, strerror(errno));
		return -errno;
	}
	ret = read_all(fd, &j->data, &j->len);
	close(fd);
	if (ret)
		error("cannot read %s: %s", j->path, strerror(-ret));
	return ret;
}

/* @j is done (@ret: how): report it and let go of its file. */
static int batch_done(const struct osdc_pool *pool, struct batch_job *j,
		      const struct osdc_loc *loc, bool put, int ret)
{
	free(j->data);
	j->data = NULL;
	if (!put && j->fd >= 0) {
		if (close(j->fd) && !ret) {
			error("cannot write %s: %s", j->path, strerror(errno));
			ret = -errno;
		}
		j->fd = -1;
	}
	if (ret && ret != -ETIMEDOUT && ret != -EINTR)
		error("%s %s/%s: %s", put ? "put" : "get", pool->name, j->oid,
		      osdc_strerror(ret));
	if (!ret && opt.json) {
		jw_open(NULL, '{');
		jw_string("pool", pool->name);
		jw_string("object", j->oid);
		jw_string("file", j->path);
		jw_u64("size", put ? j->len : j->off);
		json_placement(loc);
		jw_close('}');
		fflush(stdout);
	}
	return ret;
}

/*
 * put or get of the @n OBJECT FILE pairs in @args, @depth requests in
 * flight, each object's ops in order (a write-full, then 4 MiB writes;
 * 4 MiB reads until a short one).  Every object is tried; returns the
 * first failure.
 */
static int rados_batch(struct osdc *o, const struct osdc_pool *pool,
		       char **args, unsigned int n, unsigned int depth,
		       bool put)
{
	struct batch_slot *slots = calloc(depth, sizeof(*slots));
	struct batch_job *jobs = calloc(n, sizeof(*jobs));
	unsigned int i, next = 0, inflight = 0;
	struct batch_slot *s;
	struct batch_job *j;
	struct osdc_req *rq;
	int ret, err = 0;

	if (!slots || !jobs) {
		free(slots);
		free(jobs);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		jobs[i].oid = args[2 * i];
		jobs[i].path = args[2 * i + 1];
		jobs[i].fd = -1;
	}
	for (;;) {
		for (i = 0; i < depth && next < n && !ctl_stopped(); i++) {
			s = &slots[i];
			if (s->job)
				continue;
			j = &jobs[next++];
			ret = batch_open(j, put);
			if (!ret) {
				s->job = j;
				ret = batch_next(o, pool, s, i, put);
				if (!ret) {
					inflight++;
					continue;
				}
				s->job = NULL;
			}
			ret = batch_done(pool, j, NULL, put, ret);
			err = err ? err : ret;
		}
		if (!inflight)
			break;
		ret = osdc_reap(o, 0, &rq);
		if (ret) {
			/* a signal or no map: what is out stays out */
			err = ret;
			break;
		}
		s = rq->priv;
		j = s->job;
		ret = rq->result;
		if (!ret && !put) {
			if (s->op.out_len > OSDC_OP_MAX) {
				error("osd.%d returned %u bytes for a %u-byte read",
				      rq->loc.primary, s->op.out_len,
				      OSDC_OP_MAX);
				ret = -EBADMSG;
			} else if (pwrite(j->fd, s->op.out, s->op.out_len,
					  (off_t)j->off) != s->op.out_len) {
				error("cannot write %s: %s", j->path,
				      strerror(errno));
				ret = -EIO;
			}
		}
		if (!ret) {
			j->off += put ? s->op.length : s->op.out_len;
			/* more of it: the next op on the same slot */
			if ((put && j->off < j->len) ||
			    (!put && s->op.out_len == OSDC_OP_MAX)) {
				osdc_ops_free(&s->op, 1);
				ret = batch_next(o, pool, s,
						 (unsigned int)(s - slots), put);
				if (!ret)
					continue;
			}
		}
		osdc_ops_free(&s->op, 1);
		ret = batch_done(pool, j, &rq->loc, put, ret);
		err = err ? err : ret;
		s->job = NULL;
		inflight--;
	}
	for (i = 0; i < n; i++) {
		free(jobs[i].data);
		if (jobs[i].fd >= 0)
			close(jobs[i].fd);
	}
	free(slots);
	free(jobs);
	return err ? err : ctl_stopped() ? -EINTR : 0;
}

static int rados_run(struct ceph_cli *cli, const char *verb,
		     const char *pool_name, const char *oid, const char *file,
		     const struct rados_bench_opts *b, char **pairs,
		     unsigned int n_pairs, unsigned int depth)
{
	struct osdc_pool pool;
	struct osdc o;
	int ret;

	ret = ctl_conn_open(&cli->conn);
	if (ret)
		return ret;
	if (b)
		ret = osdc_init(&o, &cli->conn, cli->conn.timeout_ns, b->depth,
				b->size > 4096 ? b->size : 4096);
	else
		ret = osdc_init(&o, &cli->conn, cli->conn.timeout_ns,
				n_pairs ? depth : 1, OSDC_OP_MAX);
	if (ret)
		goto out;
	ret = osdc_pool(&o, pool_name, &pool);
	if (ret == -EOPNOTSUPP) {
		error("pool \"%s\": %s", pool_name, pool.unsupported);
		goto out;
	}
	if (ret) {
		error("pool \"%s\" does not exist", pool_name);
		goto out;
	}
	if (b)
		ret = rados_bench(&o, &pool, b);
	else if (n_pairs)
		ret = rados_batch(&o, &pool, pairs, n_pairs, depth,
				  !strcmp(verb, "put"));
	else if (!strcmp(verb, "put"))
		ret = rados_put(&o, &pool, oid, file);
	else if (!strcmp(verb, "get"))
		ret = rados_get(&o, &pool, oid, file);
	else if (!strcmp(verb, "stat"))
		ret = rados_stat(&o, &pool, oid);
	else
		ret = rados_rm(&o, &pool, oid);
out:
	osdc_fini(&o);
	ctl_conn_close(&cli->conn);
	return ret;
}

/* rados bench's arguments: SECONDS MODE, -b and -t checked. */
static int bench_args(char **args, struct rados_bench_opts *b)
{
	size_t i;

	if (ctl_parse_secs(args[0], &b->seconds_ns) || !b->seconds_ns) {
		error("rados bench: bad SECONDS \"%s\"", args[0]);
		return -EINVAL;
	}
	b->mode = NULL;
	for (i = 0; i < ARRAY_SIZE(bench_modes); i++)
		if (!strcmp(args[1], bench_modes[i]))
			b->mode = bench_modes[i];
	if (!b->mode) {
		error("rados bench: mode \"%s\": write, seq or rand", args[1]);
		return -EINVAL;
	}
	if (3 * (__u64)b->depth * (b->size + 8192) > BENCH_AREA_MAX) {
		error("rados bench: -t %u of -b %llu wants more than %llu MiB of buffer area",
		      b->depth, (unsigned long long)b->size,
		      BENCH_AREA_MAX >> 20);
		return -EINVAL;
	}
	if (strlen(b->run_name) > OSDC_OID_MAX) {
		error("rados bench: --run-name longer than %u bytes",
		      OSDC_OID_MAX);
		return -EINVAL;
	}
	return 0;
}

int cmd_rados(int argc, char **argv)
{
	static const struct option lopts[] = {
		CEPH_CLI_LONGOPTS,
		{ "help", no_argument, NULL, OPT_HELP },
		{ "no-cleanup", no_argument, NULL, OPT_NO_CLEANUP },
		{ "no-verify", no_argument, NULL, OPT_NO_VERIFY },
		{ "run-name", required_argument, NULL, OPT_RUN_NAME },
		{ NULL, 0, NULL, 0 },
	};
	struct rados_bench_opts bench = {
		.size = OSDC_OP_MAX, .depth = 16, .cleanup = true,
		.verify = true, .run_name = RADOS_BENCH_RUN_NAME,
	};
	const char *verb = NULL, *file = NULL;
	char abuf[512], kbuf[1024];
	struct ceph_cli cli;
	unsigned int n_pairs = 0, depth = 8;
	int c, nargs, want, ret;
	bool is_bench, batch;
	__u64 v;
	size_t i;

	if (argc < 1 || !strcmp(argv[0], "help") || !strcmp(argv[0], "-h") ||
	    !strcmp(argv[0], "--help")) {
		rados_usage(argc < 1 ? stderr : stdout);
		return argc < 1 ? EXIT_USAGE : EXIT_SUCCESS;
	}
	for (i = 0; i < ARRAY_SIZE(rados_verbs); i++)
		if (*argv[0] &&
		    !strncmp(rados_verbs[i], argv[0], strlen(argv[0])))
			verb = verb ? "" : rados_verbs[i];
	if (!verb || !*verb) {
		error("%s verb \"%s\" for object \"rados\"; try \"%s rados help\"",
		      verb ? "ambiguous" : "unknown", argv[0], progname);
		return EXIT_USAGE;
	}
	is_bench = !strcmp(verb, "bench");
	batch = !strcmp(verb, "put") || !strcmp(verb, "get");

	ceph_cli_init(&cli);
	optind = 0;
	while ((c = getopt_long(argc, argv, CEPH_CLI_SHORTOPTS "hb:t:", lopts,
				NULL)) != -1) {
		ret = ceph_cli_opt(&cli, c, optarg);
		if (ret < 0)
			return EXIT_USAGE;
		if (ret)
			continue;
		if (c == OPT_HELP || c == 'h') {
			rados_usage(stdout);
			return EXIT_SUCCESS;
		}
		if (c == '?') {
			ctl_bad_option("rados", argv);
			return EXIT_USAGE;
		}
		if (!is_bench && !(batch && c == 't')) {
			error("rados %s: %s is an option of %s", verb,
			      c == 'b' ? "-b" : c == 't' ? "-t" :
			      c == OPT_NO_CLEANUP ? "--no-cleanup" :
			      c == OPT_NO_VERIFY ? "--no-verify" : "--run-name",
			      c == 't' ? "put, get and bench" : "bench");
			return EXIT_USAGE;
		}
		switch (c) {
		case 'b':
			if (ctl_parse_size(optarg, 1, OSDC_OP_MAX, &v)) {
				error("rados bench: bad -b \"%s\" (1 to %u bytes)",
				      optarg, OSDC_OP_MAX);
				return EXIT_USAGE;
			}
			bench.size = v;
			break;
		case 't':
			if (ctl_parse_size(optarg, 1, BENCH_DEPTH_MAX, &v)) {
				error("rados %s: bad -t \"%s\" (1 to %u)", verb,
				      optarg, BENCH_DEPTH_MAX);
				return EXIT_USAGE;
			}
			bench.depth = (unsigned int)v;
			depth = (unsigned int)v;
			break;
		case OPT_NO_CLEANUP:
			bench.cleanup = false;
			break;
		case OPT_NO_VERIFY:
			bench.verify = false;
			break;
		case OPT_RUN_NAME:
			bench.run_name = optarg;
			break;
		}
	}
	nargs = argc - optind;
	if (is_bench) {
		if (nargs != 3) {
			error("rados bench wants POOL SECONDS write|seq|rand");
			return EXIT_USAGE;
		}
		if (bench_args(argv + optind + 1, &bench))
			return EXIT_USAGE;
	} else if (batch && nargs >= 5) {
		/* POOL OBJECT FILE OBJECT FILE ... */
		if (!(nargs & 1)) {
			error("rados %s: OBJECT FILE pairs, one FILE is missing",
			      verb);
			return EXIT_USAGE;
		}
		n_pairs = (unsigned int)(nargs - 1) / 2;
		for (i = 0; i < n_pairs; i++) {
			if (!argv[optind + 1 + 2 * i][0] ||
			    strlen(argv[optind + 1 + 2 * i]) > OSDC_OID_MAX) {
				error("rados %s: object name \"%.40s\" empty or longer than %u bytes",
				      verb, argv[optind + 1 + 2 * i],
				      OSDC_OID_MAX);
				return EXIT_USAGE;
			}
		}
		if (3ULL * depth * (OSDC_OP_MAX + 8192) > BENCH_AREA_MAX) {
			error("rados %s: -t %u wants more than %llu MiB of buffer area",
			      verb, depth, BENCH_AREA_MAX >> 20);
			return EXIT_USAGE;
		}
	} else {
		want = batch ? 3 : 2;
		if (nargs < 2 || nargs > want) {
			error("rados %s wants POOL OBJECT%s", verb,
			      want == 3 ? " [FILE], or POOL OBJECT FILE OBJECT FILE..." :
			      "");
			return EXIT_USAGE;
		}
		if (strlen(argv[optind + 1]) > OSDC_OID_MAX) {
			error("rados %s: object name longer than %u bytes",
			      verb, OSDC_OID_MAX);
			return EXIT_USAGE;
		}
		if (nargs == 3)
			file = argv[optind + 2];
	}
	if (!argv[optind][0] || !argv[optind + 1][0]) {
		error("rados %s: empty %s", verb,
		      argv[optind][0] ? (is_bench ? "SECONDS" : "object name") :
		      "pool name");
		return EXIT_USAGE;
	}
	if (cli.conn.keyring && cli.conn.key_desc) {
		error("--keyring and --key-desc both name the key: give one");
		return EXIT_USAGE;
	}
	ret = ceph_resolve_mon(&cli.conn, NULL, cli.mon_host, cli.conf, abuf,
			       sizeof(abuf), kbuf, sizeof(kbuf));
	if (ret)
		return ret;
	if (ctl_conn_check(&cli.conn))
		return EXIT_USAGE;

	ctl_catch_signals();
	/*
	 * tx: a slot per request in flight; pool: twice the replies of all
	 * of them (objects when reading), and a monitor's
	 */
	if (n_pairs)
		ret = ctl_setup(2 * depth + 16, osdc_tx_size(depth, OSDC_OP_MAX),
				2 * (depth * (OSDC_OP_MAX + 4096) + (1 << 20)));
	else if (is_bench)
		ret = ctl_setup(2 * bench.depth + 16,
				osdc_tx_size(bench.depth, bench.size > 4096 ?
					     bench.size : 4096),
				2 * (bench.depth * (4096 +
				     (strcmp(bench.mode, "write") ?
				      bench.size : 0)) + (1 << 20)));
	else
		ret = ctl_setup(16, osdc_tx_size(1, OSDC_OP_MAX),
				2 * (OSDC_OP_MAX + (1 << 20)));
	if (ret)
		return EXIT_FAILURE;
	ret = rados_run(&cli, verb, argv[optind],
			is_bench ? NULL : argv[optind + 1], file,
			is_bench ? &bench : NULL, argv + optind + 1, n_pairs,
			depth);
	ctl_teardown();
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}

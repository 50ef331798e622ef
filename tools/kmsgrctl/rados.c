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
		"       %s rados stat POOL OBJECT [OPTS]\n"
		"       %s rados rm POOL OBJECT [OPTS]\n"
		"       %s rados bench POOL SECONDS write|seq|rand [-b SIZE] [-t DEPTH]\n"
		"                [--no-cleanup] [--no-verify] [--run-name NAME] [OPTS]\n"
		"OPTS := [-c|--conf FILE] [-m|--mon-host ADDR] [-n|--name client.ID]\n"
		"        [--id ID] [--timeout S] [--transport tcp|rdma]\n"
		"\n"
		"Objects on a Ceph cluster's OSDs, through kmsgr sessions: the map\n"
		"from the monitor, the placement group computed here (rjenkins,\n"
		"stable_mod), MOSDOp to the PG's primary OSD.\n"
		"put: FILE (default or \"-\": standard input) becomes the object.\n"
		"get: the object into FILE (default or \"-\": standard output).\n"
		"stat: prints \"POOL/OBJECT mtime TIME, size BYTES\" as rados does.\n"
		"rm: removes the object.\n"
		"bench: DEPTH (-t, default 16) requests of SIZE bytes (-b, default\n"
		"4 MiB) in flight for SECONDS, printed as rados bench prints;\n"
		"write leaves its objects and the metadata object NAME (default\n"
		"%s) for seq and rand with --no-cleanup.\n"
		"-j prints what was done as JSON, with the object's placement (pgid,\n"
		"raw_pgid, primary OSD, map epoch).  --timeout bounds each monitor\n"
		"step and each operation, resends on a new map included (default\n"
		"10 s).  The monitor and the entity are found as for \"%s mon\";\n"
		"auth none only for now (cephx to OSDs needs service tickets).\n",
		progname, progname, progname, progname, progname,
		RADOS_BENCH_RUN_NAME, progname);
}

static const char *const rados_verbs[] = {
	"put", "get", "stat", "rm", "bench",
};

static const char *const bench_modes[] = { "write", "seq", "rand" };

/* Read all of @fd (a file or a pipe) into a malloc'd buffer. */
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
		if (r < 0 && errno == EINTR)
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
		if (r < 0 && errno == EINTR)
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
		ret = osdc_exec(o, pool, oid, &op, 1, true, &loc);
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
		ret = osdc_exec(o, pool, oid, &op, 1, false, &loc);
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

	ret = osdc_exec(o, pool, oid, &op, 1, false, &loc);
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

	ret = osdc_exec(o, pool, oid, &op, 1, true, &loc);
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

static int rados_run(struct ceph_cli *cli, const char *verb,
		     const char *pool_name, const char *oid, const char *file,
		     const struct rados_bench_opts *b)
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
		ret = osdc_init(&o, &cli->conn, cli->conn.timeout_ns, 1,
				OSDC_OP_MAX);
	if (ret)
		goto out;
	ret = osdc_pool(&o, pool_name, &pool);
	if (ret) {
		error("pool \"%s\" does not exist", pool_name);
		goto out;
	}
	if (b)
		ret = rados_bench(&o, &pool, b);
	else if (!strcmp(verb, "put"))
		ret = rados_put(&o, &pool, oid, file);
	else if (!strcmp(verb, "get"))
		ret = rados_get(&o, &pool, oid, file);
	else if (!strcmp(verb, "stat"))
		ret = rados_stat(&o, &pool, oid);
	else
		ret = rados_rm(&o, &pool, oid);
	/* osdc_exec printed its own failures; the OSD's answers are ours */
	if (ret && !b && ret != -ETIMEDOUT && ret != -EINTR)
		error("%s %s/%s: %s", verb, pool_name, oid, strerror(-ret));
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
	int c, nargs, want, ret;
	bool is_bench;
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
		if (!is_bench || c == '?') {
			ctl_bad_option("rados", argv);
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
				error("rados bench: bad -t \"%s\" (1 to %u)",
				      optarg, BENCH_DEPTH_MAX);
				return EXIT_USAGE;
			}
			bench.depth = (unsigned int)v;
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
	} else {
		want = !strcmp(verb, "put") || !strcmp(verb, "get") ? 3 : 2;
		if (nargs < 2 || nargs > want) {
			error("rados %s wants POOL OBJECT%s", verb,
			      want == 3 ? " [FILE]" : "");
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
	if (cli.conn.keyring || cli.conn.key_desc) {
		error("rados: cephx (%s) is not supported yet: OSDs want a service ticket",
		      cli.conn.keyring ? cli.conn.keyring : cli.conn.key_desc);
		return EXIT_FAILURE;
	}

	ctl_catch_signals();
	/*
	 * tx: a slot per request in flight; pool: twice the replies of all
	 * of them (objects when reading), and a monitor's
	 */
	if (is_bench)
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
			is_bench ? &bench : NULL);
	ctl_teardown();
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl rados - objects on a Ceph cluster's OSDs over kmsgr sessions,
 * with the rados tool's output:
 *
 *   rados put POOL OBJECT [FILE]   write-full, then writes of 4 MiB
 *   rados get POOL OBJECT [FILE]   reads of 4 MiB until a short one
 *   rados stat POOL OBJECT         size and mtime
 *   rados rm POOL OBJECT           delete
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

enum {
	OPT_HELP = CEPH_OPT_NEXT,
};

static void rados_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s rados put POOL OBJECT [FILE] [OPTS]\n"
		"       %s rados get POOL OBJECT [FILE] [OPTS]\n"
		"       %s rados stat POOL OBJECT [OPTS]\n"
		"       %s rados rm POOL OBJECT [OPTS]\n"
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
		"-j prints what was done as JSON, with the object's placement (pgid,\n"
		"raw_pgid, primary OSD, map epoch).  --timeout bounds each monitor\n"
		"step and each operation, resends on a new map included (default\n"
		"10 s).  The monitor and the entity are found as for \"%s mon\";\n"
		"auth none only for now (cephx to OSDs needs service tickets).\n",
		progname, progname, progname, progname, progname);
}

static const char *const rados_verbs[] = { "put", "get", "stat", "rm" };

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

	snprintf(pg, sizeof(pg), "%lld.%x", loc->pool->id, loc->ps);
	jw_string("pgid", pg);
	snprintf(pg, sizeof(pg), "%lld.%x", loc->pool->id, loc->hash);
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
		     const char *pool_name, const char *oid, const char *file)
{
	const struct osdc_pool *pool;
	struct osdc o;
	int ret;

	ret = ctl_conn_open(&cli->conn);
	if (ret)
		return ret;
	ret = osdc_init(&o, &cli->conn, cli->conn.timeout_ns);
	if (ret)
		goto out;
	ret = osdc_pool(&o, pool_name, &pool);
	if (ret) {
		error("pool \"%s\" does not exist", pool_name);
		goto out;
	}
	if (!strcmp(verb, "put"))
		ret = rados_put(&o, pool, oid, file);
	else if (!strcmp(verb, "get"))
		ret = rados_get(&o, pool, oid, file);
	else if (!strcmp(verb, "stat"))
		ret = rados_stat(&o, pool, oid);
	else
		ret = rados_rm(&o, pool, oid);
	/* osdc_exec printed its own failures; the OSD's answers are ours */
	if (ret && ret != -ETIMEDOUT && ret != -EINTR)
		error("%s %s/%s: %s", verb, pool_name, oid, strerror(-ret));
out:
	osdc_fini(&o);
	ctl_conn_close(&cli->conn);
	return ret;
}

int cmd_rados(int argc, char **argv)
{
	static const struct option lopts[] = {
		CEPH_CLI_LONGOPTS,
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *verb = NULL, *file = NULL;
	char abuf[512], kbuf[1024];
	struct ceph_cli cli;
	int c, nargs, want, ret;
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

	ceph_cli_init(&cli);
	optind = 0;
	while ((c = getopt_long(argc, argv, CEPH_CLI_SHORTOPTS "h", lopts,
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
		ctl_bad_option("rados", argv);
		return EXIT_USAGE;
	}
	nargs = argc - optind;
	want = !strcmp(verb, "put") || !strcmp(verb, "get") ? 3 : 2;
	if (nargs < 2 || nargs > want) {
		error("rados %s wants POOL OBJECT%s", verb,
		      want == 3 ? " [FILE]" : "");
		return EXIT_USAGE;
	}
	if (!argv[optind][0] || !argv[optind + 1][0]) {
		error("rados %s: empty %s name", verb,
		      argv[optind][0] ? "object" : "pool");
		return EXIT_USAGE;
	}
	if (strlen(argv[optind + 1]) > OSDC_OID_MAX) {
		error("rados %s: object name longer than %u bytes", verb,
		      OSDC_OID_MAX);
		return EXIT_USAGE;
	}
	if (nargs == 3)
		file = argv[optind + 2];
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
	/* tx: one front and one op's data; pool: a read's reply, twice */
	if (ctl_setup(16, 4096 + OSDC_OP_MAX, 2 * (OSDC_OP_MAX + (1 << 20))))
		return EXIT_FAILURE;
	ret = rados_run(&cli, verb, argv[optind], argv[optind + 1], file);
	ctl_teardown();
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl - control and inspect kmsgr, in the style of iproute2's tools.
 *
 *   kmsgrctl [OPTIONS] OBJECT [VERB]
 *
 * Exit status: 0 on success, 1 when the operation fails, 2 on a usage error.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmsgrctl.h"

const char *progname = "kmsgrctl";

/* Prefix of error messages. */
#define ERR_PREFIX "kmsgr: "

struct ctl_opt opt;

/* ---- output ------------------------------------------------------------ */

/*
 * A small JSON writer: one object per command, values written in order.
 * Nesting is tracked so that commas and (with -p) indentation are right.
 */
static struct {
	int depth;
	bool need_comma;
} jw;

static void jw_newline(void)
{
	int i;

	if (!opt.pretty)
		return;
	putchar('\n');
	for (i = 0; i < jw.depth; i++)
		fputs("    ", stdout);
}

static void jw_string_value(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Start a member: comma, newline/indent, then "key": (no key in arrays). */
static void jw_member(const char *key)
{
	if (jw.need_comma)
		putchar(',');
	if (jw.depth > 0)
		jw_newline();
	if (key) {
		jw_string_value(key);
		fputs(opt.pretty ? ": " : ":", stdout);
	}
	jw.need_comma = true;
}

void jw_open(const char *key, char bracket)
{
	jw_member(key);
	putchar(bracket);
	jw.depth++;
	jw.need_comma = false;
}

void jw_close(char bracket)
{
	bool empty = !jw.need_comma;

	jw.depth--;
	if (!empty)
		jw_newline();
	putchar(bracket);
	jw.need_comma = true;
	if (jw.depth == 0) {
		/* a top-level value ends a line; the next one stands alone */
		putchar('\n');
		jw.need_comma = false;
	}
}

void jw_string(const char *key, const char *val)
{
	jw_member(key);
	jw_string_value(val);
}

void jw_u64(const char *key, __u64 val)
{
	jw_member(key);
	printf("%llu", (unsigned long long)val);
}

void jw_double(const char *key, double val)
{
	jw_member(key);
	printf("%.3f", val);
}

void jw_double_g(const char *key, double val)
{
	jw_member(key);
	printf("%.9g", val);
}

void jw_bool(const char *key, bool val)
{
	jw_member(key);
	fputs(val ? "true" : "false", stdout);
}

void jw_raw(const char *key, const char *json)
{
	jw_member(key);
	fputs(json, stdout);
}

void ctl_bad_option(const char *object, char **argv)
{
	char opt_text[8];
	const char *bad = optind > 0 ? argv[optind - 1] : "?";

	if (optopt > 0 && optopt < 128 && isprint(optopt)) {
		snprintf(opt_text, sizeof(opt_text), "-%c", optopt);
		bad = opt_text;
	}
	if (object)
		error("%s: unknown option or missing argument: \"%s\"; try \"%s %s -h\"",
		      object, bad, progname, object);
	else
		error("unknown option or missing argument: \"%s\"; try \"%s help\"",
		      bad, progname);
}

void error(const char *fmt, ...)
{
	va_list ap;

	fputs(ERR_PREFIX, stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- commands ---------------------------------------------------------- */

static const char *device_path(void)
{
	return opt.device ? opt.device : KMSGR_DEV_PATH;
}

static void print_features(__u64 features)
{
	char unknown[16];
	unsigned int bit;
	const char *name;

	if (opt.json)
		jw_open("features", '[');
	else
		printf("features");

	for (bit = 0; bit < 64; bit++) {
		if (!(features & (1ULL << bit)))
			continue;
		name = kmsgr_feature_name(bit);
		if (!name) {
			snprintf(unknown, sizeof(unknown), "bit%u", bit);
			name = unknown;
		}
		if (opt.json)
			jw_string(NULL, name);
		else
			printf(" %s", name);
	}

	if (opt.json)
		jw_close(']');
	else
		printf("%s (0x%llx)\n", features ? "" : " none",
		       (unsigned long long)features);
}

static void info_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s info [show]\n"
		"\n"
		"Prints the loaded module's version and ABI version, its features,\n"
		"its limits, the bytes the RDMA transport pinned and registered (when\n"
		"it is loaded) and the device node.\n",
		progname);
}

static int cmd_info(int argc, char **argv)
{
	struct kmsgr_info info;
	struct kmsgr *k;
	char version[KMSGR_VERSION_LEN];
	int ret;

	if (argc > 0 && (!strcmp(argv[0], "help") || !strcmp(argv[0], "-h") ||
			 !strcmp(argv[0], "--help"))) {
		info_usage(stdout);
		return EXIT_SUCCESS;
	}
	if (argc > 0 && strcmp(argv[0], "show") != 0) {
		error("unknown verb \"%s\" for object \"info\"; try \"%s info help\"",
		      argv[0], progname);
		return EXIT_USAGE;
	}
	if (argc > 1) {
		error("too many arguments for \"info show\"");
		return EXIT_USAGE;
	}

	if (ctl_open(&k))
		return EXIT_FAILURE;
	ret = kmsgr_info(k, &info);
	kmsgr_close(k);
	if (ret) {
		error("KMSGR_IOC_INFO on %s failed: %s", device_path(),
		      kmsgr_strerror(ret));
		return EXIT_FAILURE;
	}

	/* The kernel NUL-terminates it; do not trust that blindly. */
	memcpy(version, info.version, sizeof(version));
	version[sizeof(version) - 1] = '\0';

	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("module", "kmsgr");
		jw_string("version", version);
		jw_u64("abi_version", info.abi_version);
		print_features(info.features);
		jw_u64("features_mask", info.features);
		jw_open("limits", '{');
		jw_u64("max_sq_entries", info.max_sq_entries);
		jw_u64("max_cq_entries", info.max_cq_entries);
		jw_u64("max_buf_size", info.max_buf_size);
		jw_u64("max_sessions", info.max_sessions);
		jw_close('}');
		if (info.features & KMSGR_FEAT_RDMA) {
			jw_open("rdma", '{');
			jw_u64("pinned_bytes", info.pinned_bytes);
			jw_u64("registered_bytes", info.registered_bytes);
			jw_close('}');
		}
		jw_string("device", device_path());
		jw_close('}');
	} else {
		printf("module kmsgr version %s abi %u\n", version,
		       info.abi_version);
		print_features(info.features);
		printf("limits max_sq_entries %u max_cq_entries %u",
		       info.max_sq_entries, info.max_cq_entries);
		printf(" max_buf_size %llu max_sessions %u\n",
		       (unsigned long long)info.max_buf_size,
		       info.max_sessions);
		if (info.features & KMSGR_FEAT_RDMA)
			printf("rdma pinned_bytes %llu registered_bytes %llu\n",
			       (unsigned long long)info.pinned_bytes,
			       (unsigned long long)info.registered_bytes);
		printf("device %s\n", device_path());
	}
	return EXIT_SUCCESS;
}

static void version_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s version\n"
		"\n"
		"Prints the versions of kmsgrctl and libkmsgr and the ABI version\n"
		"they were built for; needs no device.  -V, -Version and --version\n"
		"do the same.\n",
		progname);
}

static int cmd_version(int argc, char **argv)
{
	if (argc > 0 && (!strcmp(argv[0], "help") || !strcmp(argv[0], "-h") ||
			 !strcmp(argv[0], "--help"))) {
		version_usage(stdout);
		return EXIT_SUCCESS;
	}
	if (argc > 0) {
		error("\"version\" takes no arguments");
		return EXIT_USAGE;
	}

	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("kmsgrctl", LIBKMSGR_VERSION);
		jw_string("libkmsgr", kmsgr_version());
		jw_u64("abi_version", KMSGR_ABI_VERSION);
		jw_close('}');
	} else {
		printf("kmsgrctl %s, libkmsgr %s, ABI %d\n", LIBKMSGR_VERSION,
		       kmsgr_version(), KMSGR_ABI_VERSION);
	}
	return EXIT_SUCCESS;
}

static void print_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [OPTIONS] OBJECT [VERB [ARGS]]\n"
		"where  OBJECT := { info | session | listener | instance | bdev | stats | monitor | dev | key | mon | rados | bench | blk | version | help }\n"
		"       OPTIONS := { -j[son] | -p[retty] | -d[evice] PATH |\n"
		"                    -V[ersion] | -h[elp] }\n"
		"\n"
		"  info [show]                   module version, ABI, features, limits\n"
		"  session [show [INST [ID]]]    sessions: peer, state, mode, counters\n"
		"  session listen [OPTS] ADDR    serve msgr2 sessions (--echo: answer each message)\n"
		"  session connect [OPTS] ADDR   open a session, optionally send messages\n"
		"  listener [show [INST [ID]]]   listeners: address, accepted, refused\n"
		"  instance [show [ID]]          open instances: owner, rings, pool, counters\n"
		"  bdev [show [INST [ID]]]       block devices instances attached: I/O counters\n"
		"  stats [show]                  module-wide counters\n"
		"  monitor [--count N]           session and listener events as they happen\n"
		"  dev [show]                    RDMA devices and ports kmsgr uses\n"
		"  key add --keyring FILE        a keyring's secret as a kernel logon key\n"
		"  mon ping|version|map [ADDR]   ask a Ceph monitor (MPing, MMonGetVersion, MMonGetMap;\n"
		"                                ADDR, -m or ceph.conf's mon host, as ceph does)\n"
		"  rados put|get|stat|rm POOL OBJECT [FILE] [OBJECT FILE]...\n"
		"                                objects on a Ceph cluster's OSDs (auth none or cephx)\n"
		"  rados bench POOL SECONDS write|seq|rand [-b SIZE] [-t DEPTH]\n"
		"                                rados bench over kmsgr sessions\n"
		"  bench [OPTS] ADDR             throughput and latency against \"session listen\"\n"
		"  blk serve|check|bench ...     a remote block service: a target that puts\n"
		"                                requests on a block device, a client, a bench\n"
		"  version                       versions of kmsgrctl, libkmsgr and the ABI\n"
		"  help                          this text; OBJECT help for each object\n"
		"\n"
		"ADDR is IPv4:PORT or [IPv6]:PORT (Ceph's v2: prefix is accepted).\n"
		"\n"
		"  -j, --json        JSON output\n"
		"  -p, --pretty      indented JSON (with -j)\n"
		"  -d, --device PATH device node (default %s)\n"
		"  -V, --version     versions, as the version object\n"
		"  -h, --help        this text\n"
		"Options may be shortened and take one dash or two (-json, --json).\n"
		"\n"
		"Exit status: 0 on success, 1 on failure, 2 on a usage error.\n",
		progname, KMSGR_DEV_PATH);
}

static int cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	print_usage(stdout);
	return EXIT_SUCCESS;
}

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "info",	cmd_info },
	{ "session",	cmd_session },
	{ "listener",	cmd_listener },
	{ "instance",	cmd_instance },
	{ "bdev",	cmd_bdev },
	{ "stats",	cmd_stats },
	{ "monitor",	cmd_monitor },
	{ "dev",	cmd_dev },
	{ "key",	cmd_key },
	{ "mon",	cmd_mon },
	{ "rados",	cmd_rados },
	{ "bench",	cmd_bench },
	{ "blk",	cmd_blk },
	{ "version",	cmd_version },
	{ "help",	cmd_help },
};

/*
 * iproute2 habit: an object may be abbreviated to any unique prefix.
 * NULL if none matches; *@ambiguous set if several do.
 */
static const struct command *find_command(const char *name, bool *ambiguous)
{
	const struct command *found = NULL;
	size_t i, len = strlen(name);

	*ambiguous = false;
	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
		if (len && strncmp(commands[i].name, name, len) == 0) {
			if (found)
				*ambiguous = true;
			found = &commands[i];
		}
	}
	return *ambiguous ? NULL : found;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json",	no_argument,		NULL, 'j' },
		{ "pretty",	no_argument,		NULL, 'p' },
		{ "device",	required_argument,	NULL, 'd' },
		{ "version",	no_argument,		NULL, 'V' },
		{ "Version",	no_argument,		NULL, 'V' },
		{ "help",	no_argument,		NULL, 'h' },
		{ NULL,		0,			NULL, 0 },
	};
	const struct command *cmd;
	bool ambiguous;
	int c, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	opterr = 0;		/* ctl_bad_option() says it, with our prefix */
	/* iproute2 manners: -json as well as --json, -j, -js */
	while ((c = getopt_long_only(argc, argv, "+jpd:Vh", longopts,
				     NULL)) != -1) {
		switch (c) {
		case 'j':
			opt.json = true;
			break;
		case 'p':
			opt.pretty = true;
			break;
		case 'd':
			opt.device = optarg;
			break;
		case 'V':
			return cmd_version(0, NULL);
		case 'h':
			print_usage(stdout);
			return EXIT_SUCCESS;
		default:
			ctl_bad_option(NULL, argv);
			return EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;

	if (argc < 1) {
		print_usage(stderr);
		return EXIT_USAGE;
	}

	cmd = find_command(argv[0], &ambiguous);
	if (!cmd) {
		error("%s object \"%s\"; try \"%s help\"",
		      ambiguous ? "ambiguous" : "unknown", argv[0], progname);
		return EXIT_USAGE;
	}

	ret = cmd->fn(argc - 1, argv + 1);
	if (fflush(stdout) || ferror(stdout)) {
		error("write error: %s", strerror(errno));
		return EXIT_FAILURE;
	}
	return ret;
}

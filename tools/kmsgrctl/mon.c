// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl mon - ask a Ceph monitor over a kmsgr session.
 *
 *   mon ping ADDR              MPing (2) -> MPing: health and mon status
 *   mon version ADDR [MAP]     MMonGetVersion (19) -> reply (20)
 *   mon map ADDR               MMonGetMap (5) -> MMonMap (4): the fsid
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cephenc.h"
#include "kmsgrctl.h"

#define MSG_PING		2
#define MSG_MON_MAP		4
#define MSG_MON_GET_MAP		5
#define MSG_MON_GET_VERSION	19
#define MSG_MON_GET_VERSION_REPLY 20

#define MON_MAX_REPLY		0x100000U	/* 1 MiB */

enum {
	OPT_HELP = CEPH_OPT_NEXT,
};

static void mon_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s mon ping [ADDR] [OPTS]\n"
		"       %s mon version [ADDR] [osdmap|monmap|mdsmap|fsmap]\n"
		"       %s mon map [ADDR] [OPTS]\n"
		"OPTS := [-c|--conf FILE] [-m|--mon-host ADDR] [-n|--name client.ID]\n"
		"        [--id ID] [-k|--keyring FILE | --key-desc DESC] [--secure]\n"
		"        [--timeout S] [--transport tcp|rdma]\n"
		"\n"
		"ping: MPing; prints the health status, its checks and the mon's state.\n"
		"version: MMonGetVersion (default osdmap); prints version and oldest.\n"
		"map: MMonGetMap; prints the fsid and the monmap epoch.\n"
		"As the ceph CLI: the monitor is ADDR, else -m, else \"mon host\" of the\n"
		"conf (-c, $CEPH_CONF, /etc/ceph/ceph.conf); an address is IP:PORT,\n"
		"[IP6]:PORT, v2:IP:PORT or a host name (port 3300 when left out).  The\n"
		"entity is --name (default client.admin) or client.--id.  cephx with\n"
		"the key of -k, else of the conf's keyring, else of the first of\n"
		"/etc/ceph/ceph.$name.keyring, ceph.keyring, keyring, keyring.bin that\n"
		"exists; auth none when the conf says \"auth client required = none\"\n"
		"or no keyring is found.  --key-desc: the key is a kernel logon key\n"
		"(kmsgrctl key add).  --secure asks for secure mode (needs cephx).\n"
		"--timeout bounds each step (default 10 s).  --transport: tcp (the\n"
		"default, what Ceph monitors speak) or rdma.\n",
		progname, progname, progname);
}

/* ---- request and reply --------------------------------------------------- */

/*
 * Send a message whose front is @front (copied into the buffer area) and
 * wait for a reply of @reply_type, within the session's timeout.
 */
static int mon_call(struct ctl_conn *c, __u16 type, __u16 version,
		    __u16 compat, __u64 tid, const void *front,
		    __u32 front_len, __u16 reply_type, const char *what,
		    struct ctl_reply *r)
{
	struct ctl_msg m = {
		.type = type, .version = version, .compat = compat, .tid = tid,
		.front = { 0, front_len },
	};
	int ret;

	if (front_len)
		memcpy(kmsgr_buf(ctl_k), front, front_len);
	ret = ctl_call(c, &m, reply_type, true, ctl_now_ns() + c->timeout_ns,
		       what, r);
	if (!ret && r->front_len > MON_MAX_REPLY) {
		error("%s: reply front of %u bytes is too large", what,
		      r->front_len);
		ctl_reply_free(r);
		ret = -EBADMSG;
	}
	return ret;
}

static int mon_ping(struct ctl_conn *c)
{
	char health[64], name[64], state[64], checks[512];
	const char *v, *ms;
	char *f, *json, *tok, *save = NULL;
	struct ctl_reply r;
	__u32 len, slen;
	int ret;

	ret = mon_call(c, MSG_PING, 1, 0, 0, NULL, 0, MSG_PING, "MPing", &r);
	if (ret)
		return ret;
	f = r.front;
	len = r.front_len;
	slen = len >= 4 ? get_le32((__u8 *)f) : 0;
	if (len < 4 || slen != len - 4 || memchr(f + 4, '\0', slen)) {
		error("MPing: reply front (%u bytes) is not one string", len);
		ret = -EBADMSG;
		goto out;
	}
	json = f + 4;
	v = json_find(json, "health");
	ms = json_find(json, "mon_status");
	if (!v || !ms) {
		error("MPing: reply lacks \"health\" or \"mon_status\": %.200s",
		      json);
		ret = -EBADMSG;
		goto out;
	}
	json_string_at(json_find(v, "status"), health, sizeof(health));
	json_keys_at(json_find(v, "checks"), checks, sizeof(checks));
	json_string_at(json_find(ms, "name"), name, sizeof(name));
	json_string_at(json_find(ms, "state"), state, sizeof(state));
	if (!health[0]) {
		error("MPing: no health status in the reply: %.200s", json);
		ret = -EBADMSG;
		goto out;
	}

	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("peer", c->addr_str);
		jw_string("auth", ctl_conn_auth(c));
		jw_string("mode", ctl_conn_mode(c));
		jw_string("health", health);
		jw_open("checks", '[');
		for (tok = strtok_r(checks, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save))
			jw_string(NULL, tok);
		jw_close(']');
		jw_string("mon", name);
		jw_string("state", state);
		json_compact(json);
		jw_raw("reply", json);
		jw_close('}');
	} else {
		printf("mon %s at %s: %s%s%s%s, state %s (auth %s, mode %s)\n",
		       name[0] ? name : "?", c->addr_str, health,
		       checks[0] ? " (" : "", checks, checks[0] ? ")" : "",
		       state[0] ? state : "?", ctl_conn_auth(c),
		       ctl_conn_mode(c));
	}
out:
	ctl_reply_free(&r);
	return ret;
}

static int mon_version(struct ctl_conn *c, const char *what)
{
	__u8 front[8 + 4 + 32];
	size_t wlen = strlen(what);
	__u64 handle = 0, rtid;
	struct ctl_reply r;
	char *f;
	__u32 len;
	int ret;

	while (!handle) {
		if (getrandom(&handle, sizeof(handle), 0) == sizeof(handle))
			continue;
		ret = -errno;
		error("%s: no random request handle: %s", what, strerror(-ret));
		return ret;
	}
	put_le64(front, handle);
	put_le32(front + 8, (__u32)wlen);
	memcpy(front + 12, what, wlen);
	ret = mon_call(c, MSG_MON_GET_VERSION, 1, 0, handle, front,
		       (__u32)(12 + wlen), MSG_MON_GET_VERSION_REPLY,
		       "MMonGetVersion", &r);
	if (ret)
		return ret;
	f = r.front;
	len = r.front_len;
	rtid = r.tid;
	if (len < 24) {
		error("MMonGetVersion: reply front is %u bytes, want 24", len);
		ret = -EBADMSG;
	} else if (get_le64((__u8 *)f) != handle || rtid != handle) {
		error("MMonGetVersion: reply handle %#llx / tid %#llx != request %#llx",
		      (unsigned long long)get_le64((__u8 *)f),
		      (unsigned long long)rtid, (unsigned long long)handle);
		ret = -EBADMSG;
	} else if (opt.json) {
		jw_open(NULL, '{');
		jw_string("peer", c->addr_str);
		jw_string("map", what);
		jw_u64("version", get_le64((__u8 *)f + 8));
		jw_u64("oldest", get_le64((__u8 *)f + 16));
		jw_close('}');
	} else {
		printf("%s version %llu oldest %llu\n", what,
		       (unsigned long long)get_le64((__u8 *)f + 8),
		       (unsigned long long)get_le64((__u8 *)f + 16));
	}
	ctl_reply_free(&r);
	return ret;
}

int mon_get_fsid(struct ctl_conn *c, __u8 fsid[16], __u32 *epoch)
{
	struct ctl_reply r;
	const __u8 *f;
	int ret;

	ret = mon_call(c, MSG_MON_GET_MAP, 1, 1, 0, NULL, 0, MSG_MON_MAP,
		       "MMonGetMap", &r);
	if (ret)
		return ret;
	/* le32 len, MonMap: u8 v, u8 compat, le32 len, fsid[16], le32 epoch */
	f = (const __u8 *)r.front;
	if (r.front_len < 4 + 6 + 16 + 4 || get_le32(f) > r.front_len - 4) {
		error("MMonGetMap: MMonMap front of %u bytes is too short",
		      r.front_len);
		ctl_reply_free(&r);
		return -EBADMSG;
	}
	memcpy(fsid, f + 10, 16);
	*epoch = get_le32(f + 26);
	ctl_reply_free(&r);
	return 0;
}

static int mon_map(struct ctl_conn *c)
{
	char fsid[40];
	__u8 u[16];
	__u32 epoch;
	int ret;

	ret = mon_get_fsid(c, u, &epoch);
	if (ret)
		return ret;
	snprintf(fsid, sizeof(fsid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("peer", c->addr_str);
		jw_string("fsid", fsid);
		jw_u64("epoch", epoch);
		jw_close('}');
	} else {
		printf("fsid %s epoch %u\n", fsid, epoch);
	}
	return 0;
}

static const char *const mon_verbs[] = { "ping", "version", "map" };

/* what a mon answers MMonGetVersion for (Monitor::handle_get_version) */
static const char *const map_names[] = {
	"osdmap", "monmap", "mdsmap", "fsmap",
};

int cmd_mon(int argc, char **argv)
{
	static const struct option lopts[] = {
		CEPH_CLI_LONGOPTS,
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct ceph_cli cli;
	struct ctl_conn *conn = &cli.conn;
	const char *verb, *what = "osdmap", *addr = NULL;
	char abuf[512], kbuf[1024];
	size_t i;
	int c, nargs, ret;

	if (argc < 1 || !strcmp(argv[0], "help") || !strcmp(argv[0], "-h") ||
	    !strcmp(argv[0], "--help")) {
		mon_usage(argc < 1 ? stderr : stdout);
		return argc < 1 ? EXIT_USAGE : EXIT_SUCCESS;
	}
	/* verbs abbreviate to any unique prefix */
	verb = NULL;
	for (i = 0; i < ARRAY_SIZE(mon_verbs); i++)
		if (*argv[0] && !strncmp(mon_verbs[i], argv[0], strlen(argv[0])))
			verb = verb ? "" : mon_verbs[i];
	if (!verb || !*verb) {
		error("%s verb \"%s\" for object \"mon\"; try \"%s mon help\"",
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
			mon_usage(stdout);
			return EXIT_SUCCESS;
		}
		ctl_bad_option("mon", argv);
		return EXIT_USAGE;
	}
	nargs = argc - optind;
	/* version [ADDR] [MAP]: a last argument that names a map is MAP */
	if (!strcmp(verb, "version") && nargs > 0) {
		for (i = 0; i < ARRAY_SIZE(map_names); i++)
			if (!strcmp(argv[argc - 1], map_names[i]))
				break;
		if (i < ARRAY_SIZE(map_names)) {
			what = argv[argc - 1];
			nargs--;
		} else if (nargs == 2) {
			error("unknown map \"%s\" (osdmap, monmap, mdsmap, fsmap)",
			      argv[argc - 1]);
			return EXIT_USAGE;
		}
	}
	if (nargs > 1) {
		error("mon %s wants at most one ADDR%s", verb,
		      strcmp(verb, "version") ? "" : " and a MAP");
		return EXIT_USAGE;
	}
	if (nargs == 1)
		addr = argv[optind];
	if (conn->keyring && conn->key_desc) {
		error("--keyring and --key-desc both name the key: give one");
		return EXIT_USAGE;
	}
	ret = ceph_resolve_mon(conn, addr, cli.mon_host, cli.conf, abuf,
			       sizeof(abuf), kbuf, sizeof(kbuf));
	if (ret)
		return ret;
	if (ctl_conn_check(conn))
		return EXIT_USAGE;

	ctl_catch_signals();
	if (ctl_setup(16, 4096, 2 * MON_MAX_REPLY))
		return EXIT_FAILURE;
	ret = ctl_conn_open(conn);
	if (!ret) {
		if (!strcmp(verb, "ping"))
			ret = mon_ping(conn);
		else if (!strcmp(verb, "version"))
			ret = mon_version(conn, what);
		else
			ret = mon_map(conn);
		ctl_conn_close(conn);
	}
	ctl_teardown();
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}

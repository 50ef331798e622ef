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

#include "kmsgrctl.h"

#define MSG_PING		2
#define MSG_MON_MAP		4
#define MSG_MON_GET_MAP		5
#define MSG_MON_GET_VERSION	19
#define MSG_MON_GET_VERSION_REPLY 20

#define MON_MAX_REPLY		0x100000U	/* 1 MiB */

enum {
	OPT_SECURE = 256, OPT_TIMEOUT, OPT_TRANSPORT, OPT_HELP, OPT_ID,
	OPT_KEY_DESC,
};

static void mon_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s mon ping [ADDR] [OPTS]\n"
		"       %s mon version [ADDR] [osdmap|monmap|mdsmap|fsmap|mgrmap]\n"
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

static __u64 get_le64(const __u8 *p)
{
	__u64 v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static __u32 get_le32(const __u8 *p)
{
	return (__u32)p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16 |
	       (__u32)p[3] << 24;
}

static void put_le64(__u8 *p, __u64 v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (__u8)(v >> (8 * i));
}

static void put_le32(__u8 *p, __u32 v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = (__u8)(v >> (8 * i));
}

/* ---- a minimal JSON scanner for the MPing reply -------------------------- */

/* End of the JSON string starting at @p (on its opening quote), or NULL. */
static const char *json_skip_string(const char *p)
{
	for (p++; *p; p++) {
		if (*p == '\\' && p[1])
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/*
 * Find member @key (at any depth) after @from; return the position of its
 * value, or NULL.  Keys are compared without unescaping.
 */
static const char *json_find(const char *from, const char *key)
{
	size_t klen = strlen(key);
	const char *p = from, *end;

	while (p && *p) {
		if (*p != '"') {
			p++;
			continue;
		}
		end = json_skip_string(p);
		if (!end)
			return NULL;
		if ((size_t)(end - p) == klen + 2 && !strncmp(p + 1, key, klen)) {
			while (*end == ' ' || *end == '\n' || *end == '\t')
				end++;
			if (*end == ':') {
				end++;
				while (*end == ' ' || *end == '\n' ||
				       *end == '\t')
					end++;
				return end;
			}
		}
		p = end;
	}
	return NULL;
}

/* Copy the string value at @v into @out; "" when it is not a string. */
static void json_string_at(const char *v, char *out, size_t cap)
{
	const char *end;
	size_t n;

	out[0] = '\0';
	if (!v || *v != '"')
		return;
	end = json_skip_string(v);
	if (!end)
		return;
	n = (size_t)(end - v - 2);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, v + 1, n);
	out[n] = '\0';
}

/*
 * Names of the members of the object at @v, comma-separated into @out
 * ("" when none or not an object).
 */
static void json_keys_at(const char *v, char *out, size_t cap)
{
	const char *p, *end;
	size_t used = 0, n;
	int depth = 0;

	out[0] = '\0';
	if (!v || *v != '{')
		return;
	for (p = v; *p; p++) {
		if (*p == '"') {
			end = json_skip_string(p);
			if (!end)
				return;
			n = (size_t)(end - p - 2);
			if (depth == 1 && *end == ':' && used + n + 3 < cap) {
				used += (size_t)snprintf(out + used, cap - used,
							 "%s%.*s",
							 used ? "," : "",
							 (int)n, p + 1);
			}
			p = end - 1;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			if (--depth == 0)
				return;
		}
	}
}

/* Remove the whitespace outside strings of @json, in place. */
static void json_compact(char *json)
{
	bool in_str = false, esc = false;
	char *w = json, *r;

	for (r = json; *r; r++) {
		if (in_str) {
			if (esc)
				esc = false;
			else if (*r == '\\')
				esc = true;
			else if (*r == '"')
				in_str = false;
		} else if (*r == '"') {
			in_str = true;
		} else if (*r == ' ' || *r == '\n' || *r == '\t' ||
			   *r == '\r') {
			continue;
		}
		*w++ = *r;
	}
	*w = '\0';
}

/* ---- request and reply --------------------------------------------------- */

/*
 * Send a message whose front is @front (copied into the buffer area) and
 * wait for a reply of @reply_type; the reply's front is copied to *@out
 * (malloc'd, NUL-terminated) and its tid to *@tid.
 */
static int mon_call(struct ctl_conn *c, __u16 type, __u16 version,
		    __u16 compat, __u64 tid, const void *front,
		    __u32 front_len, __u16 reply_type, const char *what,
		    char **out, __u32 *out_len, __u64 *reply_tid)
{
	struct kmsgr_slice none = { 0 }, fs = { 0, front_len };
	__u8 *buf = kmsgr_buf(ctl_k);
	__u64 deadline = ctl_now_ns() + c->timeout_ns;
	struct kmsgr_sqe sqe;
	struct kmsgr_cqe cqe;
	bool sent = false;
	__u32 len;
	int ret;

	if (front_len)
		memcpy(buf, front, front_len);
	kmsgr_prep_send(&sqe, c->id, type, tid, fs, none, none, 1);
	sqe.version = version;
	sqe.compat_version = compat;
	ret = ctl_queue(&sqe);
	if (ret)
		return ret;

	for (;;) {
		ret = ctl_wait(&cqe, deadline);
		if (ret == -ETIME) {
			error("%s: no %s after %.1f s (timeout)", what,
			      sent ? "reply" : "send completion",
			      (double)c->timeout_ns / 1e9);
			return ret;
		}
		if (ret == -EINTR && !ctl_stopped())
			continue;
		if (ret == -EINTR) {
			error("%s: interrupted", what);
			return ret;
		}
		if (ret)
			return ret;
		switch (cqe.kind) {
		case KMSGR_CQE_SEND:
			if (cqe.res) {
				error("%s: sending failed: %s", what,
				      kmsgr_strerror(cqe.res));
				return cqe.res;
			}
			sent = true;
			break;
		case KMSGR_CQE_OP:
			if (cqe.res) {
				error("%s: submission rejected: %s", what,
				      kmsgr_strerror(cqe.res));
				return cqe.res;
			}
			break;
		case KMSGR_CQE_EVENT:
			if (cqe.session != c->id)
				break;
			if (cqe.event == KMSGR_EV_CLOSED ||
			    cqe.event == KMSGR_EV_DOWN ||
			    cqe.event == KMSGR_EV_RESET) {
				if (cqe.event == KMSGR_EV_CLOSED)
					c->open = false;
				ctl_report_event(what, &cqe);
				return cqe.res ? cqe.res : -ECONNABORTED;
			}
			break;
		case KMSGR_CQE_RECV:
			if (cqe.session != c->id || cqe.type != reply_type) {
				ctl_queue_release(&cqe);
				break;
			}
			len = cqe.seg[0].len;
			if (len > MON_MAX_REPLY ||
			    (__u64)cqe.seg[0].off + len >
			    kmsgr_buf_size(ctl_k)) {
				error("%s: reply front of %u bytes is out of bounds",
				      what, len);
				ctl_queue_release(&cqe);
				return -EBADMSG;
			}
			*out = malloc(len + 1);
			if (!*out) {
				ctl_queue_release(&cqe);
				return -ENOMEM;
			}
			memcpy(*out, buf + cqe.seg[0].off, len);
			(*out)[len] = '\0';
			*out_len = len;
			*reply_tid = cqe.tid;
			ctl_queue_release(&cqe);
			/* let the release reach the kernel */
			kmsgr_submit(ctl_k, 0, 0);
			return 0;
		}
	}
}

static int mon_ping(struct ctl_conn *c)
{
	char health[64], name[64], state[64], checks[512];
	const char *v, *ms;
	char *f = NULL, *json, *tok, *save = NULL;
	__u32 len, slen;
	__u64 tid;
	int ret;

	ret = mon_call(c, MSG_PING, 1, 0, 0, NULL, 0, MSG_PING, "MPing",
		       &f, &len, &tid);
	if (ret)
		return ret;
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
	free(f);
	return ret;
}

static int mon_version(struct ctl_conn *c, const char *what)
{
	__u8 front[8 + 4 + 32];
	size_t wlen = strlen(what);
	__u64 handle = 0, rtid;
	char *f = NULL;
	__u32 len;
	int ret;

	while (!handle)
		if (getrandom(&handle, sizeof(handle), 0) != sizeof(handle))
			return -errno;
	put_le64(front, handle);
	put_le32(front + 8, (__u32)wlen);
	memcpy(front + 12, what, wlen);
	ret = mon_call(c, MSG_MON_GET_VERSION, 1, 0, handle, front,
		       (__u32)(12 + wlen), MSG_MON_GET_VERSION_REPLY,
		       "MMonGetVersion", &f, &len, &rtid);
	if (ret)
		return ret;
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
	free(f);
	return ret;
}

static int mon_map(struct ctl_conn *c)
{
	char fsid[40];
	const __u8 *u;
	char *f = NULL;
	__u64 rtid;
	__u32 len;
	int ret;

	ret = mon_call(c, MSG_MON_GET_MAP, 1, 1, 0, NULL, 0, MSG_MON_MAP,
		       "MMonGetMap", &f, &len, &rtid);
	if (ret)
		return ret;
	/* le32 len, MonMap: u8 v, u8 compat, le32 len, fsid[16], le32 epoch */
	if (len < 4 + 6 + 16 + 4 || get_le32((__u8 *)f) > len - 4) {
		error("MMonGetMap: MMonMap front of %u bytes is too short", len);
		free(f);
		return -EBADMSG;
	}
	u = (__u8 *)f + 10;
	snprintf(fsid, sizeof(fsid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("peer", c->addr_str);
		jw_string("fsid", fsid);
		jw_u64("epoch", get_le32((__u8 *)f + 26));
		jw_close('}');
	} else {
		printf("fsid %s epoch %u\n", fsid, get_le32((__u8 *)f + 26));
	}
	free(f);
	return 0;
}

static const char *const mon_verbs[] = { "ping", "version", "map" };

static const char *const map_names[] = {
	"osdmap", "monmap", "mdsmap", "fsmap", "mgrmap",
};

/*
 * Where the monitor is and how to authenticate, as the ceph CLI decides:
 * ADDR, -m, the conf's mon host; -k, the conf's keyring, the default
 * search path, unless the conf says auth none.  Usage errors return 2,
 * failures 1 (printed).
 */
static int mon_resolve(struct ctl_conn *conn, const char *addr,
		       const char *mon_host, const char *conf, char *abuf,
		       size_t asize, char *kbuf, size_t ksize)
{
	const char *path = conf ? conf : getenv("CEPH_CONF");
	struct ceph_conf cf;
	bool have_conf;
	int ret;

	if (!path)
		path = "/etc/ceph/ceph.conf";
	ret = ceph_conf_load(path, conn->name, &cf);
	have_conf = !ret;
	if (ret && (conf || ret != -ENOENT)) {
		error("cannot read the conf %s: %s", path,
		      ret == -EINVAL ? "malformed" : strerror(-ret));
		return EXIT_FAILURE;
	}

	if (!addr)
		addr = mon_host;
	if (!addr && have_conf && cf.mon_host[0])
		addr = cf.mon_host;
	if (!addr) {
		error("no monitor address: give ADDR, -m ADDR or a conf with \"mon host\" (%s%s)",
		      path, have_conf ? " has none" : " does not exist");
		return EXIT_USAGE;
	}
	/*
	 * IP:PORT as is; a v2: address vector or a host name resolved.
	 * Either way into @abuf: @cf is gone when the caller uses it.
	 */
	if (kmsgr_addr_parse(addr, &conn->addr)) {
		ret = ceph_mon_addr(addr, abuf, asize);
		if (ret) {
			error("monitor address \"%s\": %s", addr,
			      ret == -EHOSTUNREACH ? "cannot resolve the host" :
			      "no v2 address in it");
			return EXIT_FAILURE;
		}
	} else {
		snprintf(abuf, asize, "%s", addr);
	}
	conn->addr_str = abuf;

	if (conn->keyring || conn->key_desc)
		return 0;
	if (have_conf && !strcmp(cf.auth, "none"))
		return 0;		/* the cluster wants no auth */
	if (!ceph_keyring_find(have_conf && cf.keyring[0] ? cf.keyring :
			       ceph_default_keyrings, conn->name, kbuf, ksize)) {
		conn->keyring = kbuf;
		return 0;
	}
	if (have_conf && cf.keyring[0]) {
		error("the conf's keyring \"%s\" is not there", cf.keyring);
		return EXIT_FAILURE;
	}
	return 0;		/* no keyring anywhere: auth none */
}

int cmd_mon(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "secure", no_argument, NULL, OPT_SECURE },
		{ "name", required_argument, NULL, 'n' },
		{ "id", required_argument, NULL, OPT_ID },
		{ "keyring", required_argument, NULL, 'k' },
		{ "key-desc", required_argument, NULL, OPT_KEY_DESC },
		{ "conf", required_argument, NULL, 'c' },
		{ "mon-host", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "transport", required_argument, NULL, OPT_TRANSPORT },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl_conn conn = {
		.transport = KMSGR_XPRT_TCP,
		.peer_type = 1,		/* CEPH_ENTITY_TYPE_MON */
		.name = "client.admin",
		.timeout_ns = 10 * NSEC_PER_SEC,
	};
	const char *verb, *what = "osdmap", *conf = NULL, *mon_host = NULL;
	const char *addr = NULL;
	char abuf[512], kbuf[1024], idname[KMSGR_NAME_LEN + 8];
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

	optind = 0;
	while ((c = getopt_long(argc, argv, "c:m:n:k:h", lopts, NULL)) != -1) {
		switch (c) {
		case OPT_SECURE:
			conn.flags |= KMSGR_SESS_F_SECURE;
			break;
		case 'n':
			conn.name = optarg;
			break;
		case OPT_ID:
			snprintf(idname, sizeof(idname), "client.%s", optarg);
			conn.name = idname;
			break;
		case 'k':
			conn.keyring = optarg;
			break;
		case OPT_KEY_DESC:
			conn.key_desc = optarg;
			break;
		case 'c':
			conf = optarg;
			break;
		case 'm':
			mon_host = optarg;
			break;
		case OPT_TIMEOUT:
			if (ctl_parse_secs(optarg, &conn.timeout_ns)) {
				error("bad --timeout \"%s\" (seconds)", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_TRANSPORT:
			if (ctl_parse_transport(optarg, &conn.transport)) {
				error("unknown transport \"%s\"", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_HELP:
		case 'h':
			mon_usage(stdout);
			return EXIT_SUCCESS;
		default:
			ctl_bad_option("mon", argv);
			return EXIT_USAGE;
		}
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
			error("unknown map \"%s\" (osdmap, monmap, mdsmap, fsmap, mgrmap)",
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
	if (conn.keyring && conn.key_desc) {
		error("--keyring and --key-desc both name the key: give one");
		return EXIT_USAGE;
	}
	ret = mon_resolve(&conn, addr, mon_host, conf, abuf, sizeof(abuf),
			  kbuf, sizeof(kbuf));
	if (ret)
		return ret;
	if (ctl_conn_check(&conn))
		return EXIT_USAGE;

	ctl_catch_signals();
	if (ctl_setup(16, 4096, 2 * MON_MAX_REPLY))
		return EXIT_FAILURE;
	ret = ctl_conn_open(&conn);
	if (!ret) {
		if (!strcmp(verb, "ping"))
			ret = mon_ping(&conn);
		else if (!strcmp(verb, "version"))
			ret = mon_version(&conn, what);
		else
			ret = mon_map(&conn);
		ctl_conn_close(&conn);
	}
	ctl_teardown();
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}

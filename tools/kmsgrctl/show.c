// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl - what the module is doing, over its generic netlink family:
 * session show, listener show, instance show, bdev show, stats, monitor.
 *
 * Text output is one line per object, like ss(8) and rdma(8); with -j a
 * JSON array (show) or one JSON object per line (monitor).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/kmsgr_netlink.h>

#include "kmsgrctl.h"

static const char *const state_names[] = {
	[KMSGR_STATE_CONNECTING]	= "connecting",
	[KMSGR_STATE_HANDSHAKE]		= "handshake",
	[KMSGR_STATE_UP]		= "up",
	[KMSGR_STATE_BACKOFF]		= "backoff",
	[KMSGR_STATE_WAITING]		= "waiting",
	[KMSGR_STATE_DEAD]		= "dead",
	[KMSGR_STATE_CLOSED]		= "closed",
};

static const char *state_name(unsigned int state)
{
	if (state < ARRAY_SIZE(state_names) && state_names[state])
		return state_names[state];
	return "unknown";
}

static const char *mode_name(unsigned int mode)
{
	return mode == KMSGR_MODE_CRC ? "crc" :
	       mode == KMSGR_MODE_SECURE ? "secure" : "none";
}

static const char *auth_name(unsigned int auth)
{
	return auth == KMSGR_AUTH_CEPHX ? "cephx" : "none";
}

/* Open the netlink family, with a clear message on failure. */
static int nl_open(struct kmsgr_nl **nl)
{
	int ret = kmsgr_nl_open(nl);

	if (ret == -ENOENT)
		error("the kmsgr netlink family is not registered: is the kmsgr module loaded?");
	else if (ret)
		error("cannot open generic netlink: %s", strerror(-ret));
	return ret;
}

static void nl_failed(struct kmsgr_nl *nl, const char *what, int ret)
{
	const char *msg = kmsgr_nl_errmsg(nl);

	error("%s: %s%s%s", what, strerror(-ret), *msg ? ": " : "", msg);
}

/* ---- printing ---------------------------------------------------------- */

static void print_addr(const char *key, const struct kmsgr_addr *a, bool has)
{
	char buf[80];

	if (!has)
		return;
	kmsgr_addr_format(a, buf, sizeof(buf));
	if (opt.json)
		jw_string(key, buf);
	else
		printf(" %s %s", key, buf);
}

/* whether an event carries a reason: the ones that end something */
static bool event_has_reason(unsigned int ev)
{
	return ev == KMSGR_EV_DOWN || ev == KMSGR_EV_CLOSED ||
	       ev == KMSGR_EV_REFUSED;
}

/* a signed JSON number */
static void jw_s64(const char *key, long long val)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lld", val);
	jw_raw(key, buf);
}

static void print_session(const struct kmsgr_session_info *s)
{
	if (opt.json) {
		jw_open(NULL, '{');
		if (s->event)
			jw_string("event", kmsgr_event_str(s->event));
		jw_u64("instance", s->instance);
		jw_u64("id", s->id);
		jw_u64("pid", s->pid);
		jw_string("comm", s->comm);
		jw_string("transport", ctl_transport_name(s->transport));
		jw_string("role", s->server ? "server" : "client");
		if (s->server)
			jw_u64("listener", s->listener);
		print_addr("local", &s->local, s->has_local);
		print_addr("peer", &s->peer, s->has_peer);
		jw_string("peer_type", ctl_peer_type_name(s->peer_type));
		jw_s64("peer_gid", s->peer_gid);
		jw_string("state", state_name(s->state));
		jw_string("mode", mode_name(s->mode));
		jw_bool("lossless", s->lossless);
		jw_string("auth", auth_name(s->auth));
		jw_u64("user_data", s->user_data);
		jw_u64("msgs_out", s->msgs_out);
		jw_u64("bytes_out", s->bytes_out);
		jw_u64("msgs_in", s->msgs_in);
		jw_u64("bytes_in", s->bytes_in);
		jw_u64("in_flight", s->in_flight);
		jw_u64("reconnects", s->reconnects);
		jw_s64("last_error", s->last_error);
		jw_string("last_reason", s->last_error || s->last_reason ?
			  kmsgr_reason_str(s->last_reason) : "none");
		if (event_has_reason(s->event)) {
			jw_string("reason", kmsgr_reason_str(s->reason));
			jw_s64("res", s->res);
		}
		jw_close('}');
		return;
	}
	if (s->event)
		printf("[%s] ", kmsgr_event_str(s->event));
	printf("session %u instance %llu pid %u comm %s %s %s", s->id,
	       (unsigned long long)s->instance, s->pid, s->comm,
	       ctl_transport_name(s->transport),
	       s->server ? "server" : "client");
	if (s->server)
		printf(" listener %u", s->listener);
	print_addr("local", &s->local, s->has_local);
	print_addr("peer", &s->peer, s->has_peer);
	printf(" peer-type %s gid %lld state %s mode %s%s auth %s\n",
	       ctl_peer_type_name(s->peer_type), (long long)s->peer_gid,
	       state_name(s->state), mode_name(s->mode),
	       s->lossless ? " lossless" : "", auth_name(s->auth));
	printf("    msgs out %llu in %llu bytes out %llu in %llu in-flight %u reconnects %u",
	       (unsigned long long)s->msgs_out,
	       (unsigned long long)s->msgs_in,
	       (unsigned long long)s->bytes_out,
	       (unsigned long long)s->bytes_in, s->in_flight, s->reconnects);
	if (s->last_error || s->last_reason)
		printf(" last-error %d (%s)", s->last_error,
		       kmsgr_reason_str(s->last_reason));
	if (event_has_reason(s->event))
		printf(" reason %s res %d", kmsgr_reason_str(s->reason),
		       s->res);
	putchar('\n');
}

static void print_listener(const struct kmsgr_listener_info *l)
{
	if (opt.json) {
		jw_open(NULL, '{');
		if (l->event)
			jw_string("event", kmsgr_event_str(l->event));
		jw_u64("instance", l->instance);
		jw_u64("id", l->id);
		jw_u64("pid", l->pid);
		jw_string("comm", l->comm);
		jw_string("transport", ctl_transport_name(l->transport));
		print_addr("local", &l->local, l->has_local);
		jw_string("as", ctl_peer_type_name(l->my_type));
		jw_string("auth", auth_name(l->auth));
		jw_bool("lossless", l->flags & KMSGR_SESS_F_LOSSLESS);
		jw_bool("secure_only", l->flags & KMSGR_SESS_F_SECURE);
		jw_u64("user_data", l->user_data);
		jw_u64("half_open", l->half_open);
		jw_u64("accepted", l->accepted);
		jw_u64("refused", l->refused);
		if (l->event) {
			jw_string("reason", kmsgr_reason_str(l->reason));
			jw_s64("res", l->res);
		}
		jw_close('}');
		return;
	}
	if (l->event)
		printf("[%s] ", kmsgr_event_str(l->event));
	printf("listener %u instance %llu pid %u comm %s %s",
	       l->id, (unsigned long long)l->instance, l->pid, l->comm,
	       ctl_transport_name(l->transport));
	print_addr("local", &l->local, l->has_local);
	printf(" as %s auth %s%s%s half-open %u accepted %llu refused %llu",
	       ctl_peer_type_name(l->my_type), auth_name(l->auth),
	       l->flags & KMSGR_SESS_F_LOSSLESS ? " lossless" : "",
	       l->flags & KMSGR_SESS_F_SECURE ? " secure-only" : "",
	       l->half_open, (unsigned long long)l->accepted,
	       (unsigned long long)l->refused);
	if (l->event)
		printf(" reason %s res %d", kmsgr_reason_str(l->reason),
		       l->res);
	putchar('\n');
}

/*
 * Block devices attached per instance, for the instance view (from a
 * dump of them before the instances': the library's instance struct has
 * no room for the count).
 */
struct bdev_tally {
	bool ok;		/* the dump worked (the module has BDEV_GET) */
	bool full;		/* an instance's devices were not counted */
	size_t n;
	struct { __u64 instance; __u32 count; } inst[64];
};

static int tally_bdev(const struct kmsgr_bdev_info *b, void *arg)
{
	struct bdev_tally *t = arg;
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->inst[i].instance == b->instance)
			break;
	if (i == t->n) {
		if (t->n == ARRAY_SIZE(t->inst)) {
			t->full = true;	/* a count for the first 64 */
			return 0;
		}
		t->inst[t->n].instance = b->instance;
		t->inst[t->n++].count = 0;
	}
	t->inst[i].count++;
	return 0;
}

static struct bdev_tally tally;

/* -1 when unknown */
static long long tally_of(__u64 instance)
{
	size_t i;

	if (!tally.ok)
		return -1;
	for (i = 0; i < tally.n; i++)
		if (tally.inst[i].instance == instance)
			return tally.inst[i].count;
	return tally.full ? -1 : 0;	/* not counted, or none */
}

static void print_instance(const struct kmsgr_instance_info *i)
{
	long long bdevs = tally_of(i->id);

	if (opt.json) {
		jw_open(NULL, '{');
		jw_u64("id", i->id);
		jw_u64("pid", i->pid);
		jw_string("comm", i->comm);
		jw_u64("uid", i->uid);
		jw_u64("sq_entries", i->sq_entries);
		jw_u64("cq_entries", i->cq_entries);
		jw_u64("buf_size", i->buf_size);
		jw_u64("pool_size", i->pool_size);
		jw_u64("pool_used", i->pool_used);
		jw_u64("locked", i->locked);
		jw_u64("sessions", i->sessions);
		jw_u64("sqes", i->sqes);
		jw_u64("sqe_errors", i->sqe_errors);
		jw_u64("cqes", i->cqes);
		jw_u64("cq_full", i->cq_full);
		jw_u64("cq_overflow", i->cq_overflow);
		jw_u64("cq_lost", i->cq_lost);
		jw_u64("pool_full", i->pool_full);
		jw_bool("cq_paused", i->cq_paused);
		jw_u64("pinned_bytes", i->pinned);
		jw_u64("registered_bytes", i->registered);
		if (bdevs >= 0)
			jw_u64("bdevs", (__u64)bdevs);
		jw_u64("bdev_read_bytes", i->bdev_read_bytes);
		jw_u64("bdev_write_bytes", i->bdev_write_bytes);
		jw_close('}');
		return;
	}
	printf("instance %llu pid %u comm %s uid %u sq %u cq %u buf %llu pool %llu used %llu locked %llu sessions %u%s\n",
	       (unsigned long long)i->id, i->pid, i->comm, i->uid,
	       i->sq_entries, i->cq_entries,
	       (unsigned long long)i->buf_size,
	       (unsigned long long)i->pool_size,
	       (unsigned long long)i->pool_used,
	       (unsigned long long)i->locked, i->sessions,
	       i->cq_paused ? " cq-paused" : "");
	printf("    sqes %llu errors %llu cqes %llu cq-full %llu cq-overflow %llu cq-lost %llu pool-full %llu\n",
	       (unsigned long long)i->sqes,
	       (unsigned long long)i->sqe_errors,
	       (unsigned long long)i->cqes,
	       (unsigned long long)i->cq_full,
	       (unsigned long long)i->cq_overflow,
	       (unsigned long long)i->cq_lost,
	       (unsigned long long)i->pool_full);
	printf("    rdma pinned %llu registered %llu\n",
	       (unsigned long long)i->pinned,
	       (unsigned long long)i->registered);
	if (bdevs >= 0)
		printf("    bdevs %lld", bdevs);
	else
		printf("   ");
	printf(" bdev read %llu written %llu\n",
	       (unsigned long long)i->bdev_read_bytes,
	       (unsigned long long)i->bdev_write_bytes);
}

static void print_bdev(const struct kmsgr_bdev_info *b)
{
	bool ro = b->attrs & KMSGR_BDEV_A_RDONLY;
	bool excl = b->flags & KMSGR_BDEV_F_EXCL;

	if (opt.json) {
		jw_open(NULL, '{');
		jw_u64("instance", b->instance);
		jw_u64("id", b->id);
		jw_u64("pid", b->pid);
		jw_string("comm", b->comm);
		jw_string("name", b->name);
		jw_u64("major", b->major);
		jw_u64("minor", b->minor);
		jw_u64("lbs", b->lbs);
		jw_u64("pbs", b->pbs);
		jw_u64("capacity", b->capacity);
		jw_bool("read_only", ro);
		jw_bool("exclusive", excl);
		jw_bool("write_cache", b->attrs & KMSGR_BDEV_A_WCACHE);
		jw_bool("fua", b->attrs & KMSGR_BDEV_A_FUA);
		jw_bool("polled", b->attrs & KMSGR_BDEV_A_POLL);
		jw_u64("flags", b->flags);
		jw_u64("attrs", b->attrs);
		jw_bool("gone", b->gone);
		jw_u64("in_flight", b->in_flight);
		jw_u64("ops", b->ops);
		jw_u64("read_ops", b->read_ops);
		jw_u64("write_ops", b->write_ops);
		jw_u64("flush_ops", b->flush_ops);
		jw_u64("read_bytes", b->read_bytes);
		jw_u64("write_bytes", b->write_bytes);
		jw_u64("errors", b->errors);
		jw_close('}');
		return;
	}
	printf("bdev %u instance %llu pid %u comm %s ", b->id,
	       (unsigned long long)b->instance, b->pid, b->comm);
	printf("%s (%u:%u) lbs %u pbs %u capacity %llu %s%s%s%s%s%s\n",
	       b->name, b->major, b->minor, b->lbs, b->pbs,
	       (unsigned long long)b->capacity, ro ? "ro" : "rw",
	       excl ? " exclusive" : "",
	       b->attrs & KMSGR_BDEV_A_POLL ? " polled" : "",
	       b->attrs & KMSGR_BDEV_A_WCACHE ? " write-cache" : "",
	       b->attrs & KMSGR_BDEV_A_FUA ? " fua" : "",
	       b->gone ? " gone" : "");
	printf("    ops %llu reads %llu writes %llu flushes %llu",
	       (unsigned long long)b->ops, (unsigned long long)b->read_ops,
	       (unsigned long long)b->write_ops,
	       (unsigned long long)b->flush_ops);
	printf(" bytes read %llu written %llu errors %llu in-flight %u\n",
	       (unsigned long long)b->read_bytes,
	       (unsigned long long)b->write_bytes,
	       (unsigned long long)b->errors, b->in_flight);
}

/* ---- verbs ------------------------------------------------------------- */

static int each_session(const struct kmsgr_session_info *s, void *arg)
{
	(void)arg;
	print_session(s);
	return 0;
}

static int each_listener(const struct kmsgr_listener_info *l, void *arg)
{
	(void)arg;
	print_listener(l);
	return 0;
}

static int each_instance(const struct kmsgr_instance_info *i, void *arg)
{
	(void)arg;
	print_instance(i);
	return 0;
}

static int each_bdev(const struct kmsgr_bdev_info *b, void *arg)
{
	(void)arg;
	print_bdev(b);
	return 0;
}

enum show_kind { SHOW_SESSION, SHOW_LISTENER, SHOW_INSTANCE, SHOW_BDEV };

static const char *const show_names[] = {
	"session", "listener", "instance", "bdev",
};

/*
 * OBJECT show [INSTANCE [ID]] (sessions, listeners, block devices) or
 * [ID] (instances): everything visible, one instance's, or one object.
 */
static int show(enum show_kind kind, int argc, char **argv)
{
	int nargs = kind == SHOW_INSTANCE ? 1 : 2;
	__u64 inst = 0, id = 0;
	struct kmsgr_nl *nl;
	char *end;
	int i, ret;

	if (argc > nargs) {
		error("too many arguments for \"%s show\"", show_names[kind]);
		return EXIT_USAGE;
	}
	for (i = 0; i < argc; i++) {
		/* digits only: strtoull() takes "-1" as 2^64 - 1 */
		errno = 0;
		id = strtoull(argv[i], &end, 10);
		if (argv[i][0] < '0' || argv[i][0] > '9' ||
		    errno || end == argv[i] || *end || !id ||
		    (i == 1 && id > 0xffffffffULL)) {
			error("\"%s\" is not a valid %s id", argv[i],
			      i == 0 && kind != SHOW_INSTANCE ? "instance" :
			      show_names[kind]);
			return EXIT_USAGE;
		}
		if (i == 0)
			inst = id;
	}
	if (nl_open(&nl))
		return EXIT_FAILURE;
	/* an older module without BDEV_GET: the instances without counts */
	if (kind == SHOW_INSTANCE)
		tally.ok = kmsgr_nl_bdevs(nl, inst, tally_bdev, &tally) >= 0;

	if (argc == nargs) {
		struct kmsgr_session_info s;
		struct kmsgr_listener_info l;
		struct kmsgr_instance_info in;
		struct kmsgr_bdev_info b;

		if (kind == SHOW_SESSION)
			ret = kmsgr_nl_session_get(nl, inst, (__u32)id, &s);
		else if (kind == SHOW_LISTENER)
			ret = kmsgr_nl_listener_get(nl, inst, (__u32)id, &l);
		else if (kind == SHOW_BDEV)
			ret = kmsgr_nl_bdev_get(nl, inst, (__u32)id, &b);
		else
			ret = kmsgr_nl_instance_get(nl, inst, &in);
		if (ret) {
			nl_failed(nl, show_names[kind], ret);
			kmsgr_nl_close(nl);
			return EXIT_FAILURE;
		}
		if (opt.json)
			jw_open(NULL, '[');
		if (kind == SHOW_SESSION)
			print_session(&s);
		else if (kind == SHOW_LISTENER)
			print_listener(&l);
		else if (kind == SHOW_BDEV)
			print_bdev(&b);
		else
			print_instance(&in);
		if (opt.json)
			jw_close(']');
		kmsgr_nl_close(nl);
		return EXIT_SUCCESS;
	}

	if (opt.json)
		jw_open(NULL, '[');
	if (kind == SHOW_SESSION)
		ret = kmsgr_nl_sessions(nl, inst, each_session, NULL);
	else if (kind == SHOW_LISTENER)
		ret = kmsgr_nl_listeners(nl, inst, each_listener, NULL);
	else if (kind == SHOW_BDEV)
		ret = kmsgr_nl_bdevs(nl, inst, each_bdev, NULL);
	else
		ret = kmsgr_nl_instances(nl, each_instance, NULL);
	if (opt.json)
		jw_close(']');
	if (ret < 0)
		nl_failed(nl, show_names[kind], ret);
	kmsgr_nl_close(nl);
	return ret < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int cmd_session_show(int argc, char **argv)
{
	return show(SHOW_SESSION, argc, argv);
}

static void listener_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s listener [show [INSTANCE [ID]]]\n"
		"\n"
		"Lists the listeners of the instances the caller may see (its own\n"
		"effective uid's; every one with CAP_NET_ADMIN): address, transport,\n"
		"what it presents, handshakes in progress, sessions accepted and\n"
		"connections refused.  \"%s session listen\" creates one.\n",
		progname, progname);
}

static void instance_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s instance [show [ID]]\n"
		"\n"
		"Lists the open /dev/kmsgr instances the caller may see: owner pid\n"
		"and comm, ring sizes, buffer area and receive pool use, memory\n"
		"locked, sessions, the SQ/CQ counters (CQ full, overflow, lost), the\n"
		"RDMA memory its connections keep pinned and registered, and its\n"
		"block devices: how many are attached, the bytes read and written.\n",
		progname);
}

static void bdev_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s bdev [show [INSTANCE [ID]]]\n"
		"\n"
		"Lists the block devices the instances the caller may see have\n"
		"attached (\"%s blk serve\" attaches one): the kernel's name and\n"
		"major:minor, block sizes, capacity, read-only or read-write,\n"
		"exclusive, polled, write cache and FUA; the ops submitted to it\n"
		"(reads, writes, flushes), the bytes read and written, the ops that\n"
		"failed, the ops in flight; \"gone\" once the device went away.  ID\n"
		"is the handle ATTACH_BDEV gave.\n",
		progname, progname);
}

static void stats_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s stats [show]\n"
		"\n"
		"Module-wide counters: open instances and sessions; sessions\n"
		"connected, accepted and refused; reconnects and connections lost;\n"
		"messages and payload bytes each way; RDMA memory pinned and\n"
		"registered.  They count every user's and network namespace's\n"
		"instances: needs CAP_NET_ADMIN.\n",
		progname);
}

static void monitor_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s monitor [--count N] [--timeout S]\n"
		"\n"
		"Prints session and listener events as they happen (accepted, up,\n"
		"down, reset, closed, refused), one line each (-j: one JSON object\n"
		"per line), until SIGINT, N events or S seconds.  Needs CAP_NET_ADMIN.\n",
		progname);
}

/*
 * The verbs of a show-only object: none, "show" or a prefix of it, or
 * "help"/-h.  Returns -1 to go on with show, else an exit status.
 */
static int show_verb(int *argc, char ***argv, const char *object,
		     void (*usage)(FILE *f))
{
	const char *v;

	if (*argc < 1)
		return -1;
	v = (*argv)[0];
	if (!strcmp(v, "help") || !strcmp(v, "-h") || !strcmp(v, "--help")) {
		usage(stdout);
		return EXIT_SUCCESS;
	}
	if (*v && !strncmp("show", v, strlen(v))) {
		(*argc)--;
		(*argv)++;
		/* OBJECT show -h */
		if (*argc > 0 && (!strcmp((*argv)[0], "-h") ||
				  !strcmp((*argv)[0], "--help") ||
				  !strcmp((*argv)[0], "help"))) {
			usage(stdout);
			return EXIT_SUCCESS;
		}
		return -1;
	}
	error("unknown verb \"%s\" for object \"%s\"; try \"%s %s help\"",
	      v, object, progname, object);
	return EXIT_USAGE;
}

int cmd_listener(int argc, char **argv)
{
	int ret = show_verb(&argc, &argv, "listener", listener_usage);

	return ret >= 0 ? ret : show(SHOW_LISTENER, argc, argv);
}

int cmd_instance(int argc, char **argv)
{
	int ret = show_verb(&argc, &argv, "instance", instance_usage);

	return ret >= 0 ? ret : show(SHOW_INSTANCE, argc, argv);
}

int cmd_bdev(int argc, char **argv)
{
	int ret = show_verb(&argc, &argv, "bdev", bdev_usage);

	return ret >= 0 ? ret : show(SHOW_BDEV, argc, argv);
}

int cmd_stats(int argc, char **argv)
{
	struct kmsgr_stats_info st;
	struct kmsgr_nl *nl;
	int ret = show_verb(&argc, &argv, "stats", stats_usage);

	if (ret >= 0)
		return ret;
	if (argc > 0) {
		error("\"stats show\" takes no arguments");
		return EXIT_USAGE;
	}
	if (nl_open(&nl))
		return EXIT_FAILURE;
	ret = kmsgr_nl_stats(nl, &st);
	if (ret == -EPERM) {
		error("stats: the module-wide counters need CAP_NET_ADMIN");
		kmsgr_nl_close(nl);
		return EXIT_FAILURE;
	}
	if (ret) {
		nl_failed(nl, "stats", ret);
		kmsgr_nl_close(nl);
		return EXIT_FAILURE;
	}
	kmsgr_nl_close(nl);
	if (opt.json) {
		jw_open(NULL, '{');
		jw_u64("instances", st.instances);
		jw_u64("sessions", st.sessions);
		jw_u64("connects", st.connects);
		jw_u64("accepts", st.accepts);
		jw_u64("refused", st.refused);
		jw_u64("reconnects", st.reconnects);
		jw_u64("faults", st.faults);
		jw_u64("msgs_out", st.msgs_out);
		jw_u64("bytes_out", st.bytes_out);
		jw_u64("msgs_in", st.msgs_in);
		jw_u64("bytes_in", st.bytes_in);
		jw_u64("pinned_bytes", st.pinned);
		jw_u64("registered_bytes", st.registered);
		jw_close('}');
		return EXIT_SUCCESS;
	}
	printf("instances %u sessions %u\n", st.instances, st.sessions);
	printf("connects %llu accepts %llu refused %llu reconnects %llu faults %llu\n",
	       (unsigned long long)st.connects,
	       (unsigned long long)st.accepts,
	       (unsigned long long)st.refused,
	       (unsigned long long)st.reconnects,
	       (unsigned long long)st.faults);
	printf("msgs out %llu in %llu bytes out %llu in %llu\n",
	       (unsigned long long)st.msgs_out,
	       (unsigned long long)st.msgs_in,
	       (unsigned long long)st.bytes_out,
	       (unsigned long long)st.bytes_in);
	printf("rdma pinned %llu registered %llu\n",
	       (unsigned long long)st.pinned,
	       (unsigned long long)st.registered);
	return EXIT_SUCCESS;
}

/* ---- dev --------------------------------------------------------------- */

static void dev_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s dev [show]\n"
		"\n"
		"Lists the devices kmsgr's transports use (the RDMA devices\n"
		"kmsgr_rdma found): name, transport, ports and which are down,\n"
		"connections on it, and connections closed while their port was\n"
		"down, parked until it is up again.  Nothing without kmsgr_rdma.\n",
		progname);
}

static int each_dev(const struct kmsgr_dev_info *d, void *arg)
{
	unsigned int p, up = 0;

	(void)arg;
	for (p = 1; p <= d->ports && p < 64; p++)
		up += !(d->ports_down & (1ULL << p));
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("name", d->name);
		jw_string("transport", ctl_transport_name(d->transport));
		jw_u64("ports", d->ports);
		jw_open("ports_down", '[');
		for (p = 1; p <= d->ports && p < 64; p++)
			if (d->ports_down & (1ULL << p))
				jw_u64(NULL, p);
		jw_close(']');
		jw_u64("conns", d->conns);
		jw_u64("parked", d->parked);
		jw_bool("dying", d->dying);
		jw_close('}');
		return 0;
	}
	printf("dev %s transport %s ports %u up %u conns %u parked %u%s\n",
	       d->name, ctl_transport_name(d->transport), d->ports, up,
	       d->conns, d->parked, d->dying ? " dying" : "");
	return 0;
}

int cmd_dev(int argc, char **argv)
{
	struct kmsgr_nl *nl;
	int ret = show_verb(&argc, &argv, "dev", dev_usage);

	if (ret >= 0)
		return ret;
	if (argc > 0) {
		error("\"dev show\" takes no arguments");
		return EXIT_USAGE;
	}
	if (nl_open(&nl))
		return EXIT_FAILURE;
	if (opt.json)
		jw_open(NULL, '[');
	ret = kmsgr_nl_devs(nl, each_dev, NULL);
	if (opt.json)
		jw_close(']');
	if (ret < 0)
		nl_failed(nl, "dev", ret);
	kmsgr_nl_close(nl);
	return ret < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- monitor ----------------------------------------------------------- */

struct monitor {
	__u64 left;		/* events still to print; 0: no limit */
	bool done;		/* the count was reached */
};

static int monitor_event(struct monitor *m)
{
	fflush(stdout);
	if (m->left && --m->left == 0)
		m->done = true;
	return m->done;
}

static int on_session(const struct kmsgr_session_info *s, void *arg)
{
	print_session(s);
	return monitor_event(arg);
}

static int on_listener(const struct kmsgr_listener_info *l, void *arg)
{
	print_listener(l);
	return monitor_event(arg);
}

int cmd_monitor(int argc, char **argv)
{
	static const struct kmsgr_nl_monitor_ops ops = {
		.session = on_session,
		.listener = on_listener,
	};
	struct monitor m = { 0, false };
	__u64 timeout_ns = 0, deadline = 0;
	struct kmsgr_nl *nl;
	int fd, i, ret;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "help") || !strcmp(argv[i], "-h") ||
		    !strcmp(argv[i], "--help")) {
			monitor_usage(stdout);
			return EXIT_SUCCESS;
		}
		if (i + 1 < argc && !strcmp(argv[i], "--count")) {
			if (ctl_parse_size(argv[++i], 1, ~0ULL, &m.left)) {
				error("bad --count \"%s\" (1 or more)", argv[i]);
				return EXIT_USAGE;
			}
		} else if (i + 1 < argc && !strcmp(argv[i], "--timeout")) {
			if (ctl_parse_secs(argv[++i], &timeout_ns)) {
				error("bad --timeout \"%s\" (seconds, above 0)",
				      argv[i]);
				return EXIT_USAGE;
			}
		} else {
			error("unknown argument \"%s\" for \"monitor\"; try \"%s monitor help\"",
			      argv[i], progname);
			return EXIT_USAGE;
		}
	}
	if (nl_open(&nl))
		return EXIT_FAILURE;
	fd = kmsgr_nl_monitor_start(nl);
	if (fd < 0) {
		if (fd == -EPERM)
			error("monitor: joining the monitor group needs CAP_NET_ADMIN");
		else if (fd == -EOPNOTSUPP)
			error("monitor: this kernel cannot keep the monitor group to CAP_NET_ADMIN, so kmsgr does not offer it (Linux 6.1.64, 6.6.3 or 6.7 and later can)");
		else
			error("monitor: %s", strerror(-fd));
		kmsgr_nl_close(nl);
		return EXIT_FAILURE;
	}
	ctl_catch_signals();
	if (timeout_ns)
		deadline = ctl_now_ns() + timeout_ns;
	ret = 0;
	while (!ctl_stopped() && !m.done) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		/*
		 * At most a second at a time: a stop signal that lands
		 * between the ctl_stopped() check and poll() is seen then
		 */
		int ms = 1000;

		if (deadline) {
			__u64 now = ctl_now_ns();

			if (now >= deadline)
				break;
			if (deadline - now < 1000ULL * 1000000)
				ms = (int)((deadline - now + 999999) / 1000000);
		}
		ret = poll(&pfd, 1, ms);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0) {
			error("monitor: poll: %s", strerror(errno));
			break;
		}
		if (!ret)
			continue;
		ret = kmsgr_nl_monitor_read(nl, &ops, &m);
		if (ret == -ENOBUFS) {
			error("monitor: events came faster than they were read: some were lost");
			ret = 0;
			continue;
		}
		if (ret < 0) {
			error("monitor: %s", strerror(-ret));
			break;
		}
		ret = 0;
	}
	kmsgr_nl_close(nl);
	return ret < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

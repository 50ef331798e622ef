// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl session - listen for and open msgr2 sessions: session listen,
 * session connect, session show (the options: session_usage() below,
 * docs/usage.md).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "kmsgrctl.h"

/* Message type of "session connect --send" (not a Ceph type). */
#define CTL_MSG_TYPE		0x7c01
#define CTL_SEND_DEPTH		32

static void session_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s session [show [INSTANCE [ID]]]\n"
		"       %s session listen [--transport tcp|rdma] [--echo] [--lossless]\n"
		"                  [--as TYPE] [--count N] [--time S] [--pool-size BYTES]\n"
		"                  [--sq N] [--keyring FILE | --logon-key] [--name client.ID]\n"
		"                  [--secure] [--busy-poll USEC]\n"
		"                  ADDR:PORT\n"
		"       %s session connect [--transport tcp|rdma] [--lossless] [--secure]\n"
		"                  [--name client.ID] [--keyring FILE | --key-desc DESC]\n"
		"                  [--peer-type TYPE]\n"
		"                  [--send N [--size BYTES] [--verify-echo]] [--timeout S]\n"
		"                  [--hold S]\n"
		"                  ADDR:PORT\n"
		"\n"
		"listen: serve sessions on ADDR:PORT (port 0: any; the bound address is\n"
		"  printed) until SIGINT/SIGTERM, --count N messages or --time S seconds\n"
		"  (with --echo: N echoed; what arrives while they go out is released).\n"
		"  Prints accepted/up/down/closed events and a summary.  --echo answers\n"
		"  every message with the same type, tid, version and segments, sent\n"
		"  straight from the receive-pool slices (zero copy), released when the\n"
		"  send completes; without --echo messages are counted and released.\n"
		"  --pool-size: receive pool (default 64M); --sq: SQ entries (default\n"
		"  256; the CQ has twice as many).  --as: the entity type the\n"
		"  listener presents in HELLO (mon, osd, mds, mgr, client; default\n"
		"  client): a Ceph client dialling a mon wants mon.  Sessions that end\n"
		"  are closed; refused connections are reported with their reason.\n"
		"  --keyring: clients authenticate with cephx as entity --name\n"
		"  (default client.admin, key from FILE), in crc or secure mode\n"
		"  (--secure: secure only); without it, auth none in crc mode.\n"
		"  --logon-key: the same, the key read by the kernel from the logon\n"
		"  key \"kmsgr:client.ID\" of the caller's keyrings (kmsgrctl key add).\n"
		"  --busy-poll: spin on the completion ring for up to USEC (0 to\n"
		"  10000) before sleeping, as kmsgrctl bench --busy-poll.\n"
		"connect: open a session, report UP, optionally send N messages whose\n"
		"  data segment has BYTES bytes (default 4096; up to %d in flight) and\n"
		"  wait for their completions; --verify-echo also waits for N echoes\n"
		"  (from \"listen --echo\") and checks their payloads, keeping at most\n"
		"  32 messages without their echo (a request/response client); then close.\n"
		"  TYPE: mon, osd, mds, mgr, client or any (default any).  cephx when\n"
		"  --keyring is given (--name defaults to client.admin), or --key-desc\n"
		"  DESC: the kernel reads the secret from that logon key of the\n"
		"  caller's keyrings (kmsgrctl key add); --secure needs cephx.  --timeout: bound for each wait (default 10 s).  --hold S:\n"
		"  stay connected S seconds after the messages before closing.\n"
		"show (also the object alone): the sessions of the instances the\n"
		"  caller may see (its effective uid's; its network namespace's with\n"
		"  CAP_NET_ADMIN), or\n"
		"  one instance's, or one session: peer, state, mode, counters.\n",
		progname, progname, progname, CTL_SEND_DEPTH);
}

enum {
	OPT_TRANSPORT = 256, OPT_ECHO, OPT_LOSSLESS, OPT_COUNT, OPT_TIME,
	OPT_POOL, OPT_SECURE, OPT_NAME, OPT_KEYRING, OPT_PEER, OPT_SEND,
	OPT_SIZE, OPT_VERIFY, OPT_TIMEOUT, OPT_AS, OPT_SQ, OPT_HELP, OPT_HOLD,
	OPT_KEY_DESC, OPT_LOGON, OPT_BUSY_POLL,
};

/* ---- listen ------------------------------------------------------------- */

/* An echo in flight: the received message, released when the send ends. */
struct echo {
	struct kmsgr_cqe recv;
};

struct listen_state {
	bool echo;
	__u64 count;		/* stop after this many messages (0: none) */
	__u64 deadline;		/* --time: stop then (CLOCK_MONOTONIC ns) */
	__u64 msgs, bytes, echoed, in_flight, op_errors;
	__u64 echo_errors;	/* the module refused an echo */
	__u64 echo_dropped;	/* its session went away first */
	bool bad_echo_reported;
};

static bool event_has_reason(const struct kmsgr_cqe *cqe)
{
	return cqe->event == KMSGR_EV_DOWN || cqe->event == KMSGR_EV_CLOSED ||
	       cqe->event == KMSGR_EV_REFUSED;
}

static void listen_event(const struct kmsgr_cqe *cqe)
{
	/* a session that ended: give its id back (ENOENT if it retired) */
	if (cqe->event == KMSGR_EV_CLOSED)
		kmsgr_close_id(ctl_k, cqe->session);
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("event", kmsgr_event_str(cqe->event));
		jw_u64("session", cqe->session);
		if (event_has_reason(cqe)) {
			jw_string("reason", kmsgr_reason_str(cqe->reason));
			if (cqe->res)
				jw_string("error", strerror(-cqe->res));
		}
		jw_close('}');
		return;
	}
	if (cqe->event == KMSGR_EV_REFUSED)
		printf("listener %u refused a connection", cqe->session);
	else
		printf("session %u %s", cqe->session,
		       kmsgr_event_str(cqe->event));
	if (event_has_reason(cqe))
		printf(": %s", kmsgr_reason_str(cqe->reason));
	if (cqe->res)
		printf(" (%s)", strerror(-cqe->res));
	putchar('\n');
}

static int listen_recv(struct listen_state *st, const struct kmsgr_cqe *cqe)
{
	struct kmsgr_sqe sqe;
	struct echo *e;

	st->msgs++;
	st->bytes += (__u64)cqe->seg[0].len + cqe->seg[1].len +
		     cqe->seg[2].len;
	/*
	 * Past --count or --time nothing new is started: the messages still
	 * arriving while the last echoes go out are released, or a client
	 * that keeps sending would keep the listener from ever stopping.
	 */
	if (!st->echo || (st->count && st->msgs > st->count) ||
	    (st->deadline && ctl_now_ns() >= st->deadline))
		return ctl_queue_release(cqe);

	e = malloc(sizeof(*e));
	if (!e) {
		error("out of memory");
		return -ENOMEM;
	}
	e->recv = *cqe;
	kmsgr_prep_send(&sqe, cqe->session, cqe->type, cqe->tid, cqe->seg[0],
			cqe->seg[1], cqe->seg[2], (uintptr_t)e);
	sqe.version = cqe->version;
	st->in_flight++;
	return ctl_queue(&sqe);
}

static int listen_send_done(struct listen_state *st,
			    const struct kmsgr_cqe *cqe)
{
	struct echo *e = (struct echo *)(uintptr_t)cqe->user_data;
	int ret;

	st->in_flight--;
	if (cqe->res == -EINVAL || cqe->res == -EMSGSIZE) {
		st->echo_errors++;
		if (!st->bad_echo_reported) {
			error("the module refused an echo sent from receive-pool slices: %s",
			      strerror(-cqe->res));
			st->bad_echo_reported = true;
		}
	} else if (cqe->res) {
		/* the client closed before its echo went out: not an error */
		st->echo_dropped++;
	} else {
		st->echoed++;
	}
	ret = ctl_queue_release(&e->recv);
	free(e);
	return ret;
}

/* One completion of the listener. */
static int listen_cqe(struct listen_state *st, const struct kmsgr_cqe *cqe)
{
	switch (cqe->kind) {
	case KMSGR_CQE_EVENT:
		listen_event(cqe);
		return 0;
	case KMSGR_CQE_RECV:
		return listen_recv(st, cqe);
	case KMSGR_CQE_SEND:
		return listen_send_done(st, cqe);
	case KMSGR_CQE_OP:
		if (cqe->res) {
			st->op_errors++;
			error("a submission was rejected: %s",
			      kmsgr_strerror(cqe->res));
		}
		return 0;
	default:
		error("unknown completion kind %u", cqe->kind);
		return 0;
	}
}

static int listen_loop(struct listen_state *st)
{
	__u64 deadline = st->deadline;
	struct kmsgr_cqe cqe;
	__u64 now, until;
	int ret;

	for (;;) {
		if (ctl_stopped())
			return 0;
		if (st->count && st->msgs >= st->count && !st->in_flight)
			return 0;
		if (deadline && ctl_now_ns() >= deadline && !st->in_flight)
			return 0;
		/*
		 * At most a second at a time: a stop signal that lands
		 * between the ctl_stopped() check and the wait is seen then.
		 * The clock only with a deadline (see ctl_wait_for()).  Past
		 * it, echoes in flight are waited for 10 ms at a time (a
		 * deadline in the past would not wait at all: a busy loop).
		 */
		if (deadline) {
			now = ctl_now_ns();
			until = now + NSEC_PER_SEC;
			if (deadline <= now)
				until = now + 10 * NSEC_PER_MSEC;
			else if (deadline < until)
				until = deadline;
			ret = ctl_wait(&cqe, until);
		} else {
			ret = ctl_wait_for(&cqe, NSEC_PER_SEC);
		}
		if (ret == -ETIME || ret == -EINTR)
			continue;
		if (ret)
			return ret;
		do {
			ret = listen_cqe(st, &cqe);
			if (ret)
				return ret;
		} while (ctl_poll(&cqe));
	}
}

static int session_listen(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "transport", required_argument, NULL, OPT_TRANSPORT },
		{ "echo", no_argument, NULL, OPT_ECHO },
		{ "lossless", no_argument, NULL, OPT_LOSSLESS },
		{ "as", required_argument, NULL, OPT_AS },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "pool-size", required_argument, NULL, OPT_POOL },
		{ "sq", required_argument, NULL, OPT_SQ },
		{ "keyring", required_argument, NULL, OPT_KEYRING },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "secure", no_argument, NULL, OPT_SECURE },
		{ "logon-key", no_argument, NULL, OPT_LOGON },
		{ "busy-poll", required_argument, NULL, OPT_BUSY_POLL },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *keyring = NULL, *name = "client.admin";
	__u32 busy_poll = 0;
	bool logon = false;
	struct kmsgr_listen_key lk;
	struct listen_state st = { 0 };
	__u64 sq = 256;
	struct kmsgr_listen l;
	__u64 pool = 64ULL << 20, time_ns = 0;
	__u32 xprt = KMSGR_XPRT_TCP;
	char bound[80];
	int c, ret;

	memset(&l, 0, sizeof(l));
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case OPT_TRANSPORT:
			if (ctl_parse_transport(optarg, &xprt)) {
				error("unknown transport \"%s\" (tcp or rdma)",
				      optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_ECHO:
			st.echo = true;
			break;
		case OPT_LOSSLESS:
			l.flags |= KMSGR_SESS_F_LOSSLESS;
			break;
		case OPT_AS:
			if (ctl_parse_peer_type(optarg, &l.my_type) ||
			    !l.my_type) {
				error("bad --as \"%s\" (mon, osd, mds, mgr, client)",
				      optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_COUNT:
			if (ctl_parse_size(optarg, 1, UINT64_MAX, &st.count)) {
				error("bad --count \"%s\"", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_TIME:
			if (ctl_parse_secs(optarg, &time_ns)) {
				error("bad --time \"%s\" (seconds)", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_POOL:
			if (ctl_parse_size(optarg, KMSGR_POOL_MIN, 1ULL << 40,
					   &pool)) {
				error("bad --pool-size \"%s\" (at least %u)",
				      optarg, KMSGR_POOL_MIN);
				return EXIT_USAGE;
			}
			break;
		case OPT_SQ:
			if (ctl_parse_size(optarg, 1, 32768, &sq)) {
				error("bad --sq \"%s\" (1 to 32768)", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_KEYRING:
			keyring = optarg;
			break;
		case OPT_NAME:
			name = optarg;
			break;
		case OPT_SECURE:
			l.flags |= KMSGR_SESS_F_SECURE;
			break;
		case OPT_LOGON:
			logon = true;
			break;
		case OPT_BUSY_POLL:
			if (ctl_parse_busy_poll(optarg, &busy_poll))
				return EXIT_USAGE;
			break;
		case OPT_HELP:
		case 'h':
			session_usage(stdout);
			return EXIT_SUCCESS;
		default:
			ctl_bad_option("session listen", argv);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		error("session listen wants exactly one ADDR:PORT");
		return EXIT_USAGE;
	}
	if (kmsgr_addr_parse(argv[optind], &l.addr)) {
		error("bad address \"%s\" (want IPv4:PORT or [IPv6]:PORT)",
		      argv[optind]);
		return EXIT_USAGE;
	}
	l.transport = xprt;
	if (keyring && logon) {
		error("--keyring and --logon-key both name the key: give one");
		return EXIT_USAGE;
	}
	if ((l.flags & KMSGR_SESS_F_SECURE) && !keyring && !logon) {
		error("--secure needs --keyring or --logon-key (secure mode comes with cephx)");
		return EXIT_USAGE;
	}
	if (keyring || logon) {
		memset(&lk, 0, sizeof(lk));
		if (strncmp(name, "client.", 7) || !name[7] ||
		    strlen(name + 7) >= sizeof(lk.name)) {
			error("bad --name \"%s\" (client.ID)", name);
			return EXIT_USAGE;
		}
		/* the kernel reads the logon key "kmsgr:client.ID" itself */
		ret = logon ? 0 : kmsgr_keyring_load(keyring, name, lk.key);
		if (ret) {
			error("cannot read the key of %s from %s: %s", name,
			      keyring, kmsgr_strerror(ret));
			return EXIT_FAILURE;
		}
		if (logon)
			lk.flags = KMSGR_LISTEN_KEY_F_LOGON;
		strcpy(lk.name, name + 7);
		lk.entity_type = 8;		/* CEPH_ENTITY_TYPE_CLIENT */
		l.auth = KMSGR_AUTH_CEPHX;
		l.keys = (uintptr_t)&lk;
		l.n_keys = 1;
	}

	ctl_catch_signals();
	ret = ctl_setup((__u32)sq, 4096, pool) ? -1 : 0;
	if (!ret) {
		ret = kmsgr_set_busy_poll(ctl_k, busy_poll);
		if (ret) {
			error("cannot set busy-poll to %u us: %s", busy_poll,
			      kmsgr_strerror(ret));
			ctl_teardown();
		}
	}
	if (!ret)
		ret = kmsgr_listen(ctl_k, &l);
	else
		ret = 1;	/* reported, torn down */
	if (keyring)
		explicit_bzero(&lk, sizeof(lk));
	if (ret == 1)
		return EXIT_FAILURE;
	if (ret && logon && (ret == -ENOKEY || ret == -EKEYREJECTED ||
			     ret == -EKEYREVOKED || ret == -EKEYEXPIRED)) {
		error("cannot listen on %s: the logon key \"%s%s\": %s",
		      argv[optind], KMSGR_KEY_DESC_PREFIX, name,
		      kmsgr_strerror(ret));
		ctl_teardown();
		return EXIT_FAILURE;
	}
	if (ret) {
		error("cannot listen on %s (%s): %s", argv[optind],
		      ctl_transport_name(xprt), ctl_sess_strerror(ret));
		ctl_teardown();
		return EXIT_FAILURE;
	}
	kmsgr_addr_format(&l.bound, bound, sizeof(bound));
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("event", "listening");
		jw_string("addr", bound);
		jw_string("transport", ctl_transport_name(xprt));
		jw_u64("id", l.id);
		jw_bool("echo", st.echo);
		jw_bool("lossless", l.flags & KMSGR_SESS_F_LOSSLESS);
		jw_close('}');
	} else {
		printf("listening on %s transport %s id %u%s%s\n", bound,
		       ctl_transport_name(xprt), l.id, st.echo ? " echo" : "",
		       l.flags & KMSGR_SESS_F_LOSSLESS ? " lossless" : "");
	}

	if (time_ns)
		st.deadline = ctl_now_ns() + time_ns;
	ret = listen_loop(&st);
	kmsgr_close_id(ctl_k, l.id);

	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("event", "summary");
		jw_u64("messages", st.msgs);
		jw_u64("bytes", st.bytes);
		jw_u64("echoed", st.echoed);
		jw_u64("echo_dropped", st.echo_dropped);
		jw_u64("echo_errors", st.echo_errors);
		jw_close('}');
	} else {
		printf("received %llu messages (%llu bytes)", st.msgs, st.bytes);
		if (st.echo)
			printf(", echoed %llu, %llu dropped (session gone), %llu refused",
			       st.echoed, st.echo_dropped, st.echo_errors);
		putchar('\n');
	}
	ctl_teardown();
	return ret || st.echo_errors || st.op_errors ? EXIT_FAILURE :
	       EXIT_SUCCESS;
}

/* ---- connect ------------------------------------------------------------ */

struct send_state {
	__u64 n, size, sent, done, failed, echoes, bad_echoes;
	bool verify;
	int first_err;
};

static void fill_pattern(__u8 *p, __u64 len)
{
	__u64 i;

	for (i = 0; i < len; i++)
		p[i] = (__u8)(i * 7 + (i >> 8));
}

static bool echo_ok(const struct kmsgr_cqe *cqe, __u64 size)
{
	const __u8 *buf = kmsgr_buf(ctl_k);
	const __u8 *tx = buf;

	return cqe->type == CTL_MSG_TYPE && cqe->seg[2].len == size &&
	       !cqe->seg[0].len && !cqe->seg[1].len &&
	       (__u64)cqe->seg[2].off + size <= kmsgr_buf_size(ctl_k) &&
	       !memcmp(buf + cqe->seg[2].off, tx, size);
}

static int send_messages(struct ctl_conn *c, struct send_state *st)
{
	struct kmsgr_slice none = { 0 }, data = { 0, (__u32)st->size };
	struct kmsgr_sqe sqe;
	struct kmsgr_cqe cqe;
	int ret;

	fill_pattern(kmsgr_buf(ctl_k), st->size);
	for (;;) {
		while (st->sent < st->n && st->sent - st->done < CTL_SEND_DEPTH &&
		       (!st->verify ||
			st->sent - st->echoes - st->failed < CTL_SEND_DEPTH)) {
			kmsgr_prep_send(&sqe, c->id, CTL_MSG_TYPE, st->sent + 1,
					none, none, data, st->sent);
			sqe.version = 1;
			ret = ctl_queue(&sqe);
			if (ret)
				return ret;
			st->sent++;
		}
		if (st->done == st->n &&
		    (!st->verify || st->echoes + st->failed >= st->n))
			return 0;
		/* a signal that came between two waits interrupts no wait */
		if (ctl_stopped())
			return -EINTR;
		ret = ctl_wait(&cqe, ctl_now_ns() + c->timeout_ns);
		if (ret == -ETIME) {
			error("timed out after %.1f s: %llu of %llu sends completed, %llu echoes",
			      (double)c->timeout_ns / 1e9,
			      (unsigned long long)st->done,
			      (unsigned long long)st->n,
			      (unsigned long long)st->echoes);
			return ret;
		}
		if (ret == -EINTR && ctl_stopped())
			return ret;
		if (ret == -EINTR)
			continue;
		if (ret)
			return ret;
		switch (cqe.kind) {
		case KMSGR_CQE_SEND:
			st->done++;
			if (cqe.res) {
				st->failed++;
				if (!st->first_err)
					st->first_err = cqe.res;
			}
			break;
		case KMSGR_CQE_RECV:
			st->echoes++;
			if (!echo_ok(&cqe, st->size))
				st->bad_echoes++;
			ctl_queue_release(&cqe);
			break;
		case KMSGR_CQE_EVENT:
			if (cqe.session != c->id)
				break;
			if (cqe.event == KMSGR_EV_CLOSED) {
				ctl_conn_close(c);
				ctl_report_event("sending", &cqe);
				return cqe.res ? cqe.res : -ECONNABORTED;
			}
			/* JSON: stdout holds the session's one object */
			if (cqe.event == KMSGR_EV_DOWN && opt.json)
				ctl_report_event("sending", &cqe);
			else if (cqe.event == KMSGR_EV_DOWN)
				listen_event(&cqe);
			break;
		case KMSGR_CQE_OP:
			if (cqe.res) {
				error("a submission was rejected: %s",
				      kmsgr_strerror(cqe.res));
				return cqe.res;
			}
			break;
		}
	}
}

/*
 * --hold: keep the session open for @ns (for session show and monitor to
 * look at), releasing what arrives; ends early on SIGINT or CLOSED.
 */
static int hold_session(struct ctl_conn *c, __u64 ns)
{
	__u64 deadline = ctl_now_ns() + ns, now;
	struct kmsgr_cqe cqe;
	int ret;

	while (!ctl_stopped()) {
		/*
		 * A second at a time: a SIGINT caught between the check above
		 * and the sleep interrupts nothing, and is seen a second later.
		 */
		now = ctl_now_ns();
		if (now >= deadline)
			return 0;
		ret = ctl_wait(&cqe, deadline - now > NSEC_PER_SEC ?
				     now + NSEC_PER_SEC : deadline);
		if (ret == -ETIME)
			continue;
		/* SIGINT ends the loop; a stop and continue does not */
		if (ret == -EINTR)
			continue;
		if (ret)
			return ret;
		if (cqe.kind == KMSGR_CQE_RECV && cqe.res >= 0) {
			ret = ctl_queue_release(&cqe);
			if (ret)
				return ret;
		} else if (cqe.kind == KMSGR_CQE_EVENT &&
			   cqe.session == c->id &&
			   cqe.event == KMSGR_EV_CLOSED) {
			ctl_report_event("closed", &cqe);
			ctl_conn_close(c);
			return -ECONNRESET;
		}
	}
	return 0;
}

static int session_connect(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "transport", required_argument, NULL, OPT_TRANSPORT },
		{ "lossless", no_argument, NULL, OPT_LOSSLESS },
		{ "secure", no_argument, NULL, OPT_SECURE },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "keyring", required_argument, NULL, OPT_KEYRING },
		{ "peer-type", required_argument, NULL, OPT_PEER },
		{ "send", required_argument, NULL, OPT_SEND },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "verify-echo", no_argument, NULL, OPT_VERIFY },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "hold", required_argument, NULL, OPT_HOLD },
		{ "key-desc", required_argument, NULL, OPT_KEY_DESC },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	__u64 hold_ns = 0;
	struct ctl_conn conn = {
		.transport = KMSGR_XPRT_TCP,
		.name = "client.admin",
		.timeout_ns = 10 * NSEC_PER_SEC,
	};
	struct send_state st = { .size = 4096 };
	__u64 t0, elapsed;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case OPT_TRANSPORT:
			if (ctl_parse_transport(optarg, &conn.transport)) {
				error("unknown transport \"%s\" (tcp or rdma)",
				      optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_LOSSLESS:
			conn.flags |= KMSGR_SESS_F_LOSSLESS;
			break;
		case OPT_SECURE:
			conn.flags |= KMSGR_SESS_F_SECURE;
			break;
		case OPT_NAME:
			conn.name = optarg;
			break;
		case OPT_KEYRING:
			conn.keyring = optarg;
			break;
		case OPT_PEER:
			if (ctl_parse_peer_type(optarg, &conn.peer_type)) {
				error("bad --peer-type \"%s\" (mon, osd, mds, mgr, client, any)",
				      optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_SEND:
			if (ctl_parse_size(optarg, 1, 1ULL << 32, &st.n)) {
				error("bad --send \"%s\"", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_SIZE:
			if (ctl_parse_size(optarg, 1, 1ULL << 30, &st.size)) {
				error("bad --size \"%s\" (1 byte to 1G)", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_VERIFY:
			st.verify = true;
			break;
		case OPT_TIMEOUT:
			if (ctl_parse_secs(optarg, &conn.timeout_ns)) {
				error("bad --timeout \"%s\" (seconds)", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_KEY_DESC:
			conn.key_desc = optarg;
			break;
		case OPT_HOLD:
			if (ctl_parse_secs(optarg, &hold_ns)) {
				error("bad --hold \"%s\" (seconds)", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_HELP:
		case 'h':
			session_usage(stdout);
			return EXIT_SUCCESS;
		default:
			ctl_bad_option("session connect", argv);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		error("session connect wants exactly one ADDR:PORT");
		return EXIT_USAGE;
	}
	conn.addr_str = argv[optind];
	if (ctl_conn_check(&conn))
		return EXIT_USAGE;
	if (st.verify && !st.n) {
		error("--verify-echo needs --send N");
		return EXIT_USAGE;
	}

	ctl_catch_signals();
	/* room for the echoes of what is in flight, wanted or not */
	if (ctl_setup(64, st.n ? st.size : 4096,
		      st.n ? 2 * CTL_SEND_DEPTH * st.size : 0))
		return EXIT_FAILURE;
	ret = ctl_conn_open(&conn);
	if (ret)
		goto out;
	if (opt.json) {
		jw_open(NULL, '{');
		jw_u64("session", conn.id);
		jw_string("peer", conn.addr_str);
		jw_string("transport", ctl_transport_name(conn.transport));
		jw_string("auth", ctl_conn_auth(&conn));
		jw_string("mode", ctl_conn_mode(&conn));
		jw_bool("lossless", conn.flags & KMSGR_SESS_F_LOSSLESS);
		jw_double("connect_ms", (double)conn.up_ns / 1e6);
	} else {
		printf("session %u to %s up in %.1f ms: transport %s, auth %s, mode %s%s\n",
		       conn.id, conn.addr_str, (double)conn.up_ns / 1e6,
		       ctl_transport_name(conn.transport), ctl_conn_auth(&conn),
		       ctl_conn_mode(&conn),
		       conn.flags & KMSGR_SESS_F_LOSSLESS ? ", lossless" : "");
	}

	if (st.n) {
		t0 = ctl_now_ns();
		ret = send_messages(&conn, &st);
		elapsed = ctl_now_ns() - t0;
		if (opt.json) {
			jw_u64("sent", st.done - st.failed);
			jw_u64("failed", st.failed);
			jw_u64("size", st.size);
			jw_double("elapsed_ms", (double)elapsed / 1e6);
			if (st.verify) {
				jw_u64("echoes", st.echoes);
				jw_u64("bad_echoes", st.bad_echoes);
			}
		} else {
			printf("sent %llu of %llu messages of %llu bytes in %.1f ms",
			       (unsigned long long)(st.done - st.failed),
			       (unsigned long long)st.n,
			       (unsigned long long)st.size,
			       (double)elapsed / 1e6);
			if (st.verify)
				printf(", %llu echoes, %llu bad",
				       (unsigned long long)st.echoes,
				       (unsigned long long)st.bad_echoes);
			putchar('\n');
		}
		if (st.failed)
			error("%llu sends failed, the first with: %s",
			      (unsigned long long)st.failed,
			      kmsgr_strerror(st.first_err));
		if (st.bad_echoes)
			error("%llu echoes differ from what was sent",
			      (unsigned long long)st.bad_echoes);
		if (!ret && (st.failed || st.bad_echoes))
			ret = -EIO;
	}
	if (!ret && hold_ns)
		ret = hold_session(&conn, hold_ns);
	if (opt.json)
		jw_close('}');
	else if (!ret)
		printf("session %u closed\n", conn.id);
	ctl_conn_close(&conn);
out:
	ctl_teardown();
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}

int cmd_session(int argc, char **argv)
{
	static const char *const verbs[] = {
		"show", "listen", "connect", "help",
	};
	const char *verb = NULL;
	size_t i, len;

	/* the object alone means show, as in ip(8) */
	if (argc < 1)
		return cmd_session_show(0, argv);
	if (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help")) {
		session_usage(stdout);
		return EXIT_SUCCESS;
	}
	/* verbs abbreviate to any unique prefix */
	len = strlen(argv[0]);
	for (i = 0; len && i < ARRAY_SIZE(verbs); i++) {
		if (strncmp(verbs[i], argv[0], len))
			continue;
		if (verb) {
			error("verb \"%s\" of object \"session\" is ambiguous; try \"%s session help\"",
			      argv[0], progname);
			return EXIT_USAGE;
		}
		verb = verbs[i];
	}
	if (!verb) {
		error("unknown verb \"%s\" for object \"session\"; try \"%s session help\"",
		      argv[0], progname);
		return EXIT_USAGE;
	}
	if (!strcmp(verb, "help")) {
		session_usage(stdout);
		return EXIT_SUCCESS;
	}
	if (!strcmp(verb, "show")) {
		if (argc > 1 && (!strcmp(argv[1], "-h") ||
				 !strcmp(argv[1], "--help") ||
				 !strcmp(argv[1], "help"))) {
			session_usage(stdout);
			return EXIT_SUCCESS;
		}
		return cmd_session_show(argc - 1, argv + 1);
	}
	if (!strcmp(verb, "listen"))
		return session_listen(argc, argv);
	return session_connect(argc, argv);
}

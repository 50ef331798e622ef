// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl - the process's kmsgr instance: setup, a backlog in front of
 * the SQ, waiting for completions, client sessions; argument helpers.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kmsgrctl.h"

#define PAGE_ROUND(x)	(((x) + 4095) & ~4095ULL)

int ctl_stop_flag;
struct kmsgr *ctl_k;

/* A first-in first-out queue of copied entries (SQEs or CQEs). */
struct ctl_fifo {
	void *q;
	size_t size, head, len, cap;
};

/* SQEs that found the SQ full, in order. */
static struct ctl_fifo backlog = { .size = sizeof(struct kmsgr_sqe) };

/*
 * CQEs that ctl_call() and ctl_conn_open() took off the CQ but that belong
 * to someone else (another session, another request in flight): ctl_wait()
 * and ctl_poll() hand them out first, in order.
 */
static struct ctl_fifo deferred = { .size = sizeof(struct kmsgr_cqe) };

static void *fifo_at(struct ctl_fifo *f, size_t i)
{
	return (char *)f->q + (f->head + i) % f->cap * f->size;
}

static int fifo_push(struct ctl_fifo *f, const void *e)
{
	size_t i, cap;
	char *q;

	if (f->len == f->cap) {
		cap = f->cap ? 2 * f->cap : 64;
		q = malloc(cap * f->size);
		if (!q)
			return -ENOMEM;
		for (i = 0; i < f->len; i++)
			memcpy(q + i * f->size, fifo_at(f, i), f->size);
		free(f->q);
		f->q = q;
		f->head = 0;
		f->cap = cap;
	}
	memcpy(fifo_at(f, f->len), e, f->size);
	f->len++;
	return 0;
}

/* Take the oldest entry into @e: 1, or 0 when empty. */
static int fifo_pop(struct ctl_fifo *f, void *e)
{
	if (!f->len)
		return 0;
	memcpy(e, fifo_at(f, 0), f->size);
	f->head = (f->head + 1) % f->cap;
	f->len--;
	return 1;
}

static void fifo_free(struct ctl_fifo *f)
{
	free(f->q);
	f->q = NULL;
	f->head = 0;
	f->len = 0;
	f->cap = 0;
}

/* ---- argument helpers --------------------------------------------------- */

int ctl_cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

double ctl_pct_us(const __u64 *sorted_ns, size_t n, double p)
{
	double rank = p * (double)n;
	size_t i = (size_t)rank;

	if (!n)
		return 0;
	/* nearest rank: the smallest sample with at least p of them <= it */
	if ((double)i < rank)
		i++;
	i = i ? i - 1 : 0;
	if (i >= n)
		i = n - 1;
	return (double)sorted_ns[i] / 1e3;
}

int ctl_parse_size(const char *s, __u64 min, __u64 max, __u64 *val)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	/* digits only: strtoull() would take " -1" as 2^64 - 1 */
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	default:
		break;
	}
	/* a suffix that overflows is an error, not "the most there is" */
	if (shift && v > (~0ULL >> shift))
		return -EINVAL;
	v <<= shift;
	end += !!shift;
	if (*end || v < min || v > max)
		return -EINVAL;
	*val = v;
	return 0;
}

int ctl_parse_secs(const char *s, __u64 *ns)
{
	double d;
	char *end;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	d = strtod(s, &end);
	if (errno || *end || !(d > 0) || d > 86400.0 * 365)
		return -EINVAL;
	*ns = (__u64)(d * 1e9);
	/* 0 would mean "no timeout" to whoever takes it */
	return *ns ? 0 : -EINVAL;
}

int ctl_parse_busy_poll(const char *s, __u32 *usec)
{
	__u64 v;

	if (ctl_parse_size(s, 0, KMSGR_BUSY_POLL_MAX_US, &v)) {
		error("bad --busy-poll \"%s\" (0 to %u microseconds)", s,
		      KMSGR_BUSY_POLL_MAX_US);
		return -EINVAL;
	}
	*usec = (__u32)v;
	return 0;
}

int ctl_parse_transport(const char *s, __u32 *xprt)
{
	if (!strcmp(s, "tcp")) {
		*xprt = KMSGR_XPRT_TCP;
		return 0;
	}
	if (!strcmp(s, "rdma")) {
		*xprt = KMSGR_XPRT_RDMA;
		return 0;
	}
	return -EINVAL;
}

const char *ctl_transport_name(__u32 xprt)
{
	return xprt == KMSGR_XPRT_RDMA ? "rdma" : "tcp";
}

/* kmsgr_strerror() of a CONNECT's or LISTEN's error, said for them */
const char *ctl_sess_strerror(int err)
{
	if (err == -ENOSPC)
		return "the instance has max_sessions sessions and listeners (kmsgr module parameter)";
	return kmsgr_strerror(err);
}

static const struct {
	const char *name;
	__u8 type;
} peer_types[] = {
	{ "any", 0 }, { "mon", 1 }, { "mds", 2 }, { "osd", 4 },
	{ "client", 8 }, { "mgr", 0x10 },
};

int ctl_parse_peer_type(const char *s, __u8 *type)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(peer_types); i++) {
		if (!strcmp(s, peer_types[i].name)) {
			*type = peer_types[i].type;
			return 0;
		}
	}
	return -EINVAL;
}

const char *ctl_peer_type_name(__u8 type)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(peer_types); i++)
		if (peer_types[i].type == type)
			return peer_types[i].name;
	return "?";
}

__u64 ctl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

/* ---- signals ------------------------------------------------------------ */

static void ctl_on_signal(int sig)
{
	(void)sig;
	__atomic_store_n(&ctl_stop_flag, 1, __ATOMIC_RELAXED);
}

/* No SA_RESTART: a blocked KMSGR_IOC_ENTER returns EINTR at once. */
void ctl_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = ctl_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* ---- the instance ------------------------------------------------------- */

static const char *device_path(void)
{
	return opt.device ? opt.device : KMSGR_DEV_PATH;
}

/* The node is root's, 0600, unless the udev rule gives it to a group. */
static const char access_hint[] =
	"needs root, or the group kmsgr with the udev rule 60-kmsgr.rules: see kmsgrctl(8)";

int ctl_open(struct kmsgr **kp)
{
	int ret;

	ret = kmsgr_open(opt.device, kp);
	if (!ret)
		return 0;

	/* The kernel creates and removes the node with the module. */
	if (ret == -ENOENT && !opt.device)
		error("cannot open %s: %s (the kmsgr module is not loaded: modprobe kmsgr)",
		      device_path(), kmsgr_strerror(ret));
	else if (ret == -ENODEV || ret == -ENXIO)
		error("cannot open %s: %s (not a kmsgr device?)",
		      device_path(), kmsgr_strerror(ret));
	else if (ret == -EACCES || ret == -EPERM)
		error("cannot open %s: %s (%s)", device_path(),
		      kmsgr_strerror(ret), access_hint);
	else
		error("cannot open %s: %s", device_path(), kmsgr_strerror(ret));
	return ret;
}

int ctl_setup(__u32 sq_entries, __u64 tx_size, __u64 pool_size)
{
	struct kmsgr_setup s;
	struct kmsgr_info info;
	int ret;

	ret = ctl_open(&ctl_k);
	if (ret)
		return ret;
	ret = kmsgr_info(ctl_k, &info);
	if (ret) {
		error("KMSGR_IOC_INFO failed: %s", kmsgr_strerror(ret));
		goto out_close;
	}
	if (!(info.features & KMSGR_FEAT_RINGS)) {
		error("the loaded kmsgr module (version %.*s) has no rings and sessions",
		      KMSGR_VERSION_LEN, info.version);
		ret = -EOPNOTSUPP;
		goto out_close;
	}

	if (pool_size < KMSGR_POOL_MIN)
		pool_size = KMSGR_POOL_MIN;
	pool_size = PAGE_ROUND(pool_size);
	tx_size = PAGE_ROUND(tx_size ? tx_size : 4096);

	if (info.max_sq_entries && sq_entries > info.max_sq_entries) {
		error("need a %u-entry submission ring, the module allows %u (max_sq_entries)",
		      sq_entries, info.max_sq_entries);
		ret = -E2BIG;
		goto out_close;
	}
	memset(&s, 0, sizeof(s));
	s.sq_entries = sq_entries;
	s.cq_entries = 0;	/* twice the SQ, capped at max_cq_entries */
	s.buf_size = tx_size + pool_size;
	s.rx_pool_size = pool_size;
	if (info.max_buf_size && s.buf_size > info.max_buf_size) {
		error("need a %llu-byte buffer area, the module allows %llu (max_buf_size)",
		      (unsigned long long)s.buf_size,
		      (unsigned long long)info.max_buf_size);
		ret = -E2BIG;
		goto out_close;
	}
	ret = kmsgr_setup(ctl_k, &s);
	if (ret) {
		error("setting up the rings and a %llu-byte buffer area failed: %s%s",
		      (unsigned long long)(tx_size + pool_size),
		      kmsgr_strerror(ret),
		      ret == -ENOMEM || ret == -EAGAIN ?
		      " (RLIMIT_MEMLOCK? see ulimit -l)" : "");
		goto out_close;
	}
	return 0;

out_close:
	kmsgr_close(ctl_k);
	ctl_k = NULL;
	return ret;
}

void ctl_teardown(void)
{
	kmsgr_close(ctl_k);
	ctl_k = NULL;
	fifo_free(&backlog);
	fifo_free(&deferred);
}

/*
 * Move backlogged SQEs into the SQ and submit them, as long as the kernel
 * takes them.  It stops taking when the CQ has no room for their
 * completions: then only reaping helps, and the caller waits.  Never
 * leave SQEs behind while going to sleep: the completions that would
 * wake us may depend on them (an echo's RELEASE frees the pool room the
 * next message needs).
 */
/*
 * SQ entries the head of the backlog needs at once: an SQE linked to the
 * next one (KMSGR_SQE_F_LINK: a block op and the SEND of its reply) goes
 * in with it, else the kernel sees a LINK with nothing after it.
 */
static unsigned int backlog_run(void)
{
	const struct kmsgr_sqe *sqe = fifo_at(&backlog, 0);
	unsigned int n = 1;

	while (n < backlog.len && sqe->flags & KMSGR_SQE_F_LINK) {
		sqe = fifo_at(&backlog, n);
		n++;
	}
	return n;
}

static void ctl_flush_backlog(void)
{
	unsigned int n;

	while (backlog.len) {
		/* a linked pair goes into the SQ together, or waits */
		while (backlog.len &&
		       kmsgr_sq_space(ctl_k) >= (n = backlog_run()))
			while (n--)
				fifo_pop(&backlog, kmsgr_get_sqe(ctl_k));
		if (kmsgr_submit(ctl_k, 0, 0) <= 0)
			return;
	}
}

int ctl_queue(const struct kmsgr_sqe *src)
{
	struct kmsgr_sqe *sqe;

	if (!backlog.len) {
		sqe = kmsgr_get_sqe(ctl_k);
		if (sqe) {
			*sqe = *src;
			return 0;
		}
	}
	if (fifo_push(&backlog, src)) {
		error("out of memory queueing a submission");
		return -ENOMEM;
	}
	return 0;
}

int ctl_queue_link(const struct kmsgr_sqe pair[2])
{
	if (!backlog.len && kmsgr_sq_space(ctl_k) >= 2) {
		*kmsgr_get_sqe(ctl_k) = pair[0];
		*kmsgr_get_sqe(ctl_k) = pair[1];
		return 0;
	}
	if (fifo_push(&backlog, &pair[0]) || fifo_push(&backlog, &pair[1])) {
		error("out of memory queueing a submission");
		return -ENOMEM;
	}
	return 0;
}

/* Keep @cqe for a later ctl_wait() (releasing it if that fails). */
static void ctl_defer(const struct kmsgr_cqe *cqe)
{
	if (!fifo_push(&deferred, cqe))
		return;
	error("out of memory keeping a completion: dropped");
	if (cqe->kind == KMSGR_CQE_RECV)
		ctl_queue_release(cqe);
}

int ctl_queue_release(const struct kmsgr_cqe *recv)
{
	struct kmsgr_sqe sqe;

	kmsgr_prep_release(&sqe, recv);
	return ctl_queue(&sqe);
}

/* Time left until @deadline_ns (0: none), at least 1 ns. */
static __u64 time_left(__u64 deadline_ns)
{
	__u64 now;

	if (!deadline_ns)
		return 0;
	now = ctl_now_ns();
	return deadline_ns > now ? deadline_ns - now : 1;
}

/* The next CQE from the ring itself, leaving the deferred ones. */
static int ring_wait_for(struct kmsgr_cqe *cqe, __u64 timeout_ns)
{
	struct kmsgr_cqe *c;
	int ret;

	/*
	 * A stop that came while we were not waiting (no ENTER to
	 * interrupt): nothing more is submitted, and the caller sees it now,
	 * not at its deadline.
	 */
	if (ctl_stopped())
		return -EINTR;
	ctl_flush_backlog();
	ret = kmsgr_wait_cqe(ctl_k, &c, timeout_ns);
	if (ret == -ETIME || ret == -EINTR)
		return ret;
	if (ret) {
		error("waiting for completions failed: %s",
		      kmsgr_strerror(ret));
		return ret;
	}
	*cqe = *c;
	kmsgr_cqe_seen(ctl_k);
	return 0;
}

static int ctl_wait_ring(struct kmsgr_cqe *cqe, __u64 deadline_ns)
{
	return ring_wait_for(cqe, time_left(deadline_ns));
}

int ctl_wait(struct kmsgr_cqe *cqe, __u64 deadline_ns)
{
	return ctl_wait_for(cqe, time_left(deadline_ns));
}

int ctl_wait_for(struct kmsgr_cqe *cqe, __u64 timeout_ns)
{
	if (fifo_pop(&deferred, cqe))
		return 0;
	return ring_wait_for(cqe, timeout_ns);
}

int ctl_take_deferred(struct kmsgr_cqe *cqe)
{
	return fifo_pop(&deferred, cqe);
}

int ctl_poll(struct kmsgr_cqe *cqe)
{
	struct kmsgr_cqe *c;

	if (fifo_pop(&deferred, cqe))
		return 1;
	c = kmsgr_peek_cqe(ctl_k);
	if (!c)
		return 0;
	*cqe = *c;
	kmsgr_cqe_seen(ctl_k);
	return 1;
}

/* ---- client sessions ---------------------------------------------------- */

int ctl_conn_check(struct ctl_conn *c)
{
	if (!c->addr_str) {
		error("no peer ADDR:PORT given");
		return -EINVAL;
	}
	if (kmsgr_addr_parse(c->addr_str, &c->addr)) {
		error("bad address \"%s\" (want IPv4:PORT or [IPv6]:PORT)",
		      c->addr_str);
		return -EINVAL;
	}
	if (c->keyring && c->key_desc) {
		error("--keyring and --key-desc both name the key: give one");
		return -EINVAL;
	}
	/* the kernel refuses it too (EINVAL), with less to say why */
	if (c->key_desc && strncmp(c->key_desc, KMSGR_KEY_DESC_PREFIX,
				   strlen(KMSGR_KEY_DESC_PREFIX))) {
		error("--key-desc \"%s\": kmsgr uses only its own logon keys, whose descriptions start with \"%s\" (kmsgrctl key add)",
		      c->key_desc, KMSGR_KEY_DESC_PREFIX);
		return -EINVAL;
	}
	if ((c->flags & KMSGR_SESS_F_SECURE) && !c->keyring && !c->key_desc) {
		error("--secure needs cephx (a session key): give --keyring FILE or --key-desc DESC");
		return -EINVAL;
	}
	if (strncmp(c->name, "client.", 7) || !c->name[7] ||
	    strlen(c->name + 7) >= KMSGR_NAME_LEN) {
		error("--name must look like client.ID, not \"%s\"", c->name);
		return -EINVAL;
	}
	return 0;
}

const char *ctl_conn_mode(const struct ctl_conn *c)
{
	return c->flags & KMSGR_SESS_F_SECURE ? "secure" : "crc";
}

const char *ctl_conn_auth(const struct ctl_conn *c)
{
	return c->keyring || c->key_desc ? "cephx" : "none";
}

void ctl_report_event(const char *what, const struct kmsgr_cqe *cqe)
{
	if (cqe->res)
		error("%s: session %u %s: %s (%s)", what, cqe->session,
		      kmsgr_event_str(cqe->event), kmsgr_reason_str(cqe->reason),
		      strerror(-cqe->res));
	else
		error("%s: session %u %s: %s", what, cqe->session,
		      kmsgr_event_str(cqe->event),
		      kmsgr_reason_str(cqe->reason));
	if (cqe->reason == KMSGR_REASON_MODE)
		fprintf(stderr, "hint: the peer allows none of the modes asked for: %s\n",
			"with a keyring, try --secure (or drop it)");
}

int ctl_conn_open(struct ctl_conn *c)
{
	struct kmsgr_connect kc;
	struct kmsgr_cqe cqe;
	__u64 start, deadline;
	__u8 key[16];
	char what[160];
	int ret;

	memset(&kc, 0, sizeof(kc));
	kc.addr = c->addr;
	kc.transport = c->transport;
	kc.flags = c->flags;
	kc.peer_type = c->peer_type;
	kc.my_type = 8;		/* CEPH_ENTITY_TYPE_CLIENT */
	kc.auth = KMSGR_AUTH_NONE;
	snprintf(kc.name, sizeof(kc.name), "%s", c->name + 7);
	if (c->ticket_from) {
		/* who we are is in the ticket */
		kc.auth = KMSGR_AUTH_CEPHX;
		kc.ticket_from = c->ticket_from;
		memset(kc.name, 0, sizeof(kc.name));
	} else if (c->keyring) {
		ret = kmsgr_keyring_load(c->keyring, c->name, key);
		if (ret) {
			error("cannot read the key of %s from %s: %s", c->name,
			      c->keyring,
			      ret == -ENOENT ? "no such file or entity" :
			      ret == -ENOKEY ? "the entity has no key" :
			      ret == -EINVAL ? "malformed keyring or key" :
			      kmsgr_strerror(ret));
			return ret;
		}
		kc.auth = KMSGR_AUTH_CEPHX;
		kc.key = (uintptr_t)key;
		kc.key_len = sizeof(key);
	} else if (c->key_desc) {
		/* the kernel reads the secret from the logon key itself */
		kc.auth = KMSGR_AUTH_CEPHX;
		kc.key_desc = (uintptr_t)c->key_desc;
	}

	snprintf(what, sizeof(what), "connecting to %s", c->addr_str);
	start = ctl_now_ns();
	ret = kmsgr_connect(ctl_k, &kc);
	explicit_bzero(key, sizeof(key));
	if (ret && c->key_desc && (ret == -ENOKEY || ret == -EKEYREJECTED ||
				   ret == -EKEYREVOKED || ret == -EKEYEXPIRED ||
				   ret == -EACCES)) {
		error("%s: the logon key \"%s\": %s%s", what, c->key_desc,
		      kmsgr_strerror(ret), ret == -EKEYREJECTED ?
		      " (its payload must be the 16 raw bytes: kmsgrctl key add)" :
		      "");
		return ret;
	}
	if (ret == -ENOKEY && c->ticket_from) {
		error("%s: the monitor session %u holds no cephx ticket for this service (%s)",
		      what, c->ticket_from, kmsgr_strerror(ret));
		return ret;
	}
	if (ret == -EMSGSIZE && c->ticket_from) {
		error("%s: the monitor session %u's cephx ticket for this service is over the 4096 bytes kmsgr keeps: the entity's caps are too long (%s)",
		      what, c->ticket_from, kmsgr_strerror(ret));
		return ret;
	}
	if (ret) {
		error("%s: %s", what, ctl_sess_strerror(ret));
		return ret;
	}
	c->id = kc.id;
	c->open = true;

	deadline = start + c->timeout_ns;
	for (;;) {
		ret = ctl_wait_ring(&cqe, deadline);
		if (ret == -ETIME) {
			if (!c->quiet)
				error("%s: no session after %.1f s (timeout)",
				      what, (double)c->timeout_ns / 1e9);
			goto out_close;
		}
		if (ret == -EINTR && ctl_stopped()) {
			error("%s: interrupted", what);
			goto out_close;
		}
		if (ret == -EINTR)
			continue;
		if (ret)
			goto out_close;
		if (cqe.kind != KMSGR_CQE_EVENT && cqe.kind != KMSGR_CQE_RECV) {
			ctl_defer(&cqe);
			continue;
		}
		if (cqe.session != c->id) {
			ctl_defer(&cqe);
			continue;
		}
		if (cqe.kind == KMSGR_CQE_RECV) {
			ctl_queue_release(&cqe);
			continue;
		}
		if (cqe.event == KMSGR_EV_UP) {
			c->up_ns = ctl_now_ns() - start;
			return 0;
		}
		if (cqe.event == KMSGR_EV_CLOSED) {
			/* a dead session keeps its id (and its slot) until CLOSE */
			ctl_conn_close(c);
			if (!c->quiet)
				ctl_report_event(what, &cqe);
			return cqe.res ? cqe.res : -ECONNABORTED;
		}
		/* not up yet: a lossless session's DOWN may be waited out */
		if (cqe.event == KMSGR_EV_DOWN &&
		    kmsgr_down_is_final(&cqe, c->flags & KMSGR_SESS_F_LOSSLESS,
					0)) {
			if (!c->quiet)
				ctl_report_event(what, &cqe);
			ret = cqe.res ? cqe.res : -ECONNABORTED;
			goto out_close;
		}
	}

out_close:
	ctl_conn_close(c);
	return ret ? ret : -ETIME;
}

void ctl_conn_close(struct ctl_conn *c)
{
	if (c->open)
		kmsgr_close_id(ctl_k, c->id);
	c->open = false;
}

/* ---- request and reply -------------------------------------------------- */

void ctl_reply_free(struct ctl_reply *r)
{
	free(r->front);
	free(r->data);
	memset(r, 0, sizeof(*r));
}

/* Copy RECV @cqe's front and data out of the pool into @r. */
static int ctl_reply_copy(const struct kmsgr_cqe *cqe, const char *what,
			  struct ctl_reply *r)
{
	const struct kmsgr_slice *f = &cqe->seg[0], *d = &cqe->seg[2];
	__u64 size = kmsgr_buf_size(ctl_k);
	const __u8 *buf = kmsgr_buf(ctl_k);

	if ((__u64)f->off + f->len > size || (__u64)d->off + d->len > size) {
		error("%s: reply segments out of the buffer area",
		      what ? what : "reply");
		return -EBADMSG;
	}
	memset(r, 0, sizeof(*r));
	r->type = cqe->type;
	r->version = cqe->version;
	r->tid = cqe->tid;
	r->front = malloc((size_t)f->len + 1);
	r->data = d->len ? malloc(d->len) : NULL;
	if (!r->front || (d->len && !r->data)) {
		ctl_reply_free(r);
		return -ENOMEM;
	}
	memcpy(r->front, buf + f->off, f->len);
	r->front[f->len] = '\0';
	r->front_len = f->len;
	if (d->len)
		memcpy(r->data, buf + d->off, d->len);
	r->data_len = d->len;
	return 0;
}

int ctl_call(struct ctl_conn *c, const struct ctl_msg *m, __u16 reply_type,
	     bool any_tid, __u64 deadline_ns, const char *what,
	     struct ctl_reply *r)
{
	static __u32 calls;
	const __u64 udata = CTL_CALL_UDATA | ++calls;
	struct kmsgr_slice none = { 0 };
	bool sent = false, replied = false;
	struct kmsgr_sqe sqe;
	struct kmsgr_cqe cqe;
	int ret, rret = 0;

	kmsgr_prep_send(&sqe, c->id, m->type, m->tid, m->front, none, m->data,
			udata);
	sqe.version = m->version;
	sqe.compat_version = m->compat;
	ret = ctl_queue(&sqe);
	if (ret)
		return ret;

	/*
	 * Both the reply and the SEND's completion: until then the module
	 * may still read @m's slices, which the caller reuses next, and a
	 * completion left behind would be taken for the next call's.
	 */
	while (!sent || !replied) {
		ret = ctl_wait_ring(&cqe, deadline_ns);
		if (ret == -ETIME) {
			if (what)
				error("%s: no %s in time (timeout)", what,
				      sent ? "reply" : "send completion");
			goto fail;
		}
		if (ret == -EINTR && !ctl_stopped())
			continue;
		if (ret == -EINTR) {
			if (what)
				error("%s: interrupted", what);
			goto fail;
		}
		if (ret)
			goto fail;
		/* someone else's: another session's, another request's */
		if ((cqe.kind == KMSGR_CQE_SEND || cqe.kind == KMSGR_CQE_OP) &&
		    cqe.user_data != udata) {
			ctl_defer(&cqe);
			continue;
		}
		if ((cqe.kind == KMSGR_CQE_EVENT ||
		     cqe.kind == KMSGR_CQE_RECV) && cqe.session != c->id) {
			ctl_defer(&cqe);
			continue;
		}
		switch (cqe.kind) {
		case KMSGR_CQE_SEND:
			ret = cqe.res;
			if (ret) {
				if (what)
					error("%s: sending failed: %s", what,
					      kmsgr_strerror(ret));
				goto fail;
			}
			sent = true;
			break;
		case KMSGR_CQE_OP:
			ret = cqe.res;
			if (ret) {
				if (what)
					error("%s: submission rejected: %s",
					      what, kmsgr_strerror(ret));
				goto fail;
			}
			break;
		case KMSGR_CQE_EVENT:
			if (cqe.event == KMSGR_EV_CLOSED ||
			    cqe.event == KMSGR_EV_DOWN ||
			    cqe.event == KMSGR_EV_RESET) {
				if (cqe.event == KMSGR_EV_CLOSED)
					ctl_conn_close(c);
				if (what)
					ctl_report_event(what, &cqe);
				ret = cqe.res ? cqe.res : -ECONNABORTED;
				goto fail;
			}
			break;
		case KMSGR_CQE_RECV:
			/* another type, tid, or a second reply: not ours */
			if (replied || cqe.type != reply_type ||
			    (!any_tid && cqe.tid != m->tid)) {
				ctl_queue_release(&cqe);
				break;
			}
			rret = ctl_reply_copy(&cqe, what, r);
			ctl_queue_release(&cqe);
			/* let the release reach the kernel */
			kmsgr_submit(ctl_k, 0, 0);
			replied = true;
			break;
		}
	}
	return rret;

fail:
	if (replied && !rret)
		ctl_reply_free(r);
	return ret;
}

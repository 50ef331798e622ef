// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - ring helpers shared by the session tests (see
 * kmsgr_ring_util.h).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "kmsgr_ring_util.h"
#include "kmsgr_selftest.h"

/* user_data of our own SQEs: kind in the top byte */
#define KT_UD_KIND_SHIFT	56
#define KT_UD_SEND		(1ULL << KT_UD_KIND_SHIFT)
#define KT_UD_RELEASE		(2ULL << KT_UD_KIND_SHIFT)
#define KT_UD_STREAM_SHIFT	32

#define KT_DRAIN_BATCH		256
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

uint64_t kt_rand(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

uint64_t kt_hash(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ULL ^ len, w;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	for (; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	h ^= h >> 31;
	return h * 0x94d049bb133111ebULL;
}

uint64_t kt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long kt_env_long(const char *name, long def)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	v = strtol(s, &end, 0);
	return *end ? def : v;
}

/* ---- instances ----------------------------------------------------------- */

int kt_inst_open(struct kt_inst *ti, const char *name, unsigned int sq,
		 uint64_t tx_size, uint64_t pool_size, uint64_t seed)
{
	return kt_inst_open_cq(ti, name, sq, 4 * sq, tx_size, pool_size,
			       seed);
}

int kt_inst_open_cq(struct kt_inst *ti, const char *name, unsigned int sq,
		    unsigned int cq, uint64_t tx_size, uint64_t pool_size,
		    uint64_t seed)
{
	struct kmsgr_setup su;
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	uint64_t rng = seed, w, i;
	int ret;

	memset(ti, 0, sizeof(*ti));
	ti->name = name;
	/* The area is charged to RLIMIT_MEMLOCK; root may lift the limit. */
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		fprintf(stderr, "# %s: cannot lift RLIMIT_MEMLOCK: %s\n",
			name, strerror(errno));

	ret = kmsgr_open(NULL, &ti->k);
	if (ret) {
		fprintf(stderr, "# %s: kmsgr_open: %s\n", name,
			kmsgr_strerror(ret));
		return ret;
	}
	memset(&su, 0, sizeof(su));
	su.sq_entries = sq;
	su.cq_entries = cq;
	su.buf_size = tx_size + pool_size;
	su.rx_pool_size = pool_size;
	ret = kmsgr_setup(ti->k, &su);
	if (ret) {
		fprintf(stderr, "# %s: kmsgr_setup(sq %u, buf %llu, pool %llu): %s\n",
			name, sq, (unsigned long long)(tx_size + pool_size),
			(unsigned long long)pool_size, kmsgr_strerror(ret));
		kmsgr_close(ti->k);
		ti->k = NULL;
		return ret;
	}
	ti->buf = kmsgr_buf(ti->k);
	ti->buf_size = kmsgr_buf_size(ti->k);
	ti->tx_size = kmsgr_tx_size(ti->k);
	ti->pool_size = ti->buf_size - ti->tx_size;
	if (!ti->buf || ti->tx_size < tx_size || ti->pool_size < pool_size) {
		fprintf(stderr, "# %s: setup granted buf %llu tx %llu (asked %llu + %llu)\n",
			name, (unsigned long long)ti->buf_size,
			(unsigned long long)ti->tx_size,
			(unsigned long long)tx_size,
			(unsigned long long)pool_size);
		kt_inst_close(ti);
		return -EINVAL;
	}
	for (i = 0; i + 8 <= ti->tx_size; i += 8) {
		w = kt_rand(&rng);
		memcpy(ti->buf + i, &w, 8);
	}
	return 0;
}

void kt_inst_close(struct kt_inst *ti)
{
	free(ti->rel_backlog);
	ti->rel_backlog = NULL;
	ti->rel_n = 0;
	ti->rel_cap = 0;
	kmsgr_close(ti->k);
	ti->k = NULL;
	ti->buf = NULL;
}

int kt_addr(struct kmsgr_addr *a, const char *ip, uint16_t port)
{
	char s[80];

	snprintf(s, sizeof(s), strchr(ip, ':') ? "[%s]:%u" : "%s:%u", ip,
		 port);
	memset(a, 0, sizeof(*a));
	return kmsgr_addr_parse(s, a);
}

int kt_listen(struct kt_inst *ti, const char *ip, uint32_t flags,
	      uint64_t user_data, struct kmsgr_listen *l)
{
	struct kmsgr_listen_key k;
	int ret;

	memset(l, 0, sizeof(*l));
	ret = kt_addr(&l->addr, ip, 0);
	if (ret)
		return ret;
	l->transport = ti->transport ? ti->transport : KMSGR_XPRT_TCP;
	l->flags = flags;
	l->user_data = user_data;
	if (ti->key) {
		/* copied in at LISTEN: the table may go after the call */
		memset(&k, 0, sizeof(k));
		snprintf(k.name, sizeof(k.name), "%s", KT_CEPHX_NAME);
		k.entity_type = KT_ENTITY_CLIENT;
		memcpy(k.key, ti->key, sizeof(k.key));
		l->auth = KMSGR_AUTH_CEPHX;
		l->keys = (uintptr_t)&k;
		l->n_keys = 1;
	}
	ret = kmsgr_listen(ti->k, l);
	if (ret)
		fprintf(stderr, "# %s: listen on %s: %s\n", ti->name, ip,
			kmsgr_strerror(ret));
	return ret;
}

int kt_connect(struct kt_inst *ti, const struct kmsgr_addr *a,
	       uint32_t flags, uint8_t peer_type, uint64_t user_data,
	       uint32_t *id)
{
	return kt_connect_as(ti, a, flags, peer_type, user_data,
			     ti->key ? KT_CEPHX_NAME : "kmsgr-selftest",
			     ti->key, id);
}

int kt_connect_as(struct kt_inst *ti, const struct kmsgr_addr *a,
		  uint32_t flags, uint8_t peer_type, uint64_t user_data,
		  const char *name, const uint8_t *key, uint32_t *id)
{
	struct kmsgr_connect c;
	char s[64];
	int ret;

	memset(&c, 0, sizeof(c));
	c.addr = *a;
	c.transport = ti->transport ? ti->transport : KMSGR_XPRT_TCP;
	c.flags = flags;
	c.peer_type = peer_type;
	c.my_type = KT_ENTITY_CLIENT;
	c.auth = key ? KMSGR_AUTH_CEPHX : KMSGR_AUTH_NONE;
	c.key = (uintptr_t)key;
	c.key_len = key ? 16 : 0;
	snprintf(c.name, sizeof(c.name), "%s", name);
	c.user_data = user_data;
	ret = kmsgr_connect(ti->k, &c);
	if (ret) {
		fprintf(stderr, "# %s: connect to %s: %s\n", ti->name,
			kmsgr_addr_format(a, s, sizeof(s)),
			kmsgr_strerror(ret));
		return ret;
	}
	*id = c.id;
	return 0;
}

long long kt_rdma_counter(const char *name)
{
	char path[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/kmsgr_rdma/parameters/%s",
		 name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

int kt_rdma_pair(struct kt_loop *lp, struct kt_inst *srv, struct kt_inst *cli,
		 const char *ip, uint32_t flags, struct kmsgr_listen *l,
		 struct kmsgr_addr *dial, uint32_t *srv_id, uint32_t *cli_id)
{
	struct kmsgr_info info;
	int ret;

	ret = kmsgr_info(srv->k, &info);
	if (ret)
		return ret;
	if (!(info.features & KMSGR_FEAT_RDMA)) {
		fprintf(stderr, "# kmsgr_rdma.ko is not loaded (features 0x%llx)\n",
			(unsigned long long)info.features);
		return -EOPNOTSUPP;
	}
	srv->transport = KMSGR_XPRT_RDMA;
	cli->transport = KMSGR_XPRT_RDMA;
	ret = kt_listen(srv, strchr(ip, ':') ? "::" : "0.0.0.0", flags,
			0x5e77, l);
	if (!ret)
		ret = kt_addr(dial, ip, ntohs(l->bound.port));
	if (!ret)
		ret = kt_connect(cli, dial, flags, KT_PEER_ANY, 0xc11, cli_id);
	if (!ret)
		ret = kt_wait_pair(lp, cli, *cli_id, srv, srv_id, 20000);
	if (ret)
		fprintf(stderr, "# rdma session to %s:%u not up: %s\n", ip,
			ntohs(l->bound.port), kmsgr_strerror(ret));
	return ret;
}

struct kmsgr_sqe *kt_sqe(struct kt_inst *ti)
{
	struct kmsgr_sqe *sqe = kmsgr_get_sqe(ti->k);

	if (!sqe) {
		kmsgr_submit(ti->k, 0, 0);
		sqe = kmsgr_get_sqe(ti->k);
	}
	return sqe;
}

long long kt_pool_bytes(struct kt_inst *ti)
{
	struct kmsgr_info info;

	kmsgr_submit(ti->k, 0, 0);
	memset(&info, 0, sizeof(info));
	if (kmsgr_info(ti->k, &info))
		return -1;
	return (long long)info.pool_bytes;
}

int kt_release(struct kt_inst *ti, const struct kmsgr_cqe *cqe)
{
	struct kmsgr_sqe *sqe = kt_sqe(ti);

	if (!sqe)
		return -EBUSY;
	kmsgr_prep_release(sqe, cqe);
	sqe->user_data = KT_UD_RELEASE;
	return 0;
}

/*
 * Release @cqe's slices, or keep it for kt_release_backlog() when the SQ
 * has no room now (SENDs may hold every slot): 0, or -ENOMEM.
 */
static int kt_release_later(struct kt_inst *ti, const struct kmsgr_cqe *cqe)
{
	struct kmsgr_cqe *grown;
	unsigned int cap;

	if (!ti->rel_n && !kt_release(ti, cqe))
		return 0;
	if (ti->rel_n == ti->rel_cap) {
		cap = ti->rel_cap ? 2 * ti->rel_cap : 64;
		grown = realloc(ti->rel_backlog, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		ti->rel_backlog = grown;
		ti->rel_cap = cap;
	}
	ti->rel_backlog[ti->rel_n++] = *cqe;
	return 0;
}

/* Queue the RELEASEs kept back, in order, as far as the SQ takes them. */
static void kt_release_backlog(struct kt_inst *ti)
{
	unsigned int i;

	for (i = 0; i < ti->rel_n; i++)
		if (kt_release(ti, &ti->rel_backlog[i]))
			break;
	memmove(ti->rel_backlog, ti->rel_backlog + i,
		(ti->rel_n - i) * sizeof(*ti->rel_backlog));
	ti->rel_n -= i;
}

/* ---- streams -------------------------------------------------------------- */

static uint32_t kt_seg_len(uint64_t *rng, const struct kt_plan *p)
{
	unsigned int lg = p->max_log2, oct;
	uint64_t r = kt_rand(rng);
	uint32_t frac;

	/* an octave, uniformly; large octaves only 1 in big_one_in times */
	oct = r % lg;
	if (oct >= p->small_log2 && p->big_one_in > 1 &&
	    (r >> 32) % p->big_one_in)
		oct = (r >> 16) % p->small_log2;
	/* uniform inside the octave: [2^oct - 1, 2^(oct+1) - 1) */
	frac = (kt_rand(rng) >> 40) & 0x3ff;
	return (1U << oct) - 1 + (uint32_t)(((uint64_t)frac << oct) >> 10);
}

int kt_stream_init(struct kt_stream *st, struct kt_inst *src,
		   uint32_t src_sess, struct kt_inst *dst, uint32_t dst_sess,
		   const struct kt_plan *p, unsigned int window)
{
	uint64_t rng = p->seed;
	unsigned int i, s, combo;
	struct kt_msg *m;

	memset(st, 0, sizeof(*st));
	st->src = src;
	st->dst = dst;
	st->src_sess = src_sess;
	st->dst_sess = dst_sess;
	st->total = p->count;
	st->window = window ? window : 1;
	st->msgs = calloc(p->count ? p->count : 1, sizeof(*st->msgs));
	st->done = calloc(p->count ? p->count : 1, 1);
	if (!st->msgs || !st->done) {
		kt_stream_free(st);
		return -ENOMEM;
	}
	for (i = 0; i < p->count; i++) {
		m = &st->msgs[i];
		m->type = 0x4000 + (uint16_t)(kt_rand(&rng) & 0x3fff);
		m->version = 1 + i % 7;
		/* every combination of front, middle and data, in turn */
		combo = i % 8;
		for (s = 0; s < KT_NSEG; s++) {
			if (!(combo & (1U << s)))
				continue;
			m->len[s] = kt_seg_len(&rng, p);
			/* three times in 10^4: exactly the largest size */
			if (i % 3333 == 7)
				m->len[s] = 1U << p->max_log2;
			if (m->len[s] > src->tx_size)
				m->len[s] = (uint32_t)src->tx_size;
			m->off[s] = (uint32_t)(kt_rand(&rng) %
					       (src->tx_size - m->len[s] + 1));
			m->hash[s] = kt_hash(src->buf + m->off[s], m->len[s]);
		}
	}
	return 0;
}

void kt_stream_free(struct kt_stream *st)
{
	free(st->msgs);
	free(st->done);
	st->msgs = NULL;
	st->done = NULL;
}

uint64_t kt_stream_volume(const struct kt_stream *st)
{
	uint64_t v = 0;
	unsigned int i, s;

	for (i = 0; i < st->total; i++)
		for (s = 0; s < KT_NSEG; s++)
			v += st->msgs[i].len[s];
	return v;
}

bool kt_stream_finished(const struct kt_stream *st)
{
	return st->failed ||
	       (st->received == st->total && st->completed == st->total);
}

bool kt_loop_streams_finished(struct kt_loop *lp)
{
	int i;

	for (i = 0; i < lp->nr_streams; i++)
		if (!kt_stream_finished(lp->streams[i]))
			return false;
	return true;
}

static void kt_stream_fail(struct kt_stream *st, const char *fmt, ...)
{
	va_list ap;

	if (st->failed)
		return;
	st->failed = 1;
	va_start(ap, fmt);
	vsnprintf(st->why, sizeof(st->why), fmt, ap);
	va_end(ap);
}

static uint64_t kt_stream_tid(const struct kt_stream *st, unsigned int i)
{
	return ((uint64_t)(st->id + 1) << 40) | i;
}

/* Prepare the SENDs the window allows. */
static void kt_stream_queue(struct kt_stream *st)
{
	struct kmsgr_slice seg[KT_NSEG];
	struct kmsgr_sqe *sqe;
	struct kt_msg *m;
	unsigned int s;

	while (!st->failed && st->queued < st->total &&
	       st->queued - st->completed < st->window) {
		sqe = kmsgr_get_sqe(st->src->k);
		if (!sqe)
			break;
		m = &st->msgs[st->queued];
		for (s = 0; s < KT_NSEG; s++) {
			seg[s].off = m->len[s] ? m->off[s] : 0;
			seg[s].len = m->len[s];
		}
		kmsgr_prep_send(sqe, st->src_sess, m->type,
				kt_stream_tid(st, st->queued), seg[0], seg[1],
				seg[2], KT_UD_SEND |
				((uint64_t)st->id << KT_UD_STREAM_SHIFT) |
				st->queued);
		sqe->version = m->version;
		sqe->compat_version = 1;
		st->queued++;
	}
}

static void kt_stream_on_send(struct kt_stream *st,
			      const struct kmsgr_cqe *cqe)
{
	unsigned int i = (uint32_t)cqe->user_data;

	if (i >= st->queued) {
		kt_stream_fail(st, "SEND completion for message %u never sent", i);
		return;
	}
	if (st->done[i]) {
		kt_stream_fail(st, "second SEND completion for message %u", i);
		return;
	}
	st->done[i] = 1;
	st->completed++;
	if (cqe->res)
		kt_stream_fail(st, "SEND of message %u failed: %s", i,
			       kmsgr_strerror(cqe->res));
}

static void kt_stream_on_recv(struct kt_stream *st,
			      const struct kmsgr_cqe *cqe)
{
	struct kt_inst *ti = st->dst;
	unsigned int i = st->received, s;
	const struct kt_msg *m;
	uint64_t h;

	if (i >= st->total) {
		kt_stream_fail(st, "message beyond the %u sent (tid %#llx)",
			       st->total, (unsigned long long)cqe->tid);
		return;
	}
	m = &st->msgs[i];
	if (cqe->tid != kt_stream_tid(st, i)) {
		kt_stream_fail(st, "message %u: tid %#llx, expected %#llx (lost, duplicated or reordered)",
			       i, (unsigned long long)cqe->tid,
			       (unsigned long long)kt_stream_tid(st, i));
		return;
	}
	if (cqe->seq != st->last_seq + 1 && st->last_seq) {
		kt_stream_fail(st, "message %u: seq %llu after %llu", i,
			       (unsigned long long)cqe->seq,
			       (unsigned long long)st->last_seq);
		return;
	}
	st->last_seq = cqe->seq;
	if (cqe->type != m->type || cqe->version != m->version) {
		kt_stream_fail(st, "message %u: type %u version %u, sent %u %u",
			       i, cqe->type, cqe->version, m->type,
			       m->version);
		return;
	}
	for (s = 0; s < KT_NSEG; s++) {
		if (cqe->seg[s].len != m->len[s]) {
			kt_stream_fail(st, "message %u segment %u: %u bytes, sent %u",
				       i, s, cqe->seg[s].len, m->len[s]);
			return;
		}
		if (!m->len[s])
			continue;
		if (cqe->seg[s].off < ti->tx_size ||
		    (uint64_t)cqe->seg[s].off + cqe->seg[s].len >
		    ti->buf_size) {
			kt_stream_fail(st, "message %u segment %u: slice %u+%u outside the pool [%llu, %llu)",
				       i, s, cqe->seg[s].off, cqe->seg[s].len,
				       (unsigned long long)ti->tx_size,
				       (unsigned long long)ti->buf_size);
			return;
		}
		h = kt_hash(ti->buf + cqe->seg[s].off, cqe->seg[s].len);
		if (h != m->hash[s]) {
			kt_stream_fail(st, "message %u segment %u (%u bytes): hash %#llx, sent %#llx",
				       i, s, m->len[s], (unsigned long long)h,
				       (unsigned long long)m->hash[s]);
			return;
		}
		st->bytes += m->len[s];
	}
	st->received++;
}

/* ---- the loop ------------------------------------------------------------ */

void kt_loop_init(struct kt_loop *lp)
{
	memset(lp, 0, sizeof(*lp));
}

void kt_loop_add(struct kt_loop *lp, struct kt_inst *ti)
{
	if (lp->nr_inst < KT_MAX_INST)
		lp->inst[lp->nr_inst++] = ti;
}

void kt_loop_add_stream(struct kt_loop *lp, struct kt_stream *st)
{
	if (lp->nr_streams < KT_MAX_STREAMS) {
		st->id = lp->nr_streams;
		lp->streams[lp->nr_streams++] = st;
	}
}

static void kt_stray(struct kt_loop *lp, struct kt_inst *ti,
		     const struct kmsgr_cqe *cqe, const char *what)
{
	if (!lp->stray++)
		snprintf(lp->stray_why, sizeof(lp->stray_why),
			 "%s: %s: kind %u session %u res %d event %u reason %u user_data %#llx",
			 ti->name, what, cqe->kind, cqe->session, cqe->res,
			 cqe->event, cqe->reason,
			 (unsigned long long)cqe->user_data);
}

static void kt_handle(struct kt_loop *lp, struct kt_inst *ti,
		      const struct kmsgr_cqe *cqe)
{
	struct kt_stream *st;
	struct kt_event *ev;
	unsigned int sid;
	int i;

	ti->nr_cqes++;
	if (lp->hook && lp->hook(lp, ti, cqe))
		return;
	switch (cqe->kind) {
	case KMSGR_CQE_SEND:
		sid = (cqe->user_data >> KT_UD_STREAM_SHIFT) & 0xffffff;
		if ((cqe->user_data & (0xffULL << KT_UD_KIND_SHIFT)) !=
		    KT_UD_SEND || (int)sid >= lp->nr_streams ||
		    lp->streams[sid]->src != ti) {
			kt_stray(lp, ti, cqe, "SEND completion of no stream");
			return;
		}
		kt_stream_on_send(lp->streams[sid], cqe);
		return;
	case KMSGR_CQE_RECV:
		for (i = 0; i < lp->nr_streams; i++) {
			st = lp->streams[i];
			if (st->dst == ti && st->dst_sess == cqe->session)
				break;
		}
		if (i < lp->nr_streams)
			kt_stream_on_recv(lp->streams[i], cqe);
		else
			kt_stray(lp, ti, cqe, "message on no stream");
		if (kt_release_later(ti, cqe))
			kt_stray(lp, ti, cqe, "no memory to release a message");
		return;
	case KMSGR_CQE_EVENT:
		if (lp->nr_ev >= KT_MAX_EVENTS) {
			lp->nr_ev_dropped++;
			return;
		}
		ev = &lp->ev[lp->nr_ev++];
		ev->inst = ti;
		ev->session = cqe->session;
		ev->event = cqe->event;
		ev->reason = cqe->reason;
		ev->res = cqe->res;
		ev->user_data = cqe->user_data;
		ev->tid = cqe->tid;
		ev->claimed = false;
		if (cqe->event == KMSGR_EV_DOWN ||
		    cqe->event == KMSGR_EV_CLOSED ||
		    cqe->event == KMSGR_EV_RESET)
			fprintf(stderr, "# %s: session %u %s (%s, res %d)\n",
				ti->name, cqe->session,
				kmsgr_event_str(cqe->event),
				kmsgr_reason_str(cqe->reason), cqe->res);
		else
			fprintf(stderr, "# %s: session %u %s\n", ti->name,
				cqe->session, kmsgr_event_str(cqe->event));
		return;
	case KMSGR_CQE_OP:
		if (cqe->res < 0)
			ti->nr_op_errors++;
		kt_stray(lp, ti, cqe, cqe->user_data == KT_UD_RELEASE ?
			 "RELEASE rejected" : "unexpected OP completion");
		return;
	default:
		kt_stray(lp, ti, cqe, "unknown CQE kind");
	}
}

/* Handle every CQE there is on @ti; returns how many. */
static int kt_drain(struct kt_loop *lp, struct kt_inst *ti)
{
	struct kmsgr_cqe batch[KT_DRAIN_BATCH], *cqe;
	int n, i, total = 0;

	do {
		/* Copy first: the CQ gets room before we queue releases. */
		for (n = 0; n < KT_DRAIN_BATCH; n++) {
			cqe = kmsgr_peek_cqe(ti->k);
			if (!cqe)
				break;
			batch[n] = *cqe;
			kmsgr_cqe_seen(ti->k);
		}
		for (i = 0; i < n; i++)
			kt_handle(lp, ti, &batch[i]);
		total += n;
		if (n)
			kmsgr_submit(ti->k, 0, 0);
	} while (n == KT_DRAIN_BATCH);
	return total;
}

int kt_loop_run_once(struct kt_loop *lp, int ms)
{
	struct pollfd pfd[KT_MAX_INST];
	int i, ret, ready = 0;

	/* RELEASEs first: they free the pool the peers' SENDs wait for */
	for (i = 0; i < lp->nr_inst; i++)
		kt_release_backlog(lp->inst[i]);
	for (i = 0; i < lp->nr_streams; i++)
		kt_stream_queue(lp->streams[i]);
	for (i = 0; i < lp->nr_inst; i++) {
		ret = kmsgr_submit(lp->inst[i]->k, 0, 0);
		if (ret < 0 && ret != -EAGAIN && ret != -EBUSY)
			return ret;
		if (kmsgr_peek_cqe(lp->inst[i]->k))
			ready = 1;
		pfd[i].fd = kmsgr_fd(lp->inst[i]->k);
		pfd[i].events = POLLIN;
		pfd[i].revents = 0;
	}
	if (!ready) {
		ret = poll(pfd, lp->nr_inst, ms);
		if (ret < 0 && errno != EINTR)
			return -errno;
		for (i = 0; i < lp->nr_inst; i++)
			if (pfd[i].revents & (POLLERR | POLLNVAL))
				return -EIO;
	}
	for (i = 0; i < lp->nr_inst; i++)
		kt_drain(lp, lp->inst[i]);
	return 0;
}

int kt_loop_run(struct kt_loop *lp, bool (*done)(struct kt_loop *lp), int ms)
{
	uint64_t end = kt_now_ms() + (uint64_t)ms;
	int ret;

	while (!done(lp)) {
		if (kt_now_ms() >= end)
			return -ETIME;
		ret = kt_loop_run_once(lp, 50);
		if (ret)
			return ret;
	}
	return 0;
}

const struct kt_event *kt_find_event(const struct kt_loop *lp,
				     const struct kt_inst *ti,
				     uint32_t session, uint8_t ev,
				     unsigned int from)
{
	unsigned int i;

	for (i = from; i < lp->nr_ev; i++) {
		const struct kt_event *e = &lp->ev[i];

		if (e->inst == ti && e->session == session &&
		    (!ev || e->event == ev))
			return e;
	}
	return NULL;
}

/*
 * The server session of the pair that @cli_id belongs to: the latest
 * ACCEPTED on @srv that no earlier call returned and whose session has not
 * been closed since.  One instance may serve several pairs one after the
 * other, and an earlier pair's session can still look open while this
 * pair's ACCEPTED is not read yet: waiting for an unclaimed one keeps it
 * from being taken twice.
 */
static struct kt_event *kt_unclaimed_accept(struct kt_loop *lp,
					    const struct kt_inst *srv)
{
	struct kt_event *e, *acc = NULL;
	unsigned int i;

	for (i = 0; i < lp->nr_ev; i++) {
		e = &lp->ev[i];
		if (e->inst != srv)
			continue;
		if (e->event == KMSGR_EV_ACCEPTED && !e->claimed)
			acc = e;
		else if (acc && e->event == KMSGR_EV_CLOSED &&
			 e->session == acc->session)
			acc = NULL;
	}
	return acc;
}

int kt_wait_pair(struct kt_loop *lp, struct kt_inst *cli, uint32_t cli_id,
		 struct kt_inst *srv, uint32_t *srv_id, int ms)
{
	uint64_t end = kt_now_ms() + (uint64_t)ms;
	const struct kt_event *up;
	struct kt_event *acc;
	int ret;

	for (;;) {
		up = kt_find_event(lp, cli, cli_id, KMSGR_EV_UP, 0);
		acc = kt_unclaimed_accept(lp, srv);
		if (up && acc) {
			acc->claimed = true;
			*srv_id = acc->session;
			return 0;
		}
		if (kt_find_event(lp, cli, cli_id, KMSGR_EV_CLOSED, 0))
			return -ECONNREFUSED;
		if (kt_now_ms() >= end)
			return -ETIME;
		ret = kt_loop_run_once(lp, 50);
		if (ret)
			return ret;
	}
}

/* ---- kernel log ------------------------------------------------------------ */

int kt_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	lseek(fd, 0, SEEK_END);
	return fd;
}

int kt_kmsg_check(int fd, char *out, size_t len)
{
	static const char *const bad[] = {
		"WARNING:", "BUG:", "Oops", "general protection",
		"Call Trace", "refcount_t:", "list_add corruption",
		"list_del corruption", "UBSAN:", "KASAN:",
	};
	char rec[8192], *msg;
	int found = 0;
	ssize_t n;
	size_t i;

	if (fd < 0)
		return fd;
	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0) {
			if (errno == EPIPE || errno == EINTR)
				continue;	/* overwritten records */
			break;
		}
		if (n == 0)
			break;
		rec[n] = '\0';
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		msg[strcspn(msg, "\n")] = '\0';
		for (i = 0; i < ARRAY_SIZE(bad); i++) {
			if (!found && strstr(msg, bad[i])) {
				snprintf(out, len, "%s", msg);
				found = 1;
			}
		}
	}
	return found;
}

/* ---- tracefs ------------------------------------------------------------ */

#define KT_TRACEFS		"/sys/kernel/tracing"
#define KT_TRACEFS_DEBUG	"/sys/kernel/debug/tracing"

static bool kt_is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* The tracefs root, mounting it if need be; NULL when there is none. */
static const char *kt_tracefs_root(void)
{
	if (kt_is_dir(KT_TRACEFS "/instances"))
		return KT_TRACEFS;
	if (!mount("nodev", KT_TRACEFS, "tracefs", 0, NULL) &&
	    kt_is_dir(KT_TRACEFS "/instances"))
		return KT_TRACEFS;
	if (kt_is_dir(KT_TRACEFS_DEBUG "/instances"))
		return KT_TRACEFS_DEBUG;
	return NULL;
}

int kt_trace_write(const struct kt_trace *t, const char *file,
		   const char *val)
{
	char path[384];

	snprintf(path, sizeof(path), "%s/%s", t->dir, file);
	return kmsgr_write_line(path, val);
}

void kt_trace_remove(struct kt_trace *t)
{
	char path[384];
	int fd;

	if (!t->dir[0])
		return;
	kt_trace_write(t, "events/kmsgr/enable", "0");
	if (t->rdma)
		kt_trace_write(t, "events/kmsgr_rdma/enable", "0");
	snprintf(path, sizeof(path), "%s/trace", t->dir);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	if (rmdir(t->dir))
		fprintf(stderr, "# rmdir %s: %s\n", t->dir, strerror(errno));
	t->dir[0] = '\0';
}

const char *kt_trace_create(struct kt_trace *t, bool rdma)
{
	static char why[512];
	const char *root = kt_tracefs_root();
	char path[384];
	int ret;

	t->dir[0] = '\0';
	t->rdma = rdma;
	if (!root)
		return "no tracefs (CONFIG_TRACING)";
	snprintf(path, sizeof(path), "%s/events/kmsgr", root);
	if (!kt_is_dir(path)) {
		snprintf(why, sizeof(why), "%s is missing", path);
		return why;
	}
	snprintf(t->dir, sizeof(t->dir), "%s/instances/%s.%d", root,
		 program_invocation_short_name, (int)getpid());
	if (mkdir(t->dir, 0700)) {
		snprintf(why, sizeof(why), "mkdir %s: %s", t->dir,
			 strerror(errno));
		t->dir[0] = '\0';
		return why;
	}
	ret = kt_trace_write(t, "events/kmsgr/enable", "1");
	if (!ret && rdma)
		ret = kt_trace_write(t, "events/kmsgr_rdma/enable", "1");
	if (ret) {
		snprintf(why, sizeof(why), "enabling the events in %s: %s",
			 t->dir, strerror(-ret));
		kt_trace_remove(t);
		return why;
	}
	return NULL;
}

char *kt_trace_read(const struct kt_trace *t)
{
	size_t len = 0, cap = 1 << 16;
	char path[384], *buf, *nb;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/trace", t->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	while (buf) {
		if (cap - len < 4096) {
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (buf)
		buf[len] = '\0';
	return buf;
}

/* ---- the bad-input tests' bed ------------------------------------------ */

#define KT_BED_SQ	128
#define KT_BED_TX	(1ULL << 20)
#define KT_BED_POOL	(4ULL << 20)
#define KT_BED_MSGS	200000	/* more than any test gets through */
#define KT_BED_UP_MS	20000

int kt_bed_open(struct kt_bed *b)
{
	struct kt_plan small = {
		.count = KT_BED_MSGS, .max_log2 = 12, .small_log2 = 12,
		.big_one_in = 1, .seed = 0xbed,
	};
	int ret;

	kt_loop_init(&b->lp);
	ret = kt_inst_open(&b->victim, "victim", KT_BED_SQ, KT_BED_TX,
			   KT_BED_POOL, 1);
	if (ret)
		return ret;
	ret = kt_inst_open(&b->peer, "peer", KT_BED_SQ, KT_BED_TX,
			   KT_BED_POOL, 2);
	if (ret)
		return ret;
	kt_loop_add(&b->lp, &b->victim);
	kt_loop_add(&b->lp, &b->peer);
	ret = kt_listen(&b->peer, "127.0.0.1", KMSGR_SESS_F_LOSSLESS, 0x9ee7,
			&b->pl);
	if (ret)
		return ret;
	ret = kt_connect(&b->victim, &b->pl.bound, KMSGR_SESS_F_LOSSLESS,
			 KT_PEER_ANY, 0x7ea1, &b->v_id);
	if (ret)
		return ret;
	ret = kt_wait_pair(&b->lp, &b->victim, b->v_id, &b->peer, &b->p_id,
			   KT_BED_UP_MS);
	if (ret) {
		fprintf(stderr, "# bed: the healthy session is not up: %s\n",
			kmsgr_strerror(ret));
		return ret;
	}
	if (kt_stream_init(&b->out, &b->victim, b->v_id, &b->peer, b->p_id,
			   &small, 4))
		return -ENOMEM;
	small.seed++;
	if (kt_stream_init(&b->in, &b->peer, b->p_id, &b->victim, b->v_id,
			   &small, 4))
		return -ENOMEM;
	kt_loop_add_stream(&b->lp, &b->out);
	kt_loop_add_stream(&b->lp, &b->in);
	return 0;
}

int kt_bed_progress(struct kt_bed *b, unsigned int n, int ms)
{
	unsigned int out0 = b->out.received, in0 = b->in.received;
	uint64_t end = kt_now_ms() + (uint64_t)ms;
	int ret;

	while (b->out.received < out0 + n || b->in.received < in0 + n) {
		if (b->out.failed || b->in.failed)
			return -EPROTO;
		if (kt_stream_finished(&b->out) && kt_stream_finished(&b->in))
			return 0;
		if (kt_now_ms() >= end)
			return -ETIME;
		ret = kt_loop_run_once(&b->lp, 50);
		if (ret)
			return ret;
	}
	return 0;
}

void kt_bed_close(struct kt_bed *b)
{
	if (b->victim.k)
		kt_inst_close(&b->victim);
	if (b->peer.k)
		kt_inst_close(&b->peer);
	kt_stream_free(&b->out);
	kt_stream_free(&b->in);
}

const char *kt_bed_missing(void)
{
	struct kmsgr_info info;
	const char *why = kmsgr_missing(1);
	struct kmsgr *k;

	if (why)
		return why;
	if (kmsgr_open(NULL, &k))
		return NULL;
	if (kmsgr_info(k, &info))
		info.features = 0;
	kmsgr_close(k);
	if (!(info.features & KMSGR_FEAT_RINGS) ||
	    !(info.features & KMSGR_FEAT_TCP))
		return "module without rings or TCP sessions";
	return NULL;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl - a small Ceph object client on kmsgr sessions: the map from
 * the monitor, placement, MOSDOp and MOSDOpReply.  See osdc.h.
 *
 * The instance's tx area: a monitor command's front at offset 0
 * (OSDC_FRONT_MAX bytes), then one slot per request in flight, each a
 * front (OSDC_FRONT_MAX) and the data after it (osdc.slot_data).  A slot
 * is rewritten only once its last SEND has completed.
 *
 * Copyright (C) 2026 The kmsgr authors
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "cephenc.h"
#include "osdc.h"

#define MSG_OSD_OP		42
#define MSG_OSD_OPREPLY		43
#define MSG_MON_COMMAND		50
#define MSG_MON_COMMAND_ACK	51

#define ENTITY_OSD		4
#define ENTITY_CLIENT		8

/* CEPH_OSD_FLAG_* */
#define OSD_FLAG_ONDISK		0x0004
#define OSD_FLAG_READ		0x0010
#define OSD_FLAG_WRITE		0x0020
#define OSD_FLAG_KNOWN_REDIR	0x400000
#define OSD_FLAG_FULL_TRY	0x800000

#define CEPH_NOSNAP		((__u64)-2)
#define OSD_OP_SIZE		38	/* struct ceph_osd_op, packed */
#define OSDC_FRONT_MAX		4096U
/* the user_data of MOSDOp SENDs: this bit and the request's tid */
#define OSDC_UDATA		(1ULL << 63)
/*
 * MOSDOp's features field: what kmsgr's sessions advertise (the msgr2
 * engine's default set, the one the kernel's own Ceph client sends).
 */
#define OSDC_FEATURES		0x2f018eb87aa4aafeULL

/* ---- hashing and placement ---------------------------------------------- */

/*
 * Bob Jenkins' 1996 hash (lookup2), as Ceph uses it for object names
 * (CEPH_STR_HASH_RJENKINS): 12-byte blocks mixed into a, b, c; the last
 * block zero-padded, with the length added into c's low byte.
 */
static void rj_mix(__u32 *a, __u32 *b, __u32 *c)
{
	static const struct {
		__u8 right, shift;
	} step[9] = {
		{ 1, 13 }, { 0, 8 }, { 1, 13 }, { 1, 12 }, { 0, 16 },
		{ 1, 5 }, { 1, 3 }, { 0, 10 }, { 1, 15 },
	};
	__u32 *v[3] = { a, b, c };
	unsigned int i;

	/* each step: x -= y; x -= z; x ^= z >> s (or y << s for b) */
	for (i = 0; i < 9; i++) {
		__u32 *x = v[i % 3], *y = v[(i + 1) % 3], *z = v[(i + 2) % 3];

		*x -= *y;
		*x -= *z;
		*x ^= step[i].right ? *z >> step[i].shift : *z << step[i].shift;
	}
}

__u32 ceph_str_hash_rjenkins(const char *s, size_t len)
{
	const __u8 *k = (const __u8 *)s;
	__u32 a = 0x9e3779b9, b = 0x9e3779b9, c = 0;
	size_t left = len;
	__u8 tail[12];

	for (; left >= 12; k += 12, left -= 12) {
		a += get_le32(k);
		b += get_le32(k + 4);
		c += get_le32(k + 8);
		rj_mix(&a, &b, &c);
	}
	memset(tail, 0, sizeof(tail));
	memcpy(tail, k, left);
	a += get_le32(tail);
	b += get_le32(tail + 4);
	/* c's first byte carries the length, the last 3 bytes go above it */
	c += (__u32)len + (get_le32(tail + 8) << 8);
	rj_mix(&a, &b, &c);
	return c;
}

/*
 * The PG of hash @x among @b PGs, where @bmask is the next power of two
 * minus one: stable while pg_num grows (an object moves only to its PG's
 * new child).
 */
__u32 ceph_stable_mod(__u32 x, __u32 b, __u32 bmask)
{
	return (x & bmask) < b ? x & bmask : x & (bmask >> 1);
}

static __u32 pg_mask_of(__u32 pg_num)
{
	__u32 m = 1;

	while (m < pg_num)
		m <<= 1;
	return m - 1;
}

/* ---- monitor commands --------------------------------------------------- */

int osdc_mon_command(struct osdc *o, const char *cmd, char **out, char *rs,
		     size_t rs_size)
{
	struct cenc e = {
		.buf = kmsgr_buf(ctl_k), .cap = OSDC_FRONT_MAX,
	};
	struct ctl_msg m = {
		.type = MSG_MON_COMMAND, .version = 1, .compat = 1,
		.tid = ++o->tid,
	};
	struct ctl_reply r;
	struct cdec d;
	const char *s;
	__u32 n;
	int ret, res;

	*out = NULL;
	if (rs_size)
		rs[0] = '\0';
	/* PaxosServiceMessage: version, session_mon (-1), session_mon_tid */
	cenc_le64(&e, 0);
	cenc_le16(&e, 0xffff);
	cenc_le64(&e, 0);
	cenc_bytes(&e, o->fsid, 16);
	cenc_le32(&e, 1);			/* one string: the JSON */
	cenc_string(&e, cmd, strlen(cmd));
	if (e.err)
		return -E2BIG;
	m.front.len = (__u32)e.len;
	ret = ctl_call(o->mon, &m, MSG_MON_COMMAND_ACK, false,
		       ctl_now_ns() + o->mon->timeout_ns, "monitor command",
		       &r);
	if (ret)
		return ret;
	/* MMonCommandAck: paxos header, le32 r, string rs, vector cmd */
	d = (struct cdec){ .buf = (const __u8 *)r.front, .len = r.front_len };
	cdec_take(&d, 18);
	res = (int)cdec_le32(&d);
	s = cdec_string(&d, &n);
	if (d.err) {
		error("monitor command: MMonCommandAck of %u bytes is malformed",
		      r.front_len);
		ctl_reply_free(&r);
		return -EBADMSG;
	}
	if (rs_size)
		snprintf(rs, rs_size, "%.*s", (int)n, s);
	*out = malloc((size_t)r.data_len + 1);
	if (!*out) {
		ctl_reply_free(&r);
		return -ENOMEM;
	}
	if (r.data_len)
		memcpy(*out, r.data, r.data_len);
	(*out)[r.data_len] = '\0';
	ctl_reply_free(&r);
	return res;
}

/* ---- the map ------------------------------------------------------------ */

bool osdc_flag_named(const char *names, const char *flag)
{
	size_t len = strlen(flag);
	const char *p = names;

	while (*p) {
		if (!strncmp(p, flag, len) && (p[len] == ',' || !p[len]))
			return true;
		p = strchr(p, ',');
		if (!p)
			return false;
		p++;
	}
	return false;
}

static void osdc_forget_osds(struct osdc *o)
{
	unsigned int i;

	for (i = 0; i < o->n_osds; i++)
		ctl_conn_close(&o->osds[i].conn);
	free(o->osds);
	o->osds = NULL;
	o->n_osds = 0;
}

/*
 * Whether the ops of pool @p go to a cache tier (read_tier, write_tier:
 * -1 when none), as librados sends them
 */
static bool pool_has_overlay(const char *p)
{
	long long n;

	return (!json_i64_at(json_member(p, "read_tier"), &n) && n >= 0) ||
	       (!json_i64_at(json_member(p, "write_tier"), &n) && n >= 0);
}

static int parse_pools(struct osdc *o, const char *dump)
{
	const char *p, *v;
	struct osdc_pool *pl;
	long long n;
	char flags[256];
	unsigned int cnt = 0;

	for (p = json_first(json_member(dump, "pools")); p; p = json_next(p))
		cnt++;
	free(o->pools);
	o->pools = calloc(cnt ? cnt : 1, sizeof(*o->pools));
	o->n_pools = 0;
	if (!o->pools)
		return -ENOMEM;
	for (p = json_first(json_member(dump, "pools")); p; p = json_next(p)) {
		pl = &o->pools[o->n_pools];
		/* a slot a skipped entry left half filled in */
		memset(pl, 0, sizeof(*pl));
		if (json_i64_at(json_member(p, "pool"), &pl->id))
			continue;
		json_string_at(json_member(p, "pool_name"), pl->name,
			       sizeof(pl->name));
		/* pg_mask_of() needs a power of two above it in 32 bits */
		if (json_i64_at(json_member(p, "pg_num"), &n) || n < 1 ||
		    n > 1LL << 31)
			continue;
		pl->pg_num = (__u32)n;
		pl->pg_mask = pg_mask_of(pl->pg_num);
		if (!json_i64_at(json_member(p, "size"), &n))
			pl->size = (unsigned int)n;
		/*
		 * Kept, so that naming it gets a reason (osdc_pool()), never
		 * placed: an erasure-coded pool (type 3) wants the shard of
		 * the primary in every op and its acting set read by
		 * position; only rjenkins (2) is computed here.
		 */
		if (!json_i64_at(json_member(p, "type"), &n) && n == 3)
			pl->unsupported = "it is erasure-coded; kmsgrctl rados uses replicated pools only";
		else if (json_i64_at(json_member(p, "object_hash"), &n) ||
			 n != 2)
			pl->unsupported = "its object hash is not rjenkins, the only one kmsgrctl computes";
		else if (pool_has_overlay(p))
			pl->unsupported = "it has a cache tier overlay (librados sends its ops to the tier; kmsgrctl would bypass it)";
		v = json_member(p, "flags_names");
		json_string_at(v, flags, sizeof(flags));
		pl->full = osdc_flag_named(flags, "full");
		o->n_pools++;
	}
	return 0;
}

/* "127.0.0.1:6800" and nonce of the v2 entry of an addrvec object */
static void parse_addrvec(const char *addrs, struct osdc_osd *osd)
{
	const char *a;
	char type[8];
	long long n;

	for (a = json_first(json_member(addrs, "addrvec")); a;
	     a = json_next(a)) {
		json_string_at(json_member(a, "type"), type, sizeof(type));
		if (strcmp(type, "v2"))
			continue;
		json_string_at(json_member(a, "addr"), osd->addr_str,
			       sizeof(osd->addr_str));
		if (!json_i64_at(json_member(a, "nonce"), &n))
			osd->nonce = (__u32)n;
		return;
	}
}

/*
 * The session of @osd from the previous map, if that OSD is the same one
 * still up (id, address and nonce unchanged): kept, so that a refresh
 * does not end the sessions of healthy OSDs and the requests on them.
 */
static void keep_session(struct osdc_osd *old, unsigned int n_old,
			 struct osdc_osd *osd)
{
	unsigned int i;

	for (i = 0; i < n_old; i++) {
		if (old[i].id != osd->id)
			continue;
		if (old[i].conn.open && old[i].up && osd->up &&
		    old[i].nonce == osd->nonce &&
		    !strcmp(old[i].addr_str, osd->addr_str)) {
			osd->conn = old[i].conn;
			osd->conn.addr_str = osd->addr_str;
			old[i].conn.open = false;
		}
		return;
	}
}

static int parse_osds(struct osdc *o, const char *dump)
{
	struct osdc_osd *osd, *old = o->osds;
	unsigned int cnt = 0, n_old = o->n_osds;
	const char *p;
	long long n;

	for (p = json_first(json_member(dump, "osds")); p; p = json_next(p))
		cnt++;
	o->osds = calloc(cnt ? cnt : 1, sizeof(*o->osds));
	o->n_osds = 0;
	if (!o->osds) {
		o->osds = old;
		o->n_osds = n_old;
		osdc_forget_osds(o);
		return -ENOMEM;
	}
	for (p = json_first(json_member(dump, "osds")); p; p = json_next(p)) {
		osd = &o->osds[o->n_osds];
		/* ids are 0..INT_MAX: another is no OSD of ours */
		if (json_i64_at(json_member(p, "osd"), &n) || n < 0 ||
		    n > INT_MAX)
			continue;
		osd->id = (int)n;
		osd->up = !json_i64_at(json_member(p, "up"), &n) && n;
		parse_addrvec(json_member(p, "public_addrs"), osd);
		keep_session(old, n_old, osd);
		o->n_osds++;
	}
	/* the rest: OSDs gone, down or moved */
	for (n = 0; n < n_old; n++)
		ctl_conn_close(&old[n].conn);
	free(old);
	return 0;
}

int osdc_refresh(struct osdc *o)
{
	char *dump = NULL, rs[256];
	long long epoch;
	int ret;

	ret = osdc_mon_command(o, "{\"prefix\":\"osd dump\",\"format\":\"json\"}",
			       &dump, rs, sizeof(rs));
	if (ret) {
		if (dump)
			error("osd dump: %s (%s)", rs, strerror(-ret));
		free(dump);
		return ret;
	}
	if (json_i64_at(json_member(dump, "epoch"), &epoch) ||
	    !json_member(dump, "pools") || !json_member(dump, "osds")) {
		error("osd dump: the reply is not an OSD map: %.200s", dump);
		free(dump);
		return -EBADMSG;
	}
	o->epoch = (__u32)epoch;
	ret = parse_pools(o, dump);
	if (!ret)
		ret = parse_osds(o, dump);
	free(dump);
	o->n_pgs = 0;
	return ret;
}

int osdc_pool(struct osdc *o, const char *name, struct osdc_pool *p)
{
	unsigned int i;

	for (i = 0; i < o->n_pools; i++) {
		if (!strcmp(o->pools[i].name, name)) {
			*p = o->pools[i];
			return p->unsupported ? -EOPNOTSUPP : 0;
		}
	}
	return -ENOENT;
}

/* The primary of PG @ps of @pool, from the cache or `pg map`. */
static int pg_primary(struct osdc *o, const struct osdc_pool *pool, __u32 ps,
		      int *primary)
{
	char cmd[128], rs[256], *out = NULL;
	struct osdc_pg *pg;
	long long n;
	unsigned int i;
	int ret;

	for (i = 0; i < o->n_pgs; i++) {
		pg = &o->pgs[i];
		if (pg->pool == pool->id && pg->ps == ps &&
		    pg->epoch == o->epoch) {
			*primary = pg->primary;
			return 0;
		}
	}
	snprintf(cmd, sizeof(cmd),
		 "{\"prefix\":\"pg map\",\"pgid\":\"%lld.%x\",\"format\":\"json\"}",
		 pool->id, ps);
	ret = osdc_mon_command(o, cmd, &out, rs, sizeof(rs));
	if (ret) {
		if (out)
			error("pg map %lld.%x: %s (%s)", pool->id, ps, rs,
			      strerror(-ret));
		free(out);
		return ret;
	}
	/* the acting set's first OSD leads a replicated PG (-1: none) */
	if (json_i64_at(json_first(json_member(out, "acting")), &n) ||
	    n < -1 || n > INT_MAX)
		n = -1;
	free(out);
	*primary = (int)n;

	pg = realloc(o->pgs, (o->n_pgs + 1) * sizeof(*pg));
	if (!pg)
		return 0;		/* just not cached */
	o->pgs = pg;
	o->pgs[o->n_pgs++] = (struct osdc_pg){
		.pool = pool->id, .ps = ps, .epoch = o->epoch,
		.primary = *primary,
	};
	return 0;
}

int osdc_locate(struct osdc *o, const struct osdc_pool *pool,
		const char *oid, struct osdc_loc *loc)
{
	loc->pool = pool->id;
	loc->hash = ceph_str_hash_rjenkins(oid, strlen(oid));
	loc->ps = ceph_stable_mod(loc->hash, pool->pg_num, pool->pg_mask);
	loc->epoch = o->epoch;
	return pg_primary(o, pool, loc->ps, &loc->primary);
}

int osdc_init(struct osdc *o, struct ctl_conn *mon, __u64 timeout_ns,
	      unsigned int slots, __u64 slot_data)
{
	__u32 monmap_epoch;
	int ret;

	memset(o, 0, sizeof(*o));
	o->mon = mon;
	o->osd_proto = *mon;
	o->osd_proto.peer_type = ENTITY_OSD;
	o->osd_proto.open = false;
	o->osd_proto.keyring = NULL;
	o->osd_proto.key_desc = NULL;
	/* an OSD that cannot be reached is retried; the end result is said */
	o->osd_proto.quiet = true;
	o->timeout_ns = timeout_ns;
	o->n_slots = slots;
	o->slot_data = slot_data;
	/* a client number of our own (see encode_mosdop), above the mon's */
	if (getrandom(&o->client_num, sizeof(o->client_num), 0) !=
	    sizeof(o->client_num))
		return -errno;
	o->client_num = (o->client_num & ((1ULL << 47) - 1)) | 1ULL << 47;
	ret = mon_get_fsid(mon, o->fsid, &monmap_epoch);
	if (!ret)
		ret = osdc_refresh(o);
	return ret;
}

void osdc_fini(struct osdc *o)
{
	osdc_forget_osds(o);
	free(o->pools);
	free(o->pgs);
	memset(o, 0, sizeof(*o));
}

/* ---- operations --------------------------------------------------------- */

static struct osdc_osd *osdc_osd(struct osdc *o, int id)
{
	unsigned int i;

	for (i = 0; i < o->n_osds; i++)
		if (o->osds[i].id == id)
			return &o->osds[i];
	return NULL;
}

/*
 * The open session to OSD @id, opened by @deadline (ns) at the latest;
 * quiet on failure (the caller retries).
 */
static int osd_session(struct osdc *o, int id, __u64 deadline,
		       struct ctl_conn **cp)
{
	struct osdc_osd *osd = osdc_osd(o, id);
	__u64 now = ctl_now_ns();
	struct ctl_conn *c;
	int ret;

	if (!osd || !osd->up || !osd->addr_str[0])
		return -EHOSTDOWN;
	c = &osd->conn;
	if (c->open) {
		*cp = c;
		return 0;
	}
	/*
	 * An open waits for an OSD that does not answer until the request's
	 * deadline: one try per map (the next round's) for all its requests
	 */
	if (osd->failed)
		return osd->failed;
	if (now >= deadline)
		return -ETIME;
	*c = o->osd_proto;
	c->addr_str = osd->addr_str;
	c->open = false;
	/* cephx: the mon session's ticket (the one open now) */
	if (o->mon->keyring || o->mon->key_desc)
		c->ticket_from = o->mon->id;
	if (kmsgr_addr_parse(c->addr_str, &c->addr))
		return -EINVAL;
	c->addr.nonce = osd->nonce;
	if (c->timeout_ns > deadline - now)
		c->timeout_ns = deadline - now;
	ret = ctl_conn_open(c);
	/*
	 * the instance's max_sessions, not a full OSD (osdc_strerror()):
	 * no later try mends it while the other sessions stay
	 */
	if (ret == -ENOSPC)
		ret = -EMFILE;
	if (ret) {
		if (ret != -EINTR)
			osd->failed = ret;
		return ret;
	}
	c->timeout_ns = o->osd_proto.timeout_ns;
	*cp = c;
	return 0;
}

static void encode_osd_op(struct cenc *e, const struct osdc_op *op)
{
	bool extent = op->op == OSD_OP_READ || op->op == OSD_OP_WRITE ||
		      op->op == OSD_OP_WRITEFULL;
	bool in = op->op == OSD_OP_WRITE || op->op == OSD_OP_WRITEFULL;

	cenc_le16(e, op->op);
	cenc_le32(e, 0);			/* flags */
	/* the 28-byte union: extent (offset, length, truncate size, seq) */
	cenc_le64(e, extent ? op->offset : 0);
	cenc_le64(e, extent ? op->length : 0);
	cenc_zero(e, 12);
	cenc_le32(e, in ? (__u32)op->length : 0);	/* payload_len */
}

/* Where slot @slot starts: after the monitor commands' front. */
static __u64 slot_off(const struct osdc *o, unsigned int slot)
{
	return OSDC_FRONT_MAX + (__u64)slot * (OSDC_FRONT_MAX + o->slot_data);
}

__u64 osdc_tx_size(unsigned int slots, __u64 data)
{
	return OSDC_FRONT_MAX + (__u64)slots * (OSDC_FRONT_MAX + data);
}

void *osdc_slot_data(const struct osdc *o, unsigned int slot)
{
	return (__u8 *)kmsgr_buf(ctl_k) + slot_off(o, slot) + OSDC_FRONT_MAX;
}

/* MOSDOp v8 front into @rq's slot; the ops' input data after it. */
static int encode_mosdop(const struct osdc *o, const struct osdc_req *rq,
			 struct kmsgr_sqe *sqe)
{
	const struct osdc_loc *loc = &rq->loc;
	__u8 *buf = (__u8 *)kmsgr_buf(ctl_k) + slot_off(o, rq->slot);
	struct cenc e = { .buf = buf, .cap = OSDC_FRONT_MAX };
	const struct osdc_op *ops = rq->ops;
	size_t oid_len = strlen(rq->oid);
	struct kmsgr_slice front, data, none = { 0 };
	__u8 *dst = buf + OSDC_FRONT_MAX;
	struct timespec now;
	__u64 len = 0;
	unsigned int i;

	for (i = 0; i < rq->n; i++) {
		if (ops[i].op != OSD_OP_WRITE && ops[i].op != OSD_OP_WRITEFULL)
			continue;
		if (ops[i].length > o->slot_data - len)
			return -E2BIG;
		if (ops[i].in != dst + len)
			memcpy(dst + len, ops[i].in, ops[i].length);
		len += ops[i].length;
	}
	clock_gettime(CLOCK_REALTIME, &now);

	/* spg_t: pg_t (v1: pool, seed, preferred -1) and shard -1 */
	cenc_start(&e, 1, 1, 18);
	cenc_u8(&e, 1);
	cenc_le64(&e, (__u64)loc->pool);
	cenc_le32(&e, loc->ps);
	cenc_le32(&e, (__u32)-1);
	cenc_u8(&e, 0xff);
	cenc_le32(&e, loc->hash);
	cenc_le32(&e, loc->epoch);
	/*
	 * FULL_TRY: an OSD whose pool is full answers a write that needs
	 * space with ENOSPC (EDQUOT) instead of dropping it, and still takes
	 * deletes; the map may not say "full" yet when we send.
	 */
	cenc_le32(&e, (rq->write ? OSD_FLAG_WRITE | OSD_FLAG_FULL_TRY :
		       OSD_FLAG_READ) | OSD_FLAG_ONDISK | OSD_FLAG_KNOWN_REDIR);
	/*
	 * osd_reqid_t (entity_name_t, tid, inc): the OSD's duplicate
	 * detection key.  A zero one would make it client.<our global id>
	 * with the message's tid, but a kmsgr session to an OSD presents
	 * global id 0, the same for every process: our own random client
	 * number keeps two clients' requests apart.
	 */
	cenc_start(&e, 2, 2, 21);
	cenc_u8(&e, ENTITY_CLIENT);
	cenc_le64(&e, o->client_num);
	cenc_le64(&e, rq->tid);			/* = the message's tid */
	cenc_le32(&e, 0);
	cenc_zero(&e, 24);			/* blkin trace */
	cenc_le32(&e, 0);			/* client_inc */
	cenc_le32(&e, rq->write ? (__u32)now.tv_sec : 0);	/* mtime */
	cenc_le32(&e, rq->write ? (__u32)now.tv_nsec : 0);
	/* object_locator_t v5: pool, preferred -1, key "", namespace "" */
	cenc_start(&e, 5, 4, 20);
	cenc_le64(&e, (__u64)loc->pool);
	cenc_le32(&e, (__u32)-1);
	cenc_le32(&e, 0);
	cenc_le32(&e, 0);
	cenc_string(&e, rq->oid, oid_len);
	cenc_le16(&e, (__u16)rq->n);
	for (i = 0; i < rq->n; i++)
		encode_osd_op(&e, &ops[i]);
	cenc_le64(&e, CEPH_NOSNAP);		/* snapid */
	cenc_le64(&e, 0);			/* snap_seq */
	cenc_le32(&e, 0);			/* snaps */
	cenc_le32(&e, rq->attempt);		/* retry_attempt */
	cenc_le64(&e, OSDC_FEATURES);
	if (e.err)
		return -ENAMETOOLONG;

	front = (struct kmsgr_slice){ slot_off(o, rq->slot), (__u32)e.len };
	data = (struct kmsgr_slice){ slot_off(o, rq->slot) + OSDC_FRONT_MAX,
				     (__u32)len };
	kmsgr_prep_send(sqe, rq->session, MSG_OSD_OP, rq->tid, front, none,
			data, OSDC_UDATA | rq->tid);
	sqe->version = 8;
	sqe->compat_version = 3;
	return 0;
}

/* MOSDOpReply (a RECV's front and data): the result, each op's output. */
static int decode_reply(const __u8 *front, __u32 front_len,
			const __u8 *data, __u32 data_len,
			struct osdc_op *ops, unsigned int n, int *result)
{
	struct cdec d = { .buf = front, .len = front_len };
	__u32 len, num_ops, out_len[16], used = 0;
	const __u8 *op;
	unsigned int i;

	cdec_string(&d, &len);			/* oid */
	cdec_take(&d, 1 + 8 + 4 + 4);		/* pg_t */
	cdec_le64(&d);				/* flags */
	*result = (int)cdec_le32(&d);
	cdec_take(&d, 12 + 4);			/* bad_replay_version, epoch */
	num_ops = cdec_le32(&d);
	if (d.err || num_ops != n || n > 16)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		op = cdec_take(&d, OSD_OP_SIZE);
		out_len[i] = op ? get_le32(op + OSD_OP_SIZE - 4) : 0;
	}
	cdec_le32(&d);				/* retry_attempt */
	for (i = 0; i < n; i++)
		ops[i].rval = (int)cdec_le32(&d);
	if (d.err)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		if (out_len[i] > data_len - used ||
		    (ops[i].dst && out_len[i] > ops[i].length))
			return -EBADMSG;
		free(ops[i].out);
		ops[i].out = NULL;
		ops[i].out_len = out_len[i];
		if (ops[i].dst) {
			memcpy(ops[i].dst, data + used, out_len[i]);
		} else if (out_len[i]) {
			ops[i].out = malloc(out_len[i]);
			if (!ops[i].out)
				return -ENOMEM;
			memcpy(ops[i].out, data + used, out_len[i]);
		}
		used += out_len[i];
	}
	return 0;
}

void osdc_ops_free(struct osdc_op *ops, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		free(ops[i].out);
		ops[i].out = NULL;
	}
}

/* ---- requests in flight ------------------------------------------------- */

static void req_unlink(struct osdc *o, struct osdc_req *rq)
{
	struct osdc_req **pp;

	for (pp = &o->reqs; *pp; pp = &(*pp)->next) {
		if (*pp == rq) {
			*pp = rq->next;
			break;
		}
	}
}

/* @rq is finished with @result: from the in-flight list to the done one. */
static void req_finish(struct osdc *o, struct osdc_req *rq, int result)
{
	req_unlink(o, rq);
	rq->result = result;
	rq->next = o->done;
	o->done = rq;
}

/* Send @rq again in the next round (after a pause and a fresh map). */
static void req_again(struct osdc *o, struct osdc_req *rq, const char *why)
{
	rq->retry = true;
	rq->answered = false;
	rq->why = why;
	if (!o->retry_at)
		o->retry_at = ctl_now_ns() + NSEC_PER_SEC / 2;
}

/*
 * Session @id to an OSD is no use any more (no answer, or it ended): close
 * it, and send what was waiting on it again.
 */
static void session_lost(struct osdc *o, __u32 id, const char *why)
{
	struct osdc_req *rq;
	unsigned int i;

	for (i = 0; i < o->n_osds; i++)
		if (o->osds[i].conn.open && o->osds[i].conn.id == id)
			ctl_conn_close(&o->osds[i].conn);
	/* (an answered one only waits for its SEND's completion) */
	for (rq = o->reqs; rq; rq = rq->next)
		if (rq->session == id && !rq->retry && !rq->answered)
			req_again(o, rq, why);
}

static struct osdc_req *req_by_tid(struct osdc *o, __u64 tid)
{
	struct osdc_req *rq;

	for (rq = o->reqs; rq; rq = rq->next)
		if (rq->tid == tid)
			return rq;
	return NULL;
}

const char *osdc_strerror(int err)
{
	if (err == -ENOSPC)
		return "No space left on device (the pool or its OSDs are full)";
	if (err == -EDQUOT)
		return "Disk quota exceeded (the pool's quota is reached)";
	if (err == -EMFILE)
		return "no session to the OSD: the instance has max_sessions sessions (kmsgr module parameter)";
	return strerror(-err);
}

static bool req_deletes(const struct osdc_req *rq)
{
	unsigned int i;

	for (i = 0; i < rq->n; i++)
		if (rq->ops[i].op == OSD_OP_DELETE)
			return true;
	return false;
}

/*
 * A round waits for the answer a third of the time left, at least 2 s,
 * from when its SEND completed: a request queued behind others on a slow
 * session is not given up before its bytes are out.  While it is being
 * sent, only its deadline bounds it (a stalled session).
 */
static void req_round(struct osdc_req *rq)
{
	__u64 now = ctl_now_ns(), left, wait;

	left = rq->deadline > now ? rq->deadline - now : 0;
	wait = left / 3 > 2 * NSEC_PER_SEC ? left / 3 : 2 * NSEC_PER_SEC;
	rq->round_end = now + wait;
}

/* When @rq's round is over unanswered. */
static __u64 req_due(const struct osdc_req *rq)
{
	return rq->sending ? rq->deadline : rq->round_end;
}

/*
 * Errors of opening a session that another try cannot mend: cephx
 * refusals, a ticket too large, a bad address, max_sessions reached.
 */
static bool osd_session_hopeless(int err)
{
	return err == -EMSGSIZE || err == -EINVAL || err == -EACCES ||
	       err == -EMFILE ||
	       err == -EPERM || err == -EKEYREJECTED ||
	       err == -EKEYREVOKED || err == -EKEYEXPIRED;
}

/*
 * One attempt: find the primary on the current map and send @rq there.
 * 0 when sent or to be tried again; -errno ends it.
 */
static int req_send(struct osdc *o, struct osdc_req *rq)
{
	const struct osdc_pool *pool = NULL;
	struct kmsgr_sqe sqe;
	struct ctl_conn *c;
	unsigned int i;
	int ret;

	/* the pool may be gone since the last map */
	for (i = 0; i < o->n_pools; i++)
		if (o->pools[i].id == rq->pool_id)
			pool = &o->pools[i];
	if (!pool)
		return -ENOENT;
	/* refused at once, not held; a delete may still free space */
	if (rq->write && pool->full && !req_deletes(rq))
		return -ENOSPC;
	ret = osdc_locate(o, pool, rq->oid, &rq->loc);
	if (ret)
		return ret;
	rq->retry = false;
	ret = osd_session(o, rq->loc.primary, rq->deadline, &c);
	if ((ret == -EINTR && ctl_stopped()) || osd_session_hopeless(ret))
		return ret;
	if (ret) {
		req_again(o, rq, ret == -EHOSTDOWN ?
			  "no OSD up for its placement group" :
			  "cannot reach its primary OSD");
		return 0;
	}
	rq->session = c->id;
	ret = encode_mosdop(o, rq, &sqe);
	if (ret)
		return ret;
	ret = ctl_queue(&sqe);
	if (ret)
		return ret;
	rq->sending = true;
	req_round(rq);
	return 0;
}

int osdc_start(struct osdc *o, const struct osdc_pool *pool,
	       struct osdc_req *rq)
{
	int ret;

	if (strlen(rq->oid) > OSDC_OID_MAX)
		return -ENAMETOOLONG;
	if (rq->slot >= o->n_slots || rq->n > 16)
		return -EINVAL;
	rq->pool_id = pool->id;
	rq->tid = ++o->tid;	/* one request id for all its resends */
	rq->attempt = 0;
	rq->deadline = ctl_now_ns() + o->timeout_ns;
	rq->sending = false;
	rq->answered = false;
	rq->retry = false;
	rq->why = "no OSD up for its placement group";
	rq->loc = (struct osdc_loc){ .pool = pool->id, .primary = -1 };
	rq->next = o->reqs;
	o->reqs = rq;
	ret = req_send(o, rq);
	if (ret) {
		req_unlink(o, rq);
		if (ret != -EINTR)
			error("%s: %s", rq->oid, osdc_strerror(ret));
	}
	return ret;
}

/* The round of resends: a fresh map, then each waiting request again. */
static int resend_round(struct osdc *o)
{
	__u64 now = ctl_now_ns();
	struct osdc_req *rq, *next;
	int ret;

	o->retry_at = 0;
	ret = osdc_refresh(o);
	if (ret)
		return ret;
	for (rq = o->reqs; rq; rq = next) {
		next = rq->next;
		if (!rq->retry)
			continue;
		if (rq->sending) {
			/* its slot is still being read: the next round */
			req_again(o, rq, rq->why);
			continue;
		}
		if (now + NSEC_PER_SEC / 2 >= rq->deadline) {
			error("%s: %s (osd.%d, map epoch %u) after %.1f s",
			      rq->oid, rq->why, rq->loc.primary, o->epoch,
			      (double)o->timeout_ns / 1e9);
			req_finish(o, rq, -ETIMEDOUT);
			continue;
		}
		rq->attempt++;
		o->resends++;
		ret = req_send(o, rq);
		if (ret == -EINTR)
			return ret;
		if (ret) {
			if (ret != -ENOENT)
				error("%s: %s", rq->oid, osdc_strerror(ret));
			req_finish(o, rq, ret);
		}
	}
	return 0;
}

/* A CQE for us: a SEND's completion, a reply, a session's end. */
static void osdc_handle(struct osdc *o, const struct kmsgr_cqe *cqe)
{
	const __u8 *buf = kmsgr_buf(ctl_k);
	__u64 size = kmsgr_buf_size(ctl_k);
	const struct kmsgr_slice *f = &cqe->seg[0], *d = &cqe->seg[2];
	struct osdc_req *rq;
	int ret, result;

	switch (cqe->kind) {
	case KMSGR_CQE_SEND:
	case KMSGR_CQE_OP:
		if (!(cqe->user_data & OSDC_UDATA))
			return;		/* a monitor command's, or a release */
		rq = req_by_tid(o, cqe->user_data & ~OSDC_UDATA);
		if (!rq)
			return;
		rq->sending = false;
		if (!cqe->res)
			req_round(rq);	/* out: the wait for its answer */
		/* refused here, not lost on the way: no use sending it again */
		if (cqe->res == -EMSGSIZE || cqe->res == -EINVAL)
			req_finish(o, rq, cqe->res);
		else if (cqe->res && !rq->answered && !rq->retry)
			session_lost(o, cqe->session,
				     "the session to its primary OSD ended");
		else if (rq->answered)
			req_finish(o, rq, rq->result);
		return;
	case KMSGR_CQE_EVENT:
		if (cqe->event == KMSGR_EV_CLOSED ||
		    cqe->event == KMSGR_EV_DOWN || cqe->event == KMSGR_EV_RESET)
			session_lost(o, cqe->session,
				     "the session to its primary OSD ended");
		return;
	case KMSGR_CQE_RECV:
		break;
	default:
		return;
	}
	rq = cqe->type == MSG_OSD_OPREPLY ? req_by_tid(o, cqe->tid) : NULL;
	if (!rq || rq->answered) {
		ctl_queue_release(cqe);
		return;
	}
	if ((__u64)f->off + f->len > size || (__u64)d->off + d->len > size)
		ret = -EBADMSG;
	else
		ret = decode_reply(buf + f->off, f->len, buf + d->off, d->len,
				   rq->ops, rq->n, &result);
	ctl_queue_release(cqe);
	if (ret) {
		error("osd.%d: malformed MOSDOpReply", rq->loc.primary);
		result = ret;
	} else if (result == -EAGAIN) {
		/* not the primary (yet): again on a new map */
		if (!rq->retry)
			req_again(o, rq, "its OSD was not primary");
		return;
	}
	rq->answered = true;
	rq->result = result;
	rq->retry = false;
	if (!rq->sending)
		req_finish(o, rq, result);
}

/* The earliest time something is due: a resend round or a round's end. */
static __u64 next_due(const struct osdc *o)
{
	const struct osdc_req *rq;
	__u64 due = o->retry_at;

	for (rq = o->reqs; rq; rq = rq->next)
		if (!rq->retry && !rq->answered && (!due || req_due(rq) < due))
			due = req_due(rq);
	return due;
}

int osdc_reap(struct osdc *o, __u64 deadline_ns, struct osdc_req **rqp)
{
	struct osdc_req *rq;
	struct kmsgr_cqe cqe;
	__u64 due, now;
	int ret;

	for (;;) {
		if (o->done) {
			*rqp = o->done;
			o->done = o->done->next;
			(*rqp)->next = NULL;
			return 0;
		}
		if (!o->reqs)
			return -ENOENT;
		now = ctl_now_ns();
		if (o->retry_at && now >= o->retry_at) {
			ret = resend_round(o);
			if (ret)
				return ret;
			continue;
		}
		/* rounds that ended unanswered: their sessions are no use */
		for (rq = o->reqs; rq; rq = rq->next)
			if (!rq->retry && !rq->answered && now >= req_due(rq))
				session_lost(o, rq->session,
					     "its primary OSD did not answer");
		if (deadline_ns && now >= deadline_ns)
			return -ETIME;
		due = next_due(o);
		if (deadline_ns && (!due || deadline_ns < due))
			due = deadline_ns;
		ret = ctl_wait(&cqe, due);
		if (ret == -ETIME)
			continue;
		if (ret == -EINTR && ctl_stopped()) {
			error("interrupted");
			return ret;
		}
		if (ret == -EINTR)
			continue;
		if (ret)
			return ret;
		osdc_handle(o, &cqe);
	}
}

int osdc_exec(struct osdc *o, const struct osdc_pool *pool, const char *oid,
	      struct osdc_op *ops, unsigned int n, bool write,
	      struct osdc_loc *loc)
{
	struct osdc_req rq = {
		.oid = oid, .ops = ops, .n = n, .write = write, .slot = 0,
	}, *done;
	int ret;

	ret = osdc_start(o, pool, &rq);
	if (ret)
		return ret;
	do {
		ret = osdc_reap(o, 0, &done);
	} while (!ret && done != &rq);
	if (ret) {
		/* nothing may point at @rq once we return */
		req_unlink(o, &rq);
		return ret;
	}
	if (loc)
		*loc = rq.loc;
	return rq.result;
}

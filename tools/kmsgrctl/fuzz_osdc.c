// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: kmsgrctl's decoders of what a Ceph cluster sends back.
 *
 * osdc.c and mon.c are compiled into this file (#include), so that their
 * static decoders are reachable without exporting them; the rest of
 * kmsgrctl links in as for test_osdc.  Three of their calls are renamed
 * to stand-ins here: ctl_call() returns the reply the input describes (no
 * session, no device), kmsgr_buf() is a plain buffer for the requests
 * they encode, and error() formats its message (so that its arguments
 * are read) without printing it.  Their stdout (mon ping's report) goes
 * to /dev/null.
 *
 * Input: one selector byte (modulo FZ_NSEL), then the selected decoder's
 * input; numbers are little-endian, missing bytes read as 0:
 *
 *   0 FZ_OPREPLY  MOSDOpReply, decode_reply(): u8 n (ops expected, & 31),
 *                 le16 mask (op i reads into a buffer of its own when bit
 *                 i is set), le16 that buffer's length, le16 front length,
 *                 then the front and the data (the rest)
 *   1 FZ_OSD_DUMP `osd dump` JSON text, read twice by osdc_refresh()
 *                 (parse_pools(), parse_osds()) from an MMonCommandAck
 *   2 FZ_CMD_ACK  MMonCommandAck, osdc_mon_command(): u8 size of rs, le16
 *                 front length, the front, the data (the rest)
 *   3 FZ_PG_MAP   `pg map` JSON, osdc_locate(): le16 pg_num, the text
 *   4 FZ_PING     MPing reply, mon_ping(): u8 flags (bit 0: -j), front
 *   5 FZ_VERSION  MMonGetVersionReply, mon_version(): u8 flags (bit 0:
 *                 the front starts with the request's handle, bit 1: the
 *                 reply's tid is not the request's), the front
 *   6 FZ_MONMAP   MMonMap, mon_get_fsid(): the front
 *   7 FZ_JSON     json.c's scanner: a key (up to a NUL), then the text
 *
 * Checked besides ASan/UBSan: decoded lengths and copies lie within what
 * was received, counts never exceed the entries present, pools' pg_num
 * and pg_mask place every hash inside the pool, strings stay terminated
 * within their buffers, each JSON position is inside the text and
 * json_next() moves forward; a violation traps.  Everything the decoders
 * allocate is freed (LeakSanitizer).
 *
 * Seeds: corpus/fuzz_osdc/ (corpus/mkcorpus.sh writes them).
 *
 * Copyright (C) 2026 The kmsgr authors
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "cephenc.h"
#include "kmsgrctl.h"
#include "osdc.h"

#define FZ_CHECK(cond)					\
	do {						\
		if (!(cond))				\
			__builtin_trap();		\
	} while (0)

/* ---- stand-ins for the session and the buffer area ---------------------- */

/* the tx area: the requests' fronts (OSDC_FRONT_MAX = 4096 at most) */
static __u8 fz_tx[8192];

/* the reply the next ctl_call() returns; none: -ETIME */
static struct {
	bool armed;
	const __u8 *front, *data;
	size_t front_len, data_len;
	bool echo_handle;	/* front's first 8 bytes: the request's tid */
	bool other_tid;		/* the reply's tid is not the request's */
} fz_reply;

static void fz_arm(const __u8 *front, size_t front_len, const __u8 *data,
		   size_t data_len)
{
	fz_reply.armed = true;
	fz_reply.front = front;
	fz_reply.front_len = front_len;
	fz_reply.data = data;
	fz_reply.data_len = data_len;
	fz_reply.echo_handle = false;
	fz_reply.other_tid = false;
}

static void *fz_kmsgr_buf(const struct kmsgr *k)
{
	(void)k;
	return fz_tx;
}

/* As ctl_call(): the reply copied out, front NUL-terminated. */
static int fz_ctl_call(struct ctl_conn *c, const struct ctl_msg *m,
		       __u16 reply_type, bool any_tid, __u64 deadline_ns,
		       const char *what, struct ctl_reply *r)
{
	(void)c;
	(void)any_tid;
	(void)deadline_ns;
	(void)what;
	/* the request fits the tx area */
	FZ_CHECK((__u64)m->front.off + m->front.len <= sizeof(fz_tx));
	if (!fz_reply.armed)
		return -ETIME;
	fz_reply.armed = false;
	memset(r, 0, sizeof(*r));
	r->type = reply_type;
	r->tid = fz_reply.other_tid ? ~m->tid : m->tid;
	r->front = malloc(fz_reply.front_len + 1);
	r->data = fz_reply.data_len ? malloc(fz_reply.data_len) : NULL;
	if (!r->front || (fz_reply.data_len && !r->data)) {
		ctl_reply_free(r);
		return -ENOMEM;
	}
	if (fz_reply.front_len)
		memcpy(r->front, fz_reply.front, fz_reply.front_len);
	r->front[fz_reply.front_len] = '\0';
	r->front_len = (__u32)fz_reply.front_len;
	if (fz_reply.echo_handle && r->front_len >= 8)
		put_le64((__u8 *)r->front, m->tid);
	if (fz_reply.data_len)
		memcpy(r->data, fz_reply.data, fz_reply.data_len);
	r->data_len = (__u32)fz_reply.data_len;
	return 0;
}

static void fz_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
}

/*
 * The renames reach only osdc.c's and mon.c's own text: every header they
 * include is in already (include guards), with the real prototypes.
 */
#define ctl_call	fz_ctl_call
#define kmsgr_buf	fz_kmsgr_buf
#define error		fz_error
#include "osdc.c"
#include "mon.c"
#undef error
#undef kmsgr_buf
#undef ctl_call

/* ---- input -------------------------------------------------------------- */

struct fz_in {
	const __u8 *p;
	size_t len;
};

static __u8 fz_u8(struct fz_in *in)
{
	__u8 v = in->len ? in->p[0] : 0;

	if (in->len) {
		in->p++;
		in->len--;
	}
	return v;
}

static __u16 fz_le16(struct fz_in *in)
{
	__u16 lo = fz_u8(in);

	return lo | (__u16)(fz_u8(in) << 8);
}

/* The rest as a NUL-terminated string of its own (ASan sees its end). */
static char *fz_text(const struct fz_in *in)
{
	char *s = malloc(in->len + 1);

	if (!s)
		abort();
	memcpy(s, in->p, in->len);
	s[in->len] = '\0';
	return s;
}

/* The next @n bytes (fewer at the end) in a buffer of their own. */
static __u8 *fz_take(struct fz_in *in, size_t n, size_t *got)
{
	__u8 *b;

	if (n > in->len)
		n = in->len;
	b = malloc(n ? n : 1);
	if (!b)
		abort();
	memcpy(b, in->p, n);
	in->p += n;
	in->len -= n;
	*got = n;
	return b;
}

/* An MMonCommandAck front: result 0, empty rs, no command echoed. */
static size_t fz_ack_front(__u8 *buf, size_t cap)
{
	struct cenc e = { .buf = buf, .cap = cap };

	cenc_zero(&e, 18);		/* paxos: version, mon, mon tid */
	cenc_le32(&e, 0);		/* r */
	cenc_le32(&e, 0);		/* rs */
	cenc_le32(&e, 0);		/* cmd */
	FZ_CHECK(!e.err);
	return e.len;
}

static void fz_mon_conn(struct ctl_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->addr_str = "192.0.2.1:3300";
	c->timeout_ns = NSEC_PER_SEC;
	c->open = true;
}

/* ---- the decoders ------------------------------------------------------- */

static void fz_opreply(struct fz_in *in)
{
	struct osdc_op ops[32];
	unsigned int n, i;
	__u16 mask, dst_len;
	size_t front_len, data_len, used = 0;
	__u8 *front, *data;
	int ret, result = 0;

	n = fz_u8(in) & 31;
	mask = fz_le16(in);
	dst_len = fz_le16(in);
	front = fz_take(in, fz_le16(in), &front_len);
	data = fz_take(in, in->len, &data_len);
	memset(ops, 0, sizeof(ops));
	for (i = 0; i < n; i++) {
		ops[i].op = OSD_OP_READ;
		ops[i].length = dst_len;
		if (i < 16 && (mask & 1U << i)) {
			ops[i].dst = malloc(dst_len ? dst_len : 1);
			if (!ops[i].dst)
				abort();
		}
	}

	ret = decode_reply(front, (__u32)front_len, data, (__u32)data_len,
			   ops, n, &result);
	FZ_CHECK(ret == 0 || ret == -EBADMSG || ret == -ENOMEM);
	if (!ret) {
		FZ_CHECK(n <= 16);
		/* each op's output: the next bytes of the data, in order */
		for (i = 0; i < n; i++) {
			FZ_CHECK(ops[i].out_len <= data_len - used);
			if (ops[i].dst) {
				FZ_CHECK(!ops[i].out);
				FZ_CHECK(ops[i].out_len <= ops[i].length);
				FZ_CHECK(!memcmp(ops[i].dst, data + used,
						 ops[i].out_len));
			} else {
				FZ_CHECK(!ops[i].out == !ops[i].out_len);
				FZ_CHECK(!ops[i].out_len ||
					 !memcmp(ops[i].out, data + used,
						 ops[i].out_len));
			}
			used += ops[i].out_len;
		}
	}
	for (i = 0; i < n; i++) {
		/* a buffer of the caller's gets no allocation */
		FZ_CHECK(!ops[i].dst || !ops[i].out);
		free(ops[i].dst);
	}
	osdc_ops_free(ops, n);
	free(front);
	free(data);
}

/*
 * Entries of the array @key of @dump, counted apart from the parser the
 * code under test uses (json_first()/json_next()): a byte scan of the
 * array for the values at its depth, strings and escapes skipped.  Only
 * the array's place is found with json_member().
 */
static unsigned int fz_count(const char *dump, const char *key)
{
	const char *p = json_member(dump, key);
	unsigned int cnt = 0, depth = 0;
	bool in_str = false, value = false;

	if (!p || *p != '[')
		return 0;
	for (p++; *p; p++) {
		if (in_str) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				in_str = false;
			continue;
		}
		if (*p == '"') {
			in_str = true;
		} else if (*p == '[' || *p == '{') {
			depth++;
		} else if (*p == ']' || *p == '}') {
			if (!depth)
				break;		/* the array's end */
			depth--;
		} else if (*p == ',' && !depth) {
			cnt += value;
			value = false;
			continue;
		} else if (*p == ' ' || *p == '\n' || *p == '\t' ||
			   *p == '\r') {
			continue;
		}
		if (!depth || *p == '[' || *p == '{')
			value = true;
	}
	return cnt + value;
}

static void fz_check_map(const struct osdc *o, const char *dump)
{
	const struct osdc_pool *pl;
	struct osdc_pool found;
	unsigned int i, j;
	__u32 x[4];
	int ret;

	FZ_CHECK(o->n_pools <= fz_count(dump, "pools"));
	FZ_CHECK(o->n_osds <= fz_count(dump, "osds"));
	for (i = 0; i < o->n_pools; i++) {
		pl = &o->pools[i];
		FZ_CHECK(memchr(pl->name, '\0', sizeof(pl->name)));
		FZ_CHECK(pl->pg_num >= 1 && pl->pg_num <= 1U << 31);
		/* the smallest 2^k - 1 at or above pg_num - 1 */
		FZ_CHECK(((__u64)pl->pg_mask & ((__u64)pl->pg_mask + 1)) == 0);
		FZ_CHECK(pl->pg_mask >= pl->pg_num - 1);
		FZ_CHECK(pl->pg_mask >> 1 < pl->pg_num);
		x[0] = 0xffffffff;
		x[1] = pl->pg_mask;
		x[2] = pl->pg_num;
		x[3] = ceph_str_hash_rjenkins(pl->name, strlen(pl->name));
		for (j = 0; j < ARRAY_SIZE(x); j++)
			FZ_CHECK(ceph_stable_mod(x[j], pl->pg_num,
						 pl->pg_mask) < pl->pg_num);
		/* the first of that name, which says why it is unusable */
		ret = osdc_pool((struct osdc *)o, pl->name, &found);
		FZ_CHECK(ret == (found.unsupported ? -EOPNOTSUPP : 0));
	}
	for (i = 0; i < o->n_osds; i++) {
		FZ_CHECK(memchr(o->osds[i].addr_str, '\0',
				sizeof(o->osds[i].addr_str)));
		FZ_CHECK(!o->osds[i].conn.open);
	}
}

static void fz_osd_dump(struct fz_in *in)
{
	struct ctl_conn mon;
	struct osdc o;
	__u8 front[64];
	size_t front_len = fz_ack_front(front, sizeof(front));
	char *dump = fz_text(in);
	int round, ret;

	fz_mon_conn(&mon);
	memset(&o, 0, sizeof(o));
	o.mon = &mon;
	/* twice: the second map replaces the first */
	for (round = 0; round < 2; round++) {
		fz_arm(front, front_len, in->p, in->len);
		ret = osdc_refresh(&o);
		FZ_CHECK(ret == 0 || ret == -EBADMSG || ret == -ENOMEM);
		if (!ret)
			fz_check_map(&o, dump);
	}
	osdc_fini(&o);
	free(dump);
}

static void fz_cmd_ack(struct fz_in *in)
{
	struct ctl_conn mon;
	struct osdc o;
	size_t rs_size, front_len, data_len;
	__u8 *front, *data;
	char *rs, *out;
	int ret;

	rs_size = fz_u8(in) % 80;
	front = fz_take(in, fz_le16(in), &front_len);
	data = fz_take(in, in->len, &data_len);
	rs = malloc(rs_size ? rs_size : 1);
	if (!rs)
		abort();
	fz_mon_conn(&mon);
	memset(&o, 0, sizeof(o));
	o.mon = &mon;
	fz_arm(front, front_len, data, data_len);
	ret = osdc_mon_command(&o, "{\"prefix\":\"status\"}", &out, rs,
			       rs_size);
	/* the command's own result (any), or a malformed ack: no output */
	FZ_CHECK(out || ret == -EBADMSG || ret == -ENOMEM);
	if (rs_size)
		FZ_CHECK(memchr(rs, '\0', rs_size));
	/* the data as it came, NUL-terminated */
	if (out) {
		FZ_CHECK(!memcmp(out, data, data_len) && !out[data_len]);
		free(out);
	}
	free(rs);
	free(front);
	free(data);
}

static void fz_pg_map(struct fz_in *in)
{
	struct ctl_conn mon;
	struct osdc o;
	struct osdc_pool pool;
	struct osdc_loc loc, again;
	__u8 front[64];
	size_t front_len = fz_ack_front(front, sizeof(front));
	int ret;

	memset(&pool, 0, sizeof(pool));
	pool.id = 1;
	pool.pg_num = fz_le16(in);
	if (!pool.pg_num)
		pool.pg_num = 1;
	pool.pg_mask = pg_mask_of(pool.pg_num);
	fz_mon_conn(&mon);
	memset(&o, 0, sizeof(o));
	o.mon = &mon;
	o.epoch = 1;
	fz_arm(front, front_len, in->p, in->len);
	ret = osdc_locate(&o, &pool, "fuzz", &loc);
	FZ_CHECK(ret == 0 || ret == -EBADMSG || ret == -ENOMEM);
	if (!ret) {
		FZ_CHECK(loc.ps < pool.pg_num);
		FZ_CHECK(o.n_pgs <= 1);
		/* from the cache now: no second `pg map` (ctl_call unarmed) */
		if (o.n_pgs) {
			FZ_CHECK(!osdc_locate(&o, &pool, "fuzz", &again));
			FZ_CHECK(again.primary == loc.primary);
		}
	}
	free(o.pgs);
}

static void fz_ping(struct fz_in *in)
{
	struct ctl_conn c;
	int ret;

	opt.json = fz_u8(in) & 1;
	fz_mon_conn(&c);
	fz_arm(in->p, in->len, NULL, 0);
	ret = mon_ping(&c);
	FZ_CHECK(ret == 0 || ret == -EBADMSG || ret == -ENOMEM);
	opt.json = false;
}

static void fz_version(struct fz_in *in)
{
	struct ctl_conn c;
	__u8 flags = fz_u8(in);
	int ret;

	fz_mon_conn(&c);
	fz_arm(in->p, in->len, NULL, 0);
	fz_reply.echo_handle = flags & 1;
	fz_reply.other_tid = flags & 2;
	ret = mon_version(&c, "osdmap");
	FZ_CHECK(ret == 0 || ret == -EBADMSG || ret == -ENOMEM);
	if (!ret)
		FZ_CHECK(in->len >= 24 && !fz_reply.other_tid &&
			 fz_reply.echo_handle);
}

static void fz_monmap(struct fz_in *in)
{
	struct ctl_conn c;
	__u8 fsid[16];
	__u32 epoch;
	int ret;

	fz_mon_conn(&c);
	fz_arm(in->p, in->len, NULL, 0);
	ret = mon_get_fsid(&c, fsid, &epoch);
	FZ_CHECK(ret == 0 || ret == -EBADMSG || ret == -ENOMEM);
	if (!ret)
		FZ_CHECK(in->len >= 30 && !memcmp(fsid, in->p + 10, 16));
}

/* @p is a position in @s (its NUL included), or NULL. */
static void fz_in_text(const char *p, const char *s, size_t len)
{
	FZ_CHECK(!p || (p >= s && p <= s + len));
}

static void fz_json(struct fz_in *in)
{
	char key[33], val[16], keys[64];
	const char *v, *e, *prev;
	size_t klen = 0, len;
	char *s, *copy;
	long long n;
	int i;

	while (klen < sizeof(key) - 1 && in->len && in->p[0]) {
		key[klen++] = (char)in->p[0];
		in->p++;
		in->len--;
	}
	key[klen] = '\0';
	if (in->len) {			/* the NUL after the key */
		in->p++;
		in->len--;
	}
	s = fz_text(in);
	len = strlen(s);

	v = json_find(s, key);
	fz_in_text(v, s, len);
	json_string_at(v, val, sizeof(val));
	FZ_CHECK(strlen(val) < sizeof(val));
	json_keys_at(v, keys, sizeof(keys));
	FZ_CHECK(strlen(keys) < sizeof(keys));
	json_i64_at(v, &n);

	v = json_member(s, key);
	fz_in_text(v, s, len);
	e = v ? json_skip_value(v) : NULL;
	fz_in_text(e, s, len);
	FZ_CHECK(!e || e >= v);

	json_keys_at(s, keys, sizeof(keys));
	FZ_CHECK(strlen(keys) < sizeof(keys));
	e = json_skip_value(s);
	fz_in_text(e, s, len);

	/* the array at the top or at @key: each element after the last */
	for (i = 0; i < 2; i++) {
		prev = NULL;
		for (v = json_first(i ? json_member(s, key) : s); v;
		     v = json_next(v)) {
			fz_in_text(v, s, len);
			FZ_CHECK(!prev || v > prev);
			json_string_at(v, val, sizeof(val));
			json_i64_at(json_member(v, key), &n);
			prev = v;
		}
	}

	copy = strdup(s);
	if (!copy)
		abort();
	json_compact(copy);
	FZ_CHECK(strlen(copy) <= len);
	free(copy);
	free(s);
}

enum {
	FZ_OPREPLY, FZ_OSD_DUMP, FZ_CMD_ACK, FZ_PG_MAP, FZ_PING, FZ_VERSION,
	FZ_MONMAP, FZ_JSON, FZ_NSEL,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* mon ping's report; libFuzzer speaks on stderr */
	if (!freopen("/dev/null", "w", stdout))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t size)
{
	struct fz_in in = { buf, size };

	switch (fz_u8(&in) % FZ_NSEL) {
	case FZ_OPREPLY:
		fz_opreply(&in);
		break;
	case FZ_OSD_DUMP:
		fz_osd_dump(&in);
		break;
	case FZ_CMD_ACK:
		fz_cmd_ack(&in);
		break;
	case FZ_PG_MAP:
		fz_pg_map(&in);
		break;
	case FZ_PING:
		fz_ping(&in);
		break;
	case FZ_VERSION:
		fz_version(&in);
		break;
	case FZ_MONMAP:
		fz_monmap(&in);
		break;
	case FZ_JSON:
		fz_json(&in);
		break;
	}
	fz_reply.armed = false;
	return 0;
}

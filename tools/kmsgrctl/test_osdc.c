// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of the object client's pure parts (osdc.c, json.c): the
 * rjenkins object hash and stable_mod against placements a real Ceph
 * 16.2.15 cluster reported (`ceph osd map`, pool of pg_num 8), and the
 * JSON scanner on the shapes of `osd dump` and `pg map`; the latency
 * percentiles of the bench commands; the size parser; blk serve's count of
 * the receive-pool bytes each session's waiting requests hold (blk.c).
 * Prints TAP.
 *
 * Copyright (C) 2026 The kmsgr authors
 */
#include <stdio.h>
#include <string.h>

#include "kmsgrctl.h"
#include "osdc.h"
/* the map's static parsers (parse_pools(), parse_osds()) */
#include "osdc.c"
/* blk serve's wait list (srv_recv(), srv_wait_del()) */
#include "blk.c"

static int n, failed;

static void ok(int cond, const char *what)
{
	n++;
	if (!cond)
		failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n, what);
}

/* name, raw_pgid hash and pgid seed of `ceph osd map` (pg_num 8) */
static const struct {
	const char *oid;
	__u32 hash, ps;
} placed[] = {
	{ "obj1", 0x6cf8deff, 0x7 },
	{ "a longer object name 1234", 0x320931e0, 0x0 },
	{ "o1", 0xcf0d001e, 0x6 },
	{ "big", 0xa661d10e, 0x6 },
	{ "big2", 0x8f6e897a, 0x2 },
};

/* the shape of `osd dump` (cut down), one piece per line */
static const char *const dump_lines[] = {
	"{\"epoch\":8,\"fsid\":\"x\",\"pools\":[{\"pool\":1,",
	"\"pool_name\":\"kmsgr\",\"flags_names\":\"hashpspool\",\"type\":1,",
	"\"size\":2,\"object_hash\":2,\"pg_num\":8,",
	"\"last_pg_merge_meta\":{\"source_pgid\":\"0.0\"},",
	"\"pool_snaps\":[],\"options\":{}},{\"pool\":3,",
	"\"pool_name\":\"full one\",\"flags_names\":\"hashpspool,full\",",
	"\"size\":1,\"object_hash\":2,\"pg_num\":12}],\"osds\":[{\"osd\":0,",
	"\"up\":1,\"public_addrs\":{\"addrvec\":[{\"type\":\"v1\",",
	"\"addr\":\"127.0.0.1:6789\",\"nonce\":1},{\"type\":\"v2\",",
	"\"addr\":\"127.0.0.1:6800\",\"nonce\":331}]}},",
	"{\"osd\":1, \"up\" : 0 }]}",
};

static char dump[1024];

/*
 * a pool skipped (a bad pg_num, after its size was read), one kept but
 * unusable for its hash, an erasure-coded one, a replicated one, one with
 * a cache tier overlay and the tier itself (usable directly)
 */
static const char *const skip_pools[] = {
	"{\"pools\":[{\"pool\":1,\"size\":3,\"pg_num\":0,",
	"\"object_hash\":2},{\"pool\":4,\"pool_name\":\"h\",\"pg_num\":8,",
	"\"object_hash\":0},{\"pool\":5,\"pool_name\":\"ec\",\"type\":3,",
	"\"pg_num\":8,\"object_hash\":2},{\"pool\":2,\"pool_name\":\"r\",",
	"\"type\":1,\"pg_num\":8,\"object_hash\":2,\"tier_of\":-1,",
	"\"read_tier\":-1,\"write_tier\":-1},{\"pool\":6,",
	"\"pool_name\":\"base\",\"type\":1,\"pg_num\":8,",
	"\"object_hash\":2,\"tier_of\":-1,\"read_tier\":7,",
	"\"write_tier\":7},{\"pool\":7,\"pool_name\":\"cache\",\"type\":1,",
	"\"pg_num\":8,\"object_hash\":2,\"tier_of\":6,\"read_tier\":-1,",
	"\"write_tier\":-1}]}",
};

/* OSD ids that fit no int, and one that does */
static const char *const bad_osds[] = {
	"{\"osds\":[{\"osd\":4294967296,\"up\":1},",
	"{\"osd\":-2,\"up\":1},{\"osd\":5,\"up\":1}]}",
};

/*
 * Pool bytes of session @id's waiting requests, walked as blk serve did
 * before it kept count, and compared with the count for @id.
 */
static bool srv_count_right(struct srv *s, __u32 id)
{
	const struct srv_wait *w;
	__u64 sum = 0;

	for (w = s->wait_head; w; w = w->next)
		if (w->recv.session == id)
			sum += srv_pool_bytes(&w->recv);
	if (sum == srv_waiting_bytes(s, id))
		return true;
	printf("# session %u: %llu bytes waiting, counted %llu\n", id,
	       (unsigned long long)sum,
	       (unsigned long long)srv_waiting_bytes(s, id));
	return false;
}

/* @lines joined, in a buffer of its own */
static const char *join(const char *const *lines, unsigned int n)
{
	static char buf[1024];
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < n; i++)
		strncat(buf, lines[i], sizeof(buf) - strlen(buf) - 1);
	return buf;
}

int main(void)
{
	const char *p, *q;
	char s[64];
	long long v;
	unsigned int i, cnt;
	int good;

	for (i = 0; i < ARRAY_SIZE(dump_lines); i++)
		strcat(dump, dump_lines[i]);

	for (i = 0; i < ARRAY_SIZE(placed); i++) {
		__u32 h = ceph_str_hash_rjenkins(placed[i].oid,
						 strlen(placed[i].oid));

		snprintf(s, sizeof(s), "rjenkins(\"%.30s\") = %08x", placed[i].oid,
			 placed[i].hash);
		ok(h == placed[i].hash, s);
		ok(ceph_stable_mod(h, 8, 7) == placed[i].ps,
		   "stable_mod over pg_num 8 gives ceph's pgid");
	}
	/* pg_num 12 (mask 15): 13 folds to 5, 11 stays */
	ok(ceph_stable_mod(13, 12, 15) == 5 && ceph_stable_mod(11, 12, 15) == 11,
	   "stable_mod over a pg_num that is not a power of two");
	ok(ceph_str_hash_rjenkins("", 0) == ceph_str_hash_rjenkins("x", 0),
	   "the hash reads no byte past the length");

	p = json_member(dump, "epoch");
	ok(p && !json_i64_at(p, &v) && v == 8, "json: top-level number");
	cnt = 0;
	good = 1;
	for (p = json_first(json_member(dump, "pools")); p; p = json_next(p)) {
		cnt++;
		json_string_at(json_member(p, "pool_name"), s, sizeof(s));
		if (cnt == 2 && strcmp(s, "full one"))
			good = 0;
		/* "pool" is a member of each pool, not its nested objects' */
		if (json_i64_at(json_member(p, "pool"), &v) ||
		    v != (cnt == 1 ? 1 : 3))
			good = 0;
	}
	ok(cnt == 2 && good, "json: array of objects, own members only");
	p = json_next(json_first(json_member(dump, "osds")));
	ok(p && !json_i64_at(json_member(p, "up"), &v) && v == 0,
	   "json: whitespace around a member");
	p = json_first(json_member(json_member(json_first(json_member(dump, "osds")),
					       "public_addrs"), "addrvec"));
	q = json_next(p);
	json_string_at(json_member(q, "addr"), s, sizeof(s));
	ok(q && !strcmp(s, "127.0.0.1:6800") && !json_next(q),
	   "json: nested arrays, end of array");
	ok(!json_member("{\"a\":1", "b") && !json_first("[]") &&
	   !json_member("[1]", "a") && json_i64_at("\"1\"", &v),
	   "json: malformed or absent reads as not there");

	ok(osdc_flag_named("hashpspool,full", "full") &&
	   osdc_flag_named("full", "full") &&
	   !osdc_flag_named("hashpspool,nearfull", "full") &&
	   !osdc_flag_named("backfillfull,hashpspool", "full") &&
	   !osdc_flag_named("full_quota", "full") &&
	   !osdc_flag_named("", "full"),
	   "pool flags: full is full; nearfull, backfillfull, full_quota are not");

	/* what a skipped entry of the map leaves behind: nothing */
	{
		struct osdc o = { 0 };
		struct osdc_pool pl;

		ok(!parse_pools(&o, join(skip_pools, ARRAY_SIZE(skip_pools))) &&
		   o.n_pools == 5 && o.pools[0].id == 4 &&
		   o.pools[0].size == 0 && o.pools[0].pg_mask == 7,
		   "osd dump: a pool after a skipped one keeps nothing of it");
		ok(osdc_pool(&o, "h", &pl) == -EOPNOTSUPP &&
		   strstr(pl.unsupported, "rjenkins") &&
		   osdc_pool(&o, "ec", &pl) == -EOPNOTSUPP &&
		   strstr(pl.unsupported, "erasure-coded") &&
		   !osdc_pool(&o, "r", &pl) && pl.id == 2 && !pl.unsupported &&
		   osdc_pool(&o, "base", &pl) == -EOPNOTSUPP &&
		   strstr(pl.unsupported, "cache tier") &&
		   !osdc_pool(&o, "cache", &pl) && pl.id == 7 &&
		   osdc_pool(&o, "nosuch", &pl) == -ENOENT,
		   "osd dump: an erasure-coded pool, one hashed otherwise, or one with a cache tier overlay, is named with the reason it cannot be used");
		ok(!parse_osds(&o, join(bad_osds, ARRAY_SIZE(bad_osds))) &&
		   o.n_osds == 1 && o.osds[0].id == 5 && o.osds[0].up,
		   "osd dump: OSD ids outside 0..INT_MAX are no OSDs");
		free(o.pools);
		free(o.osds);
	}

	/* latency percentiles by nearest rank (bench, blk bench) */
	{
		static __u64 lat[1000];

		for (i = 0; i < 1000; i++)
			lat[i] = (i + 1) * 1000ULL;	/* 1..1000 us */
		ok(ctl_pct_us(lat, 100, 0.99) == 99 &&
		   ctl_pct_us(lat, 100, 0.50) == 50 &&
		   ctl_pct_us(lat, 1000, 0.999) == 999 &&
		   ctl_pct_us(lat, 1000, 0.99) == 990 &&
		   ctl_pct_us(lat, 100, 0) == 1 &&
		   ctl_pct_us(lat, 100, 1.0) == 100 &&
		   ctl_pct_us(lat, 1, 0.99) == 1 && ctl_pct_us(lat, 0, 0.5) == 0,
		   "percentiles by nearest rank: p99 of 100 samples is the 99th, not the largest");
	}

	/* the monitor of "mon host": msgr2 first, else msgr1's host on 3300 */
	{
		static const struct {
			const char *in, *want;
		} mons[] = {
			{ "[v2:10.0.0.1:3300/0,v1:10.0.0.1:6789/0]",
			  "10.0.0.1:3300" },
			{ "v1:10.0.0.2:6789/0,v2:10.0.0.3:3301/0", "10.0.0.3:3301" },
			{ "v1:10.0.0.4:6789/0", "10.0.0.4:3300" },
			{ "10.0.0.5:6789", "10.0.0.5:3300" },
			{ "10.0.0.6", "10.0.0.6:3300" },
			{ "[::1]:3300", "[::1]:3300" },
			{ "[v1:[::1]:6789/0]", "[::1]:3300" },
		};
		char out[64];
		bool all = true;

		for (i = 0; i < (int)ARRAY_SIZE(mons); i++) {
			if (ceph_mon_addr(mons[i].in, out, sizeof(out)) ||
			    strcmp(out, mons[i].want)) {
				printf("# %s: got \"%s\", want %s\n",
				       mons[i].in, out, mons[i].want);
				all = false;
			}
		}
		ok(all, "mon host: a v2 address first, else a v1 one's host on port 3300");
	}

	/* sizes and counts: suffixes, and no overflow taken as "unlimited" */
	{
		__u64 sz = 0;

		ok(!ctl_parse_size("4K", 0, ~0ULL, &sz) && sz == 4096 &&
		   !ctl_parse_size("2m", 0, ~0ULL, &sz) && sz == 2 << 20 &&
		   !ctl_parse_size("17179869183G", 0, ~0ULL, &sz) &&
		   sz == 17179869183ULL << 30,
		   "sizes: K, M and G suffixes, up to the largest that fits");
		ok(ctl_parse_size("18014398509481984K", 0, ~0ULL, &sz) ==
		   -EINVAL && ctl_parse_size("17179869184G", 0, ~0ULL, &sz) ==
		   -EINVAL && ctl_parse_size(" -1", 0, ~0ULL, &sz) == -EINVAL &&
		   ctl_parse_size("4KB", 0, ~0ULL, &sz) == -EINVAL &&
		   ctl_parse_size("5", 0, 4, &sz) == -EINVAL,
		   "sizes: an overflowing suffix, a sign, junk and a value above max are errors");
	}

	/*
	 * blk serve, every context busy: requests of four sessions (two of
	 * them on one hash chain) wait, some leave from the head, the middle
	 * and the tail of the list, more arrive behind; each session's count
	 * is its requests' pool bytes all along, and is gone with the last
	 */
	{
		static const __u32 ids[] = { 1, 2, 1 + SRV_SESS_HASH, 7 };
		struct srv sv = { .wait_max = ~0ULL };
		struct kmsgr_cqe r = { .kind = KMSGR_CQE_RECV,
				       .type = BLK_MSG_REQUEST };
		struct srv_wait **wp;
		unsigned int k, x = 1;
		bool right = true, tail = true, empty = true;

		sv.wait_tail = &sv.wait_head;
		for (i = 0; i < 400; i++) {
			x = x * 1103515245 + 12345;
			if (!sv.wait_head || (x >> 30 && i & 3)) {
				/* arrives: a 32-byte front, a data segment */
				r.session = ids[(x >> 8) % ARRAY_SIZE(ids)];
				r.seg[0].len = 32;
				r.seg[2].len = (x >> 12) % 9000;
				if (srv_recv(&sv, &r))
					right = false;
			} else {
				/* leaves: one of the first five */
				wp = &sv.wait_head;
				for (k = (x >> 16) % 5; k-- && (*wp)->next;)
					wp = &(*wp)->next;
				srv_wait_del(&sv, wp);
			}
			for (k = 0; k < ARRAY_SIZE(ids); k++)
				right = right && srv_count_right(&sv, ids[k]);
			for (wp = &sv.wait_head; *wp; wp = &(*wp)->next)
				;
			tail = tail && sv.wait_tail == wp;
		}
		ok(right && tail && sv.wait_head,
		   "blk serve: each session's waiting bytes are counted as requests wait and leave");
		while (sv.wait_head)
			srv_wait_del(&sv, &sv.wait_head);
		for (k = 0; k < SRV_SESS_HASH; k++)
			empty = empty && !sv.sess[k];
		ok(empty && sv.wait_tail == &sv.wait_head,
		   "blk serve: no count is left when nothing waits");
	}

	printf("1..%d\n", n);
	return failed ? 1 : 0;
}

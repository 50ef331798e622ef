// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr msgr2 engine - the kernel port.
 *
 *   crc32c         the "crc32c" shash, no inversion (Ceph's convention):
 *                  of the kernel's implementations the one that measured
 *                  fastest at load (msgr2_port_init()), else crc32c()
 *   AES-128-GCM    "gcm(aes)" AEAD, asynchronous implementations allowed
 *                  (AES-NI/PCLMUL and offload drivers), waited for with
 *                  crypto_wait_req(); one transform, one preallocated
 *                  request and a scatterlist array kept per msgr2_gcm
 *   HMAC-SHA256    built here on the SHA-256 library (no transform, no
 *                  allocation, any memory)
 *   AES-128-CBC    built here on the AES library (CephX: a few blocks per
 *                  handshake; no transform, no allocation, any memory)
 *
 * Context: msgr2_gcm_alloc(), msgr2_gcm_seal(), msgr2_gcm_open() and
 * msgr2_zalloc() may sleep: the engine runs in process context (under a
 * session mutex).  Every other function here neither sleeps nor allocates.
 *
 * Memory rules for msgr2_gcm_seal() / msgr2_gcm_open(): the iov pieces and
 * @dst are mapped into scatterlists, so they must be kmalloc'd, page or
 * vmalloc memory - never on the stack (-EINVAL, with a warning).  The nonce
 * and tag may be anywhere: they are copied into the msgr2_gcm object.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/crc32c.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <crypto/aead.h>
#include <crypto/aes.h>
#include <crypto/algapi.h>
#include <crypto/hash.h>
#include <crypto/sha2.h>

#include "port.h"

/* ---- integrity ---------------------------------------------------------- */

#ifdef KMSGR_FAULT
/*
 * Test builds (KMSGR_FAULT=y) only: every crc32c of some bytes is 0 (of
 * none, the seed, as always), so two kmsgr ends in one kernel still agree
 * while neither computes one.  The benchmark tools' --crc-off measures
 * with it what crc32c costs where the CPU computes it slowly (QEMU's TCG
 * emulates the crc32 instruction).  Any other peer rejects such frames.
 */
static bool fault_no_crc;
module_param(fault_no_crc, bool, 0644);
MODULE_PARM_DESC(fault_no_crc,
		 "Test builds only: compute no crc32c (0 everywhere); only for measuring between two kmsgr ends in one kernel");
#else
#define fault_no_crc false
#endif

/*
 * Which crc32c: the crypto API's choice (highest priority: on x86 the
 * crc32/PCLMUL instructions) is the fastest on real CPUs, but where those
 * instructions are emulated (QEMU's TCG) the generic table code runs
 * about five times faster.  So, as the kernel picks its RAID-6 and XOR
 * routines, kmsgr times the candidates once at load and keeps the faster
 * one; crc32c_driver names it, or names the one to use without timing.
 * The state of a crc32c shash is the bare crc register (4 bytes, no
 * inversion), set and read with import and export.
 */
static char crc32c_driver[CRYPTO_MAX_ALG_NAME];
module_param_string(crc32c_driver, crc32c_driver, sizeof(crc32c_driver), 0444);
MODULE_PARM_DESC(crc32c_driver,
		 "crc32c implementation (crypto driver name, e.g. crc32c-intel or crc32c-generic); empty at load: the fastest measured; reads back the one in use");

static struct crypto_shash *m2_crc_tfm;

static u32 m2_crc_run(struct crypto_shash *tfm, u32 seed, const u8 *p,
		      unsigned int len)
{
	SHASH_DESC_ON_STACK(desc, tfm);

	desc->tfm = tfm;
	crypto_shash_import(desc, &seed);
	crypto_shash_update(desc, p, len);
	crypto_shash_export(desc, &seed);
	return seed;
}

u32 msgr2_crc32c(u32 seed, const void *buf, size_t len)
{
	const u8 *p = buf;
	unsigned int chunk;

	if (fault_no_crc)	/* what no bytes leave: as crc32c() does */
		return len ? 0 : seed;

	/* both take an unsigned int length */
	while (len) {
		chunk = min_t(size_t, len, SZ_1G);
		seed = m2_crc_tfm ? m2_crc_run(m2_crc_tfm, seed, p, chunk) :
				    crc32c(seed, p, chunk);
		p += chunk;
		len -= chunk;
	}
	return seed;
}

/* what the implementations are timed on at load (crc32c and AES-GCM) */
#define M2_PROBE_LEN	SZ_16K
#define M2_PROBE_ROUNDS	3

/* @name's transform when it is a usable crc32c, else NULL */
static struct crypto_shash *m2_crc_alloc(const char *name)
{
	struct crypto_shash *tfm = crypto_alloc_shash(name, 0, 0);

	if (IS_ERR(tfm))
		return NULL;
	/* the check value: crc32c("123456789") from ~0, inverted */
	if (crypto_shash_descsize(tfm) != sizeof(u32) ||
	    ~m2_crc_run(tfm, ~0U, (const u8 *)"123456789", 9) != 0xe3069283) {
		crypto_free_shash(tfm);
		return NULL;
	}
	return tfm;
}

/* Nanoseconds for @len bytes with @tfm: the best of a few rounds. */
static u64 m2_crc_time(struct crypto_shash *tfm, const u8 *buf, size_t len)
{
	u64 best = U64_MAX, t;
	int i;

	for (i = 0; i < M2_PROBE_ROUNDS; i++) {
		t = ktime_get_ns();
		m2_crc_run(tfm, 0, buf, len);
		best = min(best, ktime_get_ns() - t);
	}
	return best;
}

/* Keep the faster of @best and @alt (timed on random bytes); free the other. */
static struct crypto_shash *m2_crc_faster(struct crypto_shash *best,
					  struct crypto_shash *alt)
{
	u8 *buf = kmalloc(M2_PROBE_LEN, GFP_KERNEL);
	u64 t_best, t_alt;

	if (buf) {
		get_random_bytes(buf, M2_PROBE_LEN);
		t_best = m2_crc_time(best, buf, M2_PROBE_LEN) ?: 1;
		t_alt = m2_crc_time(alt, buf, M2_PROBE_LEN) ?: 1;
		kfree(buf);
		pr_info("crc32c: %s %llu MB/s, %s %llu MB/s\n",
			crypto_shash_driver_name(best),
			div64_u64(M2_PROBE_LEN * 1000ULL, t_best),
			crypto_shash_driver_name(alt),
			div64_u64(M2_PROBE_LEN * 1000ULL, t_alt));
		if (t_alt < t_best)
			swap(best, alt);
	}
	crypto_free_shash(alt);
	return best;
}

static int m2_crc_pick(void)
{
	struct crypto_shash *best, *alt;

	if (crc32c_driver[0]) {
		m2_crc_tfm = m2_crc_alloc(crc32c_driver);
		if (!m2_crc_tfm) {
			pr_err("crc32c_driver=%s: no such crc32c implementation\n",
			       crc32c_driver);
			return -EINVAL;
		}
		return 0;
	}
	best = m2_crc_alloc("crc32c");	/* the crypto API's choice */
	alt = m2_crc_alloc("crc32c-generic");
	if (!best)
		swap(best, alt);
	if (alt && !strcmp(crypto_shash_driver_name(best),
			   crypto_shash_driver_name(alt))) {
		crypto_free_shash(alt);
		alt = NULL;
	}
	if (alt)
		best = m2_crc_faster(best, alt);
	/* none: crc32c() of libcrc32c */
	m2_crc_tfm = best;
	strscpy(crc32c_driver, best ? crypto_shash_driver_name(best) :
		"crc32c (libcrc32c)", sizeof(crc32c_driver));
	return 0;
}

static void msgr2_sha256_update(struct sha256_state *st, const u8 *p,
				size_t len)
{
	unsigned int chunk;

	while (len) {
		chunk = min_t(size_t, len, SZ_1G);
		sha256_update(st, p, chunk);
		p += chunk;
		len -= chunk;
	}
}

int msgr2_hmac_sha256(const u8 *key, size_t key_len,
		      const struct msgr2_iov *iov, int n, u8 out[32])
{
	u8 k[SHA256_BLOCK_SIZE], inner[SHA256_DIGEST_SIZE];
	struct sha256_state st;
	int i;

	if (n < 0)
		return -EINVAL;
	memset(k, 0, sizeof(k));
	if (key_len > SHA256_BLOCK_SIZE) {
		sha256_init(&st);
		msgr2_sha256_update(&st, key, key_len);
		sha256_final(&st, k);
	} else if (key_len) {
		memcpy(k, key, key_len);
	}

	for (i = 0; i < SHA256_BLOCK_SIZE; i++)
		k[i] ^= 0x36;			/* ipad */
	sha256_init(&st);
	sha256_update(&st, k, SHA256_BLOCK_SIZE);
	for (i = 0; i < n; i++)
		msgr2_sha256_update(&st, iov[i].base, iov[i].len);
	sha256_final(&st, inner);

	for (i = 0; i < SHA256_BLOCK_SIZE; i++)
		k[i] ^= 0x36 ^ 0x5c;		/* opad */
	sha256_init(&st);
	sha256_update(&st, k, SHA256_BLOCK_SIZE);
	sha256_update(&st, inner, SHA256_DIGEST_SIZE);
	sha256_final(&st, out);

	memzero_explicit(k, sizeof(k));
	memzero_explicit(inner, sizeof(inner));
	memzero_explicit(&st, sizeof(st));
	return 0;
}

int msgr2_memneq(const void *a, const void *b, size_t len)
{
	return crypto_memneq(a, b, len);
}

/* ---- AES-128-GCM -------------------------------------------------------- */

/*
 * "gcm(aes)" is a template in gcm.ko; have modprobe load it with kmsgr
 * (request_module() from crypto_alloc_aead() is not always available).
 */
MODULE_SOFTDEP("pre: gcm");

/*
 * Scatterlist entries in the object; a larger array is allocated when a
 * message needs it (process context, GFP_KERNEL) and kept for the next.
 */
#define MSGR2_GCM_SG_INLINE	16

struct msgr2_gcm {
	struct crypto_aead *tfm;
	struct aead_request *req;
	u8 iv[12];
	u8 tag[16];
	struct scatterlist *sg_big;	/* or NULL */
	int sg_big_n;
	struct scatterlist sg[MSGR2_GCM_SG_INLINE];
};

/*
 * Which AES-GCM: as for crc32c, the crypto API's choice ("gcm(aes)": on
 * x86 AES-NI and PCLMUL) and the generic code are timed once at load and
 * the faster is kept (gcm_driver names it; set at load, it is used as
 * given).  Asynchronous implementations are allowed and waited for.
 */
#define M2_GCM_GENERIC	"gcm_base(ctr(aes-generic),ghash-generic)"

static char gcm_driver[CRYPTO_MAX_ALG_NAME];
module_param_string(gcm_driver, gcm_driver, sizeof(gcm_driver), 0444);
MODULE_PARM_DESC(gcm_driver,
		 "AES-GCM implementation of secure mode (a crypto algorithm or driver name); empty at load: the faster of gcm(aes) and the generic code, measured; reads back the driver in use");

static int m2_gcm_alloc(struct msgr2_gcm **gcm, const u8 key[16],
			const char *name)
{
	struct msgr2_gcm *g;
	int ret;

	*gcm = NULL;
	g = kzalloc(sizeof(*g), GFP_KERNEL_ACCOUNT);
	if (!g)
		return -ENOMEM;
	g->tfm = crypto_alloc_aead(name, 0, 0);
	if (IS_ERR(g->tfm)) {
		ret = PTR_ERR(g->tfm);
		g->tfm = NULL;
		goto err;
	}
	if (crypto_aead_ivsize(g->tfm) != sizeof(g->iv)) {
		ret = -EINVAL;
		goto err;
	}
	ret = crypto_aead_setkey(g->tfm, key, 16);
	if (ret)
		goto err;
	ret = crypto_aead_setauthsize(g->tfm, sizeof(g->tag));
	if (ret)
		goto err;
	g->req = aead_request_alloc(g->tfm, GFP_KERNEL);
	if (!g->req) {
		ret = -ENOMEM;
		goto err;
	}
	*gcm = g;
	return 0;

err:
	msgr2_gcm_free(g);
	return ret;
}

int msgr2_gcm_alloc(struct msgr2_gcm **gcm, const u8 key[16])
{
	return m2_gcm_alloc(gcm, key, gcm_driver[0] ? gcm_driver : "gcm(aes)");
}

void msgr2_gcm_free(struct msgr2_gcm *gcm)
{
	if (!gcm)
		return;
	aead_request_free(gcm->req);	/* kfree_sensitive */
	kvfree(gcm->sg_big);
	crypto_free_aead(gcm->tfm);	/* NULL-safe; wipes the key */
	kfree_sensitive(gcm);
}

/* scatterlist entries needed for one piece */
static int msgr2_sg_count(const void *base, size_t len)
{
	if (!len)
		return 0;
	/* vmalloc and module memory (static data) are not linear-mapped */
	if (!virt_addr_valid(base))
		return (offset_in_page(base) + len + PAGE_SIZE - 1) >> PAGE_SHIFT;
	return 1;
}

/* map one piece; returns the number of entries used */
static int msgr2_sg_fill(struct scatterlist *sg, void *base, size_t len)
{
	u8 *p = base;
	size_t chunk;
	int i = 0;

	if (!len)
		return 0;
	if (virt_addr_valid(base)) {
		sg_set_buf(sg, base, len);	/* physically contiguous */
		return 1;
	}
	while (len) {
		chunk = min_t(size_t, len, PAGE_SIZE - offset_in_page(p));
		sg_set_page(&sg[i++], vmalloc_to_page(p), chunk,
			    offset_in_page(p));
		p += chunk;
		len -= chunk;
	}
	return i;
}

static bool msgr2_gcm_mem_ok(const struct msgr2_iov *iov, int n, size_t *total)
{
	int i;

	*total = 0;
	for (i = 0; i < n; i++) {
		if (!iov[i].len)
			continue;
		if (WARN_ON_ONCE(object_is_on_stack(iov[i].base)))
			return false;
		if (iov[i].len > UINT_MAX - 16 - *total)
			return false;
		*total += iov[i].len;
	}
	return true;
}

static int msgr2_sg_nents(const struct msgr2_iov *iov, int n)
{
	int i, nents = 0;

	for (i = 0; i < n; i++)
		nents += msgr2_sg_count(iov[i].base, iov[i].len);
	return nents;
}

/* @nents entries of @sg: the pieces of @iov, then @tag if not NULL */
static void msgr2_sg_build(struct scatterlist *sg, int nents,
			   const struct msgr2_iov *iov, int n, u8 *tag)
{
	int i, k = 0;

	sg_init_table(sg, nents);
	for (i = 0; i < n; i++)
		k += msgr2_sg_fill(&sg[k], iov[i].base, iov[i].len);
	if (tag)
		sg_set_buf(&sg[k], tag, 16);
}

/* the object's inline array, or its kept large one, grown if needed */
static struct scatterlist *msgr2_sg_get(struct msgr2_gcm *gcm, int nents)
{
	struct scatterlist *sg;
	int n;

	if (nents <= MSGR2_GCM_SG_INLINE)
		return gcm->sg;
	if (nents <= gcm->sg_big_n)
		return gcm->sg_big;
	n = roundup_pow_of_two(nents);
	/*
	 * One entry per page of a large segment: a 64 MiB one needs 1 MiB
	 * of entries, which only the CPU walks, so it need not be
	 * physically contiguous.
	 */
	sg = kvmalloc_array(n, sizeof(*sg), GFP_KERNEL_ACCOUNT);
	if (!sg)
		return NULL;
	kvfree(gcm->sg_big);
	gcm->sg_big = sg;
	gcm->sg_big_n = n;
	return sg;
}

/* Run one prepared request to its end, asynchronous or not. */
static int msgr2_gcm_run(struct msgr2_gcm *gcm, bool encrypt)
{
	DECLARE_CRYPTO_WAIT(wait);

	aead_request_set_callback(gcm->req, CRYPTO_TFM_REQ_MAY_BACKLOG |
				  CRYPTO_TFM_REQ_MAY_SLEEP,
				  crypto_req_done, &wait);
	return crypto_wait_req(encrypt ? crypto_aead_encrypt(gcm->req) :
				 crypto_aead_decrypt(gcm->req), &wait);
}

int msgr2_gcm_seal(struct msgr2_gcm *gcm, const u8 nonce[12],
		   const struct msgr2_iov *src, int n, u8 *dst, u8 tag[16])
{
	struct scatterlist *sg, *ssg;
	struct msgr2_iov d;
	int ns = 0, nd, ret;
	size_t total;

	if (n < 0 || !msgr2_gcm_mem_ok(src, n, &total))
		return -EINVAL;
	d.base = dst;
	d.len = total;
	if (!msgr2_gcm_mem_ok(&d, 1, &total))
		return -EINVAL;

	/* destination + tag; the sources unless sealing in place */
	nd = msgr2_sg_nents(&d, 1) + 1;
	if (!(n == 1 && src[0].base == dst))
		ns = msgr2_sg_nents(src, n);
	sg = msgr2_sg_get(gcm, nd + ns);
	if (!sg)
		return -ENOMEM;
	msgr2_sg_build(sg, nd, &d, 1, gcm->tag);
	ssg = sg;
	if (ns) {
		ssg = sg + nd;
		msgr2_sg_build(ssg, ns, src, n, NULL);
	}

	memcpy(gcm->iv, nonce, sizeof(gcm->iv));
	aead_request_set_crypt(gcm->req, ssg, sg, total, gcm->iv);
	aead_request_set_ad(gcm->req, 0);
	ret = msgr2_gcm_run(gcm, true);
	if (!ret)
		memcpy(tag, gcm->tag, sizeof(gcm->tag));
	else if (ret == -EBADMSG)
		ret = -EIO;
	return ret;
}

int msgr2_gcm_open(struct msgr2_gcm *gcm, const u8 nonce[12],
		   const struct msgr2_iov *buf, int n, const u8 tag[16])
{
	struct scatterlist *sg;
	size_t total;
	int nents;

	if (n < 0 || !msgr2_gcm_mem_ok(buf, n, &total))
		return -EINVAL;
	nents = msgr2_sg_nents(buf, n) + 1;
	sg = msgr2_sg_get(gcm, nents);
	if (!sg)
		return -ENOMEM;
	msgr2_sg_build(sg, nents, buf, n, gcm->tag);

	memcpy(gcm->tag, tag, sizeof(gcm->tag));
	memcpy(gcm->iv, nonce, sizeof(gcm->iv));
	aead_request_set_crypt(gcm->req, sg, sg, total + sizeof(gcm->tag),
			       gcm->iv);
	aead_request_set_ad(gcm->req, 0);
	return msgr2_gcm_run(gcm, false);	/* -EBADMSG: bad tag */
}

/*
 * Nanoseconds to seal @len bytes of @buf in place with @name (the best of
 * a few rounds), or U64_MAX when it is not there; *@driver: its driver.
 */
static u64 m2_gcm_time(const char *name, u8 *buf, size_t len,
		       char driver[CRYPTO_MAX_ALG_NAME])
{
	struct msgr2_iov iov = { .base = buf, .len = len };
	u8 key[16], nonce[12] = { 0 }, tag[16];
	u64 best = U64_MAX, t;
	struct msgr2_gcm *g;
	int i;

	get_random_bytes(key, sizeof(key));
	if (m2_gcm_alloc(&g, key, name))
		return U64_MAX;
	strscpy(driver, crypto_aead_driver_name(g->tfm), CRYPTO_MAX_ALG_NAME);
	for (i = 0; i < M2_PROBE_ROUNDS; i++) {
		t = ktime_get_ns();
		if (msgr2_gcm_seal(g, nonce, &iov, 1, buf, tag)) {
			best = U64_MAX;
			break;
		}
		best = min(best, ktime_get_ns() - t);
	}
	msgr2_gcm_free(g);
	memzero_explicit(key, sizeof(key));
	return best;
}

static int m2_gcm_pick(void)
{
	char d_api[CRYPTO_MAX_ALG_NAME], d_gen[CRYPTO_MAX_ALG_NAME];
	bool forced = gcm_driver[0];
	u64 t_api, t_gen = U64_MAX;
	u8 *buf;

	buf = kmalloc(M2_PROBE_LEN, GFP_KERNEL);
	if (!buf)
		return forced ? -ENOMEM : 0;	/* else gcm(aes), untimed */
	get_random_bytes(buf, M2_PROBE_LEN);
	/* set at load: only whether it seals */
	t_api = m2_gcm_time(forced ? gcm_driver : "gcm(aes)", buf,
			    M2_PROBE_LEN, d_api);
	if (!forced)
		t_gen = m2_gcm_time(M2_GCM_GENERIC, buf, M2_PROBE_LEN, d_gen);
	kfree(buf);
	if (forced && t_api == U64_MAX) {
		pr_err("gcm_driver=%s: no such AES-GCM implementation\n",
		       gcm_driver);
		return -EINVAL;
	}
	if (forced || t_api == U64_MAX)
		return 0;	/* none: secure mode fails at its connection */
	if (t_gen != U64_MAX && strcmp(d_api, d_gen)) {
		pr_info("gcm(aes): %s %llu MB/s, %s %llu MB/s\n", d_api,
			div64_u64(M2_PROBE_LEN * 1000ULL, t_api ?: 1),
			d_gen, div64_u64(M2_PROBE_LEN * 1000ULL, t_gen ?: 1));
		if (t_gen < t_api) {
			strscpy(gcm_driver, d_gen, sizeof(gcm_driver));
			return 0;
		}
	}
	strscpy(gcm_driver, d_api, sizeof(gcm_driver));
	return 0;
}

/* ---- AES-128-CBC without padding ---------------------------------------- */

int msgr2_aes_cbc(const u8 key[16], const u8 iv[16], bool encrypt,
		  const u8 *in, u8 *out, size_t len)
{
	u8 prev[AES_BLOCK_SIZE], blk[AES_BLOCK_SIZE];
	struct crypto_aes_ctx ctx;
	size_t off;
	int ret;

	if (len % AES_BLOCK_SIZE)
		return -EINVAL;
	ret = aes_expandkey(&ctx, key, 16);
	if (ret)
		return ret;
	memcpy(prev, iv, AES_BLOCK_SIZE);
	for (off = 0; off < len; off += AES_BLOCK_SIZE) {
		if (encrypt) {
			crypto_xor_cpy(blk, in + off, prev, AES_BLOCK_SIZE);
			aes_encrypt(&ctx, out + off, blk);
			memcpy(prev, out + off, AES_BLOCK_SIZE);
		} else {
			/* @in may equal @out: keep the ciphertext block */
			memcpy(blk, in + off, AES_BLOCK_SIZE);
			aes_decrypt(&ctx, out + off, blk);
			crypto_xor(out + off, prev, AES_BLOCK_SIZE);
			memcpy(prev, blk, AES_BLOCK_SIZE);
		}
	}
	memzero_explicit(&ctx, sizeof(ctx));
	memzero_explicit(blk, sizeof(blk));
	memzero_explicit(prev, sizeof(prev));
	return 0;
}

/* ---- misc ---------------------------------------------------------------- */

void msgr2_random(void *buf, size_t len)
{
	get_random_bytes(buf, len);
}

u64 msgr2_wall_ns(void)
{
	return ktime_get_real_ns();
}

void msgr2_wipe(void *buf, size_t len)
{
	if (buf && len)
		memzero_explicit(buf, len);
}

void *msgr2_zalloc(size_t len)
{
	return kvzalloc(len, GFP_KERNEL_ACCOUNT);
}

void msgr2_free(void *p)
{
	kvfree(p);
}

/* ---- load and unload ----------------------------------------------------- */

int msgr2_port_init(void)
{
	int ret = m2_crc_pick();

	if (!ret)
		ret = m2_gcm_pick();
	if (ret)
		msgr2_port_exit();
	return ret;
}

void msgr2_port_exit(void)
{
	crypto_free_shash(m2_crc_tfm);
	m2_crc_tfm = NULL;
}

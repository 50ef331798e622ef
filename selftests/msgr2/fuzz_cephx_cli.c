// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the cephx client role (msgr2_auth_cephx_ops: request,
 * reply_more on the mon's challenge, done on its AUTH_DONE with the AUTH
 * ticket, the connection secret and the service tickets), then the
 * authorizer towards a service with the ticket kept
 * (msgr2_cephx_authorizer_init, msgr2_auth_cephx_authorizer_ops).  The
 * harness seals what the input asks it to with the keys involved, so that
 * the decoders behind the decryption are reached.
 *
 * Input: byte 0 = control
 *   bit 0     secure mode (else crc)
 *   bits 1-3  output capacity (bytes): 0, 22, 35, 36, 96, 128, 512, 4158
 *   bit 4     after a successful done(), run the authorizer
 *   bit 5     authorizer: AUTH_DONE right after the request (no challenge)
 *   bits 6-7  authorizer service: OSD, MGR, MDS, MON
 * then records, each a tag byte and, but for END and CLOSE, le16 length
 * + that many bytes (cut at the end of the input):
 *   tag bits 0-2  kind: 1 SEAL (msgr2_cephx_encrypt of the bytes: le32
 *                 length + ciphertext), 2 END (the message is complete),
 *                 3 OPEN (le32 length of what follows up to its CLOSE;
 *                 4 nested at most, no length bytes), 4 CLOSE (no length
 *                 bytes), any other: RAW (the bytes as they are)
 *   bits 3-4      SEAL key: the client's key, the session key K_AUTH
 *                 below, the service key K_SVC below, the authorizer's
 *                 ticket session key (zero before msgr2_cephx_authorizer_init)
 *   bit 5         SEAL: ciphertext only, without the le32 length
 *   bit 6         SEAL: plaintext bytes 1-8 replaced by le64 nonce + 1 of
 *                 the authorizer's request (CephXAuthorizeReply)
 * The messages are, in order: the mon's AUTH_REPLY_MORE (challenge), its
 * AUTH_DONE, the service's AUTH_REPLY_MORE and AUTH_DONE; each is given
 * in heap memory of exactly its length.  Blobs still open at END or at
 * the end of the input are closed there.
 * Seeds: corpus/fuzz_cephx_cli/ (mkcorpus.sh).
 *
 * Asserts beyond the sanitizers: only the documented results come back
 * (byte counts that fit the capacity, -EBADMSG, -EACCES, -EPROTO,
 * -ENOSPC, -ENOKEY, -EMSGSIZE), a failed done() keeps no ticket, a
 * successful one keeps only tickets that fit, in their own slot, and a
 * connection secret that fits (at least 40 bytes in secure mode).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "msgr2.h"
#include "auth_cephx.h"

#define FZ_GLOBAL_ID	4122
#define FZ_NEST		4
#define FZ_NAME_LEN	5		/* "admin" */
#define FZ_REQ_LEN	(9 + FZ_NAME_LEN + 8)
#define FZ_MORE_LEN	36		/* AUTH_REQUEST_MORE */
#define FZ_AZ_LEN	62		/* authorizer without the blob */
#define FZ_SECRET_MIN	40

enum { K_CLIENT, K_AUTH, K_SVC, K_TICKET, K_N };
enum { R_RAW, R_SEAL, R_END, R_OPEN, R_CLOSE };

static const u32 caps[8] = { 0, 22, 35, 36, 96, 128, 512, 4158 };
static const u32 services[4] = {
	MSGR2_ENTITY_OSD, MSGR2_ENTITY_MGR, MSGR2_ENTITY_MDS, MSGR2_ENTITY_MON,
};

/* slot order of msgr2_auth_cephx.svc */
static const u32 slots[MSGR2_CEPHX_N_SVC] = {
	MSGR2_ENTITY_MON, MSGR2_ENTITY_MDS, MSGR2_ENTITY_OSD, MSGR2_ENTITY_MGR,
};

static const u8 zero_key[16];
static const u8 fixed_keys[3][16] = {
	{ 0x8e, 0xb2, 0xfa, 0xc1, 0x64, 0xd1, 0xf5, 0xad, 0x73, 0x11, 0xdd,
	  0x59, 0xd3, 0xc4, 0x65, 0xa5 },	/* client.admin */
	{ 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa,
	  0xab, 0xac, 0xad, 0xae, 0xaf },	/* K_AUTH */
	{ 0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba,
	  0xbb, 0xbc, 0xbd, 0xbe, 0xbf },	/* K_SVC */
};

struct fz_in {
	const u8 *p;
	size_t left;
	u8 *buf;			/* assembly scratch */
	size_t cap;
};

/*
 * Assemble the next message from the records into in->buf and return a
 * heap copy of exactly its length in *@msg (NULL when the input is used
 * up before any record).
 */
static u32 next_msg(struct fz_in *in, const struct msgr2_cephx_authorizer *az,
		    u8 **msg)
{
	u32 open[FZ_NEST], depth = 0, off = 0, len, i;
	const u8 *key;
	bool any = false;
	u8 tag, *pt;
	int n;

	*msg = NULL;
	while (in->left) {
		tag = in->p[0];
		in->p++;
		in->left--;
		any = true;
		if ((tag & 7) == R_END)
			break;
		if ((tag & 7) == R_OPEN) {
			if (depth < FZ_NEST && off + 4 <= in->cap) {
				open[depth++] = off;
				off += 4;
			}
			continue;
		}
		if ((tag & 7) == R_CLOSE) {
			if (depth) {
				depth--;
				msgr2_put_le32(in->buf + open[depth],
					       off - open[depth] - 4);
			}
			continue;
		}
		if (in->left < 2) {
			in->left = 0;
			break;
		}
		len = msgr2_get_le16(in->p);
		in->p += 2;
		in->left -= 2;
		if (len > in->left)
			len = in->left;
		/* at most 33 bytes more than the plaintext (see below) */
		if (off + len + 4 + 16 + 16 > in->cap)
			abort();
		if ((tag & 7) != R_SEAL) {
			memcpy(in->buf + off, in->p, len);
			off += len;
			in->p += len;
			in->left -= len;
			continue;
		}
		/* sealed in place: encrypt moves the plaintext past 13 */
		pt = in->buf + off + 4 + 9;
		memcpy(pt, in->p, len);
		in->p += len;
		in->left -= len;
		if ((tag & 0x40) && az && len >= 9)
			msgr2_put_le64(pt + 1, az->nonce + 1);
		i = (tag >> 3) & 3;
		if (i == K_TICKET)
			key = az ? az->ticket.session_key : zero_key;
		else
			key = fixed_keys[i];
		n = msgr2_cephx_encrypt(key, pt, len, in->buf + off,
					in->cap - off);
		if (n < 4 || (u32)n > len + 4 + 9 + 16)
			abort();
		if (tag & 0x20) {
			memmove(in->buf + off, in->buf + off + 4, n - 4);
			n -= 4;
		}
		off += n;
	}
	while (depth) {
		depth--;
		msgr2_put_le32(in->buf + open[depth], off - open[depth] - 4);
	}
	if (!any)
		return 0;
	*msg = malloc(off ? off : 1);
	if (!*msg)
		abort();
	memcpy(*msg, in->buf, off);
	return off;
}

/* a successful done(): what the client keeps */
static void check_done(const struct msgr2_auth_cephx *cx, u32 mode,
		       const struct msgr2_auth_result *res)
{
	const struct msgr2_cephx_ticket *t;
	u32 i;

	if (cx->auth.service != MSGR2_ENTITY_AUTH ||
	    cx->global_id != FZ_GLOBAL_ID || res->global_id != FZ_GLOBAL_ID ||
	    res->session_key_len != MSGR2_CEPHX_KEY_LEN ||
	    memcmp(res->session_key, cx->auth.session_key, 16) ||
	    res->con_secret_len > sizeof(res->con_secret) ||
	    (mode == MSGR2_MODE_SECURE &&
	     res->con_secret_len < FZ_SECRET_MIN))
		abort();
	for (i = 0; i <= MSGR2_CEPHX_N_SVC; i++) {
		t = i < MSGR2_CEPHX_N_SVC ? &cx->svc[i] : &cx->auth;
		if (i < MSGR2_CEPHX_N_SVC && t->service &&
		    t->service != slots[i])
			abort();
		if (t->blob_len > MSGR2_CEPHX_TICKET_MAX ||
		    (t->too_big && (t->blob_len ||
				    t->too_big <= MSGR2_CEPHX_TICKET_MAX)) ||
		    (!t->service && (t->blob_len || t->too_big)))
			abort();
	}
}

/* a failed done(): nothing kept, no authorizer */
static void check_failed(const struct msgr2_auth_cephx *cx)
{
	struct msgr2_cephx_authorizer *az;
	u32 i;

	if (cx->auth.service || cx->auth.blob_len || cx->auth.too_big)
		abort();
	for (i = 0; i < MSGR2_CEPHX_N_SVC; i++)
		if (cx->svc[i].service || cx->svc[i].blob_len ||
		    cx->svc[i].too_big)
			abort();
	az = calloc(1, sizeof(*az));
	if (!az)
		abort();
	if (msgr2_cephx_authorizer_init(az, cx, MSGR2_ENTITY_OSD) != -ENOKEY)
		abort();
	free(az);
}

/* the authorizer's request (@more: with the challenge) */
static void check_az_req(const struct msgr2_cephx_authorizer *az, int ret,
			 u32 cap, bool more)
{
	u32 need = FZ_AZ_LEN + az->ticket.blob_len;

	if (ret == -ENOSPC && cap < need)
		return;
	if (ret == -EBADMSG && more)
		return;
	if (ret < 0 || (u32)ret != need || (u32)ret > cap)
		abort();
}

static void run_authorizer(struct msgr2_auth_cephx *cx, struct fz_in *in,
			   u8 ctl, u32 mode, u8 *out, u32 cap)
{
	const struct msgr2_auth_ops *ops = &msgr2_auth_cephx_authorizer_ops;
	u32 service = services[ctl >> 6], len;
	struct msgr2_cephx_authorizer *az;
	struct msgr2_auth_result res;
	u8 *msg;
	int ret, i;

	az = calloc(1, sizeof(*az));
	if (!az)
		abort();
	ret = msgr2_cephx_authorizer_init(az, cx, service);
	for (i = 0; i < MSGR2_CEPHX_N_SVC; i++)
		if (slots[i] == service)
			break;
	if (ret == -EMSGSIZE && cx->svc[i].too_big)
		goto out;
	if (ret == -ENOKEY && !cx->svc[i].blob_len)
		goto out;
	if (ret || az->global_id != FZ_GLOBAL_ID ||
	    az->ticket.service != service || !az->ticket.blob_len ||
	    az->ticket.blob_len > MSGR2_CEPHX_TICKET_MAX)
		abort();

	ret = ops->request(az, out, cap);
	check_az_req(az, ret, cap, false);
	if (ret < 0)
		goto out;
	if (!(ctl & 0x20)) {
		len = next_msg(in, az, &msg);
		if (!msg)
			goto out;
		ret = ops->reply_more(az, msg, len, out, cap);
		free(msg);
		check_az_req(az, ret, cap, true);
		if (ret < 0)
			goto out;
	}
	len = next_msg(in, az, &msg);
	if (!msg)
		goto out;
	memset(&res, 0, sizeof(res));
	ret = ops->done(az, FZ_GLOBAL_ID, mode, msg, len, &res);
	free(msg);
	if (ret != 0 && ret != -EBADMSG && ret != -EACCES && ret != -EPROTO)
		abort();
	if (ret == 0 &&
	    (res.global_id != FZ_GLOBAL_ID ||
	     res.session_key_len != MSGR2_CEPHX_KEY_LEN ||
	     memcmp(res.session_key, az->ticket.session_key, 16) ||
	     res.con_secret_len > sizeof(res.con_secret) ||
	     (mode == MSGR2_MODE_SECURE &&
	      res.con_secret_len < FZ_SECRET_MIN)))
		abort();
out:
	ops->reset(az);
	free(az);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct msgr2_auth_ops *ops = &msgr2_auth_cephx_ops;
	struct msgr2_auth_cephx *cx;
	struct msgr2_auth_result res;
	struct fz_in in;
	u32 mode, cap, len;
	u8 *out, *msg, ctl;
	int ret;

	if (size < 1)
		return 0;
	ctl = data[0];
	mode = ctl & 1 ? MSGR2_MODE_SECURE : MSGR2_MODE_CRC;
	cap = caps[(ctl >> 1) & 7];
	in.p = data + 1;
	in.left = size - 1;
	/* a record of 3 + n input bytes gives at most n + 33 bytes */
	in.cap = size * 11 + 64;
	in.buf = malloc(in.cap);
	cx = calloc(1, sizeof(*cx));
	/* exactly @cap bytes: ASan catches a write past them */
	out = malloc(cap ? cap : 1);
	if (!in.buf || !cx || !out)
		abort();
	cx->entity_type = MSGR2_ENTITY_CLIENT;
	strcpy(cx->name, "admin");
	memcpy(cx->key, fixed_keys[K_CLIENT], 16);

	ret = ops->request(cx, out, cap);
	if (ret != -ENOSPC && ret != FZ_REQ_LEN)
		abort();
	if ((ret == -ENOSPC) != cap < FZ_REQ_LEN)
		abort();
	if (ret < 0)
		goto out;

	len = next_msg(&in, NULL, &msg);
	if (!msg)
		goto out;
	ret = ops->reply_more(cx, msg, len, out, cap);
	free(msg);
	if (ret != FZ_MORE_LEN && ret != -EBADMSG &&
	    !(ret == -ENOSPC && cap < FZ_MORE_LEN))
		abort();
	if (ret == FZ_MORE_LEN && cap < FZ_MORE_LEN)
		abort();
	if (ret < 0)
		goto out;

	len = next_msg(&in, NULL, &msg);
	if (!msg)
		goto out;
	memset(&res, 0, sizeof(res));
	ret = ops->done(cx, FZ_GLOBAL_ID, mode, msg, len, &res);
	free(msg);
	if (ret == 0)
		check_done(cx, mode, &res);
	else if (ret == -EBADMSG || ret == -EACCES || ret == -EPROTO)
		check_failed(cx);
	else
		abort();
	if (ret == 0 && (ctl & 0x10))
		run_authorizer(cx, &in, ctl, mode, out, cap);
out:
	ops->reset(cx);
	free(cx);
	free(out);
	free(in.buf);
	return 0;
}

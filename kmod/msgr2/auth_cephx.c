// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr msgr2 engine - CephX (auth method 2), client role against a mon,
 * the mon's side of the same exchange (server role), and the authorizer
 * a client presents to an OSD with the mon's ticket (auth_cephx.h).
 *
 *   C>S AUTH_REQUEST       u8 10 (mode: mon), EntityName, le64 global_id
 *   S>C AUTH_REPLY_MORE    u8 1, le64 server_challenge
 *   C>S AUTH_REQUEST_MORE  le16 GET_AUTH_SESSION_KEY, CephXAuthenticate v3
 *   S>C AUTH_DONE          le16 op, s32 result, AUTH ticket reply,
 *                          [connection secret, extra service tickets]
 *
 * Everything read from the wire goes through a bounds-checked cursor;
 * any malformed input gives -EBADMSG.  Keys and decrypted buffers are
 * wiped on every exit path.
 */
#include "auth_cephx.h"

#define CEPHX_MODE_MON		10	/* AUTH_MODE_MON */
#define CEPHX_AUTHENTICATE_V	3	/* CephXAuthenticate struct_v */
#define CEPHX_MAGIC		0xff009cad8826aa55ULL
#define CEPHX_HDR_LEN		9	/* u8 1 + le64 magic */
#define CEPHX_CRYPTO_AES	1	/* CryptoKey type */
#define CEPHX_MAX_TICKETS	64	/* entries in one ticket reply */
/* largest ciphertext decrypted here: AUTH ticket client part, secret */
#define CEPHX_DEC_MAX		128
/* a 64-byte connection secret is what secure mode gets; 40 are used */
#define CEPHX_SECRET_MIN	40

enum {
	CX_IDLE = 0,
	CX_REQ_SENT,		/* AUTH_REQUEST built */
	CX_MORE_SENT,		/* AUTH_REQUEST_MORE built */
	CX_DONE,
};

static const u8 cephx_iv[16] = "cephsageyudagreg";
/* CEPHX_MAGIC, little-endian (no constant through the put helpers) */
static const u8 cephx_magic[8] = {
	0x55, 0xaa, 0x26, 0x88, 0xad, 0x9c, 0x00, 0xff,
};

/* ---- bounds-checked reader ---------------------------------------------- */

struct cx_cur {
	const u8 *p;
	u32 left;
};

static int cur_bytes(struct cx_cur *c, u32 n, const u8 **out)
{
	if (n > c->left)
		return -EBADMSG;
	*out = c->p;
	c->p += n;
	c->left -= n;
	return 0;
}

static int cur_u8(struct cx_cur *c, u8 *v)
{
	const u8 *p;

	if (cur_bytes(c, 1, &p))
		return -EBADMSG;
	*v = *p;
	return 0;
}

static int cur_le32(struct cx_cur *c, u32 *v)
{
	const u8 *p;

	if (cur_bytes(c, 4, &p))
		return -EBADMSG;
	*v = msgr2_get_le32(p);
	return 0;
}

static int cur_le64(struct cx_cur *c, u64 *v)
{
	const u8 *p;

	if (cur_bytes(c, 8, &p))
		return -EBADMSG;
	*v = msgr2_get_le64(p);
	return 0;
}

/* le32 length + that many bytes, as a sub-cursor */
static int cur_blob(struct cx_cur *c, struct cx_cur *sub)
{
	u32 n;

	if (cur_le32(c, &n) || cur_bytes(c, n, &sub->p))
		return -EBADMSG;
	sub->left = n;
	return 0;
}

/* ---- ceph_x_encrypt / ceph_x_decrypt ------------------------------------ */

int msgr2_cephx_encrypt(const u8 key[16], const u8 *in, u32 len,
			u8 *out, u32 cap)
{
	u32 plain, pad, ct;
	int ret;

	if (len > 0x10000)
		return -EMSGSIZE;
	plain = CEPHX_HDR_LEN + len;
	pad = 16 - (plain % 16);		/* PKCS#7: 1..16 */
	ct = plain + pad;
	if (cap < 4 || ct > cap - 4)
		return -ENOSPC;

	msgr2_put_le32(out, ct);
	out[4] = 1;
	memcpy(out + 5, cephx_magic, sizeof(cephx_magic));
	if (len)
		memmove(out + 4 + CEPHX_HDR_LEN, in, len);
	memset(out + 4 + plain, pad, pad);
	ret = msgr2_aes_cbc(key, cephx_iv, true, out + 4, out + 4, ct);
	if (ret) {
		msgr2_wipe(out, 4 + ct);
		return ret;
	}
	return 4 + ct;
}

/*
 * Decrypt @len bytes of ciphertext (no length prefix) into @out and check
 * the header and padding: the plaintext is @out[9 .. 9 + return value).
 */
static int cx_decrypt_raw(const u8 key[16], const u8 *ct, u32 len, u8 *out,
			  u32 cap)
{
	u32 i;
	u8 pad, bad;
	int ret;

	if (len < 16 || len % 16 || len > cap)
		return -EBADMSG;
	ret = msgr2_aes_cbc(key, cephx_iv, false, ct, out, len);
	if (ret)
		goto fail;

	ret = -EBADMSG;
	pad = out[len - 1];
	if (pad < 1 || pad > 16 || pad > len - CEPHX_HDR_LEN)
		goto fail;
	bad = 0;
	for (i = len - pad; i < len; i++)
		bad |= out[i] ^ pad;
	if (bad || out[0] != 1 || msgr2_get_le64(out + 1) != CEPHX_MAGIC)
		goto fail;
	return len - CEPHX_HDR_LEN - pad;

fail:
	msgr2_wipe(out, len);
	return ret;
}

int msgr2_cephx_decrypt(const u8 key[16], const u8 *in, u32 avail,
			u32 *used, u8 *out, u32 cap)
{
	struct cx_cur c = { in, avail };
	const u8 *ct;
	u32 len;
	int n;

	if (cur_le32(&c, &len) || cur_bytes(&c, len, &ct))
		return -EBADMSG;
	n = cx_decrypt_raw(key, ct, len, out, cap);
	if (n >= 0)
		*used = 4 + len;
	return n;
}

/* ---- keyring keys -------------------------------------------------------- */

static int b64_val(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

/*
 * Strict base64 (RFC 4648 alphabet, '=' padding required, no whitespace,
 * unused bits zero).  Returns the decoded length or -EINVAL.
 */
static int b64_decode(const char *s, size_t slen, u8 *out, size_t cap)
{
	size_t i, o = 0;
	int v[4], j, npad;
	u32 w;

	if (slen == 0 || slen % 4)
		return -EINVAL;
	for (i = 0; i < slen; i += 4) {
		npad = 0;
		for (j = 0; j < 4; j++) {
			if (s[i + j] == '=' && i + 4 == slen && j >= 2) {
				v[j] = 0;
				npad++;
				continue;
			}
			if (npad)	/* data after '=' */
				return -EINVAL;
			v[j] = b64_val(s[i + j]);
			if (v[j] < 0)
				return -EINVAL;
		}
		w = (u32)v[0] << 18 | (u32)v[1] << 12 | (u32)v[2] << 6 | v[3];
		if ((npad == 1 && (w & 0xff)) || (npad == 2 && (w & 0xffff)))
			return -EINVAL;	/* non-canonical */
		if (o + 3 - npad > cap)
			return -EINVAL;
		out[o++] = w >> 16;
		if (npad < 2)
			out[o++] = w >> 8;
		if (npad < 1)
			out[o++] = w;
	}
	return (int)o;
}

#define CEPHX_KEY_ENC_LEN	(2 + 8 + 2 + MSGR2_CEPHX_KEY_LEN)	/* 28 */

int msgr2_cephx_parse_key(const char *base64, u8 key[16])
{
	u8 buf[CEPHX_KEY_ENC_LEN + 3];
	size_t slen;
	int n, ret = -EINVAL;

	if (!base64)
		return -EINVAL;
	/* 28 bytes encode to exactly 40 characters */
	slen = strnlen(base64, 41);
	if (slen != 40)
		return -EINVAL;
	n = b64_decode(base64, slen, buf, sizeof(buf));
	if (n != CEPHX_KEY_ENC_LEN)
		goto out;
	if (msgr2_get_le16(buf) != CEPHX_CRYPTO_AES ||
	    msgr2_get_le16(buf + 10) != MSGR2_CEPHX_KEY_LEN)
		goto out;
	memcpy(key, buf + 12, MSGR2_CEPHX_KEY_LEN);
	ret = 0;
out:
	msgr2_wipe(buf, sizeof(buf));
	return ret;
}

/* ---- client role -------------------------------------------------------- */

static int cephx_request(void *priv, u8 *out, u32 cap)
{
	struct msgr2_auth_cephx *cx = priv;
	size_t nlen = strnlen(cx->name, sizeof(cx->name));

	if (nlen == 0 || nlen >= sizeof(cx->name) || !cx->entity_type)
		return -EINVAL;
	if (cap < 1 + 4 + 4 + nlen + 8)
		return -ENOSPC;

	cx->state = CX_REQ_SENT;
	cx->server_challenge = 0;
	cx->client_challenge = 0;

	out[0] = CEPHX_MODE_MON;
	msgr2_put_le32(out + 1, cx->entity_type);
	msgr2_put_le32(out + 5, (u32)nlen);
	memcpy(out + 9, cx->name, nlen);
	/*
	 * Global id 0: a new one.  A non-zero id asks the mon to let us
	 * reclaim it, which a 16.2.1+ mon grants only to a CephXAuthenticate
	 * v3 that presents the old AUTH ticket, and reset() forgot that
	 * ticket: a redial would be refused (EACCES, AUTH).
	 */
	msgr2_put_le64(out + 9 + nlen, 0);
	return (int)(9 + nlen + 8);
}

#define CEPHX_REQ_MORE_LEN	(2 + 1 + 8 + 8 + (1 + 8 + 4) + 4)	/* 36 */

static int cephx_reply_more(void *priv, const u8 *in, u32 len, u8 *out,
			    u32 cap)
{
	struct msgr2_auth_cephx *cx = priv;
	u8 enc[4 + 32];
	u8 chal[16];
	u64 key;
	int ret;

	/* CephXServerChallenge: u8 struct_v = 1, le64 server_challenge */
	if (cx->state != CX_REQ_SENT || len != 9 || in[0] != 1)
		return -EBADMSG;
	if (cap < CEPHX_REQ_MORE_LEN)
		return -ENOSPC;

	cx->server_challenge = msgr2_get_le64(in + 1);
	msgr2_random(&cx->client_challenge, sizeof(cx->client_challenge));

	/* key = XOR of the LE64 words of ceph_x_encrypt(key, challenges) */
	msgr2_put_le64(chal, cx->server_challenge);
	msgr2_put_le64(chal + 8, cx->client_challenge);
	ret = msgr2_cephx_encrypt(cx->key, chal, sizeof(chal), enc,
				  sizeof(enc));
	if (ret < 0)
		goto out;
	if (ret != sizeof(enc)) {
		ret = -EINVAL;
		goto out;
	}
	key = msgr2_get_le64(enc) ^ msgr2_get_le64(enc + 8) ^
	      msgr2_get_le64(enc + 16) ^ msgr2_get_le64(enc + 24);

	/* le16 MSGR2_CEPHX_GET_AUTH_SESSION_KEY */
	out[0] = MSGR2_CEPHX_GET_AUTH_SESSION_KEY & 0xff;
	out[1] = MSGR2_CEPHX_GET_AUTH_SESSION_KEY >> 8;
	out[2] = CEPHX_AUTHENTICATE_V;
	msgr2_put_le64(out + 3, cx->client_challenge);
	msgr2_put_le64(out + 11, key);
	/* old ticket: CephXTicketBlob v1, secret_id 0, empty blob */
	out[19] = 1;
	memset(out + 20, 0, 8 + 4);
	/* other_keys: never 0 (see auth_cephx.h) */
	msgr2_put_le32(out + 32, cx->want_keys ? cx->want_keys :
				 MSGR2_CEPHX_WANT_KEYS_DEFAULT);
	cx->state = CX_MORE_SENT;
	ret = CEPHX_REQ_MORE_LEN;
out:
	msgr2_wipe(enc, sizeof(enc));
	msgr2_wipe(chal, sizeof(chal));
	return ret;
}

/* Index in cx->svc of @service's ticket, or -1 when none is kept. */
static int cx_svc_idx(u32 service)
{
	switch (service) {
	case MSGR2_ENTITY_MON:
		return 0;
	case MSGR2_ENTITY_MDS:
		return 1;
	case MSGR2_ENTITY_OSD:
		return 2;
	case MSGR2_ENTITY_MGR:
		return 3;
	default:
		return -1;
	}
}

/* Where @cx keeps the ticket for @service, or NULL when it keeps none. */
static struct msgr2_cephx_ticket *cx_slot(struct msgr2_auth_cephx *cx,
					  u32 service)
{
	int i = cx_svc_idx(service);

	if (service == MSGR2_ENTITY_AUTH)
		return &cx->auth;
	return i < 0 ? NULL : &cx->svc[i];
}

static void cx_forget_tickets(struct msgr2_auth_cephx *cx)
{
	msgr2_wipe(&cx->auth, sizeof(cx->auth));
	msgr2_wipe(cx->svc, sizeof(cx->svc));
}

/*
 * Decrypt an entry's client part with @key: [u8 1][CryptoKey][utime
 * validity].  Only the session key is kept.
 */
static int cx_session_part(const u8 key[16], struct cx_cur *c, u8 skey[16])
{
	u8 buf[CEPHX_DEC_MAX];
	const u8 *p;
	u32 used;
	int n;

	n = msgr2_cephx_decrypt(key, c->p, c->left, &used, buf, sizeof(buf));
	if (n < 0)
		return -EBADMSG;
	c->p += used;
	c->left -= used;
	p = buf + CEPHX_HDR_LEN;
	if (n < 1 + CEPHX_KEY_ENC_LEN + 8 || p[0] != 1 ||
	    msgr2_get_le16(p + 1) != CEPHX_CRYPTO_AES ||
	    msgr2_get_le16(p + 11) != MSGR2_CEPHX_KEY_LEN) {
		n = -EBADMSG;
		goto out;
	}
	memcpy(skey, p + 13, MSGR2_CEPHX_KEY_LEN);
	n = 0;
out:
	msgr2_wipe(buf, sizeof(buf));
	return n;
}

/*
 * The ticket in clear: [u8 1][le64 secret_id][le32 len + blob].  A blob
 * too large to keep leaves @t without one, its size in too_big.
 */
static int cx_ticket(struct cx_cur *c, struct msgr2_cephx_ticket *t)
{
	struct cx_cur sub;
	u8 v;

	if (cur_u8(c, &v) || v != 1 || cur_le64(c, &t->secret_id) ||
	    cur_blob(c, &sub) || c->left)
		return -EBADMSG;
	if (sub.left > sizeof(t->blob)) {
		t->too_big = sub.left;
		return 0;
	}
	memcpy(t->blob, sub.p, sub.left);
	t->blob_len = sub.left;
	return 0;
}

/*
 * A ticket reply: u8 1, le32 n, n x { le32 service, u8 1, le32 len +
 * encrypted client part, u8 ticket_encrypted, le32 len + ticket }.
 * With @cx, the client part of every entry @cx keeps a slot for (AUTH
 * when @auth, the services otherwise) is decrypted with @key and the
 * session key and ticket stored there; every other entry is only
 * bounds-checked.  A ticket sealed with an older session key (we never
 * present an old ticket, so a mon sends it in clear) is not kept.
 */
static int cx_ticket_reply(struct cx_cur *c, const u8 key[16],
			   struct msgr2_auth_cephx *cx, bool auth)
{
	struct msgr2_cephx_ticket *t;
	struct cx_cur part, tk;
	u32 n, i, service;
	bool is_auth;
	u8 v, enc;
	int ret;

	if (cur_u8(c, &v) || v != 1 || cur_le32(c, &n) ||
	    n > CEPHX_MAX_TICKETS)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		if (cur_le32(c, &service) || cur_u8(c, &v) || v != 1)
			return -EBADMSG;
		/* the client part is itself le32 length + ciphertext */
		part = *c;
		if (cur_blob(c, &tk))
			return -EBADMSG;
		part.left = c->p - part.p;
		if (cur_u8(c, &enc) || enc > 1 || cur_blob(c, &tk))
			return -EBADMSG;
		t = cx ? cx_slot(cx, service) : NULL;
		is_auth = service == MSGR2_ENTITY_AUTH;
		/* the AUTH entry of the first reply, services of the extra */
		if (!t || is_auth != auth)
			continue;
		if (t->service)
			return -EBADMSG;	/* the same service twice */
		ret = cx_session_part(key, &part, t->session_key);
		if (ret)
			return ret;
		if (part.left)
			return -EBADMSG;
		t->service = service;
		if (enc)
			continue;
		ret = cx_ticket(&tk, t);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int cephx_done(void *priv, u64 global_id, u32 con_mode,
		      const u8 *in, u32 len, struct msgr2_auth_result *res)
{
	struct msgr2_auth_cephx *cx = priv;
	struct cx_cur c = { in, len }, sec, extra;
	u8 buf[CEPHX_DEC_MAX];
	u32 op, result, used, slen = 0;
	const u8 *p;
	int n, ret = -EBADMSG;

	memset(buf, 0, sizeof(buf));
	cx_forget_tickets(cx);
	if (cx->state != CX_MORE_SENT)
		goto out;
	if (cur_bytes(&c, 2, &p))
		goto out;
	op = msgr2_get_le16(p);
	if (op != MSGR2_CEPHX_GET_AUTH_SESSION_KEY || cur_le32(&c, &result))
		goto out;
	if (result) {
		ret = -EACCES;
		goto out;
	}
	ret = cx_ticket_reply(&c, cx->key, cx, true);
	if (ret)
		goto out;
	ret = -EBADMSG;
	if (!cx->auth.service)
		goto out;

	/*
	 * Connection secret and extra tickets: present only when other_keys
	 * was non-zero; the end of the payload means both are absent.  The
	 * extra tickets' client parts are sealed with the AUTH session key.
	 */
	if (c.left) {
		if (cur_blob(&c, &sec))
			goto out;
		if (sec.left) {
			n = msgr2_cephx_decrypt(cx->auth.session_key, sec.p,
						sec.left, &used, buf,
						sizeof(buf));
			if (n < 4 || used != sec.left)
				goto out;
			slen = msgr2_get_le32(buf + CEPHX_HDR_LEN);
			if (slen > (u32)n - 4)
				goto out;
		}
		if (cur_blob(&c, &extra) || c.left)
			goto out;
		if (extra.left &&
		    (cx_ticket_reply(&extra, cx->auth.session_key, cx, false) ||
		     extra.left))
			goto out;
	}

	if (con_mode == MSGR2_MODE_SECURE && slen < CEPHX_SECRET_MIN) {
		ret = -EPROTO;	/* never run SECURE without a secret */
		goto out;
	}

	memset(res, 0, sizeof(*res));
	res->global_id = global_id;
	res->session_key_len = MSGR2_CEPHX_KEY_LEN;
	memcpy(res->session_key, cx->auth.session_key, MSGR2_CEPHX_KEY_LEN);
	/* only the first 40 bytes are ever used; keep at most 64 */
	res->con_secret_len = min_t(u32, slen, sizeof(res->con_secret));
	memcpy(res->con_secret, buf + CEPHX_HDR_LEN + 4, res->con_secret_len);

	cx->global_id = global_id;
	cx->state = CX_DONE;
	ret = 0;
out:
	msgr2_wipe(buf, sizeof(buf));
	if (ret) {
		cx_forget_tickets(cx);
		cx->state = CX_IDLE;
	}
	return ret;
}

static void cephx_reset(void *priv)
{
	struct msgr2_auth_cephx *cx = priv;

	cx->state = CX_IDLE;
	msgr2_wipe(&cx->server_challenge, sizeof(cx->server_challenge));
	msgr2_wipe(&cx->client_challenge, sizeof(cx->client_challenge));
	cx_forget_tickets(cx);
}

const struct msgr2_auth_ops msgr2_auth_cephx_ops = {
	.method = MSGR2_AUTH_CEPHX,
	.request = cephx_request,
	.reply_more = cephx_reply_more,
	.done = cephx_done,
	.reset = cephx_reset,
};

/* ---- authorizer (client role towards a service) ------------------------ */

#define CEPHX_AUTHORIZER_V	1	/* AUTH_MODE_AUTHORIZER */
#define CEPHX_AUTHORIZE_V	2	/* CephXAuthorize struct_v */
#define CEPHX_AUTHORIZE_LEN	(1 + 8 + 1 + 8)
/* the sealed CephXAuthorize: le32 length + pad16(9 + 18) */
#define CEPHX_AUTHORIZE_ENC	(4 + 32)

enum {
	AZ_IDLE = 0,
	AZ_SENT,		/* authorizer sent without a challenge */
	AZ_CHALLENGED,		/* sent again with the server's challenge */
};

int msgr2_cephx_authorizer_init(struct msgr2_cephx_authorizer *az,
				const struct msgr2_auth_cephx *cx,
				u32 service)
{
	const struct msgr2_cephx_ticket *t;
	int i = cx_svc_idx(service);

	if (i < 0)
		return -EINVAL;
	t = &cx->svc[i];
	if (cx->state != CX_DONE || t->service != service)
		return -ENOKEY;
	if (t->too_big)
		return -EMSGSIZE;
	if (!t->blob_len)
		return -ENOKEY;
	memset(az, 0, sizeof(*az));
	az->global_id = cx->global_id;
	az->ticket = *t;
	return 0;
}

/*
 * u8 1, le64 global_id, le32 service, CephXTicketBlob, then CephXAuthorize
 * {u8 2, le64 nonce, u8 have_challenge, le64 challenge + 1} sealed with
 * the ticket's session key.
 */
static int az_build(struct msgr2_cephx_authorizer *az, const u64 *challenge,
		    u8 *out, u32 cap)
{
	const struct msgr2_cephx_ticket *t = &az->ticket;
	u8 msg[CEPHX_AUTHORIZE_LEN];
	u32 off = 1 + 8 + 4 + 1 + 8;
	int n;

	if (cap < off + 4 + t->blob_len + CEPHX_AUTHORIZE_ENC)
		return -ENOSPC;
	out[0] = CEPHX_AUTHORIZER_V;
	msgr2_put_le64(out + 1, az->global_id);
	msgr2_put_le32(out + 9, t->service);
	out[13] = 1;				/* CephXTicketBlob v1 */
	msgr2_put_le64(out + 14, t->secret_id);
	msgr2_put_le32(out + off, t->blob_len);
	memcpy(out + off + 4, t->blob, t->blob_len);
	off += 4 + t->blob_len;

	msg[0] = CEPHX_AUTHORIZE_V;
	msgr2_put_le64(msg + 1, az->nonce);
	msg[9] = challenge ? 1 : 0;
	msgr2_put_le64(msg + 10, challenge ? *challenge + 1 : 0);
	n = msgr2_cephx_encrypt(t->session_key, msg, sizeof(msg), out + off,
				cap - off);
	msgr2_wipe(msg, sizeof(msg));
	if (n < 0)
		return n;
	return (int)(off + n);
}

static int az_request(void *priv, u8 *out, u32 cap)
{
	struct msgr2_cephx_authorizer *az = priv;

	if (!az->ticket.service || !az->ticket.blob_len)
		return -ENOKEY;
	msgr2_random(&az->nonce, sizeof(az->nonce));
	az->state = AZ_SENT;
	return az_build(az, NULL, out, cap);
}

/* AUTH_REPLY_MORE: CephXAuthorizeChallenge {u8 1, le64}, no length prefix */
static int az_reply_more(void *priv, const u8 *in, u32 len, u8 *out,
			 u32 cap)
{
	struct msgr2_cephx_authorizer *az = priv;
	u8 buf[32];
	u64 challenge;
	int n;

	if (az->state != AZ_SENT || len > sizeof(buf))
		return -EBADMSG;
	n = cx_decrypt_raw(az->ticket.session_key, in, len, buf, sizeof(buf));
	if (n < 0)
		return n;
	if (n < 9 || buf[CEPHX_HDR_LEN] != 1) {
		msgr2_wipe(buf, sizeof(buf));
		return -EBADMSG;
	}
	challenge = msgr2_get_le64(buf + CEPHX_HDR_LEN + 1);
	msgr2_wipe(buf, sizeof(buf));
	az->state = AZ_CHALLENGED;
	n = az_build(az, &challenge, out, cap);
	msgr2_wipe(&challenge, sizeof(challenge));
	return n;
}

/*
 * AUTH_DONE: CephXAuthorizeReply {u8 v, le64 nonce + 1, v2: le32 length +
 * connection secret}, sealed.  The connection's session key is the
 * ticket's.
 */
static int az_done(void *priv, u64 global_id, u32 con_mode, const u8 *in,
		   u32 len, struct msgr2_auth_result *res)
{
	struct msgr2_cephx_authorizer *az = priv;
	u8 buf[CEPHX_DEC_MAX];
	struct cx_cur c;
	u32 used, slen = 0;
	const u8 *sec = NULL;
	u64 nonce1;
	u8 v;
	int n, ret = -EBADMSG;

	if (az->state != AZ_CHALLENGED && az->state != AZ_SENT)
		return -EBADMSG;
	n = msgr2_cephx_decrypt(az->ticket.session_key, in, len, &used, buf,
				sizeof(buf));
	if (n < 0 || used != len)
		goto out;
	c.p = buf + CEPHX_HDR_LEN;
	c.left = n;
	if (cur_u8(&c, &v) || v < 1 || cur_le64(&c, &nonce1))
		goto out;
	if (v >= 2 && (cur_le32(&c, &slen) || cur_bytes(&c, slen, &sec)))
		goto out;
	if (nonce1 != az->nonce + 1) {
		ret = -EACCES;		/* not the service the ticket is for */
		goto out;
	}
	if (con_mode == MSGR2_MODE_SECURE && slen < CEPHX_SECRET_MIN) {
		ret = -EPROTO;
		goto out;
	}
	memset(res, 0, sizeof(*res));
	res->global_id = global_id;
	res->session_key_len = MSGR2_CEPHX_KEY_LEN;
	memcpy(res->session_key, az->ticket.session_key, MSGR2_CEPHX_KEY_LEN);
	res->con_secret_len = min_t(u32, slen, sizeof(res->con_secret));
	if (sec)
		memcpy(res->con_secret, sec, res->con_secret_len);
	ret = 0;
out:
	msgr2_wipe(buf, sizeof(buf));
	az->state = AZ_IDLE;
	return ret;
}

static void az_reset(void *priv)
{
	struct msgr2_cephx_authorizer *az = priv;

	az->state = AZ_IDLE;
	msgr2_wipe(&az->nonce, sizeof(az->nonce));
}

const struct msgr2_auth_ops msgr2_auth_cephx_authorizer_ops = {
	.method = MSGR2_AUTH_CEPHX,
	.request = az_request,
	.reply_more = az_reply_more,
	.done = az_done,
	.reset = az_reset,
};

/* ---- server role -------------------------------------------------------- */

#define CEPHX_VALIDITY_S	3600	/* of the AUTH ticket we issue */
#define CEPHX_SECRET_LEN	64	/* connection secret we issue */
#define CEPHX_BLOB_LEN		32	/* opaque ticket blob */
/* client part of an AUTH ticket: u8 1, CryptoKey, utime validity */
#define CEPHX_PART_LEN		(1 + CEPHX_KEY_ENC_LEN + 8)

enum {
	CX_SRV_IDLE = 0,
	CX_SRV_CHALLENGED,	/* AUTH_REPLY_MORE (challenge) sent */
	CX_SRV_DONE,
};

/* le32 length + bytes, bounds-checked */
static int put_blob(u8 *out, u32 cap, u32 *off, const u8 *p, u32 n)
{
	if (*off > cap || cap - *off < 4 || cap - *off - 4 < n)
		return -ENOSPC;
	msgr2_put_le32(out + *off, n);
	memcpy(out + *off + 4, p, n);
	*off += 4 + n;
	return 0;
}

/* ceph_x_encrypt() of @in, itself wrapped in a blob (le32 length) */
static int put_encrypted_blob(u8 *out, u32 cap, u32 *off, const u8 key[16],
			      const u8 *in, u32 len)
{
	int n;

	if (*off > cap || cap - *off < 4)
		return -ENOSPC;
	n = msgr2_cephx_encrypt(key, in, len, out + *off + 4,
				cap - *off - 4);
	if (n < 0)
		return n;
	msgr2_put_le32(out + *off, (u32)n);
	*off += 4 + (u32)n;
	return 0;
}

/* AUTH_REQUEST: u8 10 (mon), EntityName, le64 global_id -> challenge */
static int cx_srv_challenge(struct msgr2_auth_cephx_server *sv, const u8 *in,
			    u32 len, u8 *out, u32 cap, u32 *out_len)
{
	struct cx_cur c = { in, len }, name;
	u32 type, i;
	u64 gid;
	u8 mode;

	if (cur_u8(&c, &mode) || cur_le32(&c, &type) || cur_blob(&c, &name) ||
	    cur_le64(&c, &gid) || c.left)
		return -EBADMSG;
	if (mode != CEPHX_MODE_MON)
		return -EOPNOTSUPP;	/* authorizers: no service tickets */
	if (!name.left || name.left >= MSGR2_CEPHX_NAME_MAX)
		return -EACCES;
	/*
	 * An entity we hold no key for is challenged too, and refused only
	 * with the proof (cx_srv_authenticate()), as a wrong key is: the
	 * answer to a request tells no one which entities are known.
	 */
	sv->who = NULL;
	for (i = 0; i < sv->n_keys; i++) {
		const struct msgr2_cephx_entity *e = &sv->keys[i];

		if (e->entity_type == type &&
		    !memcmp(e->name, name.p, name.left) &&
		    !e->name[name.left]) {
			sv->who = e;
			break;
		}
	}
	if (cap < 9)
		return -ENOSPC;
	/*
	 * Never the client's global_id: it may ask to keep its old one only
	 * with the ticket that proves it (Ceph since 16.2.1, CVE-2021-20288),
	 * and this server keeps no tickets to check one against.  The one
	 * this connection was given, however many times it asks: a new one
	 * per request would reach into ids the owner hands to other
	 * connections.
	 */
	if (!sv->give_global_id)
		sv->give_global_id = 4096;
	sv->global_id = sv->give_global_id;
	do
		msgr2_random(&sv->server_challenge,
			     sizeof(sv->server_challenge));
	while (!sv->server_challenge);
	/* CephXServerChallenge: u8 struct_v = 1, le64 server_challenge */
	out[0] = 1;
	msgr2_put_le64(out + 1, sv->server_challenge);
	*out_len = 9;
	sv->state = CX_SRV_CHALLENGED;
	return 1;
}

/* The proof a client computes from its secret and both challenges. */
static int cx_proof(const u8 key[16], u64 server_challenge,
		    u64 client_challenge, u8 proof[8])
{
	u8 chal[16], enc[4 + 32];
	u64 k;
	int ret;

	msgr2_put_le64(chal, server_challenge);
	msgr2_put_le64(chal + 8, client_challenge);
	ret = msgr2_cephx_encrypt(key, chal, sizeof(chal), enc, sizeof(enc));
	if (ret == sizeof(enc)) {
		k = msgr2_get_le64(enc) ^ msgr2_get_le64(enc + 8) ^
		    msgr2_get_le64(enc + 16) ^ msgr2_get_le64(enc + 24);
		msgr2_put_le64(proof, k);
		ret = 0;
	} else if (ret >= 0) {
		ret = -EINVAL;
	}
	msgr2_wipe(enc, sizeof(enc));
	msgr2_wipe(chal, sizeof(chal));
	return ret;
}

/*
 * AUTH_REQUEST_MORE: le16 GET_AUTH_SESSION_KEY, CephXAuthenticate (v1-3)
 * -> AUTH_DONE payload: le16 op, s32 0, the AUTH ticket reply, the
 * connection secret (encrypted with the session key), no extra tickets.
 */
static int cx_srv_authenticate(struct msgr2_auth_cephx_server *sv,
			       const u8 *in, u32 len, u8 *out, u32 cap,
			       u32 *out_len, struct msgr2_auth_result *res)
{
	struct cx_cur c = { in, len }, old;
	u8 part[CEPHX_PART_LEN], secret[4 + CEPHX_SECRET_LEN];
	u8 tk[1 + 8 + 4 + CEPHX_BLOB_LEN], proof[8], got[8], skey[16];
	static const u8 no_tickets[5] = { 1 };
	static const u8 no_key[MSGR2_CEPHX_KEY_LEN];
	u64 cchal, key, secret_id;
	u32 other = 0, off = 0;
	const u8 *p;
	u8 v, tv;
	int ret = -EBADMSG;

	if (sv->state != CX_SRV_CHALLENGED)
		return -EBADMSG;
	if (cur_bytes(&c, 2, &p) ||
	    msgr2_get_le16(p) != MSGR2_CEPHX_GET_AUTH_SESSION_KEY ||
	    cur_u8(&c, &v) || v < 1 || v > CEPHX_AUTHENTICATE_V ||
	    cur_le64(&c, &cchal) || cur_le64(&c, &key) ||
	    cur_u8(&c, &tv) || tv != 1 || cur_le64(&c, &secret_id) ||
	    cur_blob(&c, &old) || (v >= 2 && cur_le32(&c, &other)) || c.left)
		goto out;
	/* an unknown entity's proof is checked against no key, as long */
	ret = cx_proof(sv->who ? sv->who->key : no_key, sv->server_challenge,
		       cchal, proof);
	if (ret)
		goto out;
	msgr2_put_le64(got, key);
	if (msgr2_memneq(proof, got, sizeof(proof)) || !sv->who) {
		ret = -EACCES;		/* wrong secret, or no key here */
		goto out;
	}

	msgr2_random(skey, sizeof(skey));
	/* client part: u8 1, CryptoKey (AES, created 0), utime validity */
	memset(part, 0, sizeof(part));
	part[0] = 1;
	msgr2_put_le16(part + 1, CEPHX_CRYPTO_AES);
	msgr2_put_le16(part + 11, MSGR2_CEPHX_KEY_LEN);
	memcpy(part + 13, skey, sizeof(skey));
	msgr2_put_le32(part + 1 + CEPHX_KEY_ENC_LEN, CEPHX_VALIDITY_S);
	/* the ticket, in clear: u8 1, le64 secret_id, opaque blob */
	tk[0] = 1;
	msgr2_put_le64(tk + 1, 1);
	msgr2_put_le32(tk + 9, CEPHX_BLOB_LEN);
	msgr2_random(tk + 13, CEPHX_BLOB_LEN);
	/* connection secret: le32 length + bytes */
	msgr2_put_le32(secret, CEPHX_SECRET_LEN);
	msgr2_random(secret + 4, CEPHX_SECRET_LEN);

	ret = -ENOSPC;
	if (cap < 2 + 4 + 1 + 4 + 4 + 1)
		goto out;
	msgr2_put_le16(out, MSGR2_CEPHX_GET_AUTH_SESSION_KEY);
	msgr2_put_le32(out + 2, 0);		/* result */
	out[6] = 1;				/* ticket reply v1 */
	msgr2_put_le32(out + 7, 1);		/* one ticket */
	msgr2_put_le32(out + 11, MSGR2_ENTITY_AUTH);
	out[15] = 1;
	off = 16;
	ret = msgr2_cephx_encrypt(sv->who->key, part, sizeof(part), out + off,
				  cap - off);
	if (ret < 0)
		goto out;
	off += (u32)ret;
	if (off >= cap) {
		ret = -ENOSPC;
		goto out;
	}
	out[off++] = 0;				/* ticket not encrypted */
	ret = put_blob(out, cap, &off, tk, sizeof(tk));
	if (!ret)
		ret = put_encrypted_blob(out, cap, &off, skey, secret,
					 sizeof(secret));
	if (!ret)	/* extra service tickets: a reply with none */
		ret = put_blob(out, cap, &off, no_tickets, sizeof(no_tickets));
	if (ret)
		goto out;

	memset(res, 0, sizeof(*res));
	res->global_id = sv->global_id;
	res->entity_type = sv->who->entity_type;
	res->session_key_len = MSGR2_CEPHX_KEY_LEN;
	memcpy(res->session_key, skey, sizeof(skey));
	res->con_secret_len = CEPHX_SECRET_LEN;
	memcpy(res->con_secret, secret + 4, CEPHX_SECRET_LEN);
	*out_len = off;
	sv->state = CX_SRV_DONE;
	ret = 0;
out:
	msgr2_wipe(part, sizeof(part));
	msgr2_wipe(secret, sizeof(secret));
	msgr2_wipe(skey, sizeof(skey));
	msgr2_wipe(proof, sizeof(proof));
	if (ret)
		msgr2_wipe(out, min_t(u32, off, cap));
	return ret;
}

static int cephx_accept(void *priv, bool more, u32 con_mode, const u8 *in,
			u32 len, u8 *out, u32 cap, u32 *out_len,
			struct msgr2_auth_result *res)
{
	struct msgr2_auth_cephx_server *sv = priv;

	*out_len = 0;
	if (!more)
		return cx_srv_challenge(sv, in, len, out, cap, out_len);
	return cx_srv_authenticate(sv, in, len, out, cap, out_len, res);
}

static void cephx_server_reset(void *priv)
{
	struct msgr2_auth_cephx_server *sv = priv;

	sv->state = CX_SRV_IDLE;
	sv->who = NULL;
	sv->global_id = 0;
	msgr2_wipe(&sv->server_challenge, sizeof(sv->server_challenge));
}

int msgr2_auth_cephx_server_who(const struct msgr2_auth_cephx_server *sv)
{
	return sv->state == CX_SRV_DONE && sv->who ?
	       (int)(sv->who - sv->keys) : -1;
}

const struct msgr2_auth_ops msgr2_auth_cephx_server_ops = {
	.method = MSGR2_AUTH_CEPHX,
	.accept = cephx_accept,
	.reset = cephx_server_reset,
};

// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr msgr2 engine - primitive encodings on a bounded cursor.
 *
 * Encoders stop writing at the first field that does not fit and set
 * e->err; decoders stop at the first field that would run past the end,
 * set d->err and return zeroes from then on.  Callers check the flag once
 * after a whole structure.
 */
#include "msgr2_int.h"

/* ---- encoding ------------------------------------------------------------ */

u8 *m2_enc_reserve(struct m2_enc *e, u32 n)
{
	u8 *p;

	if (e->err || n > e->cap - e->off) {
		e->err = true;
		return NULL;
	}
	p = e->p + e->off;
	e->off += n;
	return p;
}

void m2_enc_u8(struct m2_enc *e, u8 v)
{
	u8 *p = m2_enc_reserve(e, 1);

	if (p)
		*p = v;
}

void m2_enc_le16(struct m2_enc *e, u16 v)
{
	u8 *p = m2_enc_reserve(e, 2);

	if (p)
		msgr2_put_le16(p, v);
}

void m2_enc_le32(struct m2_enc *e, u32 v)
{
	u8 *p = m2_enc_reserve(e, 4);

	if (p)
		msgr2_put_le32(p, v);
}

void m2_enc_le64(struct m2_enc *e, u64 v)
{
	u8 *p = m2_enc_reserve(e, 8);

	if (p)
		msgr2_put_le64(p, v);
}

void m2_enc_bytes(struct m2_enc *e, const void *src, u32 n)
{
	u8 *p = m2_enc_reserve(e, n);

	if (p && n)
		memcpy(p, src, n);
}

/* entity_addr_t, ADDR2 form (msgr2.md 1.1) */
void m2_enc_addr(struct m2_enc *e, const struct msgr2_addr *a)
{
	u32 len = min_t(u32, a->len, sizeof(a->sa));

	m2_enc_u8(e, 1);		/* marker: ADDR2 */
	m2_enc_u8(e, 1);		/* struct_v */
	m2_enc_u8(e, 1);		/* struct_compat */
	m2_enc_le32(e, 12 + len);
	m2_enc_le32(e, a->type);
	m2_enc_le32(e, a->nonce);
	m2_enc_le32(e, len);
	m2_enc_bytes(e, a->sa, len);
}

void m2_enc_addrvec(struct m2_enc *e, const struct msgr2_addrvec *v)
{
	u32 i, n = min_t(u32, v->n, MSGR2_MAX_ADDRS);

	m2_enc_u8(e, 2);		/* marker: addrvec */
	m2_enc_le32(e, n);
	for (i = 0; i < n; i++)
		m2_enc_addr(e, &v->a[i]);
}

void m2_enc_u32vec(struct m2_enc *e, const u32 *v, u32 n)
{
	u32 i;

	m2_enc_le32(e, n);
	for (i = 0; i < n; i++)
		m2_enc_le32(e, v[i]);
}

/* ---- decoding ------------------------------------------------------------ */

const u8 *m2_dec_bytes(struct m2_dec *d, u32 n)
{
	const u8 *p;

	if (d->err || n > d->len - d->off) {
		d->err = true;
		return NULL;
	}
	p = d->p + d->off;
	d->off += n;
	return p;
}

u8 m2_dec_u8(struct m2_dec *d)
{
	const u8 *p = m2_dec_bytes(d, 1);

	return p ? *p : 0;
}

u16 m2_dec_le16(struct m2_dec *d)
{
	const u8 *p = m2_dec_bytes(d, 2);

	return p ? msgr2_get_le16(p) : 0;
}

u32 m2_dec_le32(struct m2_dec *d)
{
	const u8 *p = m2_dec_bytes(d, 4);

	return p ? msgr2_get_le32(p) : 0;
}

u64 m2_dec_le64(struct m2_dec *d)
{
	const u8 *p = m2_dec_bytes(d, 8);

	return p ? msgr2_get_le64(p) : 0;
}

const u8 *m2_dec_blob(struct m2_dec *d, u32 *len)
{
	u32 n = m2_dec_le32(d);
	const u8 *p = m2_dec_bytes(d, n);

	*len = p ? n : 0;
	return p;
}

int m2_dec_addr(struct m2_dec *d, struct msgr2_addr *a)
{
	u32 struct_len, elen, end;
	const u8 *sa;
	u8 marker, compat;

	memset(a, 0, sizeof(*a));
	marker = m2_dec_u8(d);
	m2_dec_u8(d);			/* struct_v */
	compat = m2_dec_u8(d);
	struct_len = m2_dec_le32(d);
	if (d->err || marker != 1 || compat > 1 || struct_len < 12 ||
	    struct_len > d->len - d->off)
		goto bad;
	end = d->off + struct_len;
	a->type = m2_dec_le32(d);
	a->nonce = m2_dec_le32(d);
	elen = m2_dec_le32(d);
	if (elen > sizeof(a->sa) || elen > struct_len - 12)
		goto bad;
	sa = m2_dec_bytes(d, elen);
	if (!sa)
		goto bad;
	memcpy(a->sa, sa, elen);
	a->len = elen;
	d->off = end;			/* skip fields of newer versions */
	return 0;
bad:
	d->err = true;
	return -EINVAL;
}

/*
 * Decode an entity_addrvec_t; the first MSGR2_MAX_ADDRS entries are kept.
 * When @find is given, *@found tells whether any entry equals it.
 */
int m2_dec_addrvec(struct m2_dec *d, struct msgr2_addrvec *v,
		   const struct msgr2_addr *find, bool *found)
{
	struct msgr2_addr a;
	u32 i, n;

	memset(v, 0, sizeof(*v));
	if (found)
		*found = false;
	if (m2_dec_u8(d) != 2)
		goto bad;
	n = m2_dec_le32(d);
	if (d->err || n > M2_MAX_ADDRVEC)
		goto bad;
	for (i = 0; i < n; i++) {
		if (m2_dec_addr(d, &a))
			goto bad;
		if (find && found && msgr2_addr_equal(&a, find))
			*found = true;
		if (v->n < MSGR2_MAX_ADDRS)
			v->a[v->n++] = a;
	}
	return 0;
bad:
	d->err = true;
	return -EINVAL;
}

int m2_dec_u32vec(struct m2_dec *d, u32 *v, u32 max, u32 *n)
{
	u32 i, cnt = m2_dec_le32(d);

	*n = 0;
	if (d->err || cnt > M2_MAX_VEC || cnt > m2_dec_left(d) / 4) {
		d->err = true;
		return -EINVAL;
	}
	for (i = 0; i < cnt; i++) {
		u32 x = m2_dec_le32(d);

		if (i < max)
			v[i] = x;
	}
	*n = min_t(u32, cnt, max);
	return d->err ? -EINVAL : 0;
}

/* ---- ceph_msg_header2 (msgr2.md 9) --------------------------------------- */

void m2_hdr2_encode(u8 *p, const struct msgr2_msg_hdr *h)
{
	msgr2_put_le64(p + 0, h->seq);
	msgr2_put_le64(p + 8, h->tid);
	msgr2_put_le16(p + 16, h->type);
	msgr2_put_le16(p + 18, h->priority);
	msgr2_put_le16(p + 20, h->version);
	msgr2_put_le32(p + 22, h->data_pre_padding_len);
	msgr2_put_le16(p + 26, h->data_off);
	msgr2_put_le64(p + 28, h->ack_seq);
	p[36] = h->flags;
	msgr2_put_le16(p + 37, h->compat_version);
	msgr2_put_le16(p + 39, 0);
}

void m2_hdr2_decode(const u8 *p, struct msgr2_msg_hdr *h)
{
	h->seq = msgr2_get_le64(p + 0);
	h->tid = msgr2_get_le64(p + 8);
	h->type = msgr2_get_le16(p + 16);
	h->priority = msgr2_get_le16(p + 18);
	h->version = msgr2_get_le16(p + 20);
	h->data_pre_padding_len = msgr2_get_le32(p + 22);
	h->data_off = msgr2_get_le16(p + 26);
	h->ack_seq = msgr2_get_le64(p + 28);
	h->flags = p[36];
	h->compat_version = msgr2_get_le16(p + 37);
}

/* ---- addresses ----------------------------------------------------------- */

void msgr2_addr_ipv4(struct msgr2_addr *a, u32 type, u32 nonce,
		     const u8 ip[4], u16 port)
{
	memset(a, 0, sizeof(*a));
	a->type = type;
	a->nonce = nonce;
	a->len = 16;
	msgr2_put_le16(a->sa, 2);	/* AF_INET, little-endian */
	a->sa[2] = port >> 8;		/* big-endian port */
	a->sa[3] = port & 0xff;
	memcpy(a->sa + 4, ip, 4);
}

bool msgr2_addr_equal(const struct msgr2_addr *a, const struct msgr2_addr *b)
{
	return a->type == b->type && a->nonce == b->nonce &&
	       a->len == b->len && !memcmp(a->sa, b->sa, sizeof(a->sa));
}

/* a default entity_addr_t: type 0, nonce 0, family 0 (C8) */
bool m2_addr_is_blank(const struct msgr2_addr *a)
{
	return !a->type && !a->nonce && !msgr2_get_le16(a->sa);
}

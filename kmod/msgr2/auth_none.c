// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr msgr2 engine - AUTH_NONE (method 1), both roles (msgr2.md 7.1-7.3).
 *
 * No keys: AUTH_SIGNATURE carries 32 zero bytes and only crc mode is
 * possible.  The payload is the auth mode byte (10 = talking to a mon,
 * 1 = authorizer for a service), the EntityName and the global_id.
 */
#include "msgr2_int.h"

#define M2_AUTH_MODE_AUTHORIZER	1
#define M2_AUTH_MODE_MON	10
#define M2_AUTH_MODE_MON_MAX	19
#define M2_NONE_FIRST_GID	4096

static int m2_none_request(void *priv, u8 *out, u32 cap)
{
	const struct msgr2_auth_none *an = priv;
	u32 nlen = strnlen(an->name, sizeof(an->name));
	bool mon = !an->peer_type || an->peer_type == MSGR2_ENTITY_MON;
	struct m2_enc e;

	m2_enc_init(&e, out, cap);
	m2_enc_u8(&e, mon ? M2_AUTH_MODE_MON : M2_AUTH_MODE_AUTHORIZER);
	m2_enc_le32(&e, an->entity_type);
	m2_enc_le32(&e, nlen);
	m2_enc_bytes(&e, an->name, nlen);
	m2_enc_le64(&e, an->global_id);
	return e.err ? -ENOSPC : (int)e.off;
}

static int m2_none_reply_more(void *priv, const u8 *in, u32 len, u8 *out,
			      u32 cap)
{
	return -EPROTO;			/* AUTH_NONE has a single round */
}

static int m2_none_done(void *priv, u64 global_id, u32 con_mode,
			const u8 *in, u32 len, struct msgr2_auth_result *res)
{
	struct msgr2_auth_none *an = priv;

	if (con_mode != MSGR2_MODE_CRC)
		return -EPROTO;
	memset(res, 0, sizeof(*res));
	res->global_id = global_id;
	an->global_id = global_id;
	return 0;
}

static int m2_none_accept(void *priv, bool more, u32 con_mode, const u8 *in,
			  u32 len, u8 *out, u32 cap, u32 *out_len,
			  struct msgr2_auth_result *res)
{
	struct msgr2_auth_none *an = priv;
	struct m2_dec d;
	u64 global_id;
	u8 mode;

	*out_len = 0;
	if (more || con_mode != MSGR2_MODE_CRC)
		return -EOPNOTSUPP;
	if (!len)
		return -EACCES;
	m2_dec_init(&d, in, len);
	mode = m2_dec_u8(&d);
	if (mode < M2_AUTH_MODE_AUTHORIZER || mode > M2_AUTH_MODE_MON_MAX)
		return -EACCES;
	m2_dec_le32(&d);		/* entity type */
	m2_dec_blob(&d, &len);		/* entity id */
	global_id = m2_dec_le64(&d);
	if (d.err)
		return -EACCES;
	if (!global_id) {
		if (an->next_global_id < M2_NONE_FIRST_GID)
			an->next_global_id = M2_NONE_FIRST_GID;
		global_id = an->next_global_id++;
	}
	memset(res, 0, sizeof(*res));
	res->global_id = global_id;
	return 0;
}

const struct msgr2_auth_ops msgr2_auth_none_ops = {
	.method = MSGR2_AUTH_NONE,
	.request = m2_none_request,
	.reply_more = m2_none_reply_more,
	.done = m2_none_done,
	.accept = m2_none_accept,
};

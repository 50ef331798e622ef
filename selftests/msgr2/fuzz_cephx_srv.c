// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the cephx server role (what a kmsgr listener with a
 * keyring runs on any client's AUTH_REQUEST before it has authenticated):
 * msgr2_auth_cephx_server_ops.accept() on an arbitrary first request
 * (GET_AUTH_SESSION_KEY, CephXServerChallenge back) and an arbitrary
 * second one (CephXAuthenticate, the AUTH ticket and the connection
 * secret back), into an output buffer of exactly the capacity given, so
 * that the sanitizers see any write past it.
 *
 * Input: byte 0 = control
 *   bit 0     secure mode (else crc)
 *   bit 1     write the right proof into the second request (at offset
 *             11, from the challenge sent and the request's own client
 *             challenge at offset 3), so that the parsing after the
 *             proof check is reached
 *   bit 2     skip the first request: the second comes first
 *   bits 3-5  output capacity (bytes): 0, 8, 9, 16, 64, 128, 256, 512
 * bytes 1-2   le16 length of the first request, then its bytes, then the
 *             second request (the rest).
 * Seeds: corpus/fuzz_cephx_srv/ (mkcorpus.sh).
 *
 * Asserts beyond the sanitizers: only the documented results come back
 * (1 with a challenge, 0 when done, or -EBADMSG, -EACCES, -EOPNOTSUPP,
 * -ENOSPC), never more output than the capacity, and a finished exchange
 * names a configured entity and a connection secret that fits.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "msgr2.h"
#include "auth_cephx.h"

static const u32 caps[8] = { 0, 8, 9, 16, 64, 128, 256, 512 };

static const struct msgr2_cephx_entity keys[2] = {
	{ MSGR2_ENTITY_CLIENT, "admin", { 0x8e, 0xb2, 0xfa, 0xc1, 0x64, 0xd1,
	  0xf5, 0xad, 0x73, 0x11, 0xdd, 0x59, 0xd3, 0xc4, 0x65, 0xa5 } },
	{ MSGR2_ENTITY_OSD, "0", { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
	  14, 15, 16 } },
};

/* The client's proof for @key and the two challenges, as a client makes it */
static void proof(const u8 key[16], u64 server_challenge,
		  u64 client_challenge, u8 out[8])
{
	u8 chal[16], enc[4 + 32];
	u64 k;

	msgr2_put_le64(chal, server_challenge);
	msgr2_put_le64(chal + 8, client_challenge);
	if (msgr2_cephx_encrypt(key, chal, sizeof(chal), enc,
				sizeof(enc)) != sizeof(enc))
		abort();
	k = msgr2_get_le64(enc) ^ msgr2_get_le64(enc + 8) ^
	    msgr2_get_le64(enc + 16) ^ msgr2_get_le64(enc + 24);
	msgr2_put_le64(out, k);
}

static void check(int ret, bool more, u32 out_len, u32 cap)
{
	if (ret != 0 && ret != -EBADMSG && ret != -EACCES &&
	    ret != -EOPNOTSUPP && ret != -ENOSPC && !(ret == 1 && !more))
		abort();
	if (ret >= 0 && out_len > cap)
		abort();
	if (ret == 0 && !more)
		abort();	/* the first request never finishes */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct msgr2_auth_ops *ops = &msgr2_auth_cephx_server_ops;
	struct msgr2_auth_cephx_server sv;
	struct msgr2_auth_result res;
	u32 mode, cap, len1, len2, out_len = 0;
	u8 *out, *req2 = NULL;
	const u8 *req1;
	int ret, who;

	if (size < 3)
		return 0;
	mode = data[0] & 1 ? MSGR2_MODE_SECURE : MSGR2_MODE_CRC;
	cap = caps[(data[0] >> 3) & 7];
	len1 = msgr2_get_le16(data + 1);
	if (len1 > size - 3)
		len1 = size - 3;
	req1 = data + 3;
	len2 = size - 3 - len1;

	memset(&sv, 0, sizeof(sv));
	sv.keys = keys;
	sv.n_keys = 2;
	memset(&res, 0, sizeof(res));
	/* exactly @cap bytes: ASan catches a write past them */
	out = malloc(cap ? cap : 1);
	if (!out)
		return 0;

	if (!(data[0] & 4)) {
		ret = ops->accept(&sv, false, mode, req1, len1, out, cap,
				  &out_len, &res);
		check(ret, false, out_len, cap);
		if (ret != 1)
			goto out;
	}
	/* a copy of exactly its length, so that the proof can be fixed */
	req2 = malloc(len2 ? len2 : 1);
	if (!req2)
		goto out;
	memcpy(req2, req1 + len1, len2);
	if ((data[0] & 2) && sv.who && len2 >= 19)
		proof(sv.who->key, sv.server_challenge,
		      msgr2_get_le64(req2 + 3), req2 + 11);
	out_len = 0;
	ret = ops->accept(&sv, true, mode, req2, len2, out, cap, &out_len,
			  &res);
	check(ret, true, out_len, cap);
	who = msgr2_auth_cephx_server_who(&sv);
	if (ret == 0 && (who < 0 || who >= 2 || !res.global_id ||
			 res.con_secret_len > sizeof(res.con_secret) ||
			 res.session_key_len > sizeof(res.session_key)))
		abort();
	if (ret != 0 && who >= 0)
		abort();	/* refused, yet authenticated */
out:
	ops->reset(&sv);
	free(req2);
	free(out);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - cephx secrets from the kernel's key retention service, so that
 * a key never has to pass through the process that opens sessions: a
 * "logon" key (user space can add and use it, never read it back, as cifs
 * and ecryptfs keep theirs) whose payload is the 16-byte cephx secret.
 * CONNECT names it by its description (struct kmsgr_connect.key_desc,
 * which must start with "kmsgr:"); a
 * cephx listener's entry with KMSGR_LISTEN_KEY_F_LOGON takes the key
 * "kmsgr:TYPE.ID" (e.g. "kmsgr:client.admin").  The key is looked up in
 * the caller's keyrings at the ioctl, as request_key() searches them
 * (thread, process, session; the user keyring through the session
 * keyring's usual link to it, or when there is no session keyring), with
 * no upcall; its bytes are copied and the key put at once.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <linux/err.h>
#include <linux/key.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <keys/user-type.h>

#include "kmsgr.h"

#if IS_ENABLED(CONFIG_KEYS)
int kmsgr_key_logon(const char *desc, u8 *secret, size_t len)
{
	const struct user_key_payload *p;
	struct key *key;
	int ret;

	/*
	 * kmsgr's own keys only: a caller may hold logon keys of other
	 * services (cifs, ecryptfs), and one of them used as a cephx secret
	 * would answer a server's challenges with another service's secret
	 */
	if (!str_has_prefix(desc, KMSGR_KEY_DESC_PREFIX))
		return -EINVAL;
	/* no callout: a key that is not there is -ENOKEY, not an upcall */
	key = request_key(&key_type_logon, desc, NULL);
	if (IS_ERR(key))
		return PTR_ERR(key);
	down_read(&key->sem);
	p = user_key_payload_locked(key);
	if (!p)
		ret = -EKEYREVOKED;
	else if (p->datalen != len)
		ret = -EKEYREJECTED;	/* not a raw cephx secret */
	else
		ret = 0;
	if (!ret)
		memcpy(secret, p->data, len);
	up_read(&key->sem);
	key_put(key);
	return ret;
}
#else
int kmsgr_key_logon(const char *desc, u8 *secret, size_t len)
{
	return -EOPNOTSUPP;
}
#endif

int kmsgr_key_entity_desc(char *buf, size_t size, u8 type, const char *id)
{
	static const char *const names[] = {
		[1] = "mon", [2] = "mds", [4] = "osd", [8] = "client",
		[16] = "mgr",
	};
	int n;

	if (type >= ARRAY_SIZE(names) || !names[type])
		return -EINVAL;
	n = snprintf(buf, size, KMSGR_KEY_DESC_PREFIX "%s.%s", names[type], id);
	return n < (int)size ? 0 : -ENAMETOOLONG;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl - what the ceph CLI takes from ceph.conf, for the mon verbs:
 * the monitors' addresses (mon host), the keyring and whether clients
 * authenticate (auth client required), from the sections [global],
 * [client] and [TYPE.ID] (later ones win), option names compared as Ceph
 * does (case, spaces and underscores alike); and the default keyring
 * search path.  $cluster, $type, $id and $name are expanded.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kmsgrctl.h"

/* "mon_host" and "mon host" and "Mon Host" are one option */
static void conf_key(char *k)
{
	for (; *k; k++)
		*k = *k == ' ' ? '_' : (char)tolower((unsigned char)*k);
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* How specific a section is for @name ("client.admin"): 0 none. */
static int section_rank(const char *sec, const char *name)
{
	if (!strcmp(sec, "global"))
		return 1;
	if (!strcmp(sec, "client"))
		return 2;
	if (!strcmp(sec, name))
		return 3;
	return 0;
}

static void conf_set(char *dst, size_t size, int *rank, int r,
		     const char *val)
{
	if (r >= *rank) {
		snprintf(dst, size, "%s", val);
		*rank = r;
	}
}

int ceph_conf_load(const char *path, const char *name, struct ceph_conf *cf)
{
	int r = 0, r_mon = 0, r_keyring = 0, r_auth = 0, r_ki = 0;
	char line[1024], sec[128] = "";
	FILE *f;

	memset(cf, 0, sizeof(*cf));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *s = trim(line), *eq, *k, *v, *c;

		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			c = strchr(s, ']');
			if (!c) {
				fclose(f);
				return -EINVAL;
			}
			*c = '\0';
			snprintf(sec, sizeof(sec), "%s", trim(s + 1));
			r = section_rank(sec, name);
			continue;
		}
		eq = strchr(s, '=');
		if (!eq || !r)
			continue;
		*eq = '\0';
		k = trim(s);
		v = trim(eq + 1);
		/* a comment after the value */
		c = strpbrk(v, "#;");
		if (c) {
			*c = '\0';
			v = trim(v);
		}
		conf_key(k);
		if (!strcmp(k, "mon_host"))
			conf_set(cf->mon_host, sizeof(cf->mon_host), &r_mon, r, v);
		else if (!strcmp(k, "keyring"))
			conf_set(cf->keyring, sizeof(cf->keyring), &r_keyring,
				 r, v);
		else if (!strcmp(k, "auth_client_required"))
			conf_set(cf->auth, sizeof(cf->auth), &r_auth, r, v);
		else if (!strcmp(k, "auth_supported") && r_auth <= 1)
			conf_set(cf->auth, sizeof(cf->auth), &r_ki, r, v);
	}
	fclose(f);
	return 0;
}

/*
 * Expand $cluster, $type, $id and $name of @in for entity @name
 * ("client.admin") into @out.
 */
void ceph_conf_expand(const char *in, const char *name, char *out,
		      size_t size)
{
	const char *dot = strchr(name, '.');
	size_t o = 0;

	while (*in && o + 1 < size) {
		const char *rep = NULL;
		size_t skip = 0, tlen = dot ? (size_t)(dot - name) : 0;
		char type[32];

		if (*in == '$') {
			if (!strncmp(in, "$cluster", 8)) {
				rep = "ceph";
				skip = 8;
			} else if (!strncmp(in, "$name", 5)) {
				rep = name;
				skip = 5;
			} else if (!strncmp(in, "$type", 5) && dot &&
				   tlen < sizeof(type)) {
				memcpy(type, name, tlen);
				type[tlen] = '\0';
				rep = type;
				skip = 5;
			} else if (!strncmp(in, "$id", 3) && dot) {
				rep = dot + 1;
				skip = 3;
			}
		}
		if (rep) {
			o += snprintf(out + o, size - o, "%s", rep);
			if (o >= size)
				o = size - 1;
			in += skip;
			continue;
		}
		out[o++] = *in++;
	}
	out[o] = '\0';
}

/*
 * The first keyring of @list (comma separated, as Ceph's keyring option)
 * that exists, expanded, into @out: 0, or -ENOENT when none does.
 */
int ceph_keyring_find(const char *list, const char *name, char *out,
		      size_t size)
{
	char buf[1024], *save = NULL, *p;

	snprintf(buf, sizeof(buf), "%s", list);
	for (p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		ceph_conf_expand(trim(p), name, out, size);
		if (*out && !access(out, R_OK))
			return 0;
	}
	*out = '\0';
	return -ENOENT;
}

/* Ceph's default keyring search path (when neither -k nor the conf says) */
const char ceph_default_keyrings[] =
	"/etc/ceph/$cluster.$name.keyring,/etc/ceph/$cluster.keyring,"
	"/etc/ceph/keyring,/etc/ceph/keyring.bin";

#define CEPH_MON_PORT		"3300"	/* msgr2 */
#define CEPH_MON_PORT_LEGACY	"6789"	/* msgr1 */

/*
 * One pass of ceph_mon_addr(): the msgr2 addresses, or (@v1) the msgr1
 * ones ("v1:" or port 6789), taken as the same host on the msgr2 port.
 */
static int mon_addr_pass(const char *mon_host, bool v1, char *out,
			 size_t size)
{
	char buf[512], *save = NULL, *tok;
	int ret = -EINVAL;

	snprintf(buf, sizeof(buf), "%s", mon_host);
	for (tok = strtok_r(buf, ",; \t", &save); tok;
	     tok = strtok_r(NULL, ",; \t", &save)) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
		char host[256], ip[INET6_ADDRSTRLEN], *p, *end;
		const char *port = CEPH_MON_PORT;
		struct addrinfo *res, *ai;
		bool legacy;
		size_t n;

		/* an address vector: [v2:...,v1:...] */
		if (tok[0] == '[' && (tok[1] == 'v' || tok[1] == 'a'))
			tok++;
		n = strlen(tok);
		if (n && tok[n - 1] == ']' &&
		    (!strchr(tok, '[') || strchr(tok, '/')))
			tok[--n] = '\0';
		legacy = !strncmp(tok, "v1:", 3);
		if (legacy || !strncmp(tok, "v2:", 3) ||
		    !strncmp(tok, "any:", 4))
			tok = strchr(tok, ':') + 1;
		p = strchr(tok, '/');
		if (p)
			*p = '\0';	/* the nonce */
		if (tok[0] == '[') {		/* [IPv6]:PORT */
			end = strchr(tok, ']');
			if (!end)
				continue;
			*end = '\0';
			snprintf(host, sizeof(host), "%s", tok + 1);
			if (end[1] == ':')
				port = end + 2;
		} else {
			snprintf(host, sizeof(host), "%s", tok);
			/* host:port; a bare IPv6 address has several colons */
			p = strrchr(host, ':');
			if (p && strchr(host, ':') == p) {
				*p = '\0';
				port = tok + (p - host) + 1;
			}
		}
		if (!*host || !*port)
			continue;
		legacy = legacy || !strcmp(port, CEPH_MON_PORT_LEGACY);
		if (legacy != v1)
			continue;
		if (legacy)
			port = CEPH_MON_PORT;
		if (getaddrinfo(host, port, &hints, &res)) {
			ret = -EHOSTUNREACH;
			continue;
		}
		/* IPv4 first, as monitors usually bind it ("localhost") */
		for (ai = res; ai && ai->ai_family != AF_INET; ai = ai->ai_next)
			;
		if (!ai)
			ai = res;
		if (ai->ai_family == AF_INET6) {
			const struct sockaddr_in6 *s6 = (void *)ai->ai_addr;

			inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
			snprintf(out, size, "[%s]:%u", ip, ntohs(s6->sin6_port));
		} else {
			const struct sockaddr_in *s4 = (void *)ai->ai_addr;

			inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
			snprintf(out, size, "%s:%u", ip, ntohs(s4->sin_port));
		}
		freeaddrinfo(res);
		return 0;
	}
	return ret;
}

/*
 * The first monitor of @mon_host ("v2:1.2.3.4:3300/0", "[v2:...,v1:...]",
 * "host1,host2", "[::1]:3300", hostnames) as "IP:PORT" or "[IP6]:PORT"
 * into @out.  No port means the msgr2 port 3300; with no msgr2 address
 * at all, the host of a msgr1 one ("v1:", or port 6789) on port 3300, as
 * a monitor that has both binds them.  Hostnames are resolved.  0 or
 * -errno (-EINVAL: nothing usable).
 */
int ceph_mon_addr(const char *mon_host, char *out, size_t size)
{
	int ret = mon_addr_pass(mon_host, false, out, size), ret1;

	if (!ret)
		return 0;
	ret1 = mon_addr_pass(mon_host, true, out, size);
	if (!ret1)
		return 0;
	/* a host that did not resolve says more than "nothing usable" */
	return ret == -EHOSTUNREACH ? ret : ret1;
}

/*
 * Where the monitor is and how to authenticate, as the ceph CLI decides:
 * ADDR, -m, the conf's mon host; -k, the conf's keyring, the default
 * search path, unless the conf says auth none.  Usage errors return 2,
 * failures 1 (printed).
 */
int ceph_resolve_mon(struct ctl_conn *conn, const char *addr,
		     const char *mon_host, const char *conf, char *abuf,
		     size_t asize, char *kbuf, size_t ksize)
{
	const char *path = conf ? conf : getenv("CEPH_CONF");
	struct ceph_conf cf;
	bool have_conf;
	int ret;

	if (!path)
		path = "/etc/ceph/ceph.conf";
	ret = ceph_conf_load(path, conn->name, &cf);
	have_conf = !ret;
	if (ret && (conf || ret != -ENOENT)) {
		error("cannot read the conf %s: %s", path,
		      ret == -EINVAL ? "malformed" : strerror(-ret));
		return EXIT_FAILURE;
	}

	if (!addr)
		addr = mon_host;
	if (!addr && have_conf && cf.mon_host[0])
		addr = cf.mon_host;
	if (!addr) {
		error("no monitor address: give ADDR, -m ADDR or a conf with \"mon host\" (%s%s)",
		      path, have_conf ? " has none" : " does not exist");
		return EXIT_USAGE;
	}
	/*
	 * IP:PORT as is, unless it is the msgr1 port; a v2: address vector
	 * or a host name resolved.  Either way into @abuf: @cf is gone when
	 * the caller uses it.
	 */
	if (kmsgr_addr_parse(addr, &conn->addr) ||
	    ntohs(conn->addr.port) == atoi(CEPH_MON_PORT_LEGACY)) {
		ret = ceph_mon_addr(addr, abuf, asize);
		if (ret) {
			error("monitor address \"%s\": %s", addr,
			      ret == -EHOSTUNREACH ? "cannot resolve the host" :
			      "no v2 address in it");
			return EXIT_FAILURE;
		}
	} else {
		snprintf(abuf, asize, "%s", addr);
	}
	conn->addr_str = abuf;

	if (conn->keyring || conn->key_desc)
		return 0;
	if (have_conf && !strcmp(cf.auth, "none"))
		return 0;		/* the cluster wants no auth */
	if (!ceph_keyring_find(have_conf && cf.keyring[0] ? cf.keyring :
			       ceph_default_keyrings, conn->name, kbuf, ksize)) {
		conn->keyring = kbuf;
		return 0;
	}
	if (have_conf && cf.keyring[0]) {
		error("the conf's keyring \"%s\" is not there", cf.keyring);
		return EXIT_FAILURE;
	}
	return 0;		/* no keyring anywhere: auth none */
}

void ceph_cli_init(struct ceph_cli *cli)
{
	memset(cli, 0, sizeof(*cli));
	cli->conn.transport = KMSGR_XPRT_TCP;
	cli->conn.peer_type = 1;	/* CEPH_ENTITY_TYPE_MON */
	cli->conn.name = "client.admin";
	cli->conn.timeout_ns = 10 * NSEC_PER_SEC;
}

int ceph_cli_opt(struct ceph_cli *cli, int c, const char *arg)
{
	switch (c) {
	case CEPH_OPT_SECURE:
		cli->conn.flags |= KMSGR_SESS_F_SECURE;
		return 1;
	case 'n':
		cli->conn.name = arg;
		return 1;
	case CEPH_OPT_ID:
		snprintf(cli->idname, sizeof(cli->idname), "client.%s", arg);
		cli->conn.name = cli->idname;
		return 1;
	case 'k':
		cli->conn.keyring = arg;
		return 1;
	case CEPH_OPT_KEY_DESC:
		cli->conn.key_desc = arg;
		return 1;
	case 'c':
		cli->conf = arg;
		return 1;
	case 'm':
		cli->mon_host = arg;
		return 1;
	case CEPH_OPT_TIMEOUT:
		if (ctl_parse_secs(arg, &cli->conn.timeout_ns)) {
			error("bad --timeout \"%s\" (seconds)", arg);
			return -1;
		}
		return 1;
	case CEPH_OPT_TRANSPORT:
		if (ctl_parse_transport(arg, &cli->conn.transport)) {
			error("unknown transport \"%s\"", arg);
			return -1;
		}
		return 1;
	}
	return 0;
}

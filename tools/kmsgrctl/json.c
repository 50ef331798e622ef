// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl - a minimal JSON scanner for what Ceph monitors answer (MPing's
 * status, `osd dump`, `pg map`): find members, walk arrays, read strings
 * and numbers.  It reads trusted-shape text and never allocates; anything
 * malformed reads as "not there".
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <stdlib.h>
#include <string.h>

#include "kmsgrctl.h"

/* End of the JSON string starting at @p (on its opening quote), or NULL. */
const char *json_skip_string(const char *p)
{
	for (p++; *p; p++) {
		if (*p == '\\' && p[1])
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/*
 * Find member @key (at any depth) after @from; return the position of its
 * value, or NULL.  Keys are compared without unescaping.
 */
const char *json_find(const char *from, const char *key)
{
	size_t klen = strlen(key);
	const char *p = from, *end;

	while (p && *p) {
		if (*p != '"') {
			p++;
			continue;
		}
		end = json_skip_string(p);
		if (!end)
			return NULL;
		if ((size_t)(end - p) == klen + 2 && !strncmp(p + 1, key, klen)) {
			while (*end == ' ' || *end == '\n' || *end == '\t')
				end++;
			if (*end == ':') {
				end++;
				while (*end == ' ' || *end == '\n' ||
				       *end == '\t')
					end++;
				return end;
			}
		}
		p = end;
	}
	return NULL;
}

/* Copy the string value at @v into @out; "" when it is not a string. */
void json_string_at(const char *v, char *out, size_t cap)
{
	const char *end;
	size_t n;

	out[0] = '\0';
	if (!v || *v != '"')
		return;
	end = json_skip_string(v);
	if (!end)
		return;
	n = (size_t)(end - v - 2);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, v + 1, n);
	out[n] = '\0';
}

/*
 * Names of the members of the object at @v, comma-separated into @out
 * ("" when none or not an object).
 */
void json_keys_at(const char *v, char *out, size_t cap)
{
	const char *p, *end;
	size_t used = 0, n;
	int depth = 0;

	out[0] = '\0';
	if (!v || *v != '{')
		return;
	for (p = v; *p; p++) {
		if (*p == '"') {
			end = json_skip_string(p);
			if (!end)
				return;
			n = (size_t)(end - p - 2);
			if (depth == 1 && *end == ':' && used + n + 3 < cap) {
				used += (size_t)snprintf(out + used, cap - used,
							 "%s%.*s",
							 used ? "," : "",
							 (int)n, p + 1);
			}
			p = end - 1;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			if (--depth == 0)
				return;
		}
	}
}

/* Remove the whitespace outside strings of @json, in place. */
void json_compact(char *json)
{
	bool in_str = false, esc = false;
	char *w = json, *r;

	for (r = json; *r; r++) {
		if (in_str) {
			if (esc)
				esc = false;
			else if (*r == '\\')
				esc = true;
			else if (*r == '"')
				in_str = false;
		} else if (*r == '"') {
			in_str = true;
		} else if (*r == ' ' || *r == '\n' || *r == '\t' ||
			   *r == '\r') {
			continue;
		}
		*w++ = *r;
	}
	*w = '\0';
}

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

const char *json_skip_value(const char *p)
{
	int depth = 0;

	p = json_ws(p);
	for (;;) {
		if (*p == '"') {
			p = json_skip_string(p);
			if (!p || !depth)
				return p;
			continue;
		}
		if (!*p)
			return depth ? NULL : p;
		if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			if (!depth)
				return p;	/* a scalar's container ends */
			if (!--depth)
				return p + 1;
		} else if (!depth && (*p == ',' || *p == ' ' || *p == '\n' ||
				      *p == '\t' || *p == '\r')) {
			return p;
		}
		p++;
	}
}

const char *json_member(const char *obj, const char *key)
{
	size_t klen = strlen(key);
	const char *p, *k;
	bool match;

	if (!obj || *obj != '{')
		return NULL;
	p = json_ws(obj + 1);
	while (*p == '"') {
		k = p;
		p = json_skip_string(p);
		if (!p)
			return NULL;
		match = (size_t)(p - k) == klen + 2 &&
			!strncmp(k + 1, key, klen);
		p = json_ws(p);
		if (*p != ':')
			return NULL;
		p = json_ws(p + 1);
		if (match)
			return p;
		p = json_skip_value(p);
		if (!p)
			return NULL;
		p = json_ws(p);
		if (*p != ',')
			return NULL;
		p = json_ws(p + 1);
	}
	return NULL;
}

const char *json_first(const char *arr)
{
	const char *p;

	if (!arr || *arr != '[')
		return NULL;
	p = json_ws(arr + 1);
	return *p && *p != ']' ? p : NULL;
}

const char *json_next(const char *elem)
{
	const char *p = elem ? json_skip_value(elem) : NULL;

	if (!p)
		return NULL;
	p = json_ws(p);
	if (*p != ',')
		return NULL;
	return json_ws(p + 1);
}

int json_i64_at(const char *v, long long *out)
{
	char *end;

	if (!v || !(*v == '-' || (*v >= '0' && *v <= '9')))
		return -1;
	*out = strtoll(v, &end, 10);
	return end == v ? -1 : 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr msgr2 engine - session state: out-queue, sent-queue, seq and ack.
 *
 * A message gets its seq in msgr2_send() and keeps it across reconnects:
 * on a lossless session the sent-but-unacked messages go back to the front
 * of the out-queue when a connection ends (m2_sess_requeue()) and are sent
 * again with the same seq unless the peer reports it already has them.
 * The queues are singly linked through msgr2_msg.next, in seq order.
 */
#include "msgr2_int.h"

static void m2_q_push(struct msgr2_msg **head, struct msgr2_msg **tail,
		      struct msgr2_msg *m)
{
	m->next = NULL;
	if (*tail)
		(*tail)->next = m;
	else
		*head = m;
	*tail = m;
}

static struct msgr2_msg *m2_q_pop(struct msgr2_msg **head,
				  struct msgr2_msg **tail)
{
	struct msgr2_msg *m = *head;

	if (!m)
		return NULL;
	*head = m->next;
	if (!*head)
		*tail = NULL;
	m->next = NULL;
	return m;
}

void msgr2_session_init(struct msgr2_session *s, bool lossy)
{
	memset(s, 0, sizeof(*s));
	s->lossy = lossy;
}

void msgr2_session_drain(struct msgr2_session *s,
			 void (*done)(void *priv, struct msgr2_msg *m,
				      int status),
			 void *priv, int status)
{
	struct msgr2_conn *c = s->conn;
	struct msgr2_msg *m;

	/* a message half on the wire cannot be taken back: end the conn */
	if (c && c->tx_msg) {
		m2_fail(c, MSGR2_R_LOCAL);
		m2_tx_abort_msg(c);
	}
	while ((m = m2_q_pop(&s->sent_head, &s->sent_tail)))
		done(priv, m, status);
	while ((m = m2_q_pop(&s->out_head, &s->out_tail)))
		done(priv, m, status);
}

int msgr2_send(struct msgr2_session *s, struct msgr2_msg *m)
{
	const struct msgr2_conn *c = s->conn;
	size_t tail;
	u32 i, nsegs;
	bool secure;

	if (!m)
		return -EINVAL;
	if (m2_msg_tail_len(m, &nsegs, &tail))
		return -EMSGSIZE;
	if (c) {
		if (!m2_msg_fits(c, m))
			return -EMSGSIZE;
		secure = c->secure;
		if (!c->mode)
			for (i = 0; i < c->cfg.n_modes; i++)
				secure |= c->cfg.modes[i] == MSGR2_MODE_SECURE;
		if (secure && nsegs > 1 &&
		    tail + M2_GCM_TAG_LEN > c->cfg.tx_scratch_len)
			return -EMSGSIZE;
	}
	m->hdr.seq = ++s->out_seq;
	m->hdr.ack_seq = 0;
	m2_q_push(&s->out_head, &s->out_tail, m);
	return 0;
}

struct msgr2_msg *m2_sess_next(struct msgr2_session *s)
{
	return m2_q_pop(&s->out_head, &s->out_tail);
}

void m2_sess_sent(struct msgr2_session *s, struct msgr2_msg *m)
{
	m2_q_push(&s->sent_head, &s->sent_tail, m);
}

/* Number the out-queue first, first + 1, ... (a new session, or a drop). */
void m2_sess_renumber(struct msgr2_session *s, u64 first)
{
	struct msgr2_msg *m;

	for (m = s->out_head; m; m = m->next)
		m->hdr.seq = first++;
	s->out_seq = first - 1;
}

/* Put the sent-but-unacked messages back in front of the out-queue. */
void m2_sess_requeue(struct msgr2_session *s)
{
	struct msgr2_msg *m;

	if (!s->sent_head)
		return;
	for (m = s->sent_head; m; m = m->next)
		m->tx_end = 0;	/* not written on the next connection yet */
	s->sent_tail->next = s->out_head;
	if (!s->out_head)
		s->out_tail = s->sent_tail;
	s->out_head = s->sent_head;
	s->sent_head = NULL;
	s->sent_tail = NULL;
}

/*
 * The peer has every message up to @seq: give the sent ones back.  The
 * message still being written (c->tx_msg) is never released early, even
 * if a broken peer acknowledges it (or a transport hands the bytes over
 * before it reports them written): it is released once written, by
 * m2_tx_msg_done().  A peer that acks more than ever went on the wire
 * (broken or hostile) does not make the queued messages count as
 * delivered the moment they are written: @seq is cut to wire_seq.
 */
void m2_sess_ack(struct msgr2_session *s, struct msgr2_conn *c, u64 seq)
{
	struct msgr2_msg *m;

	if (s->lossy)
		return;
	seq = min_t(u64, seq, s->wire_seq);
	if (seq > s->acked_seq)
		s->acked_seq = seq;
	while ((m = s->sent_head) && m->hdr.seq <= seq && m != c->tx_msg) {
		m2_q_pop(&s->sent_head, &s->sent_tail);
		c->cfg.ops->tx_done(c->cfg.priv, m, 0);
	}
}

/*
 * Reconnect: drop the requeued messages the peer already has.  A peer
 * that claims more than was ever written (broken or hostile) does not
 * make the rest count as delivered: they are still sent.
 */
void m2_sess_drop_acked(struct msgr2_session *s, struct msgr2_conn *c,
			u64 seq)
{
	struct msgr2_msg *m;

	seq = min_t(u64, seq, s->wire_seq);
	if (seq > s->acked_seq)
		s->acked_seq = min_t(u64, seq, s->out_seq);
	while ((m = s->out_head) && m->hdr.seq <= seq) {
		m2_q_pop(&s->out_head, &s->out_tail);
		c->cfg.ops->tx_done(c->cfg.priv, m, 0);
	}
}

void m2_sess_drop_all(struct msgr2_session *s, struct msgr2_conn *c,
		      int status)
{
	struct msgr2_msg *m;

	while ((m = m2_q_pop(&s->sent_head, &s->sent_tail)))
		c->cfg.ops->tx_done(c->cfg.priv, m, status);
	while ((m = m2_q_pop(&s->out_head, &s->out_tail)))
		c->cfg.ops->tx_done(c->cfg.priv, m, status);
}

/* Forget the session (full SESSION_RESET): cookies and seqs. */
void m2_sess_reset(struct msgr2_session *s)
{
	s->established = false;
	s->client_cookie = 0;
	s->server_cookie = 0;
	s->connect_seq = 0;
	s->peer_global_seq = 0;
	s->out_seq = 0;
	s->in_seq = 0;
	s->acked_seq = 0;
	s->wire_seq = 0;
}

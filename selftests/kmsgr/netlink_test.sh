#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# netlink_test.sh - the generic netlink family "kmsgr" seen through
# kmsgrctl, in the guest, with kmsgr.ko loaded (run_guest.sh runs it):
#
#   - session show -j after a known exchange (a lossless client sends N
#     echoed messages of S bytes, then holds the session): both ends'
#     state, peer, mode and message and byte counts are the exchange's;
#     listener show counts the accepted session; instance show and stats
#     agree (the instances, TCP only, have no RDMA memory pinned or
#     registered); session show INSTANCE ID finds one session, a wrong id
#     fails;
#   - monitor -j sees ACCEPTED and UP, then DOWN and UP again when the
#     client's TCP connection is killed with ss -K, then CLOSED;
#   - block devices (KMSGR_NVME, tools/vm/run --nvme): "blk serve --excl
#     --poll" attaches the namespace; bdev show -j lists it with the
#     kernel's name, major:minor, block sizes and capacity (blockdev(8)'s),
#     in the server's instance, exclusive and polled, no op yet; after "blk check" its read
#     and write bytes and flushes are the server's own counts, ops add
#     up, none in flight or failed, and instance show has the same
#     totals; bdev show INSTANCE ID finds it, a wrong handle fails with
#     ENOENT, an unprivileged user sees none of root's devices;
#   - a null_blk device whose every sector is bad: its failed reads are
#     counted as errors, and once the device is deleted (power 0) it is
#     shown gone;
#   - every -j output parses as JSON; dev show lists the RDMA device;
#   - an unprivileged user (its own group on /dev/kmsgr) sees its own
#     session and none of root's, may not join the monitor group and may
#     not read the module-wide stats;
#   - a dump held on each instance it visits (a test build's fault
#     point): opening and closing /dev/kmsgr meanwhile does not wait for
#     it, and an instance closed mid-dump is listed whole or not at all;
#   - kmsgr_nl_fuzz (random commands, flags and attributes), with the
#     namespace attached, reaches it (BDEV_GET replies) and leaves no
#     kernel warning.
#
# Prints TAP; exit status 0 when all passed.

set -u

TOP=$(cd "$(dirname "$0")/../.." && pwd)
K=$TOP/tools/kmsgrctl/kmsgrctl
FUZZ=${KMSGR_TEST_BIN:-$TOP/.build/selftests/kmsgr}/kmsgr_nl_fuzz
DUMPS=${KMSGR_TEST_BIN:-$TOP/.build/selftests/kmsgr}/kmsgr_nl_dumps
# the listener's and the block server's ports: KMSGR_NL_PORT and the one
# 10 above it, else any free ones (a fixed port in the ephemeral range may
# be held by a connection of an earlier test); bound_addr reads them back
PORT=${KMSGR_NL_PORT:-0}
ADDR=127.0.0.1:$PORT
N=25
SIZE=3000
# random requests of the fuzz pass (KMSGR_NL_FUZZ), a quarter unprivileged
NFUZZ=${KMSGR_NL_FUZZ:-10000}
NVME=${KMSGR_NVME:-}
# what the block server is asked to listen on; BADDR: where it listens
BREQ=127.0.0.1:$((PORT ? PORT + 10 : 0))
BADDR=$BREQ
# requests of blk check (after its read of the whole namespace)
BLK_OPS=300

# shellcheck source=selftests/kmsgr/tap.sh
. "$TOP/selftests/kmsgr/tap.sh"
tmp=$(mktemp -d) || exit 1
pids=
cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# json FILE EXPR: evaluate a Python expression over the parsed JSON of
# FILE (as j; monitor files: a list of the objects of each line as j);
# true/false becomes the exit status, anything else is printed.  (-S: no
# site module, which nothing here needs; a third less time under TCG.)
json() {
	python3 -S - "$@" <<'EOF'
import json, sys
f, expr = sys.argv[1], sys.argv[2]
with open(f) as fh:
    text = fh.read()
try:
    j = json.loads(text)
except ValueError:
    j = [json.loads(l) for l in text.splitlines() if l.strip()]
r = eval("(" + expr + ")", {"j": j})
if isinstance(r, bool):
    sys.exit(0 if r else 1)
print(r)
EOF
}

# wait_for SECONDS CMD...: until CMD succeeds
wait_for() {
	t=$1
	shift
	i=0
	while [ "$i" -lt $((t * 5)) ]; do
		"$@" && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

dmesg_mark=$(dmesg | wc -l)

# ---- the exchange --------------------------------------------------------

"$K" -j monitor --timeout 600 >"$tmp/mon.json" 2>"$tmp/mon.err" &
pids="$pids $!"
"$K" session listen --echo --lossless "$ADDR" >"$tmp/listen.out" 2>&1 &
lpid=$!
pids="$pids $lpid"
wait_for 20 grep -q "listening" "$tmp/listen.out" || comment "$tmp/listen.out"
ADDR=$(bound_addr "$tmp/listen.out")
PORT=${ADDR##*:}
"$K" -j session connect --lossless --send $N --size $SIZE --verify-echo \
	--hold 600 "$ADDR" >"$tmp/client.json" 2>"$tmp/client.err" &
cpid=$!
pids="$pids $cpid"

# both ends done: the client has its echoes, and the server's SENDs
# completed (lossless: at the client's ack, which may come a little later)
client_done() {
	"$K" -j session show >"$tmp/show.json" 2>"$tmp/show.err" &&
		json "$tmp/show.json" \
		"any(s['role'] == 'client' and s['msgs_in'] == $N for s in j) and
		 any(s['role'] == 'server' and s['msgs_out'] == $N for s in j)"
}
wait_for 60 client_done
tap $? "session show -j lists the client after its $N echoes and the server after sending them"
json "$tmp/show.json" "True" >"$tmp/parse" 2>&1
rc=$?
comment "$tmp/parse"
tap $rc "session show -j parses"

check_client="[s for s in j if s['role'] == 'client' and s['comm'] == 'kmsgrctl']"
json "$tmp/show.json" "len($check_client) == 1 and all(
	s['state'] == 'up' and s['transport'] == 'tcp' and s['lossless'] and
	s['mode'] == 'crc' and s['auth'] == 'none' and
	s['peer'] == '$ADDR' and s['local'].startswith('127.0.0.1:') and
	s['msgs_out'] == $N and s['bytes_out'] == $N * $SIZE and
	s['msgs_in'] == $N and s['bytes_in'] == $N * $SIZE and
	s['in_flight'] == 0 and s['reconnects'] == 0
	for s in $check_client)"
tap $? "the client session: up, crc, lossless, $N messages and $((N * SIZE)) bytes each way"

check_server="[s for s in j if s['role'] == 'server']"
json "$tmp/show.json" "len($check_server) == 1 and all(
	s['state'] == 'up' and s['local'] == '$ADDR' and
	s['msgs_in'] == $N and s['bytes_in'] == $N * $SIZE and
	s['msgs_out'] == $N and s['bytes_out'] == $N * $SIZE and
	s['listener'] >= 1 for s in $check_server)"
tap $? "the server session: up, $N messages in and echoed"
[ "$failed" -eq 0 ] || sed 's/^/# /' "$tmp/show.json" "$tmp/show.err"

inst=$(json "$tmp/show.json" "${check_client}[0]['instance']")
sid=$(json "$tmp/show.json" "${check_client}[0]['id']")
"$K" -j session show "$inst" "$sid" >"$tmp/one.json" 2>&1 &&
	json "$tmp/one.json" "len(j) == 1 and j[0]['id'] == $sid and j[0]['instance'] == $inst"
tap $? "session show INSTANCE ID shows that one session"
out=$("$K" session show "$inst" 99999 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
[ $rc -eq 1 ] && echo "$out" | grep -q "No such file or directory"
tap $? "session show of an unknown id fails with ENOENT"
out=$("$K" session show 0 2>&1)
[ $? -eq 2 ]
tap $? "session show 0: a usage error"
out=$("$K" session show -- -1 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q 'not a valid instance id'
tap $? "session show -1: a usage error, not instance 2^64-1"

"$K" -j listener show >"$tmp/lsn.json" 2>&1 &&
	json "$tmp/lsn.json" "len(j) == 1 and j[0]['local'] == '$ADDR' and
		j[0]['accepted'] == 1 and j[0]['refused'] == 0 and
		j[0]['half_open'] == 0 and j[0]['auth'] == 'none'"
tap $? "listener show -j: the listener, 1 accepted"

"$K" -j instance show >"$tmp/inst.json" 2>&1 &&
	json "$tmp/inst.json" "len(j) == 2 and all(i['comm'] == 'kmsgrctl' and
		i['sessions'] >= 1 and i['sq_entries'] > 0 and i['buf_size'] > 0
		and i['pinned_bytes'] == 0 and i['registered_bytes'] == 0
		for i in j) and any(i['id'] == $inst for i in j)"
tap $? "instance show -j: both kmsgrctl instances with their rings, TCP only: no RDMA memory"
"$K" instance show "$inst" >"$tmp/inst1.txt" 2>&1 &&
	grep -q '^    rdma pinned 0 registered 0$' "$tmp/inst1.txt"
tap $? "instance show ID (text): rdma pinned 0 registered 0"
"$K" -j instance show "$inst" >"$tmp/inst1.json" 2>&1 &&
	json "$tmp/inst1.json" "len(j) == 1 and j[0]['id'] == $inst and
		j[0]['sqes'] >= $N and j[0]['cqes'] >= $N and j[0]['cq_lost'] == 0"
tap $? "instance show ID: the client's, its SQE and CQE counts"

"$K" -j stats >"$tmp/stats.json" 2>&1 &&
	json "$tmp/stats.json" "j['instances'] == 2 and j['sessions'] >= 3 and
		j['msgs_out'] >= 2 * $N and j['msgs_in'] >= 2 * $N and
		j['connects'] >= 1 and j['accepts'] >= 1"
tap $? "stats -j: instances, sessions and message counters"
for f in "$tmp"/lsn.json "$tmp"/inst.json "$tmp"/stats.json; do
	sed 's/^/# /' "$f"
done

# a dump held 1.5 s on each instance it visits (fault point
# KMSGR_FAULT_NL_WALK, bit 15, test builds): an open and close of
# /dev/kmsgr meanwhile does not wait for it (the registry's mutex is not
# held while the dump looks at an instance: the old module made it wait
# for the rest of the walk, over 3 s; the bound, 1 s, is on the open and
# close alone, timed in one process), and an instance closed while
# the dump runs (its release waits for a walk that holds it) is either
# listed whole or not at all
held_dump() {
	fp=/sys/module/kmsgr/parameters
	[ -w "$fp/fault_points" ] || {
		echo "no fault points: not a KMSGR_FAULT=y build"
		return 1
	}
	sleep 30 3</dev/kmsgr &
	hold=$!
	echo 1500000 >"$fp/fault_delay_us"
	echo $((1 << 15)) >"$fp/fault_points"
	d0=$(date +%s%N)
	"$K" -j instance show >"$tmp/held.json" 2>&1 &
	dpid=$!
	sleep 0.5
	# timed inside one process: no process start in what is timed
	open_ms=$(python3 -S -c 'import os, time
t = time.monotonic()
os.close(os.open("/dev/kmsgr", os.O_RDONLY))
print(int((time.monotonic() - t) * 1000))')
	sleep 2.5
	kill "$hold"
	wait "$dpid"
	drc=$?
	d1=$(date +%s%N)
	wait "$hold" 2>/dev/null
	echo 0 >"$fp/fault_points"
	echo 200 >"$fp/fault_delay_us"
	dump_ms=$(((d1 - d0) / 1000000))
	echo "open and close took $open_ms ms during a dump of $dump_ms ms"
	cat "$tmp/held.json"
	[ "$drc" -eq 0 ] && [ -n "$open_ms" ] && [ "$open_ms" -lt 1000 ] &&
		[ "$dump_ms" -ge 2900 ] &&
		json "$tmp/held.json" "all(i['comm'] == 'kmsgrctl' or
			i['pid'] == $hold for i in j) and
			sum(i['comm'] == 'kmsgrctl' for i in j) == 2"
}
held_dump >"$tmp/held.out" 2>&1
rc=$?
comment "$tmp/held.out"
tap $rc "a dump held on each instance: an open and close of /dev/kmsgr meanwhile does not wait for it; an instance closed mid-dump is listed whole or not at all"

# dumps: attributes a dump does not filter on are refused (an object id,
# an instance id for INSTANCE_GET), an instance filter of 0 lists nothing;
# and the replies a reader in another PID namespace pulls give the PIDs
# of the requester's (kmsgr_nl_dumps)
timeout 60 "$DUMPS" filters >"$tmp/dumps.out" 2>&1
rc=$?
comment "$tmp/dumps.out"
tap $rc "dump requests refuse an object id (and INSTANCE_GET an instance id) with EINVAL; an instance filter of 0 lists nothing"
timeout 120 "$DUMPS" namespaces 300 >"$tmp/dumpns.out" 2>&1
rc=$?
comment "$tmp/dumpns.out"
tap $rc "an instance dump read on in a new PID namespace: every reply gives the PIDs of the requester's namespace"

# an instance opened in a new PID namespace: instance show from inside
# lists its opener by the number that namespace gives it, and from outside
# by the initial namespace's (the module gave the latter to both)
pidns_view() {
	unshare --pid --fork sh -c '
		sleep 30 3</dev/kmsgr &
		echo $! >"$2/inner.pid"
		sleep 0.5
		"$1" -j instance show >"$2/inner.json"
		rc=$?
		echo "$rc" >"$2/inner.rc"
		sleep 2
		kill $!' sh "$K" "$tmp" &
	upid=$!
	sleep 1.5
	"$K" -j instance show >"$tmp/outer.json"
	orc=$?
	wait "$upid"
	inner=$(cat "$tmp/inner.pid")
	echo "the opener is PID $inner in its namespace"
	cat "$tmp/inner.json" "$tmp/outer.json"
	[ "$(cat "$tmp/inner.rc")" = 0 ] && [ "$orc" -eq 0 ] || return 1
	# (its comm is sh's: the shell opens the file before it runs sleep)
	id=$(json "$tmp/inner.json" "[i['id'] for i in j if i['pid'] == $inner][0]") || return 1
	outer=$(json "$tmp/outer.json" "[i['pid'] for i in j if i['id'] == $id][0]") || return 1
	echo "its instance $id: PID $outer in the initial namespace"
	[ "$outer" != "$inner" ] && [ "$outer" -gt 0 ]
}
pidns_view >"$tmp/pidns.out" 2>&1
rc=$?
comment "$tmp/pidns.out"
tap $rc "instance show -j: an opener in a new PID namespace is listed by its PID there from inside, by its PID in the initial namespace from outside"

# connect --hold gives back the receive-pool slices of what arrives while
# it holds (the echoes of its sends, unasked for without --verify-echo)
"$K" -j session connect --send 40 --size $SIZE --hold 600 "$ADDR" \
	>"$tmp/holder.json" 2>"$tmp/holder.err" &
hpid=$!
pids="$pids $hpid"
held_all() {
	"$K" -j session show >"$tmp/hshow.json" 2>/dev/null &&
		hinst=$(json "$tmp/hshow.json" "[s['instance'] for s in j
			if s['role'] == 'client' and s['instance'] != $inst and
			s['msgs_in'] == 40][0]" 2>/dev/null) &&
		"$K" -j instance show "$hinst" >"$tmp/hinst.json" 2>&1 &&
		json "$tmp/hinst.json" "j[0]['pool_used'] == 0"
}
wait_for 30 held_all
rc=$?
if [ $rc -ne 0 ]; then
	for f in "$tmp/hshow.json" "$tmp/hinst.json" "$tmp/holder.err"; do
		[ -f "$f" ] && comment "$f"
	done
fi
tap $rc "session connect --hold: its 40 echoes arrived and their slices are given back"
kill "$hpid" 2>/dev/null
wait "$hpid" 2>/dev/null

# NDEV more rxe devices, on dummy netdevs: dev show lists each once (more
# than a dump pass takes), and again after some went between two dumps
NDEV=${KMSGR_NL_DEVS:-70}
many_devs() {
	: >"$tmp/ip-add"
	: >"$tmp/rdma-add"
	: >"$tmp/rdma-del"
	: >"$tmp/rdma-rest"
	: >"$tmp/ip-del"
	i=0
	while [ "$i" -lt "$NDEV" ]; do
		echo "link add kdum$i type dummy" >>"$tmp/ip-add"
		echo "link add krxe$i type rxe netdev kdum$i" >>"$tmp/rdma-add"
		if [ $((i % 3)) -eq 0 ]; then
			echo "link delete krxe$i" >>"$tmp/rdma-del"
		else
			echo "link delete krxe$i" >>"$tmp/rdma-rest"
		fi
		echo "link delete kdum$i" >>"$tmp/ip-del"
		i=$((i + 1))
	done
	# one ip and one rdma process for all of them (a process each took
	# a minute under TCG); the first failure stops each batch (rdma
	# parses its options with getopt: -b and -f, not -batch and -force)
	ip -batch "$tmp/ip-add" && rdma -b "$tmp/rdma-add"
	"$K" -j dev >"$tmp/devs.json" 2>&1
	json "$tmp/devs.json" "sorted(d['name'] for d in j
		if d['name'].startswith('krxe')) ==
		sorted('krxe%d' % i for i in range($NDEV))"
	tap $? "dev show -j: $NDEV more devices, each listed once"
	rdma -b "$tmp/rdma-del"
	"$K" -j dev >"$tmp/devs.json" 2>&1
	json "$tmp/devs.json" "sorted(d['name'] for d in j
		if d['name'].startswith('krxe')) ==
		sorted('krxe%d' % i for i in range($NDEV) if i % 3)"
	tap $? "dev show -j: a third of them deleted, the others each once"
	rdma -f -b "$tmp/rdma-rest" 2>/dev/null
	ip -force -batch "$tmp/ip-del" 2>/dev/null
}

# dev_in_new_ns FILE: kmsgrctl -j dev in a namespace made for it (and
# deleted after) into FILE; its status
dev_in_new_ns() {
	ns=kmsgrnl$$
	ip netns add "$ns" &&
		ip netns exec "$ns" "$K" -j dev >"$1" 2>&1
	ns_rc=$?
	ip netns delete "$ns" 2>/dev/null
	return $ns_rc
}

# netns_conns: in RDMA's netns mode shared (the default) every namespace
# lists the devices, each with the connections made in it: an rdma
# session of init_net's counts there and not in another namespace (the
# module used to count every namespace's connections for each)
netns_conns() {
	vip=${KMSGR_VM_IP:-}
	[ -n "$vip" ] || { echo "KMSGR_VM_IP not set (tools/vm/run --rxe)"; return 1; }
	"$K" session listen --transport rdma --echo --time 120 "$vip:0" \
		>"$tmp/rl.out" 2>&1 &
	rlpid=$!
	if ! wait_for 20 grep -q "listening" "$tmp/rl.out"; then
		cat "$tmp/rl.out"
		kill "$rlpid"
		return 1
	fi
	"$K" session connect --transport rdma --hold 120 \
		"$(bound_addr "$tmp/rl.out")" >"$tmp/rc.out" 2>&1 &
	rcpid=$!
	wait_for 20 grep -q " up in " "$tmp/rc.out"
	up=$?
	"$K" -j dev >"$tmp/conn-init.json" 2>&1
	dev_in_new_ns "$tmp/conn-ns.json"
	nrc=$?
	kill "$rcpid" "$rlpid" 2>/dev/null
	wait "$rcpid" "$rlpid" 2>/dev/null
	cat "$tmp/rc.out" "$tmp/conn-init.json" "$tmp/conn-ns.json"
	[ "$up" -eq 0 ] && [ "$nrc" -eq 0 ] &&
		json "$tmp/conn-init.json" "any(d['name'] == '${KMSGR_RXE:-rxe0}' and
			d['conns'] >= 2 for d in j)" &&
		json "$tmp/conn-ns.json" "any(d['name'] == '${KMSGR_RXE:-rxe0}' and
			d['conns'] == 0 and d['parked'] == 0 for d in j)"
}

# netns_devs: with RDMA's netns mode exclusive, a namespace that owns no
# RDMA device sees none in dev show (the devices are init_net's), while
# init_net still sees them; the mode is shared again after
netns_devs() {
	if ! rdma system set netns exclusive >"$tmp/nsmode" 2>&1; then
		comment "$tmp/nsmode"
		tap 1 "rdma system set netns exclusive"
		return
	fi
	dev_in_new_ns "$tmp/nsdev.json"
	nrc=$?
	"$K" -j dev >"$tmp/initdev.json" 2>&1
	rdma system set netns shared
	sed 's/^/# /' "$tmp/nsdev.json"
	[ $nrc -eq 0 ] && json "$tmp/nsdev.json" "j == []" &&
		json "$tmp/initdev.json" \
			"any(d['name'] == '${KMSGR_RXE:-rxe0}' for d in j)"
	tap $? "dev show -j in a namespace that owns no RDMA device (netns mode exclusive): none listed; init_net still lists ${KMSGR_RXE:-rxe0}"
}

# devices: what kmsgr_rdma found (run_guest.sh loads it on rxe0)
"$K" -j dev >"$tmp/dev.json" 2>&1
sed 's/^/# /' "$tmp/dev.json"
if [ -d /sys/module/kmsgr_rdma ]; then
	json "$tmp/dev.json" "len(j) >= 1 and all(d['transport'] == 'rdma' and
		d['ports'] >= 1 and d['ports_down'] == [] and not d['dying']
		for d in j) and any(d['name'] == '${KMSGR_RXE:-rxe0}' for d in j)"
	tap $? "dev show -j: ${KMSGR_RXE:-rxe0}, its port up, as kmsgr_rdma sees it"
	many_devs
	netns_conns >"$tmp/nsconn.out" 2>&1
	rc=$?
	comment "$tmp/nsconn.out"
	tap $rc "dev show -j in another namespace (netns mode shared): ${KMSGR_RXE:-rxe0} listed without init_net's rdma session (conns 0; 2 or more in init_net)"
	netns_devs
else
	json "$tmp/dev.json" "j == []"
	tap $? "dev show -j: no device without kmsgr_rdma"
fi

# the unprivileged user: its own session, none of root's
chgrp nogroup /dev/kmsgr && chmod 0660 /dev/kmsgr
prlimit --memlock=unlimited setpriv --reuid=nobody --regid=nogroup \
	--clear-groups "$K" session connect --send 2 --size 100 \
	--verify-echo --hold 600 "$ADDR" >"$tmp/nobody.out" 2>&1 &
npid=$!
pids="$pids $npid"
nobody_up() {
	"$K" -j session show >"$tmp/all.json" 2>/dev/null &&
		json "$tmp/all.json" "sum(1 for s in j if s['role'] == 'client') == 2"
}
wait_for 30 nobody_up
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$K" -j session show >"$tmp/nb.json" 2>&1
json "$tmp/nb.json" "len(j) == 1 and j[0]['role'] == 'client' and
	j[0]['msgs_in'] == 2 and j[0]['instance'] != $inst"
tap $? "an unprivileged user sees its own session and none of root's"
sed 's/^/# /' "$tmp/nb.json" "$tmp/nobody.out"
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$K" -j instance show >"$tmp/nbi.json" 2>&1
json "$tmp/nbi.json" "len(j) == 1"
tap $? "an unprivileged user sees only its own instance"
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$K" instance show "$inst" 2>&1)
[ $? -eq 1 ]
tap $? "an unprivileged user cannot show root's instance by id"
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$K" monitor --timeout 1 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
[ $rc -eq 1 ] && echo "$out" | grep -q "CAP_NET_ADMIN"
tap $? "an unprivileged user may not join the monitor group"
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$K" stats 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
[ $rc -eq 1 ] && echo "$out" | grep -q "need CAP_NET_ADMIN"
tap $? "an unprivileged user may not read the module-wide stats (EPERM)"
kill "$npid" 2>/dev/null
wait "$npid" 2>/dev/null
chmod 0600 /dev/kmsgr && chgrp root /dev/kmsgr

# ss -K: the client's connection killed; lossless, it comes back
ss -K dst 127.0.0.1 dport = ":$PORT" >/dev/null 2>&1
came_back() {
	json "$tmp/mon.json" "[e['event'] for e in j if e.get('role') == 'client'
		and e['instance'] == $inst].count('up') >= 2"
}
wait_for 30 came_back
tap $? "ss -K: the lossless client reconnects (monitor: up again)"
"$K" -j session show "$inst" "$sid" >"$tmp/after.json" 2>&1 &&
	json "$tmp/after.json" "j[0]['reconnects'] == 1 and j[0]['state'] == 'up' and
		j[0]['last_reason'] != 'none'"
tap $? "session show: one reconnect and the reason of the fault"
sed 's/^/# /' "$tmp/after.json" "$tmp/client.json" "$tmp/client.err"

kill -INT "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
closed() {
	json "$tmp/mon.json" "any(e['event'] == 'closed' and e['role'] == 'client'
		and e['instance'] == $inst for e in j if 'role' in e)"
}
wait_for 20 closed
sed 's/^/# /' "$tmp/mon.json" "$tmp/mon.err"
json "$tmp/mon.json" "[e['event'] for e in j if e.get('role') == 'client'
	and e['instance'] == $inst] == ['up', 'down', 'up', 'closed']"
tap $? "monitor: the client's events were up, down, up, closed"
# (tcp: netns_conns' rdma sessions are another listener's)
json "$tmp/mon.json" "[e['event'] for e in j if e.get('role') == 'server' and
	e['transport'] == 'tcp'][:2] == ['accepted', 'up'] and
	all(e['pid'] == $lpid for e in j
	if e.get('role') == 'server' and e['transport'] == 'tcp')"
tap $? "monitor: the server session was accepted, then up, in the listener's process"

kill -INT "$lpid" 2>/dev/null
wait "$lpid" 2>/dev/null

# ---- block devices -----------------------------------------------------------

# bserve DEVICE [OPTIONS]: "blk serve" on BREQ in the background ($bsrv,
# output in $tmp/bsrv) until it is serving
bsrv=
bserve() {
	dev=$1
	shift
	"$K" blk serve "$@" "$dev" "$BREQ" >"$tmp/bsrv" 2>&1 &
	bsrv=$!
	pids="$pids $bsrv"
	if wait_for 20 grep -q '^serving' "$tmp/bsrv"; then
		# where it listens (port 0: the one it was given)
		BADDR=$(bound_addr "$tmp/bsrv")
		return 0
	fi
	sed 's/^/# /' "$tmp/bsrv"
	return 1
}

# bstop: SIGTERM to the server; its exit status
bstop() {
	kill -TERM "$bsrv" 2>/dev/null
	wait "$bsrv"
	brc=$?
	bsrv=
	return $brc
}

# served WHAT: a number of the server's summary ("served N requests: R
# reads (B bytes), W writes (B bytes), F flushes, ...")
served() {
	sed -n "s/^served \([0-9]*\) requests: \([0-9]*\) reads (\([0-9]*\) bytes), \([0-9]*\) writes (\([0-9]*\) bytes), \([0-9]*\) flushes.*/$1/p" \
		"$tmp/bsrv"
}

nvme_tests() {
	if ! bserve "$NVME" --excl --poll; then
		tap 1 "blk serve --excl --poll $NVME starts"
		return
	fi
	bpid=$bsrv
	name=${NVME##*/}
	lbs=$(blockdev --getss "$NVME")
	pbs=$(blockdev --getpbsz "$NVME")
	size=$(blockdev --getsize64 "$NVME")
	maj=$((0x$(stat -L -c %t "$NVME")))
	min=$((0x$(stat -L -c %T "$NVME")))
	echo "# $NVME: $name $maj:$min lbs $lbs pbs $pbs $size bytes"

	"$K" -j bdev show >"$tmp/bdev.json" 2>&1
	sed 's/^/# /' "$tmp/bdev.json"
	json "$tmp/bdev.json" "len(j) == 1 and j[0]['name'] == '$name' and
		j[0]['major'] == $maj and j[0]['minor'] == $min and
		j[0]['lbs'] == $lbs and j[0]['pbs'] == $pbs and
		j[0]['capacity'] == $size and j[0]['exclusive'] and
		j[0]['polled'] and j[0]['flags'] == 5 and
		not j[0]['read_only'] and not j[0]['gone'] and
		j[0]['pid'] == $bpid and j[0]['comm'] == 'kmsgrctl' and
		j[0]['ops'] == 0 and j[0]['in_flight'] == 0 and
		j[0]['errors'] == 0"
	tap $? "bdev show -j: $name ($maj:$min), lbs $lbs, pbs $pbs, $size bytes, exclusive, polled (flags EXCL|POLL), read-write, in blk serve's instance, no op yet"
	binst=$(json "$tmp/bdev.json" "j[0]['instance']")
	bid=$(json "$tmp/bdev.json" "j[0]['id']")

	"$K" blk check --ops "$BLK_OPS" "$BADDR" >"$tmp/bcheck" 2>&1
	tap $? "blk check: the namespace read through the target, then $BLK_OPS random requests"
	"$K" -j bdev show "$binst" "$bid" >"$tmp/bdev1.json" 2>&1
	"$K" bdev show "$binst" >"$tmp/bdev1.txt" 2>&1
	"$K" -j instance show "$binst" >"$tmp/binst.json" 2>&1
	"$K" instance show "$binst" >"$tmp/binst.txt" 2>&1
	out=$("$K" bdev show "$binst" $((bid + 1000)) 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	[ $rc -eq 1 ] && echo "$out" | grep -q "No such file or directory" &&
		echo "$out" | grep -q "no such instance or object"
	tap $? "bdev show INSTANCE of a handle it does not have: ENOENT, with the kernel's message"
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$K" -j bdev show >"$tmp/nbb.json" 2>&1
	json "$tmp/nbb.json" "j == []"
	tap $? "an unprivileged user sees none of root's block devices"
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$K" bdev show "$binst" "$bid" 2>&1)
	[ $? -eq 1 ]
	tap $? "an unprivileged user cannot show root's block device by handle"

	bstop
	tap $? "blk serve ends cleanly on SIGTERM"
	sed 's/^/# /' "$tmp/bsrv" "$tmp/bdev1.json" "$tmp/bdev1.txt" \
		"$tmp/binst.txt"
	reads=$(served '\2')
	rbytes=$(served '\3')
	writes=$(served '\4')
	wbytes=$(served '\5')
	flushes=$(served '\6')
	if [ -z "$reads" ] || [ -z "$flushes" ]; then
		tap 1 "blk serve printed its summary"
		return
	fi
	# the server counts a request before the module checks it: a bad one
	# (blk check's are READs) the module refused is in the server's reads
	# but not in the device's ops, and its bytes are taken back from the
	# server's count
	json "$tmp/bdev1.json" "len(j) == 1 and j[0]['id'] == $bid and
		j[0]['read_bytes'] == $rbytes and j[0]['write_bytes'] == $wbytes and
		j[0]['flush_ops'] == $flushes and $flushes > 0 and
		0 < j[0]['read_ops'] <= $reads and
		j[0]['write_ops'] == $writes and $writes > 0 and
		j[0]['ops'] == j[0]['read_ops'] + j[0]['write_ops'] + j[0]['flush_ops'] and
		j[0]['in_flight'] == 0 and j[0]['errors'] == 0"
	tap $? "bdev show INSTANCE ID after blk check: $rbytes bytes read, $writes writes of $wbytes bytes, $flushes flushes as the server counted them; ops add up, none in flight or failed"
	grep -q "^bdev $bid instance $binst pid $bpid comm kmsgrctl $name ($maj:$min) lbs $lbs pbs $pbs capacity $size rw exclusive polled" \
		"$tmp/bdev1.txt" &&
		grep -q "^    ops [1-9][0-9]* reads [1-9][0-9]* writes [1-9][0-9]* flushes $flushes bytes read $rbytes written $wbytes errors 0 in-flight 0\$" \
		"$tmp/bdev1.txt"
	tap $? "bdev show INSTANCE (text): name, major:minor, sizes, mode; the counters"
	json "$tmp/binst.json" "len(j) == 1 and j[0]['bdevs'] == 1 and
		j[0]['bdev_read_bytes'] == $rbytes and
		j[0]['bdev_write_bytes'] == $wbytes"
	tap $? "instance show -j: 1 block device, the same bytes read and written"
	grep -q "^    bdevs 1 bdev read $rbytes written $wbytes\$" "$tmp/binst.txt"
	tap $? "instance show ID (text): bdevs 1 bdev read $rbytes written $wbytes"
}

# nullb_bad DIR: every sector of the 4 MiB device bad, 512 at a time (6.1's
# badblocks_set() files one larger range out of order: reads succeed)
nullb_bad() {
	for s in $(seq 0 512 8191); do
		echo "+$s-$((s + 511))" >"$1/badblocks" || return 1
	done
}

# null_blk (configfs), every sector bad: reads fail; then deleted
nullb_tests() {
	nb=/sys/kernel/config/nullb/kmsgrnl0
	dev=/dev/kmsgrnl0
	if ! { [ -d /sys/kernel/config/nullb ] ||
		modprobe null_blk nr_devices=0; } ||
		! mkdir "$nb" || ! echo 4 >"$nb/size" || ! nullb_bad "$nb" ||
		! echo 1 >"$nb/power"; then
		tap 1 "a null_blk device with bad blocks (configfs)"
		return
	fi
	wait_for 10 test -b "$dev"
	if ! bserve "$dev" --rdonly; then
		tap 1 "blk serve --rdonly $dev starts"
	else
		"$K" blk bench --rw randread --time 1 --timeout 5 "$BADDR" \
			>"$tmp/nbench" 2>&1
		sed 's/^/# /' "$tmp/nbench"
		"$K" -j bdev show >"$tmp/nb1.json" 2>&1
		sed 's/^/# /' "$tmp/nb1.json"
		json "$tmp/nb1.json" "len(j) == 1 and j[0]['name'] == 'kmsgrnl0' and
			j[0]['read_only'] and not j[0]['exclusive'] and
		not j[0]['polled'] and j[0]['flags'] == 2 and
			j[0]['read_ops'] >= 1 and j[0]['errors'] == j[0]['ops'] and
			j[0]['read_bytes'] > 0 and j[0]['in_flight'] == 0 and
			not j[0]['gone']"
		tap $? "bdev show -j: kmsgrnl0 read-only, every read it was sent failed and is counted as an error"
		echo 0 >"$nb/power"
		"$K" -j bdev show >"$tmp/nb2.json" 2>&1
		sed 's/^/# /' "$tmp/nb2.json"
		json "$tmp/nb2.json" "len(j) == 1 and j[0]['name'] == 'kmsgrnl0' and
			j[0]['gone']"
		tap $? "bdev show -j: kmsgrnl0 gone once its disk is deleted, still attached"
		bstop
	fi
	echo 0 >"$nb/power" 2>/dev/null
	rmdir "$nb"
	modprobe -r null_blk 2>/dev/null
}

if [ -n "$NVME" ] && [ -b "$NVME" ]; then
	nvme_tests
else
	tap 1 "KMSGR_NVME names a block device (tools/vm/run --nvme SIZE): '$NVME'"
fi
nullb_tests

# ---- fuzz ------------------------------------------------------------------

# with the namespace attached: the fuzz reaches a live handle too
fuzz_bdev=0
[ -n "$NVME" ] && [ -b "$NVME" ] && bserve "$NVME" && fuzz_bdev=1
timeout 300 "$FUZZ" "$NFUZZ" >"$tmp/fuzz.out" 2>&1
tap $? "kmsgr_nl_fuzz: $NFUZZ random requests answered"
sed 's/^/# /' "$tmp/fuzz.out"
if [ $fuzz_bdev -eq 1 ]; then
	grep -q '([1-9][0-9]* of block devices)' "$tmp/fuzz.out"
	tap $? "kmsgr_nl_fuzz: some of its requests showed the attached namespace"
	bstop
fi
timeout 120 setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$FUZZ" $((NFUZZ / 4)) \
	>"$tmp/fuzz2.out" 2>&1
tap $? "kmsgr_nl_fuzz as an unprivileged user: $((NFUZZ / 4)) requests answered"
sed 's/^/# /' "$tmp/fuzz2.out"
dmesg | tail -n +"$((dmesg_mark + 1))" >"$tmp/dmesg"
! grep -qE "WARNING|BUG|Oops|general protection|KASAN|refcount" "$tmp/dmesg"
tap $? "no kernel warning"
grep -E "WARNING|BUG|Oops" -A5 "$tmp/dmesg" | head -40 | sed 's/^/# /'

echo "1..$n"
[ "$failed" -eq 0 ]

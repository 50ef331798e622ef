#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# selftests/kmsgr/rdma_pair.sh - kmsgr over RDMA between two hosts: two
# guests, each with its own soft-RoCE device on a virtio NIC, joined by a
# link (tools/vm/run --pair --rxe runs this script in both):
#
#   tools/vm/run --pair --rxe --nvme 64M --timeout 900 -- selftests/kmsgr/rdma_pair.sh
#
# vm1 (10.99.0.2) serves, in two phases:
#   1. echo listeners over rdma: lossless and lossy, in crc mode (auth
#      none) and in secure mode (cephx, a key both guests write below),
#      a block target on its NVMe namespace (kmsgrctl blk serve, rdma;
#      tools/vm/run --nvme), and a sentinel listener.  When vm0's sentinel
#      message arrives it stops them and reports their summaries, which
#      must count every message (and block request) sent to each; it must
#      have pulled vm0's large lossless
#      messages with RDMA READ; then no buffer stays mapped and kmsgr_rdma
#      and kmsgr unload (and load again).
#   2. a lossless and a lossy echo listener and a second sentinel.  When
#      that sentinel's message arrives, vm1 dies: the script exits with
#      its status, leaving the echo listeners serving vm0's live sessions,
#      and asks for a hard reset ($KMSGR_VM_RESET: sysrq b, no sync, no
#      shutdown).  tools/vm/run reports that status and "vm1: reset by its
#      command, as asked"; a vm1 that never reset (or stopped without a
#      status) fails the run.
#   In both phases vm1's kernel log must show no kernel problem (checked
#   after phase 1's unload and before the reset).
# vm0 (10.99.0.1) prints TAP:
#   - kmsgr and kmsgr_rdma load; an rdma session reaches vm1's listener;
#     2000 4 KiB messages and 40 of 1 MiB (lossless: pulled with RDMA READ
#     across the link, both ways) come back with their content verified;
#     a ping-pong bench runs;
#   - kmsgrctl blk check against vm1's block target: the namespace read
#     whole, then KMSGR_PAIR_BLK_OPS (10000) random requests, every read
#     and errno checked (the single-guest blk_test.sh also compares the
#     namespace itself, read with O_DIRECT);
#   - kmsgr_pair_stream: mixed streams, lossless and lossy, crc and
#     secure: segment sizes log-uniform from 0 B to 4 MiB, every
#     combination of front, middle and data; each echo comes back once, in
#     order, with the content hashes sent; the lossless ones pull the
#     echoes' large payloads with RDMA READ (vm0's pulled_bytes grows);
#     after each, no buffer stays mapped; no DOWN on the way for the
#     lossy ones; the lossless ones may go DOWN and come back (counted
#     and printed; nothing may be lost); vm0's keepalive_timeout is
#     STREAM_KEEPALIVE (10 s) for the streams; done within 400 s
#     (lossless crc) or 150 s (the others).  (Across this link rxe used
#     to lose READs behind a registration it executed twice; kmsgr_rdma
#     now registers on an empty send queue there: see "Soft-RoCE and
#     registrations" in docs/rdma-wire.md.  Each stream prints how many
#     READs ran into read_timeout.)  Secure
#     mode sends at most 4 MiB a message: larger ones of the plan are
#     scaled down to fit.  The throughput, the device counters that
#     changed and kmsgr's kernel log lines are printed.  Messages per
#     combination:
#     KMSGR_PAIR_MSGS_{LOSSLESS_CRC,LOSSY_CRC,LOSSLESS_SECURE,LOSSY_SECURE}
#     (defaults 10000, 2000, 2000, 2000; pass them with
#     "tools/vm/run ... -- env VAR=N selftests/kmsgr/rdma_pair.sh": both
#     guests must see the same counts);
#   - the sentinel ends vm1's phase 1;
#   - kmsgr_pair_stream kill: a lossless and a lossy session to vm1's
#     phase-2 listeners, with streams of messages up to 16 KiB in flight
#     (below pull_min: no READ; neither session may go down before),
#     then the second sentinel: vm1 resets; the lossless
#     session reports DOWN and the lossy one CLOSED, each with a reason,
#     within KILL_BOUND s; closing both works and every SEND queued
#     completes.  Whichever notices first, the QP's retries running out
#     (kmsgr_rdma asks for 6) or kmsgr's keepalive_timeout, which vm0
#     lowers to KMSGR_PAIR_KILL_KEEPALIVE (10 s; the default is 30 s) for
#     this step: KILL_BOUND is 20 s more.  The device counters that
#     changed are printed;
#   - vm1 is gone (no answer to ping);
#   - no buffer stays mapped, `rdma resource show` counts the QPs, MRs,
#     cm_ids and PDs it did right after loading (not the CQs: the device's
#     shared CQ pool keeps them), the kernel logged no warning, and
#     kmsgr_rdma and kmsgr unload.
# Each step's time is printed after its output.

set -u

TOP=$(cd "$(dirname "$0")/../.." && pwd)
KO=$TOP/kmod/kmsgr.ko
RDMA_KO=$TOP/kmod/kmsgr_rdma.ko
KMSGRCTL=$TOP/tools/kmsgrctl/kmsgrctl
PAIR_STREAM=$TOP/.build/selftests/kmsgr/kmsgr_pair_stream
PARAMS=/sys/module/kmsgr_rdma/parameters
RXE=${KMSGR_RXE:-rxe0}
PORT=3340		# phase 1: lossless crc echo listener on vm1
SENTINEL=3341		# vm0 sends one message there when phase 1 is done
LOSSY=3342		# lossy crc echo
SEC_LOSSLESS=3343	# lossless secure (cephx) echo
SEC_LOSSY=3344		# lossy secure (cephx) echo
KILL_LOSSLESS=3350	# phase 2: lossless echo
KILL_LOSSY=3351		# lossy echo
KILL_SENTINEL=3352	# one message there: vm1 resets
BLK=3345		# phase 1: vm1's block target on its namespace
N_BLK=${KMSGR_PAIR_BLK_OPS:-10000}
SMALL=2000
BIG=40
N_LL_CRC=${KMSGR_PAIR_MSGS_LOSSLESS_CRC:-10000}
N_LY_CRC=${KMSGR_PAIR_MSGS_LOSSY_CRC:-2000}
N_LL_SEC=${KMSGR_PAIR_MSGS_LOSSLESS_SECURE:-2000}
N_LY_SEC=${KMSGR_PAIR_MSGS_LOSSY_SECURE:-2000}
LISTEN_TIME=800		# listeners give up after that long (the run: 900 s)
# vm0's keepalive_timeout for the kill (kmsgr's default is 30 s): it is
# what notices the dead peer on soft-RoCE (see above); the sessions must
# report it within KILL_BOUND seconds of the sentinel
KILL_KEEPALIVE=${KMSGR_PAIR_KILL_KEEPALIVE:-10}
KILL_BOUND=$((KILL_KEEPALIVE + 20))
KA=/sys/module/kmsgr/parameters/keepalive_timeout
STREAM_KEEPALIVE=${KMSGR_PAIR_STREAM_KEEPALIVE:-10}
# A throw-away cephx key for the secure streams, the same in both guests
# (their file systems are separate overlays: nothing written is shared).
KEY=AQCmVA9r53uHBhAA//XTQysbMqyNbGqI3WrQbg==
tmp=$(mktemp -d)
KEYRING=$tmp/pair.keyring
n=0
failed=0

tap() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}

# check DESCRIPTION COMMAND...: a TAP line, the command's output and how
# long it took as comments
check() {
	desc=$1
	shift
	t0=$(date +%s)
	"$@" >"$tmp/out" 2>&1
	rc=$?
	sed 's/^/# /' "$tmp/out"
	echo "# ($(($(date +%s) - t0)) s)"
	tap "$rc" "$desc"
}

load() {
	for dep in $(modinfo -F depends "$KO" | tr ',' ' ') \
		$(modinfo -F softdep "$KO" | sed 's/post:.*//; s/pre://g') \
		rdma_cm; do
		modprobe "$dep" || return 1
	done
	insmod "$KO" && insmod "$RDMA_KO"
}

# unload: once no buffer is mapped (connections may take a moment to go)
unload() {
	i=0
	while pinned=$(cat "$PARAMS/pinned_bytes") && [ "$pinned" != 0 ]; do
		i=$((i + 1))
		[ "$i" -lt 50 ] || { echo "pinned_bytes $pinned"; return 1; }
		sleep 0.2
	done
	[ -n "$pinned" ] || return 1
	rmmod kmsgr_rdma && rmmod kmsgr
}

write_keyring() {
	printf '[client.admin]\n\tkey = %s\n' "$KEY" >"$KEYRING"
}

# echo_listen NAME PORT [OPTION...]: an echo listener over rdma in the
# background, its output in $tmp/NAME, its pid in $tmp/NAME.pid
echo_listen() {
	name=$1 port=$2
	shift 2
	"$KMSGRCTL" session listen --transport rdma --echo --time "$LISTEN_TIME" \
		"$@" "$KMSGR_VM_IP:$port" >"$tmp/$name" 2>&1 &
	echo $! >"$tmp/$name.pid"
}

# stop_listener NAME WANT: stop it; its summary must count WANT messages
stop_listener() {
	pid=$(cat "$tmp/$1.pid")
	kill -TERM "$pid"
	wait "$pid"
	lrc=$?
	got=$(sed -n 's/^received \([0-9]*\) messages.*/\1/p' "$tmp/$1")
	echo "vm1: $1: exit $lrc, ${got:-no} messages (at least $2 expected)"
	tail -n 1 "$tmp/$1"
	[ "$lrc" -eq 0 ] && [ -n "$got" ] && [ "$got" -ge "$2" ]
}

# What a kernel problem looks like in its log.
BAD='WARNING:|BUG:|Oops|general protection|Call Trace|refcount_t:|list_(add|del) corruption|UBSAN:|KASAN:'

# kernel_clean MARK: nothing in the kernel log from the line MARK (written
# to /dev/kmsg) on looks like a kernel problem; a log that lost MARK (its
# ring wrapped) fails too
kernel_clean() {
	dmesg | sed -n "/$1/,\$p" >"$tmp/klog-clean"
	if ! [ -s "$tmp/klog-clean" ]; then
		echo "the kernel log no longer holds \"$1\""
		return 1
	fi
	! grep -E "$BAD" "$tmp/klog-clean"
}

# vm1: phase 1 until vm0's first sentinel, phase 2 until its second one
# (or LISTEN_TIME passes), then reset.  Its kernel log must stay clean.
serve() {
	rc=0
	klog0=$(dmesg | wc -l)
	mark="rdma_pair: vm1 serves ($$)"
	echo "$mark" >/dev/kmsg
	load || { echo "vm1: cannot load kmsgr"; return 1; }
	write_keyring
	pulled0=$(cat "$PARAMS/pulled_bytes")
	hw_counters >"$tmp/hw"
	echo_listen ll-crc "$PORT" --lossless
	echo_listen ly-crc "$LOSSY"
	echo_listen ll-sec "$SEC_LOSSLESS" --lossless --keyring "$KEYRING" --secure
	echo_listen ly-sec "$SEC_LOSSY" --keyring "$KEYRING" --secure
	if [ -b "${KMSGR_NVME:-}" ]; then
		"$KMSGRCTL" blk serve --transport rdma --time "$LISTEN_TIME" \
			"$KMSGR_NVME" "$KMSGR_VM_IP:$BLK" >"$tmp/blk" 2>&1 &
		echo $! >"$tmp/blk.pid"
	else
		echo "vm1: no NVMe namespace (tools/vm/run --nvme): no block target"
		rc=1
	fi
	"$KMSGRCTL" session listen --transport rdma --count 1 \
		--time "$LISTEN_TIME" "$KMSGR_VM_IP:$SENTINEL" \
		>"$tmp/sentinel" 2>&1
	src=$?
	echo "vm1: phase 1 sentinel exit $src"
	if [ "$src" -ne 0 ]; then
		cat "$tmp/sentinel"
		rc=1
	fi
	# reach, 4 KiB, 1 MiB, the bench (200 + 10 warm-up), the stream
	stop_listener ll-crc $((1 + SMALL + BIG + 210 + N_LL_CRC)) || rc=1
	stop_listener ly-crc "$N_LY_CRC" || rc=1
	stop_listener ll-sec "$N_LL_SEC" || rc=1
	stop_listener ly-sec "$N_LY_SEC" || rc=1
	if [ -f "$tmp/blk.pid" ]; then
		kill -TERM "$(cat "$tmp/blk.pid")"
		wait "$(cat "$tmp/blk.pid")"
		brc=$?
		got=$(sed -n 's/^served \([0-9]*\) requests.*/\1/p' "$tmp/blk")
		echo "vm1: blk serve: exit $brc, $(tail -n 1 "$tmp/blk")"
		[ "$brc" -eq 0 ] && [ "${got:-0}" -gt "$N_BLK" ] || rc=1
	fi
	pulled=$(($(cat "$PARAMS/pulled_bytes") - pulled0))
	echo "vm1: pulled $pulled bytes of vm0's messages with RDMA READ"
	echo "vm1: $(hw_delta "$tmp/hw")"
	echo "vm1: RDMA READs given up (read_timeout): $(cat "$PARAMS/read_timeouts")"
	echo "vm1: kmsgr's kernel log in phase 1:"
	klog_since "$klog0"
	[ "$pulled" -ge $((BIG * 1048576)) ] || rc=1
	unload || { echo "vm1: kmsgr did not unload after phase 1"; rc=1; }
	kernel_clean "$mark" || { echo "vm1: a kernel problem in phase 1"; rc=1; }
	# vm0 gave up (or never came): no phase 2
	[ "$src" -eq 0 ] || return 1
	echo "vm1: phase 1 status $rc; kmsgr loaded again for phase 2"
	load || { echo "vm1: cannot load kmsgr again"; return 1; }

	echo_listen kill-ll "$KILL_LOSSLESS" --lossless
	echo_listen kill-ly "$KILL_LOSSY"
	"$KMSGRCTL" session listen --transport rdma --count 1 \
		--time "$LISTEN_TIME" "$KMSGR_VM_IP:$KILL_SENTINEL" \
		>"$tmp/kill-sentinel" 2>&1
	src=$?
	if [ "$src" -ne 0 ] || [ -z "${KMSGR_VM_RESET:-}" ]; then
		echo "vm1: phase 2 sentinel exit $src; no reset"
		cat "$tmp/kill-sentinel"
		kill -TERM "$(cat "$tmp/kill-ll.pid")" "$(cat "$tmp/kill-ly.pid")"
		wait
		return 1
	fi
	kernel_clean "$mark" || { echo "vm1: a kernel problem in phase 2"; rc=1; }
	# the echo listeners keep serving until the reset cuts them off
	: >"$KMSGR_VM_RESET"
	echo "vm1: sentinel received, resetting with status $rc"
	return "$rc"
}

# klog_since LINES: kmsgr's kernel log lines after the first LINES (at
# most 30), for the record
klog_since() {
	dmesg | tail -n +$(($1 + 1)) | grep kmsgr | tail -n 30
}

# stream ARG...: kmsgr_pair_stream stream ARG..., then what kmsgr logged
# and the device counted meanwhile
stream() {
	k=$(dmesg | wc -l)
	hw_counters >"$tmp/hw"
	rto0=$(cat "$PARAMS/read_timeouts")
	"$PAIR_STREAM" stream "$@"
	src=$?
	hw_delta "$tmp/hw"
	echo "RDMA READs given up (read_timeout): $(($(cat "$PARAMS/read_timeouts") - rto0))"
	klog_since "$k"
	return "$src"
}

# vm0: wait for vm1's listener (it boots at its own pace).
reach() {
	i=0
	while ! "$KMSGRCTL" session connect --transport rdma --lossless \
		--send 1 --verify-echo --timeout 5 "$KMSGR_PEER_IP:$PORT"; do
		i=$((i + 1))
		[ "$i" -lt 30 ] || return 1
		sleep 2
	done
}

big() {
	p0=$(cat "$PARAMS/pulled_bytes") || return 1
	"$KMSGRCTL" session connect --transport rdma --lossless \
		--send "$BIG" --size 1048576 --verify-echo --timeout 60 \
		"$KMSGR_PEER_IP:$PORT" || return 1
	pulled=$(($(cat "$PARAMS/pulled_bytes") - p0))
	echo "vm0 pulled $pulled bytes of echoes with RDMA READ"
	[ "$pulled" -ge $((BIG * 1048576)) ]
}

# "qp N mr N cm_id N pd N" of the device, from `rdma resource show` (not
# the CQs: kmsgr_rdma takes them from the device's shared CQ pool, which
# keeps them until the device goes)
res_counts() {
	rdma resource show "$RXE" | awk '{
		for (i = 1; i < NF; i++) c[$i] = $(i + 1)
		printf "qp %s mr %s cm_id %s pd %s\n",
			c["qp"], c["mr"], c["cm_id"], c["pd"] }'
}

# the device's hardware counters, NAME VALUE a line
hw_counters() {
	grep -H . "/sys/class/infiniband/$RXE/ports/1/hw_counters/"* |
		sed 's|.*/||; s/:/ /'
}

# hw_delta FILE: the counters that changed since hw_counters >FILE
hw_delta() {
	hw_counters >"$1.now"
	printf '%s counters that changed:' "$RXE"
	awk 'NR == FNR { v[$1] = $2; next }
		$2 != v[$1] { printf " %s +%d", $1, $2 - v[$1] }
		END { print "" }' "$1" "$1.now"
}

# kill_peer: kmsgr_pair_stream kill under keepalive_timeout
# KILL_KEEPALIVE, and what the device counted meanwhile
kill_peer() {
	ka0=$(cat "$KA") && echo "$KILL_KEEPALIVE" >"$KA" || return 1
	echo "keepalive_timeout $KILL_KEEPALIVE s (was $ka0 s)"
	hw_counters >"$tmp/hw"
	"$PAIR_STREAM" kill -t "$KILL_BOUND" "$KMSGR_PEER_IP:$KILL_SENTINEL" \
		"$KMSGR_PEER_IP:$KILL_LOSSLESS" "$KMSGR_PEER_IP:$KILL_LOSSY"
	krc=$?
	hw_delta "$tmp/hw"
	echo "$ka0" >"$KA"
	return "$krc"
}

# no buffer mapped, and the verbs objects of right after loading only
released() {
	i=0
	# counts that are not numbers (rdma resource show failed) compare
	# equal to each other: they prove nothing
	case $res0 in
	"qp "[0-9]*" mr "[0-9]*" cm_id "[0-9]*" pd "[0-9]*) ;;
	*)	echo "$RXE's verbs objects were not counted after loading: \"$res0\""
		return 1 ;;
	esac
	while :; do
		pinned=$(cat "$PARAMS/pinned_bytes")
		res=$(res_counts)
		[ "$pinned" = 0 ] && [ "$res" = "$res0" ] && break
		i=$((i + 1))
		if [ "$i" -ge 100 ]; then
			echo "pinned_bytes $pinned; $RXE: $res, after loading: $res0"
			return 1
		fi
		sleep 0.2
	done
	echo "pinned_bytes 0; $RXE: $res, as after loading"
}

# vm1 no longer answers; if it does, send its sentinel so it stops waiting
peer_gone() {
	if ping -c 2 -W 2 "$KMSGR_PEER_IP" >/dev/null 2>&1; then
		echo "$KMSGR_PEER_IP still answers ping"
		"$KMSGRCTL" session connect --transport rdma --send 1 \
			--timeout 10 "$KMSGR_PEER_IP:$KILL_SENTINEL"
		return 1
	fi
	echo "$KMSGR_PEER_IP does not answer ping"
}

# nothing in the kernel log since the start looks like a kernel problem
kernel_quiet() {
	dmesg | tail -n +$((klog1 + 1)) | grep kmsgr >"$tmp/klog"
	echo "kmsgr's kernel log lines since the kill:"
	tail -n 20 "$tmp/klog"
	kernel_clean "$mark0"
}

if [ "${KMSGR_VM_ID:-0}" = 1 ]; then
	serve
	st=$?
	rm -rf "$tmp"
	exit "$st"
fi

[ -n "${KMSGR_PEER_IP:-}" ] || { echo "not ok 1 - run me with tools/vm/run --pair --rxe"; echo "1..1"; exit 1; }
mark0="rdma_pair: vm0 starts ($$)"
echo "$mark0" >/dev/kmsg
write_keyring
check "load kmsgr and kmsgr_rdma on vm0" load
res0=$(res_counts)
check "an rdma session from $KMSGR_VM_IP reaches $KMSGR_PEER_IP:$PORT on the other guest" reach
check "$SMALL messages of 4 KiB across the link come back verified" \
	"$KMSGRCTL" session connect --transport rdma --lossless \
	--send "$SMALL" --size 4096 --verify-echo --timeout 60 \
	"$KMSGR_PEER_IP:$PORT"
check "$BIG messages of 1 MiB across the link, pulled with RDMA READ both ways, come back verified" big
check "kmsgrctl bench ping-pong across the link" \
	"$KMSGRCTL" bench --transport rdma --lossless --pattern pingpong \
	--count 200 --warmup 10 "$KMSGR_PEER_IP:$PORT"
check "kmsgrctl blk check across the link: vm1's NVMe namespace read whole through its rdma block target, then $N_BLK random writes, reads, flushes and bad requests, every read and errno right" \
	"$KMSGRCTL" blk check --transport rdma --ops "$N_BLK" --timeout 60 \
	"$KMSGR_PEER_IP:$BLK"
ka_streams=$(cat "$KA") && echo "$STREAM_KEEPALIVE" >"$KA"
check "$N_LL_CRC mixed messages (0 B to 4 MiB, every front/middle/data combination), lossless crc: echoed once, in order, hashes equal, large ones pulled with RDMA READ" \
	stream -l -r -n "$N_LL_CRC" -t 400 "$KMSGR_PEER_IP:$PORT"
check "$N_LY_CRC mixed messages, lossy crc: echoed once, in order, hashes equal" \
	stream -n "$N_LY_CRC" -t 150 "$KMSGR_PEER_IP:$LOSSY"
check "$N_LL_SEC mixed messages, lossless secure (cephx): echoed once, in order, hashes equal, large ones pulled with RDMA READ" \
	stream -l -r -k "$KEYRING" -s -n "$N_LL_SEC" -t 150 \
	"$KMSGR_PEER_IP:$SEC_LOSSLESS"
check "$N_LY_SEC mixed messages, lossy secure (cephx): echoed once, in order, hashes equal" \
	stream -k "$KEYRING" -s -n "$N_LY_SEC" -t 150 \
	"$KMSGR_PEER_IP:$SEC_LOSSY"
[ -n "${ka_streams:-}" ] && echo "$ka_streams" >"$KA"
check "the sentinel tells vm1 phase 1 is done" \
	"$KMSGRCTL" session connect --transport rdma --send 1 --timeout 30 \
	"$KMSGR_PEER_IP:$SENTINEL"
klog1=$(dmesg | wc -l)
check "vm1 killed under a live lossless and a live lossy session with messages in flight: DOWN and CLOSED with a reason within $KILL_BOUND s, both close, every SEND completes" \
	kill_peer
check "vm1 is gone" peer_gone
check "no buffer left mapped; rdma resource counts back to those after loading" released
check "no kernel warning in the log" kernel_quiet
check "kmsgr_rdma and kmsgr unload" unload
echo "1..$n"
rm -rf "$tmp"
[ "$failed" -eq 0 ]

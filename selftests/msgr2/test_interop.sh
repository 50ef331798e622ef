#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Interop of the msgr2 engine (through monclient) with a real ceph-mon 16.2
# on 127.0.0.1, plus robustness against stalling and disconnecting peers.
# Prints TAP.  Run from the project root; MSGR2_BIN is the directory with
# monclient and faultproxy (default .build/msgr2).
#
# Every daemon started here is killed by the EXIT trap, even on failure.

set -u

BIN=${MSGR2_BIN:-.build/msgr2}
HERE=$(cd "$(dirname "$0")" && pwd)
CLUSTER=$HERE/ceph_cluster.sh
MC=$BIN/monclient
FP=$BIN/faultproxy
PLAN=35
# engine handshake timeout used by the robustness checks, and the slack
# allowed on top of it on a loaded machine
TMO=2000
SLACK=4000

TMP=$(mktemp -d /tmp/msgr2-interop.XXXXXX) || exit 1
FP_PIDS=()
n=0
nfail=0

cleanup() {
	local p

	for p in "${FP_PIDS[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	"$CLUSTER" stop "$TMP/none" 2>/dev/null
	"$CLUSTER" stop "$TMP/cephx" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

diag() {
	sed 's/^/# /'
}

ok() {
	n=$((n + 1))
	echo "ok $n - $*"
}

notok() {
	n=$((n + 1))
	nfail=$((nfail + 1))
	echo "not ok $n - $*"
}

# tail of a mon log, as TAP diagnostics
mon_tail() {
	[ -f "$1/mon.log" ] || return 0
	echo "# last lines of $1/mon.log:"
	tail -n 15 "$1/mon.log" | cut -c1-200 | diag
}

ms() {
	echo $(($(date +%s%N) / 1000000))
}

# run_mc TAG ARGS...: run monclient (bounded by timeout), output in
# $TMP/TAG.out / .err; sets RC and EL (elapsed ms)
run_mc() {
	local tag=$1 t0

	shift
	t0=$(ms)
	timeout -k 5 60 "$MC" "$@" >"$TMP/$tag.out" 2>"$TMP/$tag.err" \
		</dev/null
	RC=$?
	EL=$(($(ms) - t0))
}

mc_diag() {
	echo "# monclient exit $RC after ${EL} ms; stdout:"
	head -c 600 "$TMP/$1.out" | diag
	echo "# stderr:"
	head -c 1500 "$TMP/$1.err" | diag
}

# ceph CLI on cluster DIR (never reads stdin: it crashes with stdin closed)
ceph_cli() {
	local dir=$1

	shift
	timeout 30 ceph -c "$dir/ceph.conf" --connect-timeout 15 "$@" \
		</dev/null 2>"$TMP/ceph.err"
}

first_epoch() {
	sed -n 's/^[^"]*"epoch":\([0-9]*\).*/\1/p' | head -n 1
}

# start_fp MODE: start faultproxy, sets FPORT
start_fp() {
	local i

	: >"$TMP/fp.port"
	"$FP" --life-ms 90000 "$1" >"$TMP/fp.port" 2>"$TMP/fp.err" \
		</dev/null &
	FP_PIDS+=($!)
	FPORT=
	for ((i = 0; i < 100; i++)); do
		FPORT=$(head -n 1 "$TMP/fp.port")
		[ -n "$FPORT" ] && return 0
		sleep 0.1
	done
	return 1
}

stop_fp() {
	local p=${FP_PIDS[-1]}

	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	unset 'FP_PIDS[-1]'
}

# check_cmds LABEL DIR TAG: the four interop checks on the output of one
# monclient run (ping, version osdmap, version monmap, map)
check_cmds() {
	local label=$1 dir=$2 tag=$3 fsid want got mepoch

	fsid=$(cat "$dir/fsid")
	# the JSON is pretty-printed over many lines
	if [ "$RC" = 0 ] && grep -q '^ping {' "$TMP/$tag.out" &&
	   grep -q '^ *"health": {' "$TMP/$tag.out" &&
	   grep -q '^ *"mon_status": {' "$TMP/$tag.out" &&
	   grep -q "\"fsid\": *\"$fsid\"" "$TMP/$tag.out"; then
		ok "$label: MPing reply is JSON with health, mon_status, fsid"
	else
		notok "$label: MPing reply is JSON with health, mon_status, fsid"
		mc_diag "$tag"
	fi

	want=$(ceph_cli "$dir" osd dump -f json | first_epoch)
	got=$(sed -n 's/^version osdmap \([0-9]*\) oldest [0-9]*$/\1/p' \
		"$TMP/$tag.out")
	if [ -n "$want" ] && [ "$want" -gt 1 ] && [ "$got" = "$want" ]; then
		ok "$label: MMonGetVersion(osdmap) = $got = ceph osd dump epoch"
	else
		notok "$label: MMonGetVersion(osdmap) '$got' vs osd dump '$want'"
		mc_diag "$tag"
		diag <"$TMP/ceph.err"
	fi

	want=$(ceph_cli "$dir" mon dump -f json | first_epoch)
	got=$(sed -n 's/^version monmap \([0-9]*\) oldest [0-9]*$/\1/p' \
		"$TMP/$tag.out")
	mepoch=$(sed -n 's/^map fsid [-0-9a-f]* epoch \([0-9]*\)$/\1/p' \
		"$TMP/$tag.out")
	if [ -n "$want" ] && [ "$got" = "$want" ] && [ "$mepoch" = "$want" ]
	then
		ok "$label: MMonGetVersion(monmap) = MonMap epoch = mon dump epoch $got"
	else
		notok "$label: monmap version '$got', MonMap epoch '$mepoch', mon dump '$want'"
		mc_diag "$tag"
	fi

	want=$(ceph_cli "$dir" fsid)
	got=$(sed -n 's/^map fsid \([-0-9a-f]*\) epoch.*/\1/p' "$TMP/$tag.out")
	if [ -n "$want" ] && [ "$got" = "$want" ]; then
		ok "$label: MMonMap fsid = ceph fsid ($got)"
	else
		notok "$label: MMonMap fsid '$got' vs ceph fsid '$want'"
		mc_diag "$tag"
	fi
}

# expect_fail LABEL TAG REASON MAXMS [MINMS]: monclient failed with the
# engine reason REASON, within MAXMS (and not before MINMS)
expect_fail() {
	local label=$1 tag=$2 reason=$3 max=$4 min=${5:-0}

	if [ "$RC" != 0 ] && [ "$RC" != 124 ] && [ "$RC" != 137 ] &&
	   grep -q "failed: $reason:" "$TMP/$tag.err" &&
	   [ "$EL" -le "$max" ] && [ "$EL" -ge "$min" ]; then
		ok "$label: $reason after $EL ms"
	else
		notok "$label: want $reason within [$min, $max] ms"
		mc_diag "$tag"
	fi
}

echo "1..$PLAN"
echo "# monclient: $MC"
T_START=$(ms)

missing=
for f in "$MC" "$FP"; do
	[ -x "$f" ] || missing="$missing $f"
done
if [ -n "$missing" ]; then
	# every check fails: nothing here can run without the binaries
	for ((i = 0; i < PLAN; i++)); do
		notok "not built:$missing"
	done
	exit 1
fi

ALL=(ping version osdmap version monmap map)

# ---- auth none cluster ------------------------------------------------------
D=$TMP/none
if "$CLUSTER" start none "$D" 2>"$TMP/start.err"; then
	ok "none cluster started ($(cat "$D/addr"))"
	UP=1
else
	notok "none cluster did not start"
	diag <"$TMP/start.err"
	UP=0
fi
ADDR=$(cat "$D/addr" 2>/dev/null || echo 127.0.0.1:1)
# move the osdmap past epoch 1 so that the epoch comparison means something
ceph_cli "$D" osd set noout >/dev/null 2>&1

run_mc none --addr "$ADDR" --auth none "${ALL[@]}"
if [ "$RC" = 0 ] && grep -qx 'mode crc' "$TMP/none.out"; then
	ok "none: handshake completes in crc mode"
else
	notok "none: handshake completes in crc mode"
	mc_diag none
	mon_tail "$D"
fi
check_cmds none "$D" none

# (c) wrong auth method: AUTH_BAD_METHOD from the mon
# a well-formed key that no cluster here knows
KEY=$(ceph-authtool --gen-print-key 2>/dev/null </dev/null)
printf '[client.admin]\n\tkey = %s\n' "$KEY" >"$TMP/fake.keyring"
run_mc badm --addr "$ADDR" --auth cephx --keyring "$TMP/fake.keyring" \
	--timeout-ms 5000 ping
expect_fail "cephx client vs none cluster (AUTH_BAD_METHOD)" badm \
	MSGR2_R_AUTH 3000

run_mc retry --addr "$ADDR" --auth cephx,none \
	--keyring "$TMP/fake.keyring" version osdmap
if [ "$RC" = 0 ] && grep -qx 'mode crc' "$TMP/retry.out" &&
   grep -q '^version osdmap [0-9]' "$TMP/retry.out"; then
	ok "cephx,none client vs none cluster: retried with none after AUTH_BAD_METHOD"
else
	notok "cephx,none client vs none cluster: retried with none after AUTH_BAD_METHOD"
	mc_diag retry
fi

# (a) peers that stall the handshake: the engine's own timeout fires
if start_fp silent; then
	run_mc stall0 --addr "127.0.0.1:$FPORT" --timeout-ms $TMO ping
	expect_fail "silent peer (no banner)" stall0 MSGR2_R_TIMEOUT \
		$((TMO + SLACK)) $((TMO - 100))
	stop_fp
else
	notok "faultproxy silent did not start"
fi

if start_fp banner-stall; then
	run_mc stall1 --addr "127.0.0.1:$FPORT" --timeout-ms $TMO ping
	expect_fail "peer stalls after its banner" stall1 MSGR2_R_TIMEOUT \
		$((TMO + SLACK)) $((TMO - 100))
	stop_fp
else
	notok "faultproxy banner-stall did not start"
fi

# the real mon, cut after banner + HELLO (26 + 72 bytes): stall in AUTH
if start_fp "proxy:$ADDR:98:stall"; then
	run_mc stall2 --addr "127.0.0.1:$FPORT" --timeout-ms $TMO ping
	expect_fail "mon stalled after HELLO (proxy)" stall2 \
		MSGR2_R_TIMEOUT $((TMO + SLACK)) $((TMO - 100))
	stop_fp
else
	notok "faultproxy proxy did not start"
fi

# the real mon frozen with SIGSTOP: the kernel still accepts the TCP
# connection, nothing answers
MPID=$(cat "$D/mon.pid" 2>/dev/null)
if [ -n "$MPID" ] && kill -STOP "$MPID" 2>/dev/null; then
	run_mc stall3 --addr "$ADDR" --timeout-ms $TMO ping
	kill -CONT "$MPID"
	expect_fail "mon frozen by SIGSTOP" stall3 MSGR2_R_TIMEOUT \
		$((TMO + SLACK)) $((TMO - 100))
else
	notok "mon frozen by SIGSTOP: no mon pid to stop"
fi

# (b) peers that drop the connection mid-handshake: clean EOF, no hang
if start_fp banner-close; then
	run_mc eof0 --addr "127.0.0.1:$FPORT" --timeout-ms 20000 ping
	expect_fail "peer closes after its banner" eof0 MSGR2_R_EOF 5000
	stop_fp
else
	notok "faultproxy banner-close did not start"
fi

for cut in 98 150; do
	if start_fp "proxy:$ADDR:$cut:close"; then
		run_mc eof_$cut --addr "127.0.0.1:$FPORT" --timeout-ms 20000 \
			ping
		expect_fail "mon connection cut after $cut bytes" eof_$cut \
			MSGR2_R_EOF 5000
		stop_fp
	else
		notok "faultproxy proxy did not start"
	fi
done

# the mon still works after all that (and after SIGCONT)
run_mc after --addr "$ADDR" --auth none ping
if [ "$RC" = 0 ] && grep -q '^ping {' "$TMP/after.out"; then
	ok "none: mon still answers after the robustness checks"
else
	notok "none: mon still answers after the robustness checks"
	mc_diag after
	mon_tail "$D"
fi

if [ "$UP" = 1 ] && "$CLUSTER" stop "$D" && [ ! -e "$D" ] &&
   ! kill -0 "$MPID" 2>/dev/null; then
	ok "none cluster stopped"
else
	notok "none cluster stopped"
fi

# ---- cephx cluster ----------------------------------------------------------
D=$TMP/cephx
if "$CLUSTER" start cephx "$D" 2>"$TMP/start.err"; then
	ok "cephx cluster started ($(cat "$D/addr"))"
	UP=1
else
	notok "cephx cluster did not start"
	diag <"$TMP/start.err"
	UP=0
fi
ADDR=$(cat "$D/addr" 2>/dev/null || echo 127.0.0.1:1)
KR=$D/keyring
ceph_cli "$D" osd set noout >/dev/null 2>&1
ceph_cli "$D" osd set nodown >/dev/null 2>&1

for mode in crc secure; do
	run_mc cx_$mode --addr "$ADDR" --auth cephx --name client.admin \
		--keyring "$KR" --mode $mode "${ALL[@]}"
	if [ "$RC" = 0 ] && grep -qx "mode $mode" "$TMP/cx_$mode.out"; then
		ok "cephx: handshake completes, negotiated mode is $mode"
	else
		notok "cephx: handshake completes, negotiated mode is $mode"
		mc_diag cx_$mode
		mon_tail "$D"
	fi
	check_cmds "cephx $mode" "$D" cx_$mode
done

# a client that redials (new connection, same engine session and cephx
# state) authenticates again: it asks for a new global id, not to reclaim
# the old one without its ticket (a 16.2.1+ mon refuses that: EACCES)
run_mc cx_redial --addr "$ADDR" --auth cephx --name client.admin \
	--keyring "$KR" --mode crc ping redial ping
if [ "$RC" = 0 ] && grep -qx "redial mode crc" "$TMP/cx_redial.out"; then
	ok "cephx: a redial on the same session authenticates again"
else
	notok "cephx: a redial on the same session authenticates again"
	mc_diag cx_redial
	mon_tail "$D"
fi

# (c) the other way round: AUTH_NONE against a cephx cluster
run_mc badn --addr "$ADDR" --auth none --timeout-ms 5000 ping
expect_fail "none client vs cephx cluster (AUTH_BAD_METHOD)" badn \
	MSGR2_R_AUTH 3000

# a wrong key is refused cleanly
run_mc badk --addr "$ADDR" --auth cephx --keyring "$TMP/fake.keyring" \
	--timeout-ms 5000 ping
expect_fail "cephx with a wrong key" badk MSGR2_R_AUTH 3000

MPID=$(cat "$D/mon.pid" 2>/dev/null)
if [ "$UP" = 1 ] && "$CLUSTER" stop "$D" && [ ! -e "$D" ] &&
   ! kill -0 "$MPID" 2>/dev/null; then
	ok "cephx cluster stopped"
else
	notok "cephx cluster stopped"
fi

# ---- the engine as the mon: a real Ceph client against its cephx server ----
# monclient --serve accepts one connection as mon.0 and authenticates
# client.admin with msgr2_auth_cephx_server_ops; `ceph -s` (Ceph's own
# ProtocolV2 and CephxClientHandler) must reach READY and send its first
# message, in crc and in secure mode; with another key it is refused.
SKR=$TMP/serve.keyring
ceph-authtool --create-keyring "$SKR" --gen-key -n client.admin \
	>/dev/null 2>&1
ceph-authtool --create-keyring "$TMP/other.keyring" --gen-key \
	-n client.admin >/dev/null 2>&1

# serve_check TAG MODE KEYRING: fills $TMP/TAG.{out,err}, $TMP/TAG.ceph
serve_check() {
	local tag=$1 mode=$2 kr=$3 port="" i spid

	timeout -k 5 40 "$MC" --serve --addr 127.0.0.1:0 --auth cephx \
		--keyring "$SKR" --name client.admin --mode "$mode" \
		--timeout-ms 20000 >"$TMP/$tag.out" 2>"$TMP/$tag.err" \
		</dev/null &
	spid=$!
	for ((i = 0; i < 50; i++)); do
		port=$(sed -n 's/^port //p' "$TMP/$tag.out")
		[ -n "$port" ] && break
		sleep 0.1
	done
	timeout -k 5 25 ceph --conf /dev/null -m "v2:127.0.0.1:$port" \
		--keyring "$kr" -n client.admin \
		--auth-client-required cephx --ms-mon-client-mode "$mode" \
		--connect-timeout 8 -s </dev/null >"$TMP/$tag.ceph" 2>&1
	CEPH_RC=$?
	wait "$spid"
	RC=$?
}

for mode in crc secure; do
	serve_check srv_$mode $mode "$SKR"
	if [ "$RC" = 0 ] && grep -qx "mode $mode" "$TMP/srv_$mode.out" &&
	   grep -q "^message type " "$TMP/srv_$mode.out"; then
		ok "ceph -s completes cephx ($mode) against the engine as a mon: $(tail -n 1 "$TMP/srv_$mode.out")"
	else
		notok "ceph -s completes cephx ($mode) against the engine as a mon"
		echo "# monclient --serve exit $RC:"
		cat "$TMP/srv_$mode.out" "$TMP/srv_$mode.err" | diag
		tail -n 5 "$TMP/srv_$mode.ceph" | diag
	fi
done
serve_check srv_bad crc "$TMP/other.keyring"
# refused by the server's cephx: ceph got AUTH_BAD_METHOD with EACCES
# (the server then sees it hang up: exit 1), not a timeout (124, 137) or
# a crash (a sanitizer's report)
if [ "$RC" = 1 ] && ! grep -q "^mode" "$TMP/srv_bad.out" &&
   ! grep -Eq "Sanitizer|runtime error" "$TMP/srv_bad.err" &&
   grep -q "handle_auth_bad_method" "$TMP/srv_bad.ceph" &&
   grep -q "permission denied" "$TMP/srv_bad.ceph" &&
   [ "$CEPH_RC" != 0 ]; then
	ok "ceph -s with another key is refused by the engine's cephx server (ceph exit $CEPH_RC: $(grep -m1 'permission denied' "$TMP/srv_bad.ceph"))"
else
	notok "ceph -s with another key is refused by the engine's cephx server"
	cat "$TMP/srv_bad.out" "$TMP/srv_bad.err" "$TMP/srv_bad.ceph" | diag
fi

if [ "$n" -ne "$PLAN" ]; then
	notok "plan: ran $n checks, planned $PLAN"
fi
echo "# $((n - nfail)) of $n passed in $(($(ms) - T_START)) ms"
[ "$nfail" = 0 ]

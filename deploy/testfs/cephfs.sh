#!/usr/bin/env bash
# A single-node CephFS on loopback, for tests: one monitor, one manager,
# OSDS object stores (BlueStore on sparse files), one MDS, and ceph-fuse
# client mounts (each mount stands for one host: two ceph-fuse processes
# share no cache). Every state file, socket, pid file and log is under
# DIR; every daemon binds 127.0.0.1; authentication is off (loopback only).
#
#   cephfs.sh start DIR [OSDS]     make the cluster and the filesystem (OSDS: 1)
#   cephfs.sh mount DIR MNT        mount the filesystem at MNT (one client)
#   cephfs.sh umount DIR MNT       unmount MNT
#   cephfs.sh client-kill DIR MNT  kill -9 the ceph-fuse process of MNT (ENOTCONN there)
#   cephfs.sh osd-stop DIR N       kill -9 OSD N
#   cephfs.sh osd-start DIR N      start OSD N again, wait until it serves
#   cephfs.sh mds-restart DIR      kill -9 the MDS and start it again
#   cephfs.sh mds-stop DIR         kill -9 the MDS
#   cephfs.sh mds-start DIR        start the MDS again, wait until it is active
#   cephfs.sh stop DIR             unmount every client, stop every daemon, remove DIR
set -euo pipefail

cmd=${1:?usage: cephfs.sh start|mount|umount|client-kill|osd-stop|osd-start|mds-restart|mds-stop|mds-start|stop DIR ...}
dir=${2:?DIR}
[ -d "$dir" ] && dir=$(cd "$dir" && pwd)
conf=$dir/ceph.conf

ceph_() { timeout 60 ceph -c "$conf" "$@"; }

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_for DESC CMD...: run CMD until it succeeds, 120 s at most.
wait_for() {
  local what=$1
  shift
  for _ in $(seq 600); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "cephfs.sh: $what: not after 120 s" >&2
  return 1
}

mds_active() { ceph_ fs status cephfs 2>/dev/null | grep -q active; }

start() {
  local osds=${3:-1}
  mkdir -p "$dir"/{run,log,mon.a,mgr.x,mds.a,mnt}
  dir=$(cd "$dir" && pwd)
  conf=$dir/ceph.conf
  local port fsid
  port=$(freeport)
  fsid=$(uuidgen)
  cat >"$conf" <<CONF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$port
mon initial members = a
public addr = 127.0.0.1
public network = 127.0.0.0/8
ms bind ipv4 = true
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
run dir = $dir/run
admin socket = $dir/run/\$cluster-\$name.\$pid.asok
pid file = $dir/run/\$name.\$pid.pid
log file = $dir/log/\$name.log
crash dir = $dir/crash
exporter sock dir = $dir/run
keyring = $dir/keyring
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
mon osd down out interval = 0
mon data = $dir/\$name
mgr data = $dir/\$name
mds data = $dir/\$name
osd data = $dir/\$name
osd objectstore = bluestore
osd memory target = 939524096
bluestore block create = true
bluestore block size = 4294967296
bluestore block path = $dir/\$name.block
bluestore cache autotune = false
bluestore cache size = 134217728
osd op num shards = 1
osd op num threads per shard = 2
mgr initial modules =
[client]
client mount timeout = 30
log file = $dir/log/\$name.\$pid.log
CONF
  : >"$dir/keyring"
  monmaptool --create --fsid "$fsid" --add a "v2:127.0.0.1:$port" "$dir/monmap" >/dev/null
  ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" >/dev/null
  ceph-mon -c "$conf" -i a >>"$dir/log/launch.log" 2>&1
  wait_for "monitor" ceph_ mon stat
  ceph-mgr -c "$conf" -i x >>"$dir/log/launch.log" 2>&1
  local i uuid id
  for i in $(seq 0 $((osds - 1))); do
    uuid=$(uuidgen)
    id=$(ceph_ osd new "$uuid")
    mkdir -p "$dir/osd.$id"
    ceph-osd -c "$conf" -i "$id" --mkfs --osd-uuid "$uuid" >/dev/null 2>&1
    ceph-osd -c "$conf" -i "$id" >>"$dir/log/launch.log" 2>&1
  done
  ceph_ osd pool create cephfs_meta 8 >/dev/null 2>&1
  ceph_ osd pool create cephfs_data 8 >/dev/null 2>&1
  ceph_ fs new cephfs cephfs_meta cephfs_data >/dev/null 2>&1
  # A client that died (client-kill) holds its capabilities until the MDS
  # times its session out: every other client's access to a file it held
  # waits that long (60 s by default; 30 s here, the least Ceph takes).
  ceph_ fs set cephfs session_timeout 30 >/dev/null 2>&1
  ceph_ fs set cephfs session_autoclose 30 >/dev/null 2>&1
  ceph-mds -c "$conf" -i a >>"$dir/log/launch.log" 2>&1
  wait_for "an active MDS" mds_active
}

mountfs() {
  local mnt=${3:?MNT}
  mkdir -p "$mnt"
  ceph-fuse -c "$conf" "$mnt" >>"$dir/log/launch.log" 2>&1
  echo "$mnt" >>"$dir/mounts"
  wait_for "mount $mnt" mountpoint -q "$mnt"
}

# daemon_pid NAME: the pid of daemon NAME (mon.a, osd.0, mds.a), from its pid file.
daemon_pid() { cat "$dir"/run/"$1".*.pid 2>/dev/null | head -1; }

killd() {
  local f pid
  for f in "$dir"/run/"$1".*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f" "$dir/run/ceph-$1.$pid.asok"
  done
}

# osd_serving N: OSD N says it is active, and every placement group is
# active+clean (a restarted OSD has peered: clients' operations go through).
osd_serving() {
  local a
  a=$(compgen -G "$dir/run/ceph-osd.$1.*.asok" | head -1)
  [ -n "$a" ] && timeout 10 ceph --admin-daemon "$a" status 2>/dev/null | grep -q '"state": "active"' &&
    ceph_ pg stat 2>/dev/null | grep -Eq '^([0-9]+) pgs: \1 active\+clean'
}

stop() {
  [ -d "$dir" ] || return 0
  local m
  if [ -f "$dir/mounts" ]; then
    while read -r m; do mountpoint -q "$m" && { umount "$m" 2>/dev/null || umount -l "$m"; }; done <"$dir/mounts"
  fi
  local f
  for f in "$dir"/run/*.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  for _ in $(seq 50); do
    compgen -G "$dir/run/*.pid" >/dev/null || break
    sleep 0.1
  done
  for f in "$dir"/run/*.pid; do
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
  done
  rm -rf "$dir"
}

# client_kill MNT: kill -9 the client process serving MNT, as a crash of
# it would: the mount stays, and every access to it is ENOTCONN until it
# is unmounted and mounted again.
client_kill() {
  local mnt=${3:?MNT} p
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = ceph-fuse ] || continue
    tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -qxF -- "$mnt" || continue
    kill -9 "${p#/proc/}"
    return 0
  done
  echo "cephfs.sh: no client process serves $mnt" >&2
  return 1
}

case $cmd in
start) start "$@" ;;
mount) mountfs "$@" ;;
umount) umount "${3:?MNT}" 2>/dev/null || umount -l "$3" ;;
client-kill) client_kill "$@" ;;
osd-stop) killd "osd.${3:?N}" ;;
osd-start) ceph-osd -c "$conf" -i "${3:?N}" >>"$dir/log/launch.log" 2>&1 && wait_for "osd.$3 serving" osd_serving "$3" ;;
mds-restart) killd mds.a && ceph-mds -c "$conf" -i a >>"$dir/log/launch.log" 2>&1 && wait_for "an active MDS" mds_active ;;
mds-stop) killd mds.a ;;
mds-start) ceph-mds -c "$conf" -i a >>"$dir/log/launch.log" 2>&1 && wait_for "an active MDS" mds_active ;;
stop) stop ;;
*) echo "cephfs.sh: unknown command $cmd" >&2; exit 2 ;;
esac

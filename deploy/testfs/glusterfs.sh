#!/usr/bin/env bash
# A GlusterFS volume on loopback, for tests: one glusterd with a private
# volfile, a volume of three bricks on local directories, and glusterfs
# FUSE client mounts (each mount stands for one host). Every state file,
# socket, pid file and log is under DIR; nothing listens beyond 127.0.0.1.
#
#   glusterfs.sh start DIR            start glusterd, make and start the volume
#   glusterfs.sh mount DIR MNT        mount the volume at MNT (one client)
#   glusterfs.sh umount DIR MNT       unmount MNT
#   glusterfs.sh client-kill DIR MNT  kill -9 the glusterfs client of MNT (ENOTCONN there)
#   glusterfs.sh brick-stop DIR N     kill brick N's process (0..2)
#   glusterfs.sh brick-start DIR      start the bricks that are down, wait until online
#   glusterfs.sh stop DIR             unmount every client, stop everything, remove DIR
#
# The volume is coherent across clients: the client caches that keep a
# name or an open-but-unlinked file alive on one client after another
# changed it are off, and upcall invalidation is on (Gluster's defaults
# kept a rename invisible on the other client for over 10 s).
set -euo pipefail

cmd=${1:?usage: glusterfs.sh start|mount|umount|client-kill|brick-stop|brick-start|stop DIR ...}
dir=${2:?DIR}
vol=ucmfs
# Gluster refuses localhost and 127.0.0.1 as a brick host: the bricks
# are named by the host's name, which must resolve to a loopback address.
host=$(hostname)

cli() { gluster --mode=script --glusterd-sock="$dir/run/glusterd.socket" --log-file="$dir/log/cli.log" "$@"; }

start() {
  case $(getent ahostsv4 "$host" | awk 'NR == 1 { print $1 }') in
  127.*) ;;
  *) echo "glusterfs.sh: the host name $host does not resolve to 127.x (add it to /etc/hosts)" >&2; return 1 ;;
  esac
  mkdir -p "$dir"/{lib,run,log,bricks,mnt}
  dir=$(cd "$dir" && pwd)
  # The bricks find glusterd at the default port (glusterd tells them no
  # other): one such volume per machine at a time.
  local port=24007
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
    echo "glusterfs.sh: 127.0.0.1:$port is taken (another glusterd runs here)" >&2
    return 1
  fi
  echo "$port" >"$dir/port"
  cat >"$dir/glusterd.vol" <<VOL
volume management
    type mgmt/glusterd
    option working-directory $dir/lib
    option run-directory $dir/run
    option logging-directory $dir/log
    option socketdir $dir/run
    option glusterd-sockfile $dir/run/glusterd.socket
    option transport-type socket
    option transport.address-family inet
    option transport.socket.bind-address 127.0.0.1
    option transport.socket.listen-port $port
    option ping-timeout 0
    option event-threads 1
    option max-port 60999
end-volume
VOL
  glusterd -f "$dir/glusterd.vol" -p "$dir/run/glusterd.pid" -l "$dir/log/glusterd.log"
  for _ in $(seq 100); do cli volume list >/dev/null 2>&1 && break; sleep 0.1; done
  cli volume create $vol $host:"$dir"/bricks/b0 $host:"$dir"/bricks/b1 $host:"$dir"/bricks/b2 force >/dev/null
  local o
  for o in features.cache-invalidation=on performance.cache-invalidation=on \
    performance.open-behind=off performance.stat-prefetch=off \
    performance.quick-read=off performance.io-cache=off performance.read-ahead=off \
    performance.write-behind=off performance.nl-cache=off \
    performance.client-io-threads=off server.event-threads=1 client.event-threads=1; do
    cli volume set $vol "${o%%=*}" "${o#*=}" >/dev/null
  done
  cli volume start $vol >/dev/null
}

mountvol() {
  local mnt=${3:?MNT}
  mkdir -p "$mnt"
  local name
  name=$(echo "$mnt" | tr -c 'A-Za-z0-9\n' '-')
  glusterfs --volfile-server=127.0.0.1 --volfile-server-port="$(cat "$dir/port")" \
    --volfile-id=$vol --log-file="$dir/log/client$name.log" \
    --pid-file="$dir/run/client$name.pid" --attribute-timeout=0 --entry-timeout=0 \
    --negative-timeout=0 "$mnt"
  for _ in $(seq 100); do mountpoint -q "$mnt" && stat "$mnt" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "glusterfs.sh: $mnt: not mounted" >&2
  return 1
}

# brick_start starts the bricks that are down and waits until every
# brick is online (the clients reconnect to it within seconds).
brick_start() {
  cli volume start $vol force >/dev/null
  for _ in $(seq 300); do
    [ "$(cli volume status $vol --xml 2>/dev/null | grep -c '<status>1</status>')" = 3 ] && return 0
    sleep 0.2
  done
  echo "glusterfs.sh: the bricks are not all online after 60 s" >&2
  return 1
}

# brick_stop N: kill -9 brick N's process and remove its pid file, which
# glusterd would otherwise take for a brick still running (it says
# "discovered already-running brick" and starts nothing).
brick_stop() {
  local f
  f=$(ls "$dir"/run/vols/$vol/*b${3:?N}.pid)
  kill -9 "$(cat "$f")"
  rm -f "$f"
}

stop() {
  [ -d "$dir" ] || return 0
  local m
  while read -r _ m t _; do
    [ "$t" = fuse.glusterfs ] || continue
    m=$(printf '%b' "$m")
    grep -qs "$m" "$dir/mounts" && umount -l "$m" || true
  done </proc/self/mounts
  # A brick's socket is in /var/run/gluster whatever glusterd is told:
  # the ones the bricks' command lines name go with them.
  local socks="" f
  for f in "$dir"/run/vols/*/*.pid; do
    [ -f "$f" ] || continue
    socks+=" $(tr '\0' '\n' <"/proc/$(cat "$f")/cmdline" 2>/dev/null | grep -A1 -x -- -S | sed -n 2p || true)"
  done
  cli volume stop $vol force >/dev/null 2>&1 || true
  local f
  for f in "$dir"/run/glusterd.pid "$dir"/run/client*.pid "$dir"/run/vols/*/*.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  local s
  for s in $socks; do rm -f "$s"; done
  rm -rf "$dir"
}

# client_kill MNT: kill -9 the client process serving MNT, as a crash of
# it would: the mount stays, and every access to it is ENOTCONN until it
# is unmounted and mounted again.
client_kill() {
  local mnt=${3:?MNT} p
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = glusterfs ] || continue
    tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -qxF -- "$mnt" || continue
    kill -9 "${p#/proc/}"
    return 0
  done
  echo "glusterfs.sh: no client process serves $mnt" >&2
  return 1
}

case $cmd in
start) start ;;
mount) mountvol "$@" && echo "$3" >>"$dir/mounts" ;;
umount) umount "${3:?MNT}" 2>/dev/null || umount -l "$3" ;;
client-kill) client_kill "$@" ;;
brick-stop) brick_stop "$@" ;;
brick-start) brick_start ;;
stop) stop ;;
*) echo "glusterfs.sh: unknown command $cmd" >&2; exit 2 ;;
esac

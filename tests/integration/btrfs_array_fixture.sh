#!/usr/bin/env bash
# A four-member btrfs (data raid0, metadata raid1) over loop devices, one
# member slowed for one cgroup, for tests/integration/disk_members_test.cc.
#
# Usage: btrfs_array_fixture.sh start DIR | stop DIR
#
# Members 0, 1 and 3 are files on a tmpfs (their loop devices are the leaves).
# Member 2's file lives on an ext4 on a fourth loop device, the "backing
# disk", whose reads and writes the blkio cgroup DIR's name throttles (cgroup
# v1 blkio.throttle.*_bps_device). The loop driver issues a member's I/O to
# its backing file in the cgroup of the request (loop's per-blkcg workers), so
# a process in that cgroup finds member 2 slow to serve, and its own
# /sys/block/<member>/stat shows the time: what a failing disk in an array
# looks like to the kernel's counters. (Throttling member 2 itself would not:
# blk-throttle holds a bio before the device's counters see it.)
#
# `start` writes DIR/env: ARRAY (the mount point), MEMBERS, SLOW_MEMBER,
# BACKING (its disk) and CGROUP (its cgroup.procs directory). Exit 77 with
# one line when this host cannot (not root, no btrfs, no cgroup v1 blkio).
# This kernel has no md driver and no device-mapper: md and dm stacks are
# covered by the fixture-tree unit tests (tests/probes/disk/disk_members_test.cc)
# only.
set -euo pipefail
PATH=/usr/sbin:/sbin:/usr/bin:/bin

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
action=$1
dir=$(realpath -m "$2")
rate=${BTRFS_FIXTURE_BPS:-$((8 << 20))}

skip() { echo "btrfs_array_fixture: $*"; exit 77; }

stop() {
  [[ -f $dir/env ]] || [[ -d $dir/tmpfs ]] || return 0
  # shellcheck disable=SC1091
  [[ -f $dir/env ]] && source "$dir/env"
  umount "$dir/array" 2>/dev/null || umount -l "$dir/array" 2>/dev/null || true
  for image in "$dir"/tmpfs/member*.img "$dir"/backing/member*.img; do
    [[ -e $image ]] || continue
    for device in $(losetup -j "$image" -O NAME -n 2>/dev/null); do losetup -d "$device" 2>/dev/null || true; done
  done
  umount "$dir/backing" 2>/dev/null || umount -l "$dir/backing" 2>/dev/null || true
  for device in $(losetup -j "$dir/tmpfs/backing.img" -O NAME -n 2>/dev/null); do losetup -d "$device" || true; done
  umount "$dir/tmpfs" 2>/dev/null || umount -l "$dir/tmpfs" 2>/dev/null || true
  [[ -n ${CGROUP:-} && -d ${CGROUP:-} ]] && rmdir "$CGROUP" 2>/dev/null || true
  rm -f "$dir/env"
}

start() {
  [[ $(id -u) -eq 0 ]] || skip "needs root (loop devices, mount, cgroups)"
  command -v mkfs.btrfs >/dev/null || skip "mkfs.btrfs not installed (Debian: btrfs-progs)"
  grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || skip "this kernel has no btrfs"
  [[ -d /sys/fs/cgroup/blkio ]] || skip "no cgroup v1 blkio controller at /sys/fs/cgroup/blkio"
  mkdir -p "$dir/tmpfs" "$dir/backing" "$dir/array"
  mount -t tmpfs -o size=1400m hostperf-members "$dir/tmpfs"
  truncate -s 320M "$dir/tmpfs/backing.img"
  backing=$(losetup --find --show "$dir/tmpfs/backing.img")
  mkfs.ext4 -q -F "$backing"
  mount "$backing" "$dir/backing"
  members=()
  for i in 0 1 2 3; do
    image=$dir/tmpfs/member$i.img
    [[ $i -eq 2 ]] && image=$dir/backing/member$i.img
    truncate -s 256M "$image"
    # Direct I/O to the backing file, so member 2's I/O reaches its disk
    # instead of the page cache.
    members+=("$(losetup --find --show --direct-io=on "$image")")
  done
  mkfs.btrfs -q -f -d raid0 -m raid1 "${members[@]}" >/dev/null
  mount "${members[0]}" "$dir/array"
  cgroup=/sys/fs/cgroup/blkio/hostperf-members-$$
  mkdir "$cgroup"
  numbers=$(lsblk -dno MAJ:MIN "$backing" | tr -d ' ')
  echo "$numbers $rate" >"$cgroup/blkio.throttle.read_bps_device"
  echo "$numbers $rate" >"$cgroup/blkio.throttle.write_bps_device"
  {
    echo "ARRAY=$dir/array"
    echo "MEMBERS=\"$(basename -a "${members[@]}" | tr '\n' ' ')\""
    echo "SLOW_MEMBER=$(basename "${members[2]}")"
    echo "BACKING=$(basename "$backing")"
    echo "CGROUP=$cgroup"
  } >"$dir/env"
}

case $action in
  start)
    mkdir -p "$dir"
    trap 'status=$?; if [[ $status -ne 0 && $status -ne 77 ]]; then stop; fi' EXIT
    start
    ;;
  stop) stop ;;
  *) usage ;;
esac

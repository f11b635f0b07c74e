#!/usr/bin/env bash
# Runs a command on kernel Soft-RoCE (rdma_rxe) on a machine whose own kernel has no RDMA.
#
#   scripts/rxe-vm.sh [--timeout SECONDS] [--out DIR] -- COMMAND [ARGS...]
#
# Boots Debian's own kernel (linux-image-amd64, which carries rdma_rxe) under qemu with software
# emulation, with this machine's root shared read-only over 9p as the guest's userland (cached in
# the guest: it must not change while the VM runs), and the current directory and DIR (default: a
# new temporary folder) shared writable. In the guest it loads rdma_rxe, creates a
# veth pair and one rxe device (rxe0) on it, runs COMMAND from the current directory as root, and
# powers off. COMMAND's output is printed here and its exit status is this script's.
# Nothing leaves the VM: it has no network device to the outside.
#
# What this script does and why, and what Linux 6.1's rxe does differently: docs/backends/verbs.md
# ("On Soft-RoCE, on a machine whose kernel has no RDMA").
set -euo pipefail

timeout_s=900
out=""
while (($#)); do
  case "$1" in
    --timeout) timeout_s="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "rxe-vm.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
(($#)) || { echo "rxe-vm.sh: no command given (usage: rxe-vm.sh [--timeout S] [--out DIR] -- COMMAND...)" >&2; exit 2; }

# --- what the VM needs, installed once (idempotent) ---
need=(linux-image-amd64 qemu-system-x86 busybox-static kmod iproute2 rdma-core ibverbs-providers ibverbs-utils perftest)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "rxe-vm.sh: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

kernel=$(ls -1 /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n 1)
[ -n "$kernel" ] || { echo "rxe-vm.sh: no /boot/vmlinuz-*-amd64 after installing linux-image-amd64" >&2; exit 1; }
kver=${kernel#/boot/vmlinuz-}
moddir=/lib/modules/$kver
[ -f "$moddir/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko" ] || ls "$moddir"/kernel/drivers/infiniband/sw/rxe/ >/dev/null 2>&1 || {
  echo "rxe-vm.sh: $moddir has no rdma_rxe module" >&2; exit 1; }

# --- a tiny initramfs: busybox and the modules that reach the host's root over 9p ---
cache=${XDG_CACHE_HOME:-$HOME/.cache}/rdmalab-rxe
mkdir -p "$cache"
initrd=$cache/initrd-$kver-v4.cpio.gz
if [ ! -f "$initrd" ]; then
  stage=$(mktemp -d)
  mkdir -p "$stage"/{bin,dev,proc,sys,mnt,modules}
  cp /bin/busybox "$stage/bin/busybox"
  for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci 9pnet 9pnet_virtio netfs fscache 9p; do
    f=$(modinfo -k "$kver" -n "$m" 2>/dev/null || true)
    case "$f" in
      ""|builtin*) continue ;;
      *.xz) xz -dc "$f" > "$stage/modules/$m.ko" ;;
      *.zst) zstd -qdc "$f" > "$stage/modules/$m.ko" ;;
      *) cp "$f" "$stage/modules/$m.ko" ;;
    esac
    echo "$m" >> "$stage/modules/order"
  done
  cat > "$stage/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /modules/order); do insmod /modules/$m.ko 2>/dev/null; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288,ro,cache=loose hostroot /mnt || { echo "rxe-vm: cannot mount the host root"; poweroff -f; }
# The guest needs writable /tmp, /run and /var/tmp; the host's /tmp stays reachable so that a
# working tree under /tmp (a fresh clone, a CI checkout) is still seen in the guest.
mkdir -p /hosttmp; mount --bind /mnt/tmp /hosttmp
for d in tmp run var/tmp; do mount -t tmpfs tmpfs /mnt/$d; done
keep=$(sed -n 's/.*rdmalab.keep=\([^ ]*\).*/\1/p' /proc/cmdline)
case "$keep" in
  /tmp/*) mkdir -p "/mnt$keep"; mount --bind "/hosttmp/${keep#/tmp/}" "/mnt$keep" ;;
esac
# The current directory, shared writable: a command's output files land where the user ran it.
cwd=$(sed -n 's/.*rdmalab.cwd=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$cwd" ]; then
  mkdir -p "/mnt$cwd" 2>/dev/null
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 cwd "/mnt$cwd" || echo "rxe-vm: cannot mount $cwd writable: it stays read-only"
fi
out=$(sed -n 's/.*rdmalab.out=\([^ ]*\).*/\1/p' /proc/cmdline)
mkdir -p "/mnt$out" 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 out "/mnt$out" || { echo "rxe-vm: cannot mount $out"; poweroff -f; }
mount -t proc proc /mnt/proc; mount -t sysfs sys /mnt/sys; mount --bind /dev /mnt/dev
chroot /mnt /bin/sh "$out/guest.sh"
poweroff -f
EOF
  chmod +x "$stage/init"
  (cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1 > "$initrd")
  rm -rf "$stage"
fi

# --- the guest's part: rxe on a veth end, then the command ---
if [ -z "$out" ]; then out=$(mktemp -d /tmp/rdmalab-rxe.XXXXXX); fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
cmd=$(printf '%q ' "$@")
cat > "$out/guest.sh" <<EOF
#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
status=125
{
  # Inside the chroot the kernel cannot load modules by itself: load what rxe and veth need.
  if ( set -e
       modprobe -S $kver crc32_generic 2>/dev/null || true
       modprobe -S $kver veth
       modprobe -S $kver rdma_rxe
       modprobe -S $kver ib_uverbs
       ip link add veth0 type veth peer name veth1
       ip addr add 10.77.0.1/24 dev veth0
       ip link set veth0 up; ip link set veth1 up; ip link set lo up
       rdma link add rxe0 type rxe netdev veth0 ); then
    ulimit -l unlimited
    cd $(printf '%q' "$PWD")
    $cmd
    status=\$?
  else
    echo "rxe-vm: setting up Soft-RoCE in the VM failed (see above)"
    status=124
  fi
} > "$out/output.log" 2>&1
echo \$status > "$out/status"
EOF
rm -f "$out/status" "$out/output.log"

# The current directory is shared writable unless it is the root itself or its path has a space
# (the kernel's command line carries it); the rest of this machine stays read-only.
cwd_share=()
cwd_arg=""
case "$PWD" in
  /|*" "*) echo "rxe-vm.sh: the current directory ($PWD) stays read-only in the guest: write output under --out ($out)" >&2 ;;
  *) cwd_share=(-virtfs "local,path=$PWD,mount_tag=cwd,security_model=passthrough,multidevs=remap"); cwd_arg="rdmalab.cwd=$PWD" ;;
esac

# clocksource=tsc: the guest keeps time with the TSC, as real machines do; left to itself it picks
# QEMU's emulated HPET, and every clock_gettime becomes a trap and an emulated device read (it
# showed in perf in the guest as read_hpet, and inflated every latency rdmalab measured).
qemu=(qemu-system-x86_64 -accel tcg -m 4096 -smp 2 -nographic -no-reboot -nic none
  -kernel "$kernel" -initrd "$initrd"
  -append "console=ttyS0 quiet loglevel=3 panic=-1 clocksource=tsc tsc=reliable rdmalab.out=$out rdmalab.keep=$PWD $cwd_arg"
  -virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap
  -virtfs "local,path=$out,mount_tag=out,security_model=passthrough,multidevs=remap" "${cwd_share[@]}")
start=$(date +%s)
set +e
timeout --foreground "$timeout_s" "${qemu[@]}" < /dev/null > "$out/console.log" 2>&1
qrc=$?
set -e
end=$(date +%s)
[ -f "$out/output.log" ] && cat "$out/output.log"
if [ ! -f "$out/status" ]; then
  echo "rxe-vm.sh: the VM ended without running the command (qemu exit $qrc after $((end - start)) s); console:" >&2
  tail -n 30 "$out/console.log" >&2
  exit 1
fi
status=$(cat "$out/status")
echo "rxe-vm.sh: '$*' exited $status in the VM ($((end - start)) s with boot); files in $out" >&2
exit "$status"

#!/usr/bin/env bash
# The Debian package as an operator's apt repository gets it (root only: it
# installs into this machine and purges after, on every exit path):
#   - cpack builds it twice, byte-identical (SOURCE_DATE_EPOCH);
#   - lintian: no error, no warning, only overrides the package ships, each
#     with a comment; the control fields (revision, Maintainer, Homepage,
#     Depends, wrapped Description);
#   - `dpkg-deb -c` is exactly the operator guide's table of installed files
#     (docs/operator-guide.md, "The Debian package");
#   - dpkg -i: service user, unit enabled (started where systemd is PID 1),
#     man pages, hardening-check on the installed binaries, the installed
#     daemon scrapes;
#   - the config edited, then an upgrade to a package with a bumped version
#     and a changed default, by apt-get without a terminal: it configures
#     without a conffile prompt and the edit stays;
#   - remove keeps conffiles and state, purge leaves nothing.
# Usage: deb_test.sh <build dir> <source dir> [cpack]
set -euo pipefail
build_dir=$(cd "$1" && pwd)
source_dir=$(cd "$2" && pwd)
cpack=${3:-cpack}
skip=77  # SKIP_RETURN_CODE in tests/packaging/CMakeLists.txt
unit=hostperf_exporter.service
wants_link=/etc/systemd/system/multi-user.target.wants/$unit
state_dir=/var/lib/hostperf

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
installed() { dpkg-query -W -f='${Status}' hostperf 2>/dev/null | grep -q "install ok installed"; }

if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: needs root: installs the .deb into this machine (dpkg -i, apt-get) and purges it after"
  exit $skip
fi
if dpkg-query -W -f='${Status}' hostperf 2>/dev/null | grep -qv "not-installed"; then
  echo "SKIP: a hostperf package is installed (or its conffiles are left) on this machine; not replacing it"
  exit $skip
fi
for tool in "$cpack" dpkg-deb lintian hardening-check man apt-get curl setsid readelf; do
  command -v "$tool" >/dev/null || fail "$tool not found (.ci/deps installs it)"
done

work=$(mktemp -d)
user_existed=false
getent passwd hostperf >/dev/null && user_existed=true
# No hostperf package is installed (checked above), so what is in
# /var/lib/hostperf was left by root runs of the CLI or the daemon without a
# state directory (other tests, a developer's runs). Purging deletes the
# directory: it is moved aside for the test and put back after, on every exit
# (ctest runs this test alone: RUN_SERIAL).
state_backup=
if [[ -d $state_dir ]]; then
  state_backup=$(mktemp -d /var/lib/hostperf-deb-test.XXXXXX)
  mv "$state_dir" "$state_backup/"
fi
exporter_pid=
cleanup() {
  local rc=$?
  [[ -n $exporter_pid ]] && kill "$exporter_pid" 2>/dev/null || true
  if dpkg-query -W -f='${Status}' hostperf 2>/dev/null | grep -qv "not-installed"; then
    dpkg --purge hostperf >/dev/null 2>&1 || { echo "cleanup: dpkg --purge hostperf failed" >&2; rc=1; }
  fi
  if ! $user_existed && getent passwd hostperf >/dev/null; then userdel hostperf 2>/dev/null || true; fi
  if [[ -n $state_backup ]]; then
    rm -rf "$state_dir"
    mv "$state_backup/hostperf" "$state_dir" && rmdir "$state_backup" ||
      { echo "cleanup: could not put $state_dir back from $state_backup" >&2; rc=1; }
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- build, twice: reproducible
for out in a b; do
  "$cpack" -G DEB --config "$build_dir/CPackConfig.cmake" -B "$work/$out" >"$work/cpack-$out.log" 2>&1 ||
    { cat "$work/cpack-$out.log"; fail "cpack"; }
done
debs=("$work"/a/*.deb)
[[ ${#debs[@]} -eq 1 && -f ${debs[0]} ]] || fail "expected one .deb in $work/a: ${debs[*]}"
deb=${debs[0]}
name=$(basename "$deb")
cmp "$deb" "$work/b/$name" || fail "two packages of the same build differ (SOURCE_DATE_EPOCH not honoured?)"
echo "built $name twice, identical"

# --- control fields
field() { dpkg-deb --field "$deb" "$1"; }
version=$(field Version)
[[ $version =~ ^[0-9]+(\.[0-9]+)*-[0-9]+$ ]] || fail "Version $version has no Debian revision"
[[ $name == "hostperf_${version}_$(dpkg --print-architecture).deb" ]] || fail "file name $name for version $version"
[[ -n $(field Homepage) ]] || fail "no Homepage"
maintainer_re='^[^<]+ <[^@>]+@[^.>]+\.[^>]+>$'
[[ $(field Maintainer) =~ $maintainer_re ]] || fail "Maintainer $(field Maintainer): not 'Name <user@domain>'"
depends=$(field Depends)
[[ $depends == *passwd* && $depends == *libc6* ]] || fail "Depends $depends: passwd (useradd) and dpkg-shlibdeps' libraries"
[[ $depends == *libcurl4* ]] || fail "Depends $depends: libcurl4, which the binaries dlopen()"
while IFS= read -r line; do
  ((${#line} <= 80)) || fail "Description line longer than 80 characters: $line"
done < <(field Description)
(($(field Description | wc -l) > 2)) || fail "no long Description"
dpkg-deb --info "$deb" conffiles >"$work/conffiles"
grep -qx /etc/hostperf/hostperf.toml "$work/conffiles" || fail "hostperf.toml is not a conffile"
grep -qx /etc/default/hostperf_exporter "$work/conffiles" || fail "the defaults file is not a conffile"

# --- lintian: no error or warning; every shipped override says why
lintian --fail-on error,warning --no-tag-display-limit "$deb" >"$work/lintian.log" 2>&1 ||
  { cat "$work/lintian.log"; fail "lintian"; }
if grep -E '^[EW]: ' "$work/lintian.log"; then fail "lintian errors or warnings"; fi
mkdir "$work/root"
dpkg-deb -x "$deb" "$work/root"
overrides=$work/root/usr/share/lintian/overrides/hostperf
if [[ -f $overrides ]]; then
  previous=
  while IFS= read -r line; do
    [[ -z $line || $line == \#* ]] || [[ $previous == \#* ]] || fail "lintian override without a comment saying why: $line"
    previous=$line
  done <"$overrides"
fi
echo "lintian clean"

# --- dpkg-deb -c against the operator guide's table of installed files: every file
# of the package is a row (or under a row ending in /), and every row is in
# the package.
readme_rows=$(sed -n '/^| installed file |/,/^$/p' "$source_dir/docs/operator-guide.md")
[[ -n $readme_rows ]] || fail "docs/operator-guide.md: no '| installed file |' table"
mapfile -t readme_paths < <(printf '%s\n' "$readme_rows" | tail -n +3 | cut -d'|' -f2 | grep -o '`/[^`]*`' | tr -d '`')
((${#readme_paths[@]} > 5)) || fail "docs/operator-guide.md table: too few paths (${readme_paths[*]})"
# Files and symlinks; a symlink's target is dropped.
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort >"$work/files"
while IFS= read -r file; do
  covered=false
  for path in "${readme_paths[@]}"; do
    if [[ $file == "$path" || ($path == */ && $file == "$path"*) ]]; then covered=true; break; fi
  done
  $covered || fail "docs/operator-guide.md's table misses $file (dpkg-deb -c)"
done <"$work/files"
for path in "${readme_paths[@]}"; do
  if [[ $path == */ ]]; then
    grep -q "^$path" "$work/files" || fail "docs/operator-guide.md's table lists $path, not in the package"
  else
    grep -qxF "$path" "$work/files" || fail "docs/operator-guide.md's table lists $path, not in the package"
  fi
done
# A value shown for ARGS= is the shipped one, not a commented example.
while IFS= read -r args; do
  grep -qxF "$args" "$work/root/etc/default/hostperf_exporter" || fail "docs/operator-guide.md shows $args; the package ships no such line"
done < <(printf '%s\n' "$readme_rows" | grep -o 'ARGS=[^`]*' || true)
echo "docs/operator-guide.md's table matches dpkg-deb -c (${#readme_paths[@]} rows)"

# --- install
noninteractive() { setsid -w env DEBIAN_FRONTEND=noninteractive "$@" </dev/null; }
noninteractive dpkg -i "$deb" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "dpkg -i"; }
installed || fail "not installed after dpkg -i"
getent passwd hostperf >/dev/null || fail "no hostperf user"
[[ -f /lib/systemd/system/$unit ]] || fail "no unit"
[[ -L $wants_link ]] || fail "unit not enabled (deb-systemd-helper): $(cat "$work/install.log")"
if [[ -d /run/systemd/system ]]; then
  # systemd is PID 1 here: postinst started the hardened unit.
  [[ $(systemctl is-active "$unit") == active ]] || { journalctl -u "$unit" -n 50 || true; fail "unit not active"; }
else
  echo "systemd is not PID 1 ($(ps -p 1 -o comm=)): unit enabled for the next boot, not started"
fi
# Control-flow protection (-fcf-protection) shows as the IBT/SHSTK property,
# which the linker keeps only if every object has it: Debian 12's own start
# files (libc6-dev's Scrt1.o, crti.o, crtn.o) lack it, so no binary built on
# Debian 12 (not dpkg itself) passes that check. It is required where the C
# library's start files have it.
hardening_options=()
scrt1=$(c++ -print-file-name=Scrt1.o 2>/dev/null || true)
if ! readelf -n "$scrt1" 2>/dev/null | grep -q 'x86 feature: IBT, SHSTK'; then
  hardening_options=(--nocfprotection)
fi
for binary in hostperf hostperf_exporter; do
  LC_ALL=C MANPAGER=cat MANWIDTH=200 man "$binary" >"$work/man-$binary" 2>"$work/man-$binary.err" ||
    fail "man $binary: $(cat "$work/man-$binary.err")"
  grep -q "^NAME" "$work/man-$binary" || fail "man $binary: no NAME section"
  # Every flag of --help is in the page.
  for flag in $("/usr/bin/$binary" --help | grep -oE -- '--[a-z][a-z.-]+' | sort -u); do
    grep -qF -- "$flag" "$work/man-$binary" || fail "man $binary lacks $flag (from --help)"
  done
  hardening-check "${hardening_options[@]}" "/usr/bin/$binary" >"$work/hardening-$binary" ||
    { cat "$work/hardening-$binary"; fail "hardening-check /usr/bin/$binary"; }
done
# The reference tools' names, off PATH: each link runs one of the commands
# `hostperf --help` lists (which tool runs which command: the cli_test checks
# it against the probe modules).
commands=$(/usr/bin/hostperf --help | sed -n '/^Commands:/,/^$/p' | grep -oE '^  [a-z]+' | tr -d ' ')
links=(/usr/libexec/hostperf/drop-in/*)
[[ -L ${links[0]} ]] || fail "no drop-in links in /usr/libexec/hostperf/drop-in"
for link in "${links[@]}"; do
  [[ -L $link ]] || fail "$link is not a link"
  runs=$("$link" --help | head -1 | sed -nE 's/^usage: hostperf ([a-z]+) .*/\1/p')
  grep -qx "$runs" <<<"$commands" || fail "$link does not run a command of hostperf --help (${runs:-none})"
  if command -v "${link##*/}" >/dev/null; then fail "${link##*/} is on PATH after install"; fi
done
echo "installed: user, enabled unit, man pages, hardening-check, drop-in links OK"
# The installed daemon serves (on port 0, its own state directory).
STATE_DIRECTORY=$work/state /usr/bin/hostperf_exporter --config.file=/etc/hostperf/hostperf.toml \
  --web.listen-address=127.0.0.1:0 2>"$work/exporter.log" &
exporter_pid=$!
port=
for _ in $(seq 300); do
  port=$(grep -oE '\(port [0-9]+\)' "$work/exporter.log" | grep -oE '[0-9]+' | head -1 || true)
  [[ -n $port ]] && break
  kill -0 "$exporter_pid" 2>/dev/null || break
  sleep 0.1
done
[[ -n $port ]] || { cat "$work/exporter.log"; fail "the installed daemon did not start"; }
# To a file first: grep -q stops reading at its match, and under pipefail the
# writer's EPIPE (curl's exit 23) would fail a scrape that succeeded.
curl -fsS -o "$work/metrics" "http://127.0.0.1:$port/metrics" || fail "scraping the installed daemon failed"
grep -q '^hostperf_build_info{' "$work/metrics" || fail "no hostperf_build_info"
kill -TERM "$exporter_pid"
wait "$exporter_pid" || fail "the daemon exited $? on SIGTERM"
exporter_pid=

# --- the operator edits the config
cat >>/etc/hostperf/hostperf.toml <<'EOF'

[scheduler]
jitter = 0.2   # edited by deb_test.sh
EOF
/usr/bin/hostperf_exporter --config.file=/etc/hostperf/hostperf.toml --config.check >/dev/null ||
  fail "the edited config does not check"
edited=$(sha256sum /etc/hostperf/hostperf.toml)

# --- the next release: a bumped version and a changed default. Every file of
# the package that spells the default out changes, as a build of the new
# source would change it (the annotated example; a conffile that spelled the
# defaults would change too, and dpkg would stop at its prompt).
dpkg-deb -R "$deb" "$work/next"
next_version=${version%-*}.1-1
sed -i "s/^Version: .*/Version: $next_version/" "$work/next/DEBIAN/control"
mapfile -t spelled < <(grep -rlE 'cpu_seconds_per_hour = 36\b' "$work/next" --exclude-dir=DEBIAN)
[[ ${#spelled[@]} -gt 0 ]] || fail "no file of the package spells the default cpu_seconds_per_hour = 36"
sed -i -E 's/cpu_seconds_per_hour = 36\b/cpu_seconds_per_hour = 30/' "${spelled[@]}"
(cd "$work/next" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
next_deb=$work/hostperf_${next_version}_$(dpkg --print-architecture).deb
dpkg-deb --root-owner-group -b "$work/next" "$next_deb" >/dev/null
# As an unattended upgrade runs it: apt-get, no terminal, stdin at EOF.
noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 "$next_deb" >"$work/upgrade.log" 2>&1 ||
  { cat "$work/upgrade.log"; fail "the upgrade did not configure without a prompt"; }
grep -qi "conffile prompt\|Configuration file '" "$work/upgrade.log" && { cat "$work/upgrade.log"; fail "conffile prompt"; }
installed || fail "not configured after the upgrade"
[[ $(dpkg-query -W -f='${Version}' hostperf) == "$next_version" ]] || fail "not upgraded to $next_version"
[[ $(sha256sum /etc/hostperf/hostperf.toml) == "$edited" ]] || fail "the upgrade changed the edited config"
compgen -G "/etc/hostperf/*.dpkg-*" >/dev/null && fail "dpkg left $(echo /etc/hostperf/*.dpkg-*)"
grep -q 'cpu_seconds_per_hour = 30' /usr/share/doc/hostperf/examples/hostperf.toml ||
  fail "the new default did not reach the annotated example"
echo "upgraded $version -> $next_version without a prompt; the edit stayed"

# --- remove, purge. Baselines a service run would have left (created only
# now: a root CLI run elsewhere would pick an existing /var/lib/hostperf).
mkdir -p "$state_dir"
echo '{}' >"$state_dir/cpu_baselines.json"
dpkg --remove hostperf >"$work/remove.log" 2>&1 || { cat "$work/remove.log"; fail "dpkg --remove"; }
[[ ! -e /usr/bin/hostperf_exporter ]] || fail "remove left the binary"
[[ -L /etc/systemd/system/$unit ]] || fail "remove did not mask the unit"
[[ -f /etc/hostperf/hostperf.toml ]] || fail "remove deleted the conffile"
[[ -f $state_dir/cpu_baselines.json ]] || fail "remove deleted the state directory"
dpkg --purge hostperf >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "dpkg --purge"; }
dpkg-query -W -f='${Status}' hostperf 2>/dev/null | grep -qv "not-installed" && fail "dpkg still knows hostperf"
left=()
for path in /etc/hostperf /etc/default/hostperf_exporter "$state_dir" /usr/share/doc/hostperf /usr/share/hostperf \
  /usr/lib/hostperf /usr/libexec/hostperf /usr/bin/hostperf /usr/bin/hostperf_exporter /usr/share/man/man1/hostperf.1.gz \
  /usr/share/man/man1/hostperf_exporter.1.gz /lib/systemd/system/$unit /usr/lib/sysusers.d/hostperf.conf \
  "$wants_link" /etc/systemd/system/$unit /usr/share/lintian/overrides/hostperf; do
  [[ -e $path || -L $path ]] && left+=("$path")
done
compgen -G "/var/lib/systemd/deb-systemd-helper-*/*hostperf*" >/dev/null && left+=(deb-systemd-helper state)
((${#left[@]} == 0)) || fail "purge left: ${left[*]}"
echo "removed and purged: nothing left"
echo "deb package OK"

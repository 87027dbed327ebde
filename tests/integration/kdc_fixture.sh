#!/usr/bin/env bash
# A hermetic MIT Kerberos KDC for tests: realm HOSTPERF.TEST, everything under
# DIR (config, database, keytabs, ccache, logs); the Kerberos config in /etc is
# not used, and nothing in /etc, /var or the home directory is written.
#
#   kdc_fixture.sh start DIR   create the realm, start krb5kdc on a free
#                              127.0.0.1 port, kinit alice; writes DIR/env
#   kdc_fixture.sh stop DIR    stop the KDC started in DIR
#
# After start: DIR/alice.keytab (alice@HOSTPERF.TEST), DIR/HTTP.keytab
# (HTTP/localhost@HOSTPERF.TEST), DIR/ccache holding alice's TGT, and DIR/env
# with KRB5_CONFIG, KRB5CCNAME, KDC_PID and KDC_PORT lines (KEY=VALUE).
# Exit 77 (skip) when the MIT KDC programs are not installed.
set -euo pipefail

REALM=HOSTPERF.TEST
PATH=$PATH:/usr/sbin:/sbin

usage() { echo "usage: kdc_fixture.sh start|stop DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
cmd=$1
if [[ $cmd == start ]]; then
  for prog in krb5kdc kdb5_util kadmin.local kinit; do
    if ! command -v "$prog" >/dev/null; then
      echo "kdc_fixture: $prog not installed (Debian: krb5-kdc krb5-admin-server krb5-user)"
      exit 77
    fi
  done
  mkdir -p "$2"
fi
[[ -d $2 ]] || exit 0  # stop: nothing was started there
dir=$(cd "$2" && pwd -P)

# Every tool must see only DIR's files, never /etc/krb5.conf or /etc/krb5kdc.
export KRB5_CONFIG=$dir/krb5.conf
export KRB5_KDC_PROFILE=$dir/kdc.conf
export KRB5CCNAME=FILE:$dir/ccache
export KRB5_KTNAME=FILE:$dir/HTTP.keytab
export KRB5_CLIENT_KTNAME=FILE:$dir/alice.keytab
export KRB5RCACHETYPE=none  # no replay cache under /var/tmp
unset KRB5_TRACE

# Running and not a zombie: a KDC orphaned by the start that launched it is
# reaped by whatever PID 1 is, which may take its time.
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ $state != Z ]]
}

stop_kdc() {
  [[ -f $dir/kdc.pid ]] || return 0
  local pid
  pid=$(<"$dir/kdc.pid")
  rm -f "$dir/kdc.pid"
  # Only a krb5kdc is ours to kill: the pid may have been reused since.
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == krb5kdc ]] || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    alive "$pid" || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

free_port() {
  # A port free for both TCP and UDP on 127.0.0.1 (the KDC serves both).
  python3 - <<'EOF'
import socket
while True:
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.bind(("127.0.0.1", 0))
    port = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        u.close()
        t.close()
    print(port)
    break
EOF
}

write_config() {
  local port=$1
  cat >"$dir/krb5.conf" <<EOF
[libdefaults]
    default_realm = $REALM
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 1
    default_ccache_name = FILE:$dir/ccache
    default_keytab_name = FILE:$dir/HTTP.keytab
    default_client_keytab_name = FILE:$dir/alice.keytab

[realms]
    $REALM = {
        kdc = 127.0.0.1:$port
    }

[domain_realm]
    localhost = $REALM
EOF
  cat >"$dir/kdc.conf" <<EOF
[realms]
    $REALM = {
        database_name = $dir/principal
        key_stash_file = $dir/stash
        acl_file = $dir/kadm5.acl
        admin_keytab = FILE:$dir/kadm5.keytab
        kdc_listen = 127.0.0.1:$port
        kdc_tcp_listen = 127.0.0.1:$port
        max_life = 10h 0m 0s
        max_renewable_life = 1d 0h 0m 0s
    }

[logging]
    kdc = FILE:$dir/kdc.log
    admin_server = FILE:$dir/kadmin.log
    default = FILE:$dir/krb5lib.log
EOF
}

start() {
  command -v python3 >/dev/null || { echo "kdc_fixture: python3 not found (to pick a port)" >&2; exit 1; }

  stop_kdc
  rm -rf "$dir"/principal* "$dir"/stash "$dir"/*.keytab "$dir"/ccache "$dir"/env
  : >"$dir/kadm5.acl"

  # The database does not depend on the port, so create it once.
  write_config 88
  local master
  master=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
  kdb5_util create -s -r "$REALM" -P "$master" >"$dir/kdb5_util.log" 2>&1 \
    || { echo "kdc_fixture: kdb5_util create failed:" >&2; cat "$dir/kdb5_util.log" >&2; exit 1; }
  local q
  for q in "addprinc -randkey alice@$REALM" "addprinc -randkey HTTP/localhost@$REALM" \
           "ktadd -k $dir/alice.keytab alice@$REALM" \
           "ktadd -k $dir/HTTP.keytab HTTP/localhost@$REALM"; do
    kadmin.local -r "$REALM" -q "$q" >>"$dir/kadmin.local.log" 2>&1 \
      || { echo "kdc_fixture: kadmin.local '$q' failed:" >&2; cat "$dir/kadmin.local.log" >&2; exit 1; }
  done

  # Another process may take the port between the probe and krb5kdc's bind:
  # then krb5kdc exits and another port is tried. kinit only talks to the port
  # once the KDC has logged that it is serving (bound), since a foreign
  # listener there could leave kinit waiting. Up to 10 s in all.
  local port pid seen deadline=$((SECONDS + 10))
  while ((SECONDS < deadline)); do
    port=$(free_port)
    write_config "$port"
    touch "$dir/kdc.log"
    seen=$(wc -l <"$dir/kdc.log")
    LC_ALL=C krb5kdc -n </dev/null >>"$dir/kdc.out" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/kdc.pid"
    while ((SECONDS < deadline)) && alive "$pid"; do
      if [[ $(tail -n +$((seen + 1)) "$dir/kdc.log") == *'commencing operation'* ]] &&
         kinit -k -t "$dir/alice.keytab" "alice@$REALM" >>"$dir/kinit.log" 2>&1; then
        printf 'KRB5_CONFIG=%s\nKRB5CCNAME=FILE:%s/ccache\nKDC_PID=%s\nKDC_PORT=%s\n' \
          "$dir/krb5.conf" "$dir" "$pid" "$port" >"$dir/env.tmp"
        mv "$dir/env.tmp" "$dir/env"
        exit 0
      fi
      sleep 0.05
    done
    stop_kdc
  done
  echo "kdc_fixture: the KDC did not come up; see $dir/kdc.log, $dir/kdc.out, $dir/kinit.log" >&2
  exit 1
}

case $cmd in
  start) start ;;
  stop) stop_kdc ;;
  *) usage ;;
esac

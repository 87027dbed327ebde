# Sourced by the bench scripts: starts hostperf_exporter daemons on port 0.
# Needs $exporter (the binary), $work (a scratch directory) and the array pids.

# start_daemon NAME CONFIG_BODY: starts hostperf_exporter with CONFIG_BODY
# (state directory prepended) and sets $daemon_pid and $daemon_port.
start_daemon() {
  local name=$1 body=$2
  mkdir -p "$work/$name"
  printf 'state_directory = "%s"\n%s\n' "$work/$name/state" "$body" > "$work/$name/hostperf.toml"
  "$exporter" --config.file="$work/$name/hostperf.toml" --web.listen-address=127.0.0.1:0 2>"$work/$name/log" &
  daemon_pid=$!
  pids+=("$daemon_pid")
  for _ in $(seq 100); do
    daemon_port=$(grep -oP '\(port \K[0-9]+' "$work/$name/log" 2>/dev/null | head -1 || true)
    [ -n "$daemon_port" ] && return 0
    sleep 0.1
  done
  echo "daemon $name did not start:" >&2; cat "$work/$name/log" >&2; exit 1
}

# responder_only PORT: the config body of a daemon that only answers peers
# (every probe off, the net responder on 127.0.0.1:PORT, $work/secret).
responder_only() {
  printf '[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n[probes.disk]\nenabled = false\n'
  printf '[probes.net]\nenabled = false\nbind_address = "127.0.0.1"\nports = [%s]\nsecret_file = "%s"\n' \
    "$1" "$work/secret"
  printf 'rate_limit = 10000000\n'
}

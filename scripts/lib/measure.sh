# shellcheck shell=bash
# shellcheck disable=SC2154 # kubectl, envtest and work are the sourcing script's.
# What the measure* scripts share, sourced: clocks, CPU time, the API server's request counts
# and a control plane of the runtime's envtest example (which need `kubectl` and `envtest`
# set).

# Seconds since the epoch, with nanoseconds.
now() { date +%s.%N; }
# Seconds since `$1` (a `now`), with `$2` decimals (default 2).
since() { awk -v a="$(now)" -v b="$1" -v f="%.${2:-2}f\n" 'BEGIN { printf f, a - b }'; }
# The CPU seconds (user and system) process `$1` has used.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz }' "/proc/$1/stat"; }
# The peak RSS of process `$1`, in KiB (VmHWM).
peak_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
# The API server's count of gets and writes (create, update, patch, server-side apply,
# delete) by verb and resource.
requests() {
  "$kubectl" get --raw /metrics | awk '/^apiserver_request_total\{/ && /verb="(GET|POST|PUT|PATCH|APPLY|DELETE)"/ {
      match($0, /resource="[^"]*"/); r = substr($0, RSTART + 10, RLENGTH - 11)
      match($0, /subresource="[^"]*"/); if (RLENGTH > 0) r = r "/" substr($0, RSTART + 13, RLENGTH - 14)
      match($0, /verb="[^"]*"/); v = substr($0, RSTART + 6, RLENGTH - 7)
      count[v " " r] += $NF }
    END { for (k in count) { split(k, a, " "); printf "%s:%s %d\n", a[1], a[2], count[k] } }' | sort
}
# Starts a fresh control plane (the envtest example) in the background: its pid in `plane`,
# its kubeconfig in KUBECONFIG. `$1` names its fifo in `work`; the rest are kube-apiserver's
# flags.
start_plane() {
  local fifo="$work/plane-$1"
  mkfifo "$fifo"
  "$envtest" "${@:2}" >"$fifo" 2>"$work/plane.log" &
  plane=$!
  read -r kubeconfig <"$fifo"
  export KUBECONFIG="$kubeconfig"
  rm -f "$fifo"
}
# Stops the control plane `start_plane` started.
stop_plane() {
  [ -z "${plane:-}" ] || { kill -TERM "$plane" 2>/dev/null && wait "$plane" 2>/dev/null; } || true
  plane=""
}

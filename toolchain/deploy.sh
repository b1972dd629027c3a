#!/usr/bin/env bash
# Deploys a (cross-)built fovea to a board and runs the regression suite there:
#   1. checks that the board answers and takes the key;
#   2. cmake --install BUILD into a local staging folder (DESTDIR), prefix PREFIX,
#      and copies it to the board over ssh: rsync -a, or tar over ssh when either
#      side has no rsync;
#   3. runs PREFIX/bin/fovea-regress --json REPORT [--profile P] [ARGS...] on
#      the board (or --command), with a time limit;
#   4. brings REPORT back to --out;
#   5. exits with the remote command's exit code.
# Usage: toolchain/deploy.sh --build DIR --host [USER@]HOST [options] [-- ARGS...]
#   --build DIR        the build tree to install (required; e.g. build-jetson-orin)
#   --host USER@HOST   the board (required)
#   --port N           ssh port (22)
#   --identity KEY     ssh private key (ssh's default otherwise)
#   --ssh-option OPT   extra `ssh -o OPT`, repeatable (e.g. UserKnownHostsFile=...)
#   --prefix DIR       where it goes on the board (/opt/fovea; must be writable there)
#   --profile PATH     a device profile on the board, passed to fovea-regress
#   --command CMD      run CMD (a remote shell command line) instead of fovea-regress;
#                      it runs in PREFIX and sees FOVEA_PREFIX, FOVEA_REPORT (the
#                      remote report path) and FOVEA_PROFILE (--profile, or empty)
#   --remote-report P  where the report is written on the board (PREFIX/report.json)
#   --out FILE         where the report goes here (report.json)
#   --stage DIR        the staging folder (a temporary one, removed at exit)
#   --copy-with HOW    auto (rsync when both sides have it, else tar), rsync or tar
#   --timeout S        limit for the remote command (1800; past it deploy stops
#                      waiting and exits 124); copies: 600 s; connects: 10 s
#   --dry-run          print the commands, run nothing
#   -- ARGS...         passed to fovea-regress after its own arguments
# Exit codes: the remote command's; 124 when it ran past --timeout. Before the
# remote command runs: 2 usage or build tree problems, 3 host unreachable,
# 4 authentication or host key refused, 5 copy failed. After it: 6 when the
# report could not be brought back (if the command itself succeeded).
# Authentication is non-interactive (BatchMode): set up a key first.
set -euo pipefail

build="" host="" port=22 identity="" prefix=/opt/fovea profile="" command="" remote_report=""
out=report.json stage="" timeout_s=1800 dry_run=0 copy_with=auto
ssh_extra=() regress_args=()
die() {
  local code=$1
  shift
  echo "deploy: $*" >&2
  exit "$code"
}
need_arg() { [ $# -ge 2 ] || die 2 "$1 needs a value (see the usage in $0)"; }
while [ $# -gt 0 ]; do
  case $1 in
    --build) need_arg "$@"; build=$2; shift 2 ;;
    --host) need_arg "$@"; host=$2; shift 2 ;;
    --port) need_arg "$@"; port=$2; shift 2 ;;
    --identity) need_arg "$@"; identity=$2; shift 2 ;;
    --ssh-option) need_arg "$@"; ssh_extra+=(-o "$2"); shift 2 ;;
    --prefix) need_arg "$@"; prefix=$2; shift 2 ;;
    --profile) need_arg "$@"; profile=$2; shift 2 ;;
    --command) need_arg "$@"; command=$2; shift 2 ;;
    --remote-report) need_arg "$@"; remote_report=$2; shift 2 ;;
    --out) need_arg "$@"; out=$2; shift 2 ;;
    --stage) need_arg "$@"; stage=$2; shift 2 ;;
    --timeout) need_arg "$@"; timeout_s=$2; shift 2 ;;
    --copy-with) need_arg "$@"; copy_with=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; regress_args=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die 2 "unknown argument '$1' (see --help)" ;;
  esac
done

[ -n "$build" ] || die 2 "--build DIR is required"
[ -n "$host" ] || die 2 "--host [USER@]HOST is required"
[[ $port =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] ||
  die 2 "--port '$port' is not a port number"
[[ $timeout_s =~ ^[0-9]+$ ]] && [ "$timeout_s" -ge 1 ] || die 2 "--timeout '$timeout_s' is not a number of seconds >= 1"
case $prefix in /*) ;; *) die 2 "--prefix '$prefix' must be an absolute path" ;; esac
case $copy_with in auto | rsync | tar) ;; *) die 2 "--copy-with '$copy_with' is not auto, rsync or tar" ;; esac
prefix=${prefix%/}
[ -n "$prefix" ] || die 2 "--prefix / is not allowed"
[ -n "$remote_report" ] || remote_report=$prefix/report.json
[ -d "$build" ] || die 2 "build tree '$build' does not exist (build it first, e.g. cmake --build --preset jetson-orin)"
[ -f "$build/CMakeCache.txt" ] && [ -f "$build/cmake_install.cmake" ] ||
  die 2 "'$build' is not a configured and built CMake tree (no CMakeCache.txt or cmake_install.cmake)"
[ -z "$identity" ] || [ -r "$identity" ] || die 2 "--identity '$identity' is not a readable file"
for t in ssh cmake; do
  command -v "$t" >/dev/null || die 2 "$t not found (toolchain/install-deps.sh installs it)"
done

# Quoting for the remote shell (ssh joins its arguments into one command line).
q() { printf '%q' "$1"; }
ssh_cmd=(ssh -p "$port" -o BatchMode=yes -o ConnectTimeout=10 -o ServerAliveInterval=5
         -o ServerAliveCountMax=3 -o LogLevel=ERROR)
[ -z "$identity" ] || ssh_cmd+=(-i "$identity" -o IdentitiesOnly=yes)
ssh_cmd+=("${ssh_extra[@]}")
# One connection for every step (a handshake each costs a board seconds).
ctl=""
if [ "$dry_run" = 0 ]; then
  ctl=$(mktemp -d /tmp/fvssh.XXXXXX) # short: a socket path has ~100 bytes
  ssh_cmd+=(-o ControlMaster=auto -o "ControlPath=$ctl/%C" -o ControlPersist=120)
fi
stage_tmp=""
cleanup() {
  if [ -n "$ctl" ]; then
    ssh -o "ControlPath=$ctl/%C" -p "$port" -O exit "$host" >/dev/null 2>&1 || true
    rm -rf "$ctl"
  fi
  [ -z "$stage_tmp" ] || rm -rf "$stage_tmp"
}
trap cleanup EXIT

show() { printf '%q ' "$@" | sed 's/ $//'; echo; }
run() {
  if [ "$dry_run" = 1 ]; then show "$@"; else "$@"; fi
}
# remote SECONDS CMDLINE: CMDLINE on the board, killed (here) after SECONDS.
remote() { run timeout "$1" "${ssh_cmd[@]}" "$host" "$2"; }

# 1. Reach the board first (before the install): tells an unreachable host from a refused login.
if [ "$dry_run" = 1 ]; then
  remote 30 true
else
  err=$(remote 30 true 2>&1 >/dev/null) || {
    rc=$?
    case $err in
      *"Permission denied"* | *"Too many authentication failures"*)
        die 4 "authentication to $host (port $port) failed: $err (BatchMode: key only; check --identity and the board's authorized_keys)" ;;
      *"Host key verification failed"* | *"REMOTE HOST IDENTIFICATION HAS CHANGED"*)
        die 4 "the host key of $host is unknown or changed: $err (add it to known_hosts: ssh-keyscan -p $port HOST)" ;;
      *) [ $rc = 124 ] && err="no answer within 30 s"
         die 3 "cannot reach $host on port $port: ${err:-ssh exit code $rc}" ;;
    esac
  }
fi

# 2. Stage.
if [ -z "$stage" ]; then
  if [ "$dry_run" = 1 ]; then stage=/tmp/fovea-stage.XXXXXX; else stage=$(mktemp -d); stage_tmp=$stage; fi
fi
echo "deploy: installing $build into $stage (prefix $prefix)" >&2
if [ "$dry_run" = 1 ]; then
  echo "DESTDIR=$(q "$stage") $(show cmake --install "$build" --prefix "$prefix")"
else
  log=$(mktemp)
  DESTDIR=$stage cmake --install "$build" --prefix "$prefix" >"$log" 2>&1 || {
    tail -n 20 "$log" >&2
    rm -f "$log"
    die 2 "cmake --install $build failed (is the tree built?)"
  }
  rm -f "$log"
  [ -d "$stage$prefix" ] || die 2 "cmake --install put nothing under $prefix"
fi

# 3. Copy: rsync when both sides have it, else tar through ssh.
use_rsync=1
[ "$copy_with" != tar ] || use_rsync=0
if [ "$dry_run" = 0 ] && [ "$copy_with" = auto ]; then
  command -v rsync >/dev/null || use_rsync=0
  [ $use_rsync = 0 ] || remote 30 'command -v rsync' >/dev/null 2>&1 || use_rsync=0
fi
# rsync -e: one string, split by rsync on spaces (quotes honoured).
rsh=""
for a in "${ssh_cmd[@]}"; do
  case $a in *[[:space:]\'\"]*) rsh+="'${a//\'/}' " ;; *) rsh+="$a " ;; esac
done
echo "deploy: copying to $host:$prefix ($([ $use_rsync = 1 ] && echo rsync || echo tar over ssh))" >&2
remote 60 "mkdir -p $(q "$prefix")" || die 5 "cannot create $prefix on $host (is it writable there?)"
if [ $use_rsync = 1 ]; then
  run timeout 600 rsync -a --timeout=60 -e "${rsh% }" "$stage$prefix/" "$host:$prefix/" ||
    die 5 "rsync to $host:$prefix failed"
elif [ "$dry_run" = 1 ]; then
  echo "tar -C $(q "$stage$prefix") -cf - . | $(remote 600 "tar -C $(q "$prefix") -xf -")"
else
  tar -C "$stage$prefix" -cf - . | remote 600 "tar -C $(q "$prefix") -xf -" ||
    die 5 "copying to $host:$prefix through tar failed"
fi

# 4. Run.
if [ -n "$command" ]; then
  remote_cmd="export FOVEA_PREFIX=$(q "$prefix") FOVEA_REPORT=$(q "$remote_report") FOVEA_PROFILE=$(q "$profile"); cd $(q "$prefix") && { $command
}"
else
  remote_cmd="$(q "$prefix/bin/fovea-regress") --json $(q "$remote_report")"
  [ -z "$profile" ] || remote_cmd+=" --profile $(q "$profile")"
  for a in "${regress_args[@]}"; do remote_cmd+=" $(q "$a")"; done
fi
remote_cmd="rm -f $(q "$remote_report"); $remote_cmd"
echo "deploy: running on $host: $remote_cmd" >&2
rc=0
remote "$timeout_s" "$remote_cmd" || rc=$?
[ $rc != 124 ] || echo "deploy: the remote command ran past $timeout_s s" >&2
[ $rc != 255 ] || echo "deploy: ssh failed while running the command (exit code 255)" >&2

# 5. Bring the report back.
if [ "$dry_run" = 1 ]; then
  echo "$(remote 120 "cat $(q "$remote_report")") > $(q "$out")"
  exit 0
fi
mkdir -p "$(dirname "$out")"
if remote 120 "cat $(q "$remote_report")" >"$out.part" 2>/dev/null && [ -s "$out.part" ]; then
  mv "$out.part" "$out"
  echo "deploy: report: $out (exit code $rc)" >&2
else
  rm -f "$out.part"
  echo "deploy: no report at $host:$remote_report" >&2
  [ $rc != 0 ] || rc=6
fi
exit $rc

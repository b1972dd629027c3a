#!/usr/bin/env bash
# toolchain/deploy.sh against a second "board" on this machine: an
# unprivileged sshd started here on 127.0.0.1 at a free port (generated host
# and client keys, StrictModes no, everything in a temporary folder), the
# native build tree deployed into a temporary prefix, a program run there and
# its report brought back. Also: a missing build tree, --dry-run, a copy
# with tar, the remote exit code, a refused key, a closed port. Exit 77 (skipped) when sshd, ssh,
# ssh-keygen or rsync are missing (toolchain/install-deps.sh installs them).
# Usage: test_deploy.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
deploy=$src/toolchain/deploy.sh

sshd=$(PATH=$PATH:/usr/sbin:/usr/local/sbin command -v sshd || true)
for t in ssh ssh-keygen rsync timeout; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not installed (toolchain/install-deps.sh)"; exit 77; }
done
[ -n "$sshd" ] || { echo "SKIP: sshd not installed (openssh-server; toolchain/install-deps.sh)"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/fovea-deploy-test.XXXXXX")
sshd_pid=""
cleanup() {
  if [ -n "$sshd_pid" ]; then kill "$sshd_pid" 2>/dev/null || true; wait "$sshd_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ ! -s "$work/sshd.log" ] || { echo "--- sshd log:" >&2; tail -n 20 "$work/sshd.log" >&2; }
  exit 1
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ssh-keygen -q -t ed25519 -N '' -C fovea-test-host -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -C fovea-test-client -f "$work/client_key"
ssh-keygen -q -t ed25519 -N '' -C fovea-test-stranger -f "$work/stranger_key"
cp "$work/client_key.pub" "$work/authorized_keys"
user=$(id -un)
# Run as root, sshd wants its privilege-separation folder (the package's
# service makes it at start; nothing made it here).
if [ "$(id -u)" = 0 ] && [ ! -d /run/sshd ]; then mkdir -m 0755 /run/sshd; fi

start_sshd() {
  port=$(free_port)
  cat >"$work/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $work/host_key
PidFile $work/sshd.pid
AuthorizedKeysFile $work/authorized_keys
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
AllowUsers $user
LogLevel ERROR
EOF
  "$sshd" -t -f "$work/sshd_config" || fail "sshd -t rejects the configuration"
  "$sshd" -D -e -f "$work/sshd_config" 2>"$work/sshd.log" &
  sshd_pid=$!
  for _ in $(seq 50); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    kill -0 "$sshd_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill "$sshd_pid" 2>/dev/null || true
  wait "$sshd_pid" 2>/dev/null || true
  sshd_pid=""
  return 1
}
started=0
for _ in 1 2 3; do # a free port may be taken before sshd binds it
  if start_sshd; then started=1; break; fi
done
[ $started = 1 ] || fail "sshd did not start on 127.0.0.1"
echo "sshd $sshd_pid on 127.0.0.1:$port"
echo "[127.0.0.1]:$port $(cat "$work/host_key.pub")" >"$work/known_hosts"

common=(--host "$user@127.0.0.1" --port "$port" --identity "$work/client_key"
        --ssh-option "UserKnownHostsFile=$work/known_hosts"
        --ssh-option StrictHostKeyChecking=yes --ssh-option GlobalKnownHostsFile=/dev/null
        --timeout 120)
prefix=$work/board/opt/fovea

# expect RC NEEDLE CMD...: CMD exits with RC and its output contains NEEDLE.
expect() {
  local t0=$SECONDS
  local want=$1 needle=$2
  shift 2
  local rc=0
  "$@" >"$work/out.txt" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || { cat "$work/out.txt" >&2; fail "exit code $rc, expected $want: $*"; }
  grep -qF -- "$needle" "$work/out.txt" || { cat "$work/out.txt" >&2; fail "no '$needle' in the output of: $*"; }
  echo "ok ($((SECONDS - t0)) s): exit $rc, '$needle': ${*:1:4} ..."
}

# 1. Refusals before anything is copied.
expect 2 "does not exist" "$deploy" --build "$work/no-such-build" "${common[@]}" --prefix "$prefix"
expect 2 "--host" "$deploy" --build "$build"
expect 2 "not a port" "$deploy" --build "$build" "${common[@]}" --port 99999
# 2. --dry-run prints what it would do and does nothing.
expect 0 "rsync" "$deploy" --build "$build" "${common[@]}" --prefix "$prefix" --dry-run
[ ! -e "$prefix" ] || fail "--dry-run created $prefix"

# 3. The deploy itself: fovea-regress (CPU backend) when this build has it,
# else the installed fovea-laplacian's --help into a report made on the board.
report=$work/report.json
if [ -x "$build/apps/fovea-regress/fovea-regress" ]; then
  "$deploy" --build "$build" "${common[@]}" --prefix "$prefix" --out "$report" -- --backend cpu ||
    fail "deploy with fovea-regress --backend cpu failed (exit $?)"
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$report" ||
    fail "the report is not JSON"
else
  # shellcheck disable=SC2016 # expanded on the board
  cmd='bin/fovea-laplacian --help >help.txt 2>&1; rc=$?
printf "{\"program\": \"fovea-laplacian --help\", \"exit_code\": %d, \"help_bytes\": %d}\n" "$rc" "$(wc -c <help.txt)" >"$FOVEA_REPORT"
exit $rc'
  "$deploy" --build "$build" "${common[@]}" --prefix "$prefix" --out "$report" --command "$cmd" ||
    fail "deploy with fovea-laplacian --help failed (exit $?)"
  python3 - "$report" <<'EOF' || fail "bad report: $(cat "$report")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["exit_code"] == 0 and r["help_bytes"] > 0, r
EOF
  grep -q "fovea-laplacian" "$prefix/help.txt" || fail "the help text does not name the program"
fi
for f in bin/fovea-laplacian include/fovea/fovea.h include/fovea/frame.h; do
  [ -e "$prefix/$f" ] || fail "$f was not deployed to $prefix"
done
ls "$prefix"/lib*/libfovea.* >/dev/null 2>&1 || fail "libfovea was not deployed to $prefix"
echo "ok: deployed and ran; report: $(head -c 200 "$report")"

# 4. Copying with tar through ssh (boards without rsync), into a new prefix.
expect 0 "tar over ssh" "$deploy" --build "$build" "${common[@]}" --prefix "$work/board2/fovea" \
  --copy-with tar --out "$work/r2.json" --command 'bin/fovea-laplacian --help >/dev/null && echo "{}" >"$FOVEA_REPORT"'
[ -f "$work/r2.json" ] || fail "no report after the tar copy"
# 5. The remote command's exit code comes back; no report is not hidden.
expect 7 "no report" "$deploy" --build "$build" "${common[@]}" --prefix "$prefix" \
  --out "$work/r7.json" --command 'exit 7'
# 6. A key the board does not know; a port where nothing listens.
expect 4 "authentication" "$deploy" --build "$build" "${common[@]}" --prefix "$prefix" \
  --identity "$work/stranger_key"
closed=$(free_port)
expect 3 "cannot reach" "$deploy" --build "$build" "${common[@]}" --prefix "$prefix" --port "$closed"
echo "PASS"

#!/bin/sh
# toolchain/soak.sh's GPU-memory bound, without a GPU: a stand-in nvidia-smi
# on PATH reports memory in use. Growing by 1 MiB a sample, the soak must
# fail and say that memory grew; constant, the same soak passes.
# Usage: test_soak_gpu_memory.sh SOAK_SH BUILD_DIR
set -u
soak=$1 build=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/fv-soak-gpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
cat >"$work/bin/nvidia-smi" <<'SMI'
#!/bin/sh
# memory.used in MiB: 1000, then +STEP a call (STEP from the environment)
n=$(cat "$FAKE_SMI_COUNT" 2>/dev/null || echo 0)
echo $((n + 1)) >"$FAKE_SMI_COUNT"
echo $((1000 + n * FAKE_SMI_STEP))
SMI
chmod +x "$work/bin/nvidia-smi"
run() { # STEP: the soak's exit status; its output in $work/out
  rm -f "$work/count"
  PATH="$work/bin:$PATH" FAKE_SMI_COUNT="$work/count" FAKE_SMI_STEP=$1 FV_SOAK_GPU_MEM=1 \
    FV_SOAK_WARMUP_S=1 "$soak" "$build" 150000 0 >"$work/out" 2>&1
}
run 1
rc=$?
if [ $rc -ne 1 ] || ! grep -q "memory grew past a bound" "$work/out" ||
   ! grep -q "GPU memory after warm-up" "$work/out"; then
  echo "FAILED: GPU memory growing by 1 MiB a second: exit $rc, expected 1 and the bound named"
  cat "$work/out"
  exit 1
fi
run 0
rc=$?
if [ $rc -ne 0 ] || ! grep -q "at most +0 MiB above it" "$work/out"; then
  echo "FAILED: constant GPU memory: exit $rc, expected 0 and +0 MiB"
  cat "$work/out"
  exit 1
fi
echo "ok: GPU memory growth fails the soak, constant memory passes"

#!/bin/sh
# Builds and runs the standalone warp-specialized conv harnesses (conv_ws_px_h200.cu,
# conv_ws_px32_h200.cu) with their options on a Hopper device machine (twice each), then, asked
# for, Nsight Compute. Not a test; figures go to RESULTS.md. Usage (repo root, on the device):
#   sh docs/bench/run_ws_harness.sh OUTDIR
# Writes OUTDIR/ws.log (every run) and OUTDIR/ncu_*.txt; prints one line a run.
# WS_VARIANTS: the 8-channel builds, words kKeEdDrRgGsStT = -DWS_PACK=K -DWS_EARLY=E -DWS_DIAG=D
#   -DWS_RDMAP=R -DWS_SEQG=G -DWS_STCS=S -DWS_TMA_STORE=T (all with -DWS_CONS=3; a word may stop
#   early: the rest 0; default: paired and unpaired with the sequence copied in by one bulk copy
#   (the library's form since session 54), each with its staged tile out by one swizzled TMA box
#   a step (t2, session 55) and without, and paired with streaming stores). WS32=1 also builds and runs the
#   32-channel harness five ways (session 53's call 1).
set -u
out=${1:?usage: run_ws_harness.sh OUTDIR}
mkdir -p "$out" /tmp/wsh
nv="nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17"
b=docs/bench
# name:flags, built in parallel
[ "${WS32:-0}" = 1 ] && for v in "l0o0s2:-DWS32_LOAD=0 -DWS32_BASEOFF=0 -DSEGS=2" "l0o1s2:-DWS32_LOAD=0 -DWS32_BASEOFF=1 -DSEGS=2" \
         "l1o0s2:-DWS32_LOAD=1 -DSEGS=2" "l0o0s4:-DWS32_LOAD=0 -DWS32_BASEOFF=0 -DSEGS=4" \
         "l0o1s4:-DWS32_LOAD=0 -DWS32_BASEOFF=1 -DSEGS=4"; do
    n=${v%%:*}; f=${v#*:}
    $nv $f -o /tmp/wsh/ws32_$n $b/conv_ws_px32_h200.cu -lcuda >/tmp/wsh/ws32_$n.build 2>&1 &
done
variants=${WS_VARIANTS:-k1e0d0r0g1s0t0 k1e0d0r0g1s0t2 k0e0d0r0g1s0t0 k0e0d0r0g1s0t2 k1e0d0r0g1s1t0}
for v in $variants; do
    k=$(echo $v | cut -c2); e=$(echo $v | cut -c4); d=$(echo $v | cut -c6); r=$(echo $v | cut -c8); gq=$(echo $v | cut -c10); sc=$(echo $v | cut -c12); ts=$(echo $v | cut -c14)
    $nv -lineinfo -DWS_CONS=3 -DWS_PACK=$k -DWS_EARLY=$e -DWS_DIAG=$d -DWS_RDMAP=${r:-0} -DWS_SEQG=${gq:-0} -DWS_STCS=${sc:-0} -DWS_TMA_STORE=${ts:-0} -o /tmp/wsh/ws_$v \
        $b/conv_ws_px_h200.cu -lcuda >/tmp/wsh/ws_$v.build 2>&1 &
done
wait
for f in /tmp/wsh/*.build; do [ -s "$f" ] && { echo "== $f"; cat "$f"; }; done >>"$out/ws.log"
runs=""
[ "${WS32:-0}" = 1 ] && runs="ws32_l0o0s2 ws32_l0o1s2 ws32_l1o0s2 ws32_l0o0s4 ws32_l0o1s4"
for v in $variants $variants; do runs="$runs ws_$v"; done # twice: the spread
for x in $runs; do
    echo "== $x" >>"$out/ws.log"
    if [ -x /tmp/wsh/$x ]; then timeout 60 /tmp/wsh/$x >>"$out/ws.log" 2>&1 || echo "$x: exit $?" >>"$out/ws.log"
    else echo "$x: not built" >>"$out/ws.log"; fi
done
# Nsight Compute: WS_NCU=1, the counters below on the unpaired forms (k0e0d0r0: <4,5,8> and
# <1,3,16>); WS_NCU_FULL=1, for the paired 5x5 K 32 kernel (k1e0d0 <4,5,8>), the sections that place the
# stalls (SourceCounters: the SASS lines that stall most; warp states; shared-memory tables)
if command -v ncu >/dev/null && [ -x /tmp/wsh/ws_k1e0d0r0g1s0t0 ] && [ "${WS_NCU_FULL:-0}" = 1 ]; then
    timeout 180 ncu --clock-control none --kernel-name-base demangled -k "regex:ws_kernel<.int.4, .int.5, .int.8>" \
        -s 5 -c 1 --section SourceCounters --section WarpStateStats --section SchedulerStats \
        --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis \
        /tmp/wsh/ws_k1e0d0r0g1s0t0 >"$out/ncu_full_paired_458.txt" 2>&1
fi
if command -v ncu >/dev/null && [ -x /tmp/wsh/ws_k0e0d0r0g1s0t0 ] && [ "${WS_NCU:-0}" = 1 ]; then
    m=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_wait,smsp__warps_issue_stalled_sleeping_per_warp_active.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
    for k in "4, .int.5, .int.8" "1, .int.3, .int.16"; do
        tag=$(echo "$k" | tr -dc 0-9)
        timeout 120 ncu --clock-control none --kernel-name-base demangled -k "regex:ws_kernel<.int.$k>" \
            -s 5 -c 1 --metrics $m /tmp/wsh/ws_k0e0d0r0g1s0t0 >"$out/ncu_$tag.txt" 2>&1
        timeout 120 ncu --clock-control none --kernel-name-base demangled -k "regex:ws_kernel<.int.$k>" \
            -s 5 -c 1 --section WarpStateStats --section SpeedOfLight /tmp/wsh/ws_k0e0d0r0g1s0t0 >"$out/ncu_${tag}_sec.txt" 2>&1
    done
fi
grep -E "^==|OK|WRONG|diag|skipped|exit|not built|error" "$out/ws.log" | cut -c1-220

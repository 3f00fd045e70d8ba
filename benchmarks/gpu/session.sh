#!/usr/bin/env bash
# The GPU study in one command that fits a 10-minute call on a borrowed GPU host:
# the throughput study (benchmarks/gpu/study.sh: the auto layout and 2 threads x 64 envs, the
# two docs/benchmarks.md reports) and then Pong with the default IMPALA config for the time left
# (benchmarks/gpu/pong.sh), then everything gathered into at most 8 files for the trip back.
#
# A host whose Python has JAX but not envpool/rlax/ml_collections gets them from .whl/
# (`bash ../shared/gpu/bundle.sh` here first; carry .whl): they are installed into /tmp/site.
#
# Usage, from the checkout's root:  bash benchmarks/gpu/session.sh [BUDGET_S] [RESULTS_DIR]
#   BUDGET_S [570]          wall time of the whole command, installs and plots included
#   RESULTS_DIR [$OUT, else runs/gpu-session]   where the gathered files go
# Environment (defaults in brackets):
#   STUDY [1]  STUDY_LAYOUTS [auto 2x64]  STUDY_SECS [6]  STUDY_ENV [Breakout-v5]
#   PONG [1]   PONG_ENV [Pong-v5]  (CONFIG, TORSO, LAYOUT2, LAYOUT4, SEED pass through)
# CPU rehearsal of the plumbing (CartPole, MLP, small layouts; ~4 minutes on 2 cores):
#   STUDY_ENV=CartPole-v1 PONG_ENV=CartPole-v1 TORSO=mlp CONFIG=experiments/configs/impala_classic.py \
#       LAYOUT2="--num_envs 16 --actor_threads 2" STUDY_SECS=2 bash benchmarks/gpu/session.sh 240 /tmp/s
set -uo pipefail
budget=${1:-570}
results=${2:-${OUT:-runs/gpu-session}}
start=$(date +%s)
mkdir -p "$results" && results=$(cd "$results" && pwd)  # as given, from the caller's directory
cd "$(dirname "$0")/../.." || exit 1
export PYTHONUNBUFFERED=1
imports="import envpool, rlax, ml_collections"
if ! python3 -c "$imports" 2>/dev/null; then
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
  if ! python3 -c "$imports" 2>/dev/null; then  # not yet installed by an earlier call here
    if ! ls .whl/*.whl >/dev/null 2>&1; then
      echo "envpool/rlax/ml_collections missing and no .whl/ bundle (bash ../shared/gpu/bundle.sh)"
      exit 1
    fi
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
        .whl/*.whl && tar xzf .whl/envpool_assets_trim.tgz -C /tmp/site || exit 1
  fi
fi
echo "setup done after $(( $(date +%s) - start ))s"

if [ "${STUDY:-1}" = 1 ]; then
  rm -rf runs/gpu-study  # a measurement, made afresh (runs/gpu-pong is kept: a second call resumes it)
  ENV=${STUDY_ENV:-Breakout-v5} LAYOUTS=${STUDY_LAYOUTS:-auto 2x64} \
      bash benchmarks/gpu/study.sh runs/gpu-study "${STUDY_SECS:-6}"
  cp runs/gpu-study/table.md "$results/study_table.md"
  tar czf "$results/study.tgz" runs/gpu-study
fi
# What is left, less a margin for the last checkpoint, the plots and the packing.
left=$((budget - ($(date +%s) - start) - 45))
if [ "${PONG:-1}" = 1 ] && [ "$left" -ge 60 ]; then
  ENV=${PONG_ENV:-Pong-v5} TOTAL_S=$left PIECE_S=$left PLOT_DIR=runs/gpu-pong/plots \
      bash benchmarks/gpu/pong.sh runs/gpu-pong
  cp runs/gpu-pong/plots/*.png "$results/" 2>/dev/null
  tar czf "$results/pong.tgz" --exclude=checkpoints runs/gpu-pong
elif [ "${PONG:-1}" = 1 ]; then
  echo "no time left for Pong (${left}s)"
fi
cp runs/gpu-study/hardware.txt "$results/" 2>/dev/null || cp runs/gpu-pong/hardware.txt "$results/" 2>/dev/null
echo "done after $(( $(date +%s) - start ))s; in $results:"
ls -la "$results"

#!/usr/bin/env bash
# Pong-v5 with the default IMPALA config on a GPU host, trained in pieces joined by
# --config.resume, then the learning curves drawn by scripts/plot.py (docs/results.md: how far
# Pong gets in a few minutes of one GPU).
#
# Each piece runs under `timeout --signal=TERM` (SIGTERM: the run finishes its update, writes a
# checkpoint and exits 0; a second TERM 60 s later abandons the update). The next piece resumes
# from the run dir, so the same total_env_steps keeps the learning-rate schedule of one
# uninterrupted run (docs/checkpoints.md). Calling the script again continues the same run: a
# host whose commands are limited to 10 minutes calls it once per piece (TOTAL_S=PIECE_S).
#
# Usage:  bash benchmarks/gpu/pong.sh RUN_PARENT_DIR [extra --config.* flags]
# Environment (defaults in brackets):
#   TOTAL_S [540]   training wall time of this call, all pieces together (each piece's startup
#                   and compilation included; later pieces load the compilation cache)
#   PIECE_S [270]   wall-time limit of one piece (keep it under the host's per-command limit)
#   ENV [Pong-v5]   CONFIG [experiments/configs/impala_atari.py]   SEED [0]
#   SCRIPT [experiments/impala_atari.py]   (the experiment main that reads CONFIG)
#   PLOT_DIR [docs]  where the PNGs go: return vs agent steps (x4 = frames) and vs wall clock
#   NAME [results_pong_impala_gpu]   PNG names: $PLOT_DIR/${NAME}_steps.png, ${NAME}_time.png
# CPU check of the logic (seconds per piece, CartPole):
#   ENV=CartPole-v1 CONFIG=experiments/configs/impala_classic.py PIECE_S=20 TOTAL_S=50 \
#       PLOT_DIR=/tmp/plots bash benchmarks/gpu/pong.sh /tmp/gpu_pong_check
set -uo pipefail
parent=${1:?usage: bash benchmarks/gpu/pong.sh RUN_PARENT_DIR [--config.* flags]}
shift
TOTAL_S=${TOTAL_S:-540}
PIECE_S=${PIECE_S:-270}
ENV=${ENV:-Pong-v5}
CONFIG=${CONFIG:-experiments/configs/impala_atari.py}
SCRIPT=${SCRIPT:-experiments/impala_atari.py}
SEED=${SEED:-0}
PLOT_DIR=${PLOT_DIR:-docs}
NAME=${NAME:-results_pong_impala_gpu}
run_dir="$parent/run"
log="$parent/pieces.log"
mkdir -p "$parent" "$PLOT_DIR"
export PYTHONUNBUFFERED=1
# The checkout itself on the import path: a host without `pip install -e .` (the wheel
# bundle of ../shared/gpu installs --no-deps into a --target dir) cannot import `experiments`.
export PYTHONPATH="$(git rev-parse --show-toplevel 2>/dev/null || pwd)${PYTHONPATH:+:$PYTHONPATH}"
{ date -u; nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"; echo "cpus: $(nproc)"
  python3 -c "import jax; print('jax', jax.__version__, jax.devices())"; } \
    2>&1 | tee -a "$parent/hardware.txt"

start=$(date +%s)
piece=0
while :; do
  now=$(date +%s)
  left=$((TOTAL_S - (now - start)))
  if [ "$left" -lt 10 ]; then
    echo "time budget used (${TOTAL_S}s)" | tee -a "$log"; break
  fi
  limit=$((left < PIECE_S ? left : PIECE_S))
  resume=()
  if ls "$run_dir"/checkpoints/[0-9]* >/dev/null 2>&1; then
    resume=("--config.resume=$run_dir")
  fi
  piece=$((piece + 1))
  cmd=(python3 "$SCRIPT" "--config=$CONFIG" "--config.env.name=$ENV" "--config.seed=$SEED"
       "--config.run_dir=$run_dir" "${resume[@]}" "$@")
  echo "== piece $piece, ${limit}s: timeout --signal=TERM --kill-after=60 $limit ${cmd[*]}" \
      | tee -a "$log"
  timeout --signal=TERM --kill-after=60 "$limit" "${cmd[@]}" 2>&1 | tee "$parent/piece$piece.txt"
  rc=${PIPESTATUS[0]}
  echo "piece $piece exit $rc after $(( $(date +%s) - now ))s" | tee -a "$log"
  if [ "$rc" -eq 0 ]; then
    echo "the run reached total_env_steps" | tee -a "$log"; break
  elif [ "$rc" -ne 124 ]; then  # 124: timeout sent TERM and the run checkpointed and exited
    echo "piece $piece failed (exit $rc): see $parent/piece$piece.txt" | tee -a "$log"; exit "$rc"
  fi
done

if [ ! -f "$run_dir/metrics.jsonl" ]; then
  echo "no metrics.jsonl in $run_dir: nothing to plot" | tee -a "$log"; exit 1
fi
title="IMPALA $ENV, $(basename "$CONFIG") (seed $SEED)"
python3 -m scripts.plot "$run_dir" --x step --title "$title: return vs agent steps (x4 = frames)" \
    --output "$PLOT_DIR/${NAME}_steps.png"
python3 -m scripts.plot "$run_dir" --x time --title "$title: return vs wall clock" \
    --output "$PLOT_DIR/${NAME}_time.png"
python3 - "$run_dir" <<'EOF' | tee -a "$log"
import json, sys
rows = [json.loads(line) for line in open(f"{sys.argv[1]}/metrics.jsonl")]
rows = [r for r in rows if "episode/return_mean" in r]
if rows:
    last = rows[-1]
    print(f"last: agent step {last['step']:,d} (frames {4 * last['step']:,d}), 100-game mean "
          f"{last['episode/return_mean']:.2f}, best mean "
          f"{max(r['episode/return_mean'] for r in rows):.2f}")
EOF

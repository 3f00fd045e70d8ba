#!/usr/bin/env bash
# GPU throughput study (one prepared run, under 10 minutes): env-only ceiling on all CPU cores,
# IMPALA and PPO end to end on Breakout with actor and learner sharing GPU 0.
# Usage on a GPU host (after `pip install -r requirements-cuda12.txt`):
#   bash scripts/gpu_study.sh OUT_DIR [RUNS_DIR]
set -uo pipefail
out=${1:-runs/gpu-study}
runs=${2:-$out/runs}  # training run directories (TensorBoard, metrics.jsonl)
mkdir -p "$out" "$runs"
export PYTHONUNBUFFERED=1
{ nvidia-smi -L; nproc; python3 -c "import jax; print(jax.__version__, jax.devices())"; } \
    2>&1 | tee "$out/hardware.txt"
ncpu=$(nproc)
# 1. Env-only ceiling with every core, then IMPALA's four measures at the default layout.
timeout 100 python3 scripts/benchmark.py --env Breakout-v5 --num_envs $((ncpu * 8)) \
    --actor_threads 4 --seconds 10 --measures env_only,env_infer \
    --csv "$out/benchmark.csv" 2>&1 | grep -v '^\[' | tee "$out/ceiling.txt"
timeout 180 python3 scripts/benchmark.py --env Breakout-v5 --num_envs 64 --actor_threads 2 \
    --seconds 15 --csv "$out/benchmark.csv" 2>&1 | grep -v '^\[' | tee "$out/bench_impala.txt"
# 2. End-to-end training with the default experiment configs (IMPALA ResNet), fixed budget.
for exp in impala ppo; do
  timeout 100 python3 experiments/${exp}_atari.py --config=experiments/configs/${exp}_atari.py \
      --config.total_env_steps=2000000 --config.run_dir="$runs/$exp" \
      --config.checkpoint_keep=0 --config.console_every_s=10 2>&1 | tail -n 15 > "$out/$exp.txt"
  python3 - "$runs/$exp" <<'PY' | tee -a "$out/$exp.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl")]
k = min(3, len(rows) - 2)  # skip compile: SPS between update k and the last one
a, b = rows[k], rows[-1]
print(f"{sys.argv[1]}: {len(rows)} updates, steady SPS "
      f"{(b['step'] - a['step']) / (b['time'] - a['time']):.0f}, "
      f"learner step {b['time/learner_step_s']:.3f}s, lag {b['policy_lag/mean']:.1f}")
PY
done

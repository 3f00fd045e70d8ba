#!/usr/bin/env bash
# GPU throughput study (one prepared run, <= 8 minutes on a 16-core GPU host): Breakout-v5 with
# the default IMPALA config (IMPALA ResNet), actor and learner sharing GPU 0. For three actor
# layouts (the auto default, 2 threads x 64 envs, 4 threads x 32 envs) it measures env_only,
# env_infer, learner and end_to_end (benchmarks/throughput.py), then the time from launch to the
# first learner update (benchmarks/startup_time.py, a cold and a warm compilation cache).
# Writes OUT_DIR/bench_<layout>.csv, OUT_DIR/startup.csv and one table, OUT_DIR/table.md.
# LAYOUTS="auto 2x64" measures only the layouts named (default: all three; ~2.5 min each).
# Usage (after `pip install -r requirements-cuda12.txt`, or the bundle of ../shared/gpu):
#   bash benchmarks/gpu/study.sh [OUT_DIR] [SECONDS_PER_MEASURE]
# A dry run of the plumbing on a CPU (CartPole, MLP, small layouts):
#   ENV=CartPole-v1 TORSO=mlp CONFIG=experiments/configs/impala_classic.py \
#       LAYOUT2="--num_envs 16 --actor_threads 2" LAYOUT4="--num_envs 16 --actor_threads 4" \
#       bash benchmarks/gpu/study.sh /tmp/study 2
set -uo pipefail
env_id=${ENV:-Breakout-v5}
torso=${TORSO:-impala_resnet}
config=${CONFIG:-experiments/configs/impala_atari.py}
layout2=${LAYOUT2:---num_envs 128 --actor_threads 2}
layout4=${LAYOUT4:---num_envs 128 --actor_threads 4}
out=${1:-runs/gpu-study}
secs=${2:-8}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# The checkout itself on the import path: a host without `pip install -e .` (the wheel
# bundle of ../shared/gpu installs --no-deps into a --target dir) cannot import `experiments`.
export PYTHONPATH="$(git rev-parse --show-toplevel 2>/dev/null || pwd)${PYTHONPATH:+:$PYTHONPATH}"
{ nvidia-smi -L 2>/dev/null; nproc; python3 -c "import jax; print(jax.__version__, jax.devices())"; } \
    2>&1 | tee "$out/hardware.txt"
cache=$(mktemp -d)  # a fresh compilation cache: launch 1 is cold, launch 2 warm
# layout name : benchmark flags (total envs, threads per actor device; 0 = auto) : config flags
# (the config flags of a layout are derived from its benchmark flags below: num_envs is the
# total per process in both)
layouts=("auto:--num_envs 0 --actor_threads 0" "2x64:$layout2" "4x32:$layout4")
benches=()
for spec in "${layouts[@]}"; do
  IFS=: read -r name bflags <<< "$spec"
  case " ${LAYOUTS:-auto 2x64 4x32} " in *" $name "*) ;; *) continue ;; esac
  benches+=("$name=$out/bench_$name.csv")
  read -r _ total _ threads <<< "$bflags"
  cflags=""
  if [ "$threads" != 0 ]; then
    cflags="--config.num_actor_threads=$threads --config.num_envs=$total"
  fi
  echo "== $name"
  # shellcheck disable=SC2086
  timeout 150 python3 -m benchmarks.throughput --env "$env_id" --torso "$torso" $bflags \
      --seconds "$secs" --skip_updates 3 --csv "$out/bench_$name.csv" 2>&1 \
      | grep -v '^\[' | tee "$out/bench_$name.txt"
  # shellcheck disable=SC2086
  timeout 150 python3 -m benchmarks.startup_time --repeat 2 --timeout 120 \
      --csv "$out/startup.csv" --label "$name" -- experiments/impala_atari.py \
      --config="$config" --config.env.name="$env_id" --config.network.torso="$torso" \
      --config.compilation_cache_dir="$cache" $cflags 2>&1 | tee -a "$out/startup_$name.txt"
done
python3 -m benchmarks.study_table --startup "$out/startup.csv" "${benches[@]}" | tee "$out/table.md"

#!/usr/bin/env bash
# Builds the venv of the Stable-Baselines3 comparison (docs/driving.md, "Beside
# Stable-Baselines3"): torch CPU, stable-baselines3, the Python highway-env, and envpool and
# onnxruntime to play each library's policy on the other's simulator. It stays apart from
# .venv: none of it is a dependency of this library.
#
#     bash scripts/sb3_venv.sh            # -> .venv-sb3
#     bash scripts/sb3_venv.sh /tmp/sb3   # or a path of your choice
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-.venv-sb3}"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet -r requirements-sb3.txt
"$venv/bin/python" -c "import stable_baselines3, highway_env, envpool, onnxruntime, torch; \
print('stable-baselines3', stable_baselines3.__version__, '| highway-env', \
highway_env.__version__ if hasattr(highway_env, '__version__') else '?', '| torch', \
torch.__version__, '| envpool', envpool.__version__)"

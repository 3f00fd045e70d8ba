"""Weights & Biases logging (config.wandb), in W&B's offline mode: no account, no network.

The offline run's scalars are read back from its transaction log (`run-<id>.wandb`), the file
`wandb sync` uploads: a LevelDB-style log (github.com/google/leveldb/blob/main/doc/log_format.md)
of wandb's own protobuf `Record`s, after a 7-byte header (":W&B", magic 0xBEE1, version).
wandb 0.31 reads it only in its Go core, so `_read_records` below is the few lines needed.
"""
import glob
import importlib.util
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from podracer.logging import WANDB_STEP, MetricsLogger
from podracer.validation import ConfigError

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = 32768  # LevelDB log block size; a record never straddles a block's 7-byte header
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def _read_records(path: str) -> list:
    from wandb.proto import wandb_internal_pb2
    data = Path(path).read_bytes()
    assert data[:4] == b":W&B" and struct.unpack("<H", data[4:6])[0] == 0xBEE1, data[:7]
    records, pending, pos = [], b"", 7
    while pos + 7 <= len(data):
        if _BLOCK - pos % _BLOCK < 7:  # block trailer too short for a header: zero padding
            pos += _BLOCK - pos % _BLOCK
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 0 and length == 0:  # preallocated zeros at the end
            break
        pending = chunk if kind in (_FULL, _FIRST) else pending + chunk
        if kind in (_FULL, _LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def _offline_run(wandb_dir: Path) -> tuple[list[dict], dict]:
    """(history rows, config) of the one offline run under `wandb_dir`."""
    [(history, config, _)] = _offline_runs(wandb_dir).values()
    return history, config


def _offline_runs(wandb_dir: Path) -> dict[str, tuple[list[dict], dict, dict]]:
    """{run id: (history rows, config, {"group", "name"})} of the offline runs under
    `wandb_dir`, one session each."""
    import wandb
    # finish() may return before wandb's service process has flushed the log to disk (it does
    # at exit); teardown() stops the service and waits for the process to end, as the end of
    # this process would (it waits only for a service it started: see the `offline` fixture).
    wandb.teardown()
    runs = {}
    for path in glob.glob(str(wandb_dir / "wandb" / "offline-run-*" / "run-*.wandb")):
        history, config, info = [], {}, {}
        for record in _read_records(path):
            kind = record.WhichOneof("record_type")
            if kind == "history":
                history.append({i.key or "/".join(i.nested_key): json.loads(i.value_json)
                                for i in record.history.item})
            elif kind in ("run", "config"):  # wandb.init's config comes in the run record
                updates = record.run.config.update if kind == "run" else record.config.update
                config.update({i.key: json.loads(i.value_json) for i in updates})
                if kind == "run":
                    info = {"group": record.run.run_group, "name": record.run.display_name}
        run_id = os.path.basename(path)[len("run-"):-len(".wandb")]
        assert run_id not in runs, f"two sessions of run {run_id}"
        runs[run_id] = (history, config, info)
    return runs


def _session_logs(wandb_dir: Path, run_id: str) -> list[str]:
    """The offline transaction logs of W&B run `run_id`, one per session. Not the dirs by
    name: a session that starts within the second of the previous one gets the dir
    offline-run-<same second>-<id>-1 (half the runs of this module on an idle 2-core box)."""
    return glob.glob(str(wandb_dir / "wandb" / "offline-run-*" / f"run-{run_id}.wandb"))


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """W&B in offline mode under tmp_path, with a wandb service process of this test's own."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wb"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    # With a service token in the environment (left by an earlier W&B session in this
    # process, or inherited) wandb uses that service instead of starting its own, and
    # teardown() then returns without waiting for it to write the offline log.
    monkeypatch.delenv("WANDB_SERVICE", raising=False)
    (tmp_path / "wb").mkdir()
    yield tmp_path / "wb"
    if sys.modules.get("wandb") is not None:  # no service or token left for later tests
        sys.modules["wandb"].teardown()


def test_wandb_logs_the_same_scalars_at_the_same_env_steps_and_the_config(tmp_path, offline):
    wandb = pytest.importorskip("wandb")
    run_config = {"seed": 3, "agent": {"learning_rate": 1e-3}, "env": {"name": "Pong-v5"}}
    logger = MetricsLogger(str(tmp_path / "run"), 1000, console_every_s=1e9,
                           wandb_config={"project": "sebulba-test", "group": "g"},
                           run_config=run_config)
    logger.write(100, {"loss/total": 1.5, "sps": 200.0})
    logger.write(200, {"loss/total": 0.5, "episode/return_mean": -20.0})
    # The background evaluator logs at a step the learner has passed: wandb's own `step`
    # would drop it (it must increase); against env_step it is kept.
    logger.write(150, {"eval/return_mean": 3.0}, console=False)
    logger.close()

    with open(tmp_path / "run" / "metrics.jsonl") as f:
        jsonl = [json.loads(line) for line in f]
    history, config = _offline_run(offline)
    assert len(history) == len(jsonl) == 3
    for row, line in zip(history, jsonl):
        assert row[WANDB_STEP] == line["step"]
        scalars = {k: v for k, v in line.items() if k not in ("step", "time")}
        assert {k: row[k] for k in scalars} == pytest.approx(scalars)
    assert config["seed"] == 3 and config["agent"] == {"learning_rate": 1e-3}
    assert config["env"] == {"name": "Pong-v5"}
    run_id = (tmp_path / "run" / "wandb_run_id").read_text()
    assert len(_session_logs(offline, run_id)) == 1

    # A resumed run (same run dir) continues the same W&B run; a fresh one starts its own.
    MetricsLogger(str(tmp_path / "run"), 1000, resume_step=200,
                  wandb_config={"project": "sebulba-test"}).close()
    MetricsLogger(str(tmp_path / "fresh"), 1000, wandb_config={"project": "sebulba-test"}).close()
    wandb.teardown()  # the service has written both sessions' logs and ended (as above)
    assert (tmp_path / "run" / "wandb_run_id").read_text() == run_id
    assert (tmp_path / "fresh" / "wandb_run_id").read_text() != run_id
    assert len(_session_logs(offline, run_id)) == 2


def test_wandb_is_off_by_default_and_a_missing_package_is_named(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` now raises ImportError
    logger = MetricsLogger(str(tmp_path / "a"), 10, wandb_config={"project": ""})
    logger.write(1, {"x": 1.0})
    logger.close()  # nothing imported wandb
    # ConfigError: the command line prints it as one message, without a traceback.
    with pytest.raises(ConfigError, match=r"wandb.project='p'.*pip install wandb"):
        MetricsLogger(str(tmp_path / "b"), 10, wandb_config={"project": "p"})
    with pytest.raises(ConfigError, match=r"wandb.mode='ofline'.*'offline'"):
        MetricsLogger(str(tmp_path / "c"), 10, wandb_config={"project": "p", "mode": "ofline"})
    # Only process 0 logs: the others' loggers are disabled and never start W&B.
    MetricsLogger(str(tmp_path / "d"), 10, enabled=False, wandb_config={"project": "p"}).close()


@pytest.mark.parametrize("name", ["impala_atari", "impala_classic", "ppo_atari", "ppo_classic",
                                  "ppo_mujoco"])
def test_every_config_has_wandb_off(name):
    spec = importlib.util.spec_from_file_location(
        f"_cfg_{name}", ROOT / "experiments" / "configs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = module.get_config()
    assert config.wandb.project == ""
    assert set(config.wandb) == {"project", "entity", "group", "name", "mode"}


def test_an_experiment_logs_to_wandb_when_a_project_is_set(tmp_path):
    """The hookup in experiments/wiring/run.py, as a user runs it; files under <run_dir>/wandb."""
    pytest.importorskip("wandb")
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(JAX_PLATFORMS="cpu", WANDB_MODE="offline", WANDB_SILENT="true")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "experiments" / "impala_atari.py"),
         "--config=experiments/configs/impala_classic.py:debug", f"--config.run_dir={run_dir}",
         "--config.wandb.project=sebulba-test", "--config.agent.learning_rate=0.0007"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(run_dir / "metrics.jsonl") as f:
        jsonl = [json.loads(line) for line in f]
    history, config = _offline_run(run_dir)
    assert len(jsonl) >= 2 and len(history) == len(jsonl)
    for row, line in zip(history, jsonl):
        assert row[WANDB_STEP] == line["step"]
        assert row["loss/total"] == pytest.approx(line["loss/total"])
    assert config["agent"]["learning_rate"] == 0.0007
    assert config["wandb"]["project"] == "sebulba-test"


def test_each_member_of_a_population_is_its_own_wandb_run_in_one_group(tmp_path, offline):
    """A population (num_seeds, vary: anakin/population.py) logs one W&B run per member, in
    one process: distinct ids, each run holding its member's rows and config, grouped by the
    population's run dir (or wandb.group) and named after it and the member."""
    pytest.importorskip("wandb")
    from experiments import train
    from experiments.configs import ppo_gymnax
    from tests.helpers import quiet_config, read_metrics
    config = quiet_config(ppo_gymnax.get_config(), tmp_path / "lr", num_envs=8,
                          unroll_length=16, num_seeds=2, total_env_steps=16 * 8 * 2,
                          vary="agent.learning_rate=[0.001, 0.003]", checkpoint_keep=0,
                          **{"agent.num_minibatches": 2, "wandb.project": "sebulba-test"})
    train.run(config)
    members = sorted((tmp_path / "lr" / "members").iterdir())
    ids = [(m / "wandb_run_id").read_text() for m in members]
    assert len(members) == 4 and len(set(ids)) == 4, ids
    runs = _offline_runs(offline)
    assert sorted(runs) == sorted(ids)
    for member, run_id in zip(members, ids):
        history, run_config, info = runs[run_id]
        rows = read_metrics(member)
        assert [r[WANDB_STEP] for r in history] == [r["step"] for r in rows] == [128, 256]
        assert [r["loss/total"] for r in history] == pytest.approx(
            [r["loss/total"] for r in rows])
        saved = json.loads((member / "config.json").read_text())
        assert (run_config["seed"], run_config["agent"]["learning_rate"]) == (
            saved["seed"], saved["agent"]["learning_rate"])
        assert info == {"group": "lr", "name": f"lr/{member.name}"}

"""Checkpoints: exact save/restore of any learner-state pytree, resume, clear mismatch errors."""
import json
import os
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from experiments import impala_atari, wiring
from podracer import checkpoint
from podracer.validation import ConfigError
from tests.helpers import classic_config, restore_run


class _State(NamedTuple):  # like a PPO learner state: params, optax state, counter, key, stats
    params: dict
    opt_state: optax.OptState
    update: jax.Array
    key: jax.Array
    norm: tuple


def _state(width: int = 3) -> _State:
    params = {"params": {"w": jnp.arange(2.0 * width).reshape(2, width), "b": jnp.ones(width)}}
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
    opt_state = opt.update(params, opt.init(params), params)[1]  # non-trivial moments
    return _State(params, opt_state, jnp.asarray(7, jnp.int32), jax.random.key(3),
                  (jnp.float32(0.5), jnp.zeros(4)))


def test_save_restore_is_exact_and_keeps_last_k(tmp_path):
    state = _state()
    ckpt = checkpoint.Checkpointer(str(tmp_path / "checkpoints"), every_updates=2, keep=2,
                                   metadata={"experiment": "unit", "config": {"seed": 0}})
    for update in range(1, 7):  # periodic saves at 2, 4, 6
        ckpt.after_update(checkpoint.Progress(state, 100 * update, update, {"returns": [1.0]}))
    ckpt.close(checkpoint.Progress(state, 600, 6))  # already saved: no duplicate
    assert checkpoint.list_steps(str(tmp_path / "checkpoints")) == [4, 6]

    restored = checkpoint.restore(str(tmp_path), jax.eval_shape(lambda: _state()),
                                  experiment="unit")
    assert (restored.env_steps, restored.updates) == (600, 6)
    assert restored.episodes == {"returns": [1.0]}
    assert jax.tree.structure(restored.learner_state) == jax.tree.structure(state)
    for a, b in zip(jax.tree.leaves(restored.learner_state), jax.tree.leaves(state)):
        if jax.dtypes.issubdtype(b.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_incompatible_state_or_experiment_fails_naming_the_difference(tmp_path):
    ckpt = checkpoint.Checkpointer(str(tmp_path / "checkpoints"),
                                   metadata={"experiment": "unit", "config": {"width": 3}})
    ckpt.close(checkpoint.Progress(_state(3), 10, 1))
    with pytest.raises(ValueError) as e:
        checkpoint.restore(str(tmp_path), jax.eval_shape(lambda: _state(5)),
                           config={"width": 5})
    msg = str(e.value)
    assert "differs at params/params/w: checkpoint (2, 3) float32" in msg
    assert "(2, 5)" in msg and "width: 3 -> 5" in msg
    with pytest.raises(ValueError, match="written by experiment 'unit'; this run is 'ppo'"):
        checkpoint.restore(str(tmp_path), jax.eval_shape(lambda: _state()), experiment="ppo")
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        checkpoint.resolve(str(tmp_path / "nowhere"))


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """A CartPole run of 8 updates (256 steps each), checkpointed at the end."""
    config = classic_config(tmp_path_factory.mktemp("resume"), total_env_steps=2048)
    return config.run_dir, impala_atari.run(config)


def test_resume_restores_state_and_continues_the_run(first_run, impala_classic_config):
    run_dir, result = first_run
    assert result.checkpoint.endswith("checkpoints/8")
    saved = restore_run(run_dir)
    assert (saved.env_steps, saved.updates) == (2048, 8) == (result.env_steps, result.updates)
    for name in ("params", "opt_state", "update"):
        a, b = getattr(saved.learner_state, name), getattr(result.learner_state, name)
        assert jax.tree.structure(a) == jax.tree.structure(b)
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    # A crashed session may have logged past its last checkpoint: those lines are dropped.
    with open(f"{run_dir}/metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": 99_999, "time": 0.0}) + "\n")

    config = impala_classic_config(run_dir="", resume=run_dir, total_env_steps=4096)
    resumed = impala_atari.run(config)  # continues in the checkpoint's run dir
    assert (resumed.env_steps, resumed.updates) == (4096, 16)
    assert int(resumed.learner_state.update) == 16
    assert resumed.episode_summary["episode/count"] > result.episode_summary["episode/count"]
    with open(f"{run_dir}/metrics.jsonl") as f:
        steps = [json.loads(line)["step"] for line in f]
    assert steps == list(range(256, 4097, 256))  # continues, no restart at zero, no stale line
    acc = EventAccumulator(run_dir)
    acc.Reload()
    # Both sessions' scalars: a resume within the second the first session started in once
    # overwrote its event file (tests/sebulba/test_logging.py).
    assert [e.step for e in acc.Scalars("loss/total")] == steps
    assert checkpoint.list_steps(f"{run_dir}/checkpoints") == [8, 16]


def test_resume_with_another_network_fails_clearly(first_run, impala_classic_config):
    run_dir, _ = first_run
    config = impala_classic_config(run_dir="", resume=run_dir, total_env_steps=8192,
                                   **{"network.mlp_hidden_sizes": (32, 32)})
    with pytest.raises(ValueError) as e:
        impala_atari.run(config)
    msg = str(e.value)
    assert "differs at params/params/torso/Dense_0/kernel" in msg
    assert "network.mlp_hidden_sizes: [64, 64] -> [32, 32]" in msg


def test_resume_from_an_older_checkpoint_into_the_same_dir_fails(first_run, impala_classic_config):
    run_dir, _ = first_run
    steps = checkpoint.list_steps(f"{run_dir}/checkpoints")
    if len(steps) < 2:
        pytest.skip("needs the resumed run of the test above")
    config = impala_classic_config(run_dir="", resume=f"{run_dir}/checkpoints/{steps[0]}")
    with pytest.raises(ValueError, match="has newer checkpoints"):
        impala_atari.run(config)


def _truncate(path) -> None:
    """Cuts a file in half, as a full disk or an interrupted copy leaves it."""
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])


def _data_file(ckpt: str) -> str:
    """The tensorstore data file that holds the arrays of a checkpoint's state."""
    import glob
    import os
    files = [f for f in glob.glob(f"{ckpt}/state/d/*") if os.path.isfile(f)]
    assert files, f"no data file under {ckpt}/state/d"
    return files[0]


def test_damaged_checkpoints_are_named_and_resume_falls_back_to_an_intact_one(tmp_path, capsys):
    ckpt_dir = tmp_path / "checkpoints"
    saver = checkpoint.Checkpointer(str(ckpt_dir), every_updates=1, keep=3,
                                    metadata={"experiment": "unit", "config": {}})
    for update in (1, 2, 3):
        saver.after_update(checkpoint.Progress(_state(), 10 * update, update))
    saver.close()
    template = jax.eval_shape(lambda: _state())
    c1, c2, c3 = (str(ckpt_dir / str(u)) for u in (1, 2, 3))

    _truncate(f"{c3}/meta/metadata")  # was: json.decoder.JSONDecodeError naming no path
    with pytest.raises(checkpoint.DamagedCheckpointError) as e:
        checkpoint.restore(c3, template)  # an explicit checkpoint: no fallback
    msg = str(e.value)
    assert f"checkpoint {c3} is damaged" in msg and "meta/metadata" in msg
    assert f"Intact checkpoints: {c2}, {c1}" in msg
    capsys.readouterr()
    for source in (tmp_path, ckpt_dir):  # a run dir or a checkpoints dir: newest intact one
        progress = checkpoint.restore(str(source), template)
        assert (progress.updates, progress.checkpoint, progress.damaged) == (2, c2, [c3])
        out = capsys.readouterr().out.strip().splitlines()
        assert len(out) == 1 and out[0].startswith("warning: damaged checkpoint(s) skipped")
        assert c3 in out[0] and out[0].endswith(c2)

    _truncate(_data_file(c2))  # was: a raw tensorstore ValueError (DATA_LOSS/OUT_OF_RANGE)
    with pytest.raises(checkpoint.DamagedCheckpointError,
                       match=f"checkpoint {c2} is damaged .*state/.*Intact checkpoints: {c1}"):
        checkpoint.restore(c2, template)
    progress = checkpoint.restore(str(tmp_path), template)
    assert (progress.updates, progress.damaged) == (1, [c3, c2])
    np.testing.assert_array_equal(progress.learner_state.params["params"]["w"],
                                  _state().params["params"]["w"])
    with pytest.raises(checkpoint.DamagedCheckpointError, match="cannot be read"):
        checkpoint.load_params(c2)  # evaluate/render get the same clear error

    _truncate(_data_file(c1))
    with pytest.raises(checkpoint.DamagedCheckpointError) as e:
        checkpoint.restore(str(tmp_path), template)
    assert "all 3 checkpoint(s)" in str(e.value) and c1 in str(e.value)


def test_resume_from_a_run_with_a_damaged_newest_checkpoint(impala_classic_config, first_run,
                                                            tmp_path, capsys):
    """End to end: the run resumes from the newest intact checkpoint, moves the damaged one
    aside (it saves that update number again) and finishes; an explicit damaged checkpoint
    fails before anything is built, naming it and the intact ones."""
    import shutil
    src, _ = first_run
    run_dir = str(tmp_path / "copy")
    shutil.copytree(src, run_dir)
    steps = checkpoint.list_steps(f"{run_dir}/checkpoints")
    newest = f"{run_dir}/checkpoints/{steps[-1]}"
    # Two checkpoints: a copy of the newest one, relabelled as an update one later.
    shutil.copytree(newest, f"{run_dir}/checkpoints/{steps[-1] + 1}")
    damaged = f"{run_dir}/checkpoints/{steps[-1] + 1}"
    _truncate(f"{damaged}/meta/metadata")

    config = impala_classic_config(run_dir="", resume=damaged)
    with pytest.raises(ConfigError) as e:
        wiring.read(config, devices=False)
    assert f"checkpoint {damaged} is damaged" in str(e.value)
    assert f"Intact checkpoints: {newest}" in str(e.value)

    saved = checkpoint.load_metadata(newest)
    config = impala_classic_config(run_dir="", resume=run_dir,
                                   total_env_steps=saved["env_steps"] + 512)
    capsys.readouterr()
    resumed = impala_atari.run(config)
    out = capsys.readouterr().out
    assert f"warning: damaged checkpoint(s) skipped: {damaged}" in out
    assert f"resuming from {newest}" in out and "moved aside" in out
    assert resumed.updates == saved["updates"] + 2
    assert checkpoint.list_steps(f"{run_dir}/checkpoints")[-1] == saved["updates"] + 2
    assert os.path.isdir(f"{run_dir}/checkpoints/damaged-{steps[-1] + 1}")

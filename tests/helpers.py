"""Shared test helpers: plain functions and constants every test module takes from here rather
than from another test module (tests/architecture/test_test_imports.py enforces that).

- `ROOT` (the repository root), quick configs (`quiet_config`, `classic_config`,
  `population_config`, `micro_sweep_args`), PRNG keys as data (`key_data`), run-dir readers
  (`read_metrics`) and many command lines in one process (`run_command_lines`);
- agents built from a config as the runtime builds them (`build_agent`, `save_state`,
  `save_untrained`, `restore_run`, `agent_with`), and a user env module for `--import`
  (`write_user_env_module`);
- small networks and synthetic rollouts for learner tests (`ACTION_SPACES`, `small_network`,
  `head_network`, `episode_ends`, `random_rollout`);
- `run_actor`: one real ActorThread, started, read and stopped.

The multi-process harness is tests/multihost.py; pytest setup is tests/conftest.py.
"""
from __future__ import annotations

import json
import os
import pathlib
import queue
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import spaces

import networks
from podracer.agent import Rollout
from sebulba.learner import make_learn_fn, place_learner_state
from sebulba.topology import make_topology

# The repository root: the cwd of every subprocess a test starts.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --- configs and run directories -------------------------------------------------------------

def set_field(config, key: str, value) -> None:
    """Sets the dotted `key` ("agent.learning_rate") of a ConfigDict to `value`."""
    *path, leaf = key.split(".")
    target = config
    for p in path:
        target = target[p]
    target[leaf] = value


def quiet_config(config, run_dir, /, **overrides):
    """`config` writing to `run_dir` with a quiet console, then dotted-key `overrides` (which
    may set run_dir again, e.g. to "" for a resumed run)."""
    config.run_dir = str(run_dir)
    config.console_every_s = 1e9
    for key, value in overrides.items():
        set_field(config, key, value)
    return config


def classic_config(tmp_path, **overrides):
    """The IMPALA CartPole config with run dir tmp_path/run and a quiet console."""
    from experiments.configs import impala_classic
    return quiet_config(impala_classic.get_config(), tmp_path / "run", **overrides)


POPULATION_T, POPULATION_B = 16, 8  # population_config's steps per update and envs


def population_config(tmp_path, **overrides):
    """experiments/configs/ppo_gymnax.py (gymnax CartPole, Anakin) writing to tmp_path/run:
    POPULATION_B envs x POPULATION_T steps per update, 2 minibatches, no timed checkpoints
    (the population tests' run; `num_seeds` and `vary` among the overrides)."""
    from experiments.configs import ppo_gymnax
    return quiet_config(ppo_gymnax.get_config(), tmp_path / "run", num_envs=POPULATION_B,
                        unroll_length=POPULATION_T, **{"agent.num_minibatches": 2,
                                                       "checkpoint_every_minutes": 0.0,
                                                       **overrides})


def key_data(tree):
    """`tree` with its PRNG key leaves as their raw data (comparable with numpy)."""
    return jax.tree.map(lambda x: jax.random.key_data(x) if jax.dtypes.issubdtype(
        x.dtype, jax.dtypes.prng_key) else np.asarray(x), tree)


def micro_sweep_args(out) -> list[str]:
    """scripts/sweep.py's arguments for a 2-setting x 2-seed CartPole micro sweep into `out`
    (the impala_classic `:debug` variant, 2,048 steps a run, 2 runs at a time)."""
    configs = os.path.join(ROOT, "experiments", "configs")
    return ["--experiment", os.path.join(ROOT, "experiments", "impala_atari.py"),
            "--config", os.path.join(configs, "impala_classic.py") + ":debug",
            "--grid", "agent.learning_rate=1e-3,5e-4", "--seeds", "0,1", "--parallel", "2",
            "--out", str(out)]


def read_metrics(run_dir) -> list[dict]:
    """The rows of a run's metrics.jsonl, oldest first."""
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def wait_until_training(proc: subprocess.Popen, timeout: float = 90.0) -> list[str]:
    """Reads a training process's console (stdout) until its first progress line with a rate
    (training is under way); returns the lines read. Fails the test after `timeout` s."""
    import time
    lines = []
    deadline = time.time() + timeout
    for line in proc.stdout:
        lines.append(line)
        if "steps " in line and " sps " in line and not line.strip().endswith("--"):
            break
        assert time.time() < deadline, "".join(lines)
    return lines


def run_command_lines(cases: list[dict], folder) -> list[subprocess.CompletedProcess]:
    """Each case ({"script": name in experiments/, "args": [...], optional "env": {...} and
    "cwd": dir} run as `python experiments/SCRIPT ARGS` would run it, each in a child of one
    tests/programs/command_lines.py process (forked after the imports: ~3 s saved a case);
    `folder` holds the cases and results files."""
    cases_path, out_path = folder / "cases.json", folder / "results.json"
    cases_path.write_text(json.dumps([{**c, "script": os.path.join("experiments", c["script"])}
                                      for c in cases]))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "programs",
                                                        "command_lines.py"),
                           str(cases_path), str(out_path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, JAX_PLATFORMS="cpu"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [subprocess.CompletedProcess(c["args"], r["returncode"], r["stdout"], r["stderr"])
            for c, r in zip(cases, json.loads(out_path.read_text()))]


# --- agents built from a config ----------------------------------------------------------------

def build_agent(config, num_envs: int = 1, num_updates: int | None = None):
    """(network, agent, first observations of a probe env of `num_envs` envs) for `config`,
    built as the runtime builds them (devices and env id unchecked)."""
    from experiments import wiring
    from sebulba import envs
    sections = wiring.read(config, devices=False, env_id=False)
    probe = envs.make_env(sections.env, num_envs, 0)
    obs = probe.reset()
    _, network, agent = wiring.build_from_config(sections, probe.action_space,
                                                 num_updates=num_updates,
                                                 observation_space=probe.observation_space)
    probe.close()
    return network, agent, obs


def save_state(directory, state, experiment: str, config: dict) -> None:
    """Saves `state` as a checkpoint of update 0 whose metadata names `experiment` and holds
    `config` (a JSON dict) as the run's config."""
    from podracer import checkpoint
    ckpt = checkpoint.Checkpointer(str(directory), metadata={"experiment": experiment,
                                                             "config": config})
    ckpt.close(checkpoint.Progress(state, 0, 0))


def save_untrained(config, directory: str, experiment: str = "impala",
                   saved: dict | None = None) -> None:
    """The freshly initialised agent of `config`, saved as a checkpoint (a baseline) whose
    metadata holds `saved` (default: `config`) as the run's config."""
    _, agent, obs = build_agent(config)
    save_state(directory, agent.init(jax.random.key(0), obs), experiment,
               saved or json.loads(config.to_json()))


def restore_run(run_dir: str):
    """Restores a run's newest checkpoint (a checkpoint.Progress) into the learner state its
    saved config builds."""
    from podracer import checkpoint
    meta = checkpoint.load_metadata(run_dir)
    config = checkpoint.config_from_metadata(meta)
    _, agent, obs = build_agent(config, num_updates=1)
    template = jax.eval_shape(agent.init, jax.random.key(0), obs)
    return checkpoint.restore(run_dir, template, experiment=meta["experiment"])


def write_user_env_module(path, env_id: str) -> None:
    """Writes a user module (what `--import` loads) that registers gymnasium's CartPole-v1 as
    `env_id` when imported."""
    pathlib.Path(path).write_text(textwrap.dedent(f'''
        """A user's env, registered at import (what `--import` is for)."""
        import gymnasium
        from sebulba import adapters, registry

        def make(num_envs, seed, env_config):
            return adapters.gymnasium_env(lambda: gymnasium.make("CartPole-v1"), num_envs, seed)

        registry.register_env({env_id!r}, make, overwrite=True)
    '''))


def agent_with(transform, name: str = "impala"):
    """The built-in agent `name`'s spec, with every agent it builds passed through
    `transform(agent) -> agent` (fault injection: NaN updates, slow updates)."""
    import dataclasses

    import agents
    base = agents.get_agent(name)

    def build(network, agent_config, batch, num_updates):
        return transform(base.build(network, agent_config, batch, num_updates))
    return dataclasses.replace(base, build=build)


# --- small networks and synthetic rollouts -----------------------------------------------------

ACTIONS = 3
# IMPALA's optimiser constants for a 640-sample gradient step (cleanba's, by the rule of
# agents/impala/config.py): for tests that build IMPALA with make_agent, without a batch.
IMPALA_640 = {"rmsprop_eps": (0.01 / 640) ** 2, "max_grad_norm": 40.0 / 640}
# One action space per policy head: categorical, tanh-squashed Gaussian, mixed (Dict).

ACTION_SPACES = {
    "discrete": spaces.Discrete(ACTIONS),
    "tanh": spaces.Box(-1.0, 2.0, (2,)),
    "mixed": spaces.Dict({"steer": spaces.Box(-1.0, 1.0, (1,)), "gear": spaces.Discrete(3)}),
}


def small_network(space, hidden_sizes=(16,), lstm_size: int = 0, bounds: str = "clip",
                  shared_torso: bool = True):
    """An MLP actor-critic for action space `space`; recurrent (an LSTM core) when
    `lstm_size` > 0."""
    dist = networks.from_space(space, bounds=bounds)
    torso = networks.MLP(hidden_sizes=tuple(hidden_sizes))
    if lstm_size:
        return networks.RecurrentActorCritic(torso=torso, lstm_size=lstm_size,
                                             action_dist=dist, shared_torso=shared_torso)
    return networks.ActorCritic(torso=torso, action_dist=dist, shared_torso=shared_torso)


def head_network(head: str, lstm_size: int = 0, shared_torso: bool = True):
    """`small_network` for ACTION_SPACES[head] (tanh-bounded for "tanh", clipped otherwise)."""
    return small_network(ACTION_SPACES[head], lstm_size=lstm_size, shared_torso=shared_torso,
                         bounds="tanh" if head == "tanh" else "clip")


def episode_ends(rng: np.random.Generator, T: int, B: int, terminate_prob: float,
                 truncate_prob: float | None = None):
    """Random (terminated, truncated, valid) [T, B] numpy flags in EnvPool's convention:
    truncated excludes terminated, and valid is False on the step after an episode end."""
    terminated = rng.random((T, B)) < terminate_prob
    truncated = (rng.random((T, B)) < (terminate_prob if truncate_prob is None
                                       else truncate_prob)) & ~terminated
    valid = np.ones((T, B), bool)
    valid[1:] = ~(terminated | truncated)[:-1]
    return terminated, truncated, valid


def random_rollout(rng: np.random.Generator, T: int, B: int, obs_dim: int, num_actions: int,
                   done_prob: float = 0.1) -> Rollout:
    """A rollout with random data, episode ends and reset steps, for learner tests."""
    terminated, truncated, valid = episode_ends(rng, T, B, done_prob)
    return Rollout(
        obs=jnp.asarray(rng.normal(size=(T + 1, B, obs_dim)), jnp.float32),
        action=jnp.asarray(rng.integers(0, num_actions, (T, B)), jnp.int32),
        reward=jnp.asarray(rng.normal(size=(T, B)), jnp.float32),
        terminated=jnp.asarray(terminated), truncated=jnp.asarray(truncated),
        valid=jnp.asarray(valid),
        # The behaviour log-prob of a random policy, as agents/acting.make_actor_step keeps it.
        extras={"logp": jnp.asarray(np.log(rng.uniform(0.05, 1.0, (T, B))), jnp.float32)})


def learner_updates(agent, batches, learner_ids=(0,)):
    """(final learner state, last metrics), on the host, after one update of `agent` per
    tuple of rollouts in `batches`, made as the runtime makes them: the state initialised
    from key 0 and placed on `learner_ids`, each rollout sharded over them by env column."""
    first = batches[0][0]
    topo = make_topology([0], list(learner_ids), num_envs_per_thread=first.valid.shape[1])
    state = place_learner_state(agent.init(jax.random.key(0), first.obs[0]), topo)
    learn, metrics = make_learn_fn(agent, topo), None
    for rollouts in batches:
        state, metrics = learn(state, tuple(jax.device_put(r, topo.batch_sharded())
                                            for r in rollouts))
    return jax.device_get(state), jax.device_get(metrics)


# --- one real actor thread ---------------------------------------------------------------------

def first_rollouts(actors, queues, lifetime, timeout: float = 120.0) -> list:
    """Starts actor threads, takes one message from each of their queues, stops and joins
    them, and re-raises any failure of theirs; returns the messages."""
    for a in actors:
        a.start()
    try:
        messages = [q.get(timeout=timeout) for q in queues]
    finally:
        lifetime.stop()
        for a in actors:
            a.join(timeout=30)
    lifetime.raise_if_failed()
    return messages


def run_actor(n: int, initial_params, *, queue_size: int | None = None, timeout: float = 120.0,
              on_message=None, out_queue: queue.Queue | None = None, **actor_kwargs):
    """Starts a sebulba.actor.ActorThread (actor 0, on device 0 unless `device` is given) on
    `initial_params` published as version 0, takes `n` messages from its queue (`out_queue`,
    or a new one of `queue_size`, default `n`), stops it and re-raises any failure of its;
    returns (messages, actor). `on_message(k, message, params_source)` runs after message k,
    e.g. to publish the next parameter version to a synchronous actor."""
    from sebulba.actor import ActorThread
    from sebulba.pipeline import Lifetime, ParamsSource
    device = actor_kwargs.pop("device", None) or jax.devices()[0]
    lifetime = Lifetime()
    out = out_queue if out_queue is not None else queue.Queue(maxsize=queue_size or n)
    source = ParamsSource([device], lifetime)
    source.publish(initial_params, 0)
    actor = ActorThread(actor_id=0, device=device, params=source, out_queue=out,
                        lifetime=lifetime, **actor_kwargs)
    actor.start()
    messages = []
    try:
        for k in range(n):
            messages.append(out.get(timeout=timeout))
            if on_message is not None:
                on_message(k, messages[-1], source)
    finally:
        lifetime.stop()
        actor.join(timeout=30)
    assert not actor.is_alive(), "the actor thread did not stop within 30 s"
    lifetime.raise_if_failed()
    return messages, actor

"""The Sebulba runtime as the wiring drives it (experiments/wiring/drivers/protocol.py's
`Driver`): host env batches (EnvPool, a registered env, gymnasium, a JAX-native env stepped
on the host, or the caller's `make_env`), actor threads and the learner (sebulba/runner.py).

A JAX-native env (`gymnax:<id>`, or a name registered with anakin.envs.register_env) runs
here through sebulba/jax_host_env.py: the same env (experiments/wiring/jax_envs.py), and the
same episode semantics, that the Anakin runtime steps on the devices, so an experiment can be
run on both runtimes.

Its section is `RuntimeConfig` (sebulba/runtime_config.py), read with the auto layout resolved
once here (sebulba.layout.resolve); the resolved fields go into the run's recorded config
(`Sections.config`), so config.json and checkpoints record the layout that runs. After the
join, `start` builds the device topology and probes the env once; the runner reuses both.
"""
from __future__ import annotations

import dataclasses

import ml_collections

from experiments.wiring import jax_envs
from experiments.wiring.drivers.protocol import RuntimeSection, Started
from experiments.wiring.run_config import evaluation_env
from podracer import compile_cache, episode_metrics, scenarios
from podracer.schema import read_section, require_section
from podracer.validation import ConfigError
from sebulba import envs, evaluation, layout, registry, runner, topology
from sebulba.jax_host_env import HostEnv
from sebulba.runtime_config import RuntimeConfig


class SebulbaRuntime:
    name = "sebulba"
    takes_host_envs = True

    def read(self, config: ml_collections.ConfigDict) -> RuntimeSection:
        """RuntimeConfig with its auto layout resolved, and the env section as
        sebulba.envs.EnvConfig (every key a field of it)."""
        env = read_section(envs.EnvConfig, require_section(config, "env"), "env")
        rc = read_section(RuntimeConfig, config, "", whole=False)
        try:
            chosen = layout.resolve(rc, env.num_threads, env_workers=env.workers)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        resolved = {"num_actor_threads": chosen.actor_threads}
        if "env" in config and "num_threads" in config.env:
            resolved["env.num_threads"] = chosen.env_threads
        return RuntimeSection(chosen.runtime,
                              dataclasses.replace(env, num_threads=chosen.env_threads),
                              chosen, resolved)

    def read_members(self, config, rc, agent_cfg, run) -> None:
        """One agent: N seeds in one program are Anakin's (a config may carry its fields)."""
        if config.get("num_seeds", 1) != 1 or config.get("vary", ""):
            raise ConfigError(
                f"num_seeds={config.get('num_seeds', 1)}, vary={config.get('vary', '')!r}: "
                f"several agents in one program need runtime='anakin' (JAX-native envs); "
                f"with runtime='sebulba', run one program per seed or setting "
                f"(scripts/sweep.py).")
        return None

    def check_env(self, env: envs.EnvConfig, joins_a_job: bool) -> None:
        if is_jax_env(env):
            if env.workers:
                raise ConfigError(f"env.workers={env.workers}: {env.name!r} is a JAX env, "
                                  f"stepped on the host in one batched call; worker processes "
                                  f"are for Python envs: set env.workers=0.")
            if not joins_a_job:  # importing gymnax starts JAX: after a multi-host join only
                jax_envs.make_env(env)
            return
        try:
            envs.check_env_id(env.name)
            envs.check_randomize(env)
            if env.workers:
                envs.worker_maker(env)  # an EnvPool id or a maker no worker can import
        except ValueError as e:
            raise ConfigError(f"env.name={env.name!r}: {e}") from None

    def check_devices(self, rc: RuntimeConfig) -> topology.Topology:
        try:
            return topology.make_topology(rc.actor_device_ids, rc.learner_device_ids,
                                          rc.envs_per_thread)
        except ValueError as e:
            raise ConfigError(str(e)) from None

    def start(self, sections, make_env, wrap_env) -> Started:
        rc = sections.runtime
        compile_cache.enable(rc.compilation_cache_dir)  # before anything compiles
        topo = self.check_devices(rc)  # the run's one topology: the runner reuses it
        base_env = make_env or host_envs(sections.env)
        probe = base_env(1, rc.seed)  # the one env probe of the run: action space, example obs
        try:
            action_space, example_obs = probe.action_space, probe.reset()
            observation_space = getattr(probe, "observation_space", None)
            metrics = check_metrics(probe, sections.env)  # last: it steps the probe
        finally:
            probe.close()

        def actor_env(n: int, seed: int):
            env = base_env(n, seed)
            return wrap_env(env) if wrap_env is not None else env

        def train(agent, logger, **kwargs):
            return runner.train(agent, actor_env, rc, logger, example_obs=example_obs,
                                topology=topo, episode_metrics=metrics, **kwargs)

        # Evaluation plays whole games: env ids get the evaluation settings; a user's env
        # factory is used as it is.
        eval_env, eval_metrics = make_env or host_envs(sections.env, whole_games=True), metrics
        if make_env is None and sections.run.eval_randomize:  # held-out scenarios
            held_out = evaluation_env(sections.env, sections.run)
            eval_env = host_envs(held_out, whole_games=True)
            probe = eval_env(1, rc.seed)
            try:
                eval_metrics = check_metrics(probe, held_out)
            finally:
                probe.close()

        def play_for(player, run):
            return lambda ap, seed, should_stop: evaluation.play(
                lambda n: player.actor(ap, n), eval_env, run.eval_episodes, run.eval_num_envs,
                seed, should_stop, eval_metrics)

        processes = topo.num_processes
        return Started(action_space, example_obs, rc.batch_shape(processes),
                       rc.plan(processes), (sections.layout.describe(),), train, play_for,
                       observation_space=observation_space)


def check_metrics(probe, env: envs.EnvConfig) -> tuple[episode_metrics.EpisodeMetric, ...]:
    """env.episode_metrics resolved against the fields the env's info holds (wildcards
    expanded); a field it does not hold stops the run in one line naming those it does. Each
    field env.randomize draws is added with its bins (podracer/scenarios.logged)."""
    try:
        chosen = envs.episode_metrics_of(probe, env.episode_metrics, f"env.name={env.name!r}")
    except ValueError as e:
        raise ConfigError(f"env.episode_metrics={env.episode_metrics!r}: {e}") from None
    return scenarios.logged(chosen, env.randomize)


def is_jax_env(env: envs.EnvConfig) -> bool:
    """A JAX-native env name that Sebulba's own registry does not claim."""
    return registry.env_maker(env.name) is None and jax_envs.names_a_jax_env(env.name)


def host_envs(env: envs.EnvConfig, whole_games: bool = False):
    """make_env(num_envs, seed) of the run's env batches: EnvPool & co. (sebulba/envs.py), or
    a JAX-native env stepped on the host (so scripts/evaluate.py and render.py play runs of
    either runtime). `whole_games`: evaluation's settings (no episodic
    life); a JAX env's games are whole already."""
    if is_jax_env(env):
        jax_env = jax_envs.make_env(env)
        return lambda n, seed: HostEnv(jax_env, n, seed)
    cfg = evaluation.eval_env_config(env) if whole_games else env
    return lambda n, seed: envs.make_env(cfg, n, seed)


DRIVER = SebulbaRuntime()

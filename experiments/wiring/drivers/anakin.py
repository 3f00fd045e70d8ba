"""The Anakin runtime as the wiring drives it (experiments/wiring/drivers/protocol.py's
`Driver`): a JAX-native env named by `env.name` (anakin/envs.py, made by
experiments/wiring/jax_envs.py), acting, env steps and learning compiled into one program per
update (anakin/update_program.py, loop.py).

Its section is `AnakinConfig` (anakin/runtime_config.py): the top-level fields it reads, with
`learner_device_ids` the devices (each acts, steps its envs and learns) and `num_envs` the
environments per process, split evenly over them; the Sebulba-only fields (`actor_device_ids`,
`num_actor_threads`, `queue_size`, `actor_overlap`, `synchronous`, ...) do not apply, and the
data is on-policy by nature (the policy that acts is the one being updated: lag 0). Periodic
evaluation plays the same JAX env on the device (anakin/evaluation.py).
"""
from __future__ import annotations

import jax
import ml_collections

from anakin import envs as anakin_envs
from anakin import evaluation, loop, runtime_config, topology
from experiments.wiring import members
from experiments.wiring.drivers import anakin_population
from experiments.wiring.drivers.protocol import RuntimeSection, Started
from experiments.wiring.jax_envs import make_env
from experiments.wiring.run_config import evaluation_env
from podracer import compile_cache, episode_metrics, scenarios
from podracer.env_config import EnvSection
from podracer.schema import read_section, require_section
from podracer.validation import ConfigError


class AnakinRuntime:
    name = "anakin"
    takes_host_envs = False

    def read(self, config: ml_collections.ConfigDict) -> RuntimeSection:
        """AnakinConfig, and the env section as the fields every runtime reads
        (podracer.env_config.EnvSection); the host env fields a shared config carries for
        Sebulba (EnvPool threads, Atari preprocessing) do not apply, and worker processes are
        refused."""
        section = require_section(config, "env")
        if section.get("workers", 0):
            raise ConfigError(f"env.workers={section.workers}: worker processes step Python "
                              f"envs under runtime='sebulba'; Anakin steps its JAX env on the "
                              f"devices: set env.workers=0.")
        return RuntimeSection(read_section(runtime_config.AnakinConfig, config, "", whole=False),
                              read_section(EnvSection, section, "env", whole=False))

    def read_members(self, config, ac: runtime_config.AnakinConfig, agent_cfg, run):
        """`num_seeds` x the settings of `vary` (experiments/wiring/members.py), or None."""
        vary = members.parse_vary(ac.vary)
        if ac.num_seeds == 1 and not vary:
            return None
        anakin_population.check_values(agent_cfg, config.agent, vary)
        population = members.members(ac.seed, ac.num_seeds, vary)
        if run.eval_every_updates > 0:
            raise ConfigError(f"eval_every_updates={run.eval_every_updates}: periodic "
                              f"evaluation plays one agent; with {len(population)} members in "
                              f"one program (num_seeds, vary) it is off: set it to 0 and "
                              f"evaluate a member after training with `python -m "
                              f"scripts.evaluate <run_dir> --member I` (I in 0.."
                              f"{len(population) - 1}; <run_dir>/members/ lists them).")
        if len(population) == 1:
            flags = " ".join(f"--config.agent.{name}={values[0]!r}" for name, values in vary)
            raise ConfigError(f"vary={ac.vary!r} makes one member (num_seeds=1, one value "
                              f"per field): set {flags} instead.")
        return population

    def check_env(self, env, joins_a_job: bool) -> None:
        # Importing gymnax starts JAX's backend, which must wait for a multi-host join: then
        # `start` checks it, right after joining.
        if not joins_a_job:
            make_env(env)

    def check_devices(self, ac: runtime_config.AnakinConfig):
        try:
            return topology.make_mesh(ac.learner_device_ids)
        except ValueError as e:
            raise ConfigError(f"learner_device_ids={list(ac.learner_device_ids)}: {e}") from None

    def start(self, sections, make_env_fn, wrap_env) -> Started:
        ac = sections.runtime
        compile_cache.enable(ac.compilation_cache_dir)
        env = make_env(sections.env)
        metrics = check_metrics(env, sections.env)
        mesh = self.check_devices(ac)  # the run's one mesh: the loop reuses it
        example_obs = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
        processes = jax.process_count()
        shape, plan = ac.batch_shape(processes), ac.plan(processes)
        describe = (f"anakin: {ac.num_envs} envs per process on device(s) "
                    f"{list(ac.learner_device_ids)} x {processes} process(es), "
                    + ("1 update per compiled call" if ac.updates_per_call == 1 else
                       f"up to {ac.updates_per_call} updates per compiled call"
                       + (f" (about {ac.call_target_s:g} s each)" if ac.call_target_s > 0
                          else "")),)

        def train(agent, logger, **kwargs):
            return loop.train(agent, env, ac, logger, mesh=mesh, episode_metrics=metrics,
                              **kwargs)

        eval_env, eval_metrics = env, metrics
        if sections.run.eval_randomize:  # held-out scenarios
            held_out = evaluation_env(sections.env, sections.run)
            eval_env = make_env(held_out)
            eval_metrics = check_metrics(eval_env, held_out)

        def play_for(player, run):
            return evaluation.make_play(eval_env, player, run.eval_episodes, run.eval_num_envs,
                                        metrics=eval_metrics)

        if sections.members is None:
            return Started(env.action_space, example_obs, shape, plan, describe, train,
                           play_for, observation_space=env.observation_space)

        def build(network, horizon):  # the members as one Population
            return anakin_population.population(sections.spec, sections.agent, network, shape,
                                                horizon, sections.members)

        def check(pop):  # varied fields the agent cannot trace
            anakin_population.check_traceable(pop, env, example_obs, ac)

        return Started(env.action_space, example_obs, shape, plan, describe, train, play_for,
                       check, env.observation_space, build, anakin_population.template)


def check_metrics(env, env_config) -> tuple[episode_metrics.EpisodeMetric, ...]:
    """env.episode_metrics resolved against the scalar fields of the JAX env's step info
    (`anakin.envs.info_fields`, from the step's abstract evaluation): "auto" takes those of
    crashed, is_success and speed it reports; a field it does not report stops the run in one
    line naming those it does. Each field env.randomize draws is added as `scenario.<field>`
    with its bins (podracer/scenarios.logged: the return summarised per scenario bin)."""
    try:
        chosen = episode_metrics.chosen(env_config.episode_metrics,
                                        anakin_envs.info_fields(env),
                                        f"env.name={env_config.name!r}")
    except ValueError as e:
        raise ConfigError(f"env.episode_metrics={env_config.episode_metrics!r}: {e}") from None
    return scenarios.logged(chosen, env_config.randomize)


DRIVER = AnakinRuntime()

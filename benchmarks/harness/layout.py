"""The config of one benchmark layout (benchmarks/throughput.py, anakin_throughput.py): the
experiment config of an algorithm with the layout's envs, threads, devices and T, and the
`--set FIELD=VALUE` overrides. The measures themselves are in benchmarks/harness/measures.py."""
from __future__ import annotations

import ast

ALGOS = ("impala", "ppo", "ppo_sync")  # ppo: asynchronous with V-trace; ppo_sync: on-policy


def make_config(env: str, algo: str, torso: str, num_envs: int, actor_threads: int,
                actor_ids: tuple, learner_ids: tuple, unroll_length: int, seed: int,
                sets: tuple = ()):
    """The experiment config (Atari or classic file of `algo`) with the benchmark's layout.

    `num_envs` is the envs per process (the config's `num_envs`: the batch, split over actor
    devices x threads; 0 keeps the config's); `actor_threads` 0 = the runtime's auto layout
    (sebulba/layout.py, resolved when the measure reads the config); `torso` "auto" =
    nature_cnn on Atari, mlp otherwise; `unroll_length` 0 keeps the config's T; `sets` are
    "field=value" overrides applied last (e.g. "network.lstm_size=64").
    """
    import jax
    from experiments.configs import impala_atari, impala_classic, ppo_atari, ppo_classic
    from sebulba import envs
    envs.check_env_id(env)
    atari = envs.is_atari(env)
    files = {"impala": (impala_atari, impala_classic), "ppo": (ppo_atari, ppo_classic)}
    config = files[algo.removesuffix("_sync")][0 if atari else 1].get_config()
    config.env.name = env
    config.network.torso = torso if torso != "auto" else ("nature_cnn" if atari else "mlp")
    config.seed = seed
    config.actor_device_ids = tuple(actor_ids)
    config.learner_device_ids = tuple(learner_ids)
    config.num_actor_threads = actor_threads
    if num_envs > 0:
        config.num_envs = num_envs
    # The runtime's own layout rule (sebulba/layout.py) for 0 = auto threads / EnvPool threads,
    # as a run resolves it when it reads the config; a split that does not divide fails here.
    # The resolved layout is written into this config, so the row reports the one measured.
    from experiments import wiring
    try:
        ran = wiring.read(config, devices=False, env_id=False).config
    except ValueError as e:
        raise SystemExit(f"--num_envs={num_envs} --actor_threads={actor_threads}: {e}") from None
    config.num_actor_threads = ran.num_actor_threads
    if "num_threads" in config.env:
        config.env.num_threads = ran.env.num_threads
    if unroll_length > 0:
        config.unroll_length = unroll_length
    if algo.startswith("ppo"):
        config.synchronous = algo == "ppo_sync"
        if jax.default_backend() == "cpu" and config.network.torso != "mlp":
            # XLA:CPU runs convolutions inside lax.scan ~10-25x slower (docs/ppo.md): a CPU
            # run would pass --config.agent.loop=unroll, so the benchmark does too.
            config.agent.loop = "unroll"
    for assignment in sets:
        set_field(config, assignment)
    return config


def set_actor_overlap(config, mode: str) -> None:
    """RuntimeConfig.actor_overlap for this measurement ("auto", "on", "off")."""
    with config.unlocked():
        config.actor_overlap = mode


def set_field(config, assignment: str) -> None:
    """Applies "a.b=value" to a ConfigDict; the value is a Python literal or else a string,
    and must fit the field's type (ConfigDict checks)."""
    field, sep, text = assignment.partition("=")
    *path, leaf = field.split(".")
    node = config
    try:
        for k in path:
            node = node[k]
        if not sep or leaf not in node:
            raise KeyError(leaf)
    except KeyError:
        raise ValueError(f"--set {assignment!r}: expected FIELD=VALUE with an existing config "
                         f"field (e.g. network.lstm_size=64).") from None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = text
    try:
        node[leaf] = value
    except TypeError as e:
        raise ValueError(f"--set {assignment!r}: {e}") from None

"""Evaluates a checkpoint: N full games with true scores, on seeds disjoint from training.

    python -m scripts.evaluate runs/impala-Breakout-v5-s0-20250101-120000 --episodes 100
    python -m scripts.evaluate runs/.../checkpoints/4880 --policy sample --noop_max 1
    python -m scripts.evaluate runs/ppo-gymnax:CartPole-v1-s0-20250101-120000 --member 2
    python -m scripts.evaluate runs/ppo-gymnax:CartPole-v1-s0-.../members/02-s2

The agent is rebuilt from the config saved in the checkpoint, the way every run builds it
(`experiments.wiring.build_from_config`: the config's `agent_name`, or the checkpoint's
experiment for configs saved before it existed); the whole learner state is restored into it,
and the policy acts as the actors would, with the agent's `actor_params` (parameters and, when
the run normalised observations, the observation statistics): greedy (the mode of the action
distribution: argmax for discrete parts, the mean - squashed or clipped to the bounds - for
continuous ones; default) or sampled by the agent's own `actor_step`. Runs on environments,
torsos or agents that a user module registers need `--import <module or file.py>`. Games are
whole (sebulba/evaluation.py, shared with in-training evaluation): no episodic life, no reward
clipping (the runtime never clips; agents clip in their loss), and the training config's sticky
actions and EnvPool time limit. Each of the `--num_envs` parallel envs plays a fixed share of the
episodes, so short games are not over-represented. Prints mean/median/std/min/max, and the
mean of each episode metric (the run's env.episode_metrics, or --episode_metrics), and writes
JSON (default `<run_dir>/eval/update<N>-<policy>.json`). A user error (no checkpoint at the path,
a damaged one, a bad --import, a policy the agent cannot play) prints one line and exits with
status 2; `--verbose` shows its traceback. See docs/checkpoints.md.

Runs of either runtime: an EnvPool or registered env, or a JAX-native env (`gymnax:<id>`, the
suites of anakin/, one registered with anakin.envs.register_env) stepped from the host with the
run's `env.options`, playing the same games as Anakin's own evaluation. A population
checkpoint (`num_seeds`, `vary`: every leaf has a member axis) needs a member: `--member I`, or
the member's own run dir (`<run_dir>/members/<name>`) as the path; the player then acts with
that member's parameters and observation statistics. Without one, the error lists the members
and their settings.

Held-out scenarios: `--scenario 'l=uniform(1.5, 2.0)'` (repeatable) also plays the games with
env.randomize replaced (docs/howto_env.md), e.g. pole lengths the run never drew, on
the same seeds; `--scenario none` plays the fixed env.options. The JSON gets one entry per
scenario under "scenarios", and a table compares them with the run's own env
(scripts/held_out.py).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tempfile
import time
from typing import Any, Callable, Sequence

import jax
import numpy as np

import agents
from agents import evaluation as players  # the evaluation players (greedy, sampling)
from experiments import wiring
from podracer import checkpoint, scenarios
from experiments.wiring import command_line
from scripts import held_out
from experiments.wiring import members as population
# The game loop and its settings are shared with in-training evaluation.
from podracer.evaluation import EVAL_SEED, summarize
from podracer.episode_metrics import EpisodeMetric, metric_means
from sebulba.envs import episode_metrics_of
from sebulba.evaluation import eval_env_config, play
from experiments.wiring.user_modules import HELP as _IMPORT_HELP, import_modules
from podracer.validation import ConfigError


@dataclasses.dataclass
class Policy:
    """A checkpoint's policy: `new_actor(num_envs)` gives a fresh stateful player for a batch
    of envs (agents.evaluation.EvalActor: `act(obs, key)`, then `observe(terminated,
    truncated)` after each step, which recurrent agents need for their core state)."""

    checkpoint: str
    meta: dict
    config: Any  # the run's ml_collections ConfigDict, as saved (a member's, for a member)
    sections: wiring.Sections  # the same, read and checked
    new_actor: Callable[[int], players.EvalActor]
    member: population.Member | None = None  # the member played, for a population checkpoint


def read_sections(config, meta: dict) -> wiring.Sections:
    """The run's config (a ConfigDict from the checkpoint) as checked sections.

    Configs saved before `agent_name` existed name their agent by the checkpoint's experiment
    (impala or ppo for the built-in entry points). The saved `resume` and `run_dir` are the
    training run's (its checkpoint may have been rotated away since, its dir be on another
    machine) and evaluation writes no run, so they are not checked here. A config saved
    before `env.action_mask_key` existed trained a network without a mask: its key is "".
    """
    config = config.copy_and_resolve_references()
    config.resume = ""
    config.run_dir = tempfile.gettempdir()
    if "env" in config and "action_mask_key" not in config.env:
        with config.env.unlocked():
            config.env.action_mask_key = ""
    agent = None
    if not config.get("agent_name"):
        agent = meta.get("experiment") or ""
        if agent not in agents.registered_agents():
            raise ConfigError(
                f"the checkpoint's config names no agent_name and its experiment {agent!r} is "
                f"not a registered agent (registered: {list(agents.registered_agents())}); "
                f"--import the module that registers the run's agent.")
    return wiring.read(config, agent=agent, devices=False, env_id=False)


def load_agent_state(ckpt: str, sections: wiring.Sections, obs, action_space,
                     member: int | None = None, size: int = 1, observation_space=None):
    """(network, agent, learner state): the run's agent rebuilt from its config by the wiring,
    with the checkpoint's state restored into it (a ValueError names what does not fit).
    `member`: a population checkpoint of `size` members (each leaf with the member axis
    first), of which that member's state is taken. `observation_space`: the env's, as the run
    built its network with."""
    _, network, agent = wiring.build_from_config(sections, action_space,
                                                 observation_space=observation_space)
    template = jax.eval_shape(agent.init, jax.random.key(0), obs)
    if member is not None:
        template = jax.tree.map(
            lambda s: jax.ShapeDtypeStruct((size,) + s.shape, s.dtype), template)
    state = checkpoint.restore(ckpt, template).learner_state
    if member is not None:
        state = jax.tree.map(lambda x: x[member], state)
    return network, agent, state


def member_path(path: str) -> tuple[str, str | None]:
    """(the path to restore from, the member's dir name or None): a member's run dir
    `<run_dir>/members/<name>` (it has no checkpoints: the population's are in the run dir)
    names the run dir and that member."""
    full = os.path.abspath(os.path.expanduser(path))
    parent = os.path.dirname(full)
    if (os.path.basename(parent) == "members" and os.path.isdir(full)
            and not os.path.isdir(os.path.join(full, "checkpoints"))):
        return os.path.dirname(parent), os.path.basename(full)
    return path, None


def pick_member(config, member: int | None, member_dir: str | None
                ) -> tuple[Any, population.Member | None, int]:
    """(the config to build the player from, the member or None, the population's size) for
    `--member` / a member's dir; a ValueError that lists the members when none or a wrong one
    is asked of a population, or names the flag when a single run is asked for one."""
    found = population.saved_members(config)
    if found is None:
        if member is not None or member_dir is not None:
            asked = f"--member {member}" if member is not None else f"members/{member_dir}"
            raise ValueError(f"{asked}: this checkpoint holds one agent, not a population "
                             f"(num_seeds 1, no vary); drop it.")
        return config, None, 1
    listing = f"members: {population.describe(found)}"
    if member_dir is not None:
        by_name = {m.name: m for m in found}
        if member_dir not in by_name or (member is not None and member != by_name[member_dir]
                                         .index):
            raise ValueError(f"members/{member_dir} is not a member of this population"
                             f"{f' or not member {member}' if member is not None else ''}; "
                             f"{listing}.")
        member = by_name[member_dir].index
    if member is None:
        raise ValueError(f"this checkpoint holds a population of {len(found)} members "
                         f"(num_seeds, vary): pick one with --member I (or pass its run dir "
                         f"<run_dir>/members/<name>); {listing}.")
    if not 0 <= member < len(found):
        raise ValueError(f"--member {member} is out of range: {listing}.")
    chosen = found[member]
    return population.member_config(config, chosen), chosen, len(found)


def eval_envs(sections: wiring.Sections, noop_max: int | None = None,
              max_episode_steps: int | None = None) -> Callable[[int, int], Any]:
    """make_env(num_envs, seed) of the run's env for evaluation (whole games), on either
    runtime's env; `noop_max` / `max_episode_steps` override EnvPool's settings and are
    refused (ValueError) for a JAX-native env, which has neither."""
    env_cfg = eval_env_config(sections.env, noop_max, max_episode_steps)
    if wiring.is_jax_env(env_cfg):
        given = [f"--{n}" for n, v in (("noop_max", noop_max),
                                        ("max_episode_steps", max_episode_steps))
                 if v is not None]
        if given:
            raise ValueError(f"{' and '.join(given)}: EnvPool settings; {env_cfg.name!r} is a "
                             f"JAX-native env (set its parameters with the run's env.options).")
    return wiring.host_envs(env_cfg, whole_games=True)


def eval_metrics(make_env: Callable[[int, int], Any], text: str, env_name: str,
                 randomize: str = "") -> tuple[EpisodeMetric, ...]:
    """The episode metrics of `text`, resolved against the fields the env reports (one probe
    env; ValueError naming them), with each field `randomize` draws (scenarios.logged)."""
    if not text:
        return scenarios.logged((), randomize)
    probe = make_env(1, 0)
    try:
        return scenarios.logged(episode_metrics_of(probe, text, f"env {env_name!r}"),
                                randomize)
    finally:
        probe.close()


def load_policy(path: str, greedy: bool = True, imports: Sequence[str] = (),
                member: int | None = None) -> Policy:
    """Rebuilds the run's agent from the checkpoint's config and restores its learner state
    (for a population checkpoint, `member`'s, or the member whose run dir `path` is).

    Greedy play uses the agent's own `greedy_step` (IMPALA, PPO, and agents built on them with
    their own network); for an agent without one, the network the config describes, which must
    fit its `agents.acting.ActorParams`. Sampling runs the agent's own actor_step. Both are
    checked on the env's first observation before any game. Raises ValueError naming the
    differences if the state does not fit that agent, naming the members of a population when
    no member (or one out of range) is given, and agents.evaluation.EvalPolicyError (a
    ValueError) naming the way out if the policy cannot play it.
    """
    import_modules(imports)  # user envs, torsos, agents (registered on import)
    path, member_dir = member_path(path)
    ckpt = checkpoint.resolve(path)
    meta = checkpoint.load_metadata(ckpt)
    saved = checkpoint.config_from_metadata(meta)
    config, chosen, size = pick_member(saved, member, member_dir)
    sections = read_sections(config, meta)
    probe = eval_envs(sections)(1, EVAL_SEED)
    obs = probe.reset()
    action_space = probe.action_space
    observation_space = getattr(probe, "observation_space", None)
    probe.close()
    network, agent, state = load_agent_state(ckpt, sections, obs, action_space,
                                             None if chosen is None else chosen.index, size,
                                             observation_space)
    ap = jax.device_put(agent.actor_params(state))
    player = players.eval_player("greedy" if greedy else "sample", network, agent, ap, obs)
    return Policy(ckpt, meta, config, sections, lambda n: player.actor(ap, n), chosen)


# Loading a policy reads only what the user gave: the path, the config saved in the checkpoint,
# --import and --policy. Its ValueErrors (a bad config, a failed --import, a damaged checkpoint
# or one that does not fit its agent, an env no module registered, a policy that cannot play
# the agent) and a path with no checkpoint are user errors; errors while playing are not.
USER_ERRORS = (ValueError, FileNotFoundError)


def load_for_command(args: argparse.Namespace) -> Policy:
    """`load_policy` for the command line: a user error prints one line and exits with status
    2 (experiments/wiring/command_line.py's convention); `--verbose` or SEBULBA_VERBOSE=1
    raises it with its traceback instead."""
    return command_line_call(args, load_policy, args.path, args.policy == "greedy",
                             args.imports, args.member)


def command_line_call(args: argparse.Namespace, fn: Callable, *fn_args: Any) -> Any:
    """`fn(*fn_args)`, whose USER_ERRORS print one line and exit with status 2 (raised with
    their traceback under --verbose or SEBULBA_VERBOSE=1)."""
    try:
        return fn(*fn_args)
    except USER_ERRORS as e:
        if args.verbose or command_line.verbose_requested():
            raise
        command_line.fail(str(e))


def default_output(ckpt: str, meta: dict, name: str, ext: str) -> str:
    """`<run_dir>/<name>/update<N>-...`, or beside the checkpoints dir when not in a run dir."""
    run_dir = checkpoint.run_dir_of(ckpt) or os.path.dirname(ckpt)
    return os.path.join(run_dir, name, f"update{meta.get('updates', 0)}{ext}")


def add_import_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help=_IMPORT_HELP)


def add_member_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--member", type=int, default=None, metavar="I",
                   help="a population checkpoint's member to play (num_seeds, vary; or pass "
                        "its run dir <run_dir>/members/<name> as the path)")


def add_verbose_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verbose", action="store_true",
                   help=f"show the traceback of a user error (checkpoint, config, --import, "
                        f"--policy); also {command_line.VERBOSE_ENV}=1")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m scripts.evaluate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", help="checkpoint dir, checkpoints dir or run dir (newest checkpoint)")
    p.add_argument("--episodes", type=int, default=100, help="games to play (default 100)")
    p.add_argument("--policy", choices=("greedy", "sample"), default="greedy",
                   help="the mode of the action distribution (default) or a sample")
    p.add_argument("--noop_max", type=int, default=None,
                   help="Atari random no-ops at reset; default: the run's (1 = none)")
    p.add_argument("--max_episode_steps", type=int, default=None,
                   help="time limit per game; default: the run's (0 = EnvPool's)")
    p.add_argument("--num_envs", type=int, default=16, help="parallel envs (default 16)")
    p.add_argument("--seed", type=int, default=EVAL_SEED,
                   help=f"env/sampling seed (default {EVAL_SEED}, disjoint from training)")
    p.add_argument("--episode_metrics", default=None, metavar="FIELD:REDUCTION,...",
                   help="info fields reduced over each game (e.g. crashed:max,speed:mean); "
                        "default: the run's env.episode_metrics")
    p.add_argument("--scenario", dest="scenarios", action="append", default=[],
                   metavar="RANDOMIZE",
                   help="also play on a held-out scenario: an env.randomize for the run's env "
                        "(e.g. 'l=choice(2.0)' or 'l=uniform(1.5, 2.0)'; 'none' = the fixed "
                        "env.options); repeatable, one table row each")
    p.add_argument("--output", default="", help="JSON path; default <run_dir>/eval/...")
    add_member_flag(p)
    add_import_flag(p)
    add_verbose_flag(p)
    args = p.parse_args(argv)
    if args.episodes < 1 or args.num_envs < 1:
        p.error(f"--episodes={args.episodes} and --num_envs={args.num_envs} must be >= 1")
    return args


def main(argv=None) -> dict:
    """Runs the evaluation; returns (and writes) the JSON report. A user error exits with
    status 2 (`load_for_command`); from Python, `load_policy` raises it instead."""
    args = parse_args(argv)
    start = time.time()
    policy = load_for_command(args)
    env_cfg = eval_env_config(policy.sections.env, args.noop_max, args.max_episode_steps)
    make_env = command_line_call(args, eval_envs, policy.sections, args.noop_max,
                                 args.max_episode_steps)
    text = (policy.sections.env.episode_metrics if args.episode_metrics is None
            else args.episode_metrics)
    metrics = command_line_call(args, eval_metrics, make_env, text, env_cfg.name,
                                env_cfg.randomize)
    returns, lengths, values = play(policy.new_actor, make_env, args.episodes, args.num_envs,
                                    args.seed, metrics=metrics)
    means = metric_means(values)
    meta, member = policy.meta, policy.member
    report = {"checkpoint": policy.checkpoint, "experiment": meta.get("experiment"),
              **({"member": member.index, "member_name": member.name, "seed_trained":
                  member.seed, "settings": dict(member.settings)} if member else {}),
              "env": env_cfg.name, "updates": meta.get("updates"),
              "env_steps": meta.get("env_steps"), "policy": args.policy,
              "episodes": len(returns), "noop_max": env_cfg.noop_max,
              "repeat_action_probability": env_cfg.repeat_action_probability,
              "seed": args.seed, **summarize(returns),
              "length_mean": float(np.mean(lengths)), "seconds": time.time() - start,
              **({"episode_metrics": means} if metrics else {}),
              "returns": returns, "lengths": lengths,
              # per game; null where a game did not report the field
              **({"metrics": {n: [v if np.isfinite(v) else None for v in column]
                              for n, column in values.items()}} if metrics else {})}
    if args.scenarios:
        report["scenarios"] = command_line_call(
            args, held_out.play_scenarios, policy.new_actor, env_cfg, args.scenarios, text,
            args.episodes, args.num_envs, args.seed, eval_metrics)
    tag = f"-member{member.index}" if member else ""
    out = args.output or default_output(policy.checkpoint, meta, "eval",
                                        f"{tag}-{args.policy}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(report, f, indent=2)
    print(f"{report['env']} update {report['updates']:,} ({report['env_steps']:,} env steps), "
          f"{len(returns)} games, {args.policy}: mean {report['mean']:.2f}  median "
          f"{report['median']:.2f}  std {report['std']:.2f}  min {report['min']:.2f}  max "
          f"{report['max']:.2f}  (mean length {report['length_mean']:.0f})"
          f"{''.join(f'  {n} {v:.3g}' for n, v in means.items())}\nwrote {out}",
          flush=True)
    if args.scenarios:
        print(held_out.table({**report, "randomize": env_cfg.randomize},
                             report["scenarios"]), flush=True)
    return report


if __name__ == "__main__":
    main()

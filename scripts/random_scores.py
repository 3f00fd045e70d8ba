"""The return of a uniformly random policy on JAX-native envs: the 0 of a normalised score.

    python -m scripts.random_scores gymnax:Breakout-MinAtar gymnax:Asterix-MinAtar \\
        --episodes 1000 --json random.json

Each of `--episodes` envs (Anakin's `AutoReset` over the env, as training steps it) plays
uniformly random actions (`anakin.envs.uniform_actions`) until its FIRST episode ends; only
that episode counts. Counting every episode finished in a fixed number of steps would favour
short episodes (more of them end in the window), which biases the mean towards early deaths.
Prints, per env, the mean return with its standard error, the median, the range and the mean
episode length; `--json` writes {env: {"mean", "stderr", "episodes", ...}}.
A `--max_steps` cap (default 100,000) stops envs whose episode never ends; it is an error to
reach it (named), not a silent truncation.
"""
from __future__ import annotations

import argparse
import json
import jax
import jax.numpy as jnp
import numpy as np

from anakin import envs


def first_episodes(name: str, episodes: int, seed: int = 0, max_steps: int = 100_000,
                   options: dict | None = None) -> dict[str, np.ndarray]:
    """{"return", "length"} of the first episode of each of `episodes` envs under a uniformly
    random policy."""
    env = envs.make_env(name, options)

    @jax.jit
    def play(key):
        key, reset_key = jax.random.split(key)
        state = jax.vmap(env.reset)(jax.random.split(reset_key, episodes))
        zeros = jnp.zeros(episodes)
        init = (key, state, zeros, zeros, jnp.zeros(episodes, bool), jnp.zeros((), jnp.int32))

        def running(carry):
            *_, done, t = carry
            return jnp.logical_and(~jnp.all(done), t < max_steps)

        def body(carry):
            key, state, ret, length, done, t = carry
            key, k_act, k_env = jax.random.split(key, 3)
            action = envs.uniform_actions(env.action_space, k_act, episodes)
            state, step = jax.vmap(env.step)(jax.random.split(k_env, episodes), state, action)
            ret = ret + jnp.where(done, 0.0, step.reward)
            length = length + jnp.where(done, 0, 1)
            return key, state, ret, length, done | step.episode_over, t + 1

        *_, ret, length, done, _ = jax.lax.while_loop(running, body, init)
        return ret, length, done

    ret, length, done = jax.device_get(play(jax.random.key(seed)))
    if not done.all():
        raise RuntimeError(f"{name}: {int((~done).sum())} of {episodes} random episodes had not "
                           f"ended after --max_steps={max_steps} steps; raise it")
    return {"return": np.asarray(ret, float), "length": np.asarray(length, float)}


def summary(result: dict[str, np.ndarray]) -> dict[str, float]:
    r = result["return"]
    return {"mean": float(r.mean()), "stderr": float(r.std(ddof=1) / np.sqrt(len(r))),
            "median": float(np.median(r)), "min": float(r.min()), "max": float(r.max()),
            "episodes": len(r), "mean_length": float(result["length"].mean())}


def main(argv=None) -> dict[str, dict[str, float]]:
    p = argparse.ArgumentParser(
        prog="python -m scripts.random_scores",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("envs", nargs="+", help="JAX-native env names (gymnax:<id>, <suite>:<id>)")
    p.add_argument("--episodes", type=int, default=1000, help="envs, one first episode each")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max_steps", type=int, default=100_000)
    p.add_argument("--json", default="", help="write the summaries to this file")
    args = p.parse_args(argv)
    if args.episodes < 2:
        p.error(f"--episodes={args.episodes}: at least 2 (for a standard error)")
    out = {}
    print("| env | episodes | mean return | std. error | median | min | max | mean length |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.envs:
        try:
            s = summary(first_episodes(name, args.episodes, args.seed, args.max_steps))
        except (ValueError, RuntimeError) as e:
            p.error(str(e))
        out[name] = s
        print(f"| {name} | {s['episodes']} | {s['mean']:.3f} | {s['stderr']:.3f} | "
              f"{s['median']:.2f} | {s['min']:.2f} | {s['max']:.2f} | {s['mean_length']:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()

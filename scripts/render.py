"""Records a checkpoint's agent playing, to an MP4 (when imageio has ffmpeg) or a GIF.

    python -m scripts.render runs/impala-Breakout-v5-s0-20250101-120000 --episodes 1
    python -m scripts.render runs/.../checkpoints/4880 --output breakout.gif --max_frames 500

The policy and env settings are those of scripts/evaluate.py (whole games, greedy by default).
Frames come from EnvPool's render API (`render_mode="rgb_array"`: Atari's full 210x160 RGB
screen, one frame per agent step, i.e. every `frame_skip`-th emulator frame; classic control's
drawing). `--frames obs` (or when rendering fails) uses the last grayscale frame of the stacked
observation instead, upscaled by `--scale`. MuJoCo rendering needs an OpenGL context (EGL or
OSMesa with a working driver, or a display); EnvPool aborts the whole process without one, so it
is probed in a subprocess first and the script exits with a clear message (status 2) if this
machine cannot render; a user error in loading the checkpoint does the same, as in evaluate.py.
MP4 needs imageio's ffmpeg plugin (`pip install imageio-ffmpeg` or `av`); without it the video
is written as GIF (Pillow) and the script says so.

A JAX-native env (runs of `gymnax:<id>` and the other suites of anakin/) has no renderer here:
an image observation (channels last: MinAtar's object channels, each drawn in its own colour,
or RGB) is recorded as the frames; for any other observation (CartPole's four numbers) the
script says in one line that it cannot draw the env and exits with status 2. Population
checkpoints take `--member I` (or a member's run dir), as in evaluate.py.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

import jax
import numpy as np

from experiments import wiring
from experiments.wiring import command_line
from sebulba import envs
from podracer.evaluation import EVAL_SEED
from sebulba.evaluation import eval_env_config

from scripts import evaluate

_PROBE = ("import envpool, sys; e = envpool.make(sys.argv[1], env_type='gymnasium', "
          "num_envs=1, render_mode='rgb_array'); e.reset(); e.render()")


def can_write_mp4() -> bool:
    """Whether imageio has an ffmpeg backend (imageio-ffmpeg or PyAV)."""
    return any(importlib.util.find_spec(m) is not None for m in ("imageio_ffmpeg", "av"))


def needs_gl(env_name: str) -> bool:
    """MuJoCo tasks render through OpenGL (EnvPool registers them under envpool.mujoco.*)."""
    from envpool.registration import registry
    return registry.specs[env_name][0].startswith("envpool.mujoco")


def check_can_render(env_name: str) -> None:
    """Exits with status 2 and a clear message if EnvPool cannot render `env_name` here."""
    if not needs_gl(env_name):
        return
    with tempfile.TemporaryDirectory() as tmp:  # MuJoCo writes MUJOCO_LOG.TXT into the cwd
        proc = subprocess.run([sys.executable, "-c", _PROBE, env_name], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300, cwd=tmp)
    if proc.returncode != 0:
        detail = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
        # A fact about this machine, not an exception: no traceback to offer (--verbose).
        print(f"error: cannot render {env_name} on this machine: EnvPool's MuJoCo renderer "
              f"needs an OpenGL context (EGL or OSMesa with a working driver, or a display), and "
              f"a probe render exited with status {proc.returncode}: {detail}", file=sys.stderr)
        sys.exit(command_line.USER_ERROR_STATUS)


def obs_frame(obs: np.ndarray, scale: int, channels_last: bool = False) -> np.ndarray:
    """An observation as an RGB frame, upscaled: the newest frame of EnvPool's stacked
    grayscale observation [stack, H, W]; with `channels_last` (JAX-native envs) an image
    [H, W, C]: RGB as it is (floats in [0, 1] scaled to 255), other channel counts (MinAtar's
    object channels) drawn one colour per channel, the last channel on top, black where none
    is set."""
    if channels_last:
        frame = channels_frame(obs)
    else:
        if obs.ndim != 3:
            raise ValueError(f"observation of shape {obs.shape} is not a stack of frames; use "
                             f"--frames render (EnvPool's render API).")
        frame = np.stack([obs[-1]] * 3, axis=-1).astype(np.uint8)
    return np.repeat(np.repeat(frame, scale, axis=0), scale, axis=1)


def is_image(obs) -> bool:
    """Whether one env's observation is an image `obs_frame` can draw with `channels_last`."""
    return isinstance(obs, np.ndarray) and obs.ndim == 3 and min(obs.shape[:2]) >= 4


def channels_frame(obs: np.ndarray) -> np.ndarray:
    """[H, W, C] -> [H, W, 3] uint8 (see obs_frame)."""
    obs = np.asarray(obs)
    if obs.shape[-1] == 3:
        rgb = obs.astype(np.float64)
        if rgb.max(initial=0.0) <= 1.0:
            rgb = rgb * 255.0
        return np.clip(rgb, 0, 255).astype(np.uint8)
    from matplotlib import colormaps
    cmap = colormaps["tab20"]
    palette = np.array([(0, 0, 0)] + [tuple(int(255 * v) for v in cmap(i % 20)[:3])
                                      for i in range(obs.shape[-1])], np.uint8)
    on = obs > 0
    top = obs.shape[-1] - np.argmax(on[..., ::-1], axis=-1)  # last set channel, 1-based
    return palette[np.where(on.any(axis=-1), top, 0)]


def record(policy: evaluate.Policy, env_cfg: envs.EnvConfig, episodes: int, max_frames: int,
           seed: int, frames_from: str = "render", scale: int = 4
           ) -> tuple[list[np.ndarray], list[float]]:
    """Plays up to `episodes` games (at most `max_frames` frames); returns (frames, returns).
    A JAX-native env records its observations (`frames_from` must be "obs")."""
    use_render = frames_from == "render"
    jax_env = wiring.is_jax_env(env_cfg)
    if jax_env and use_render:
        raise ValueError(f"{env_cfg.name!r} is a JAX-native env, which has no renderer here: "
                         f"record its observation frames (frames_from='obs').")
    env = (wiring.host_envs(env_cfg, whole_games=True)(1, seed) if jax_env else
           envs.make_env(env_cfg, 1, seed, render_mode="rgb_array" if use_render else None))
    key = jax.random.key(seed)
    actor = policy.new_actor(1)
    frames: list[np.ndarray] = []
    returns: list[float] = []
    ret = 0.0

    def grab(obs):
        nonlocal use_render
        if use_render:
            try:
                return env.render()
            except Exception as e:  # noqa: BLE001 - fall back to observation frames
                print(f"EnvPool render failed ({e!r}); using observation frames.", flush=True)
                use_render = False
        return obs_frame(obs[0], scale, channels_last=jax_env)

    try:
        obs = env.reset()
        frames.append(grab(obs))
        while len(returns) < episodes and len(frames) < max_frames:
            key, sub = jax.random.split(key)
            ts = env.step(actor.act(obs, sub))
            actor.observe(ts.terminated, ts.truncated)
            ret += float(ts.reward[0])
            obs = ts.obs
            frames.append(grab(obs))
            if ts.episode_over[0]:
                returns.append(ret)
                ret = 0.0
                if len(returns) < episodes:  # EnvPool resets on the next step; skip its frame
                    key, sub = jax.random.split(key)
                    ts = env.step(actor.act(obs, sub))
                    actor.observe(ts.terminated, ts.truncated)
                    obs = ts.obs
    finally:
        env.close()
    return frames, returns


def write_video(path: str, frames: list[np.ndarray], fps: float) -> str:
    """Writes MP4 (needs ffmpeg) or GIF by extension; falls back to GIF. Returns the path."""
    import imageio.v3 as iio
    if not path.lower().endswith(".gif") and not can_write_mp4():
        path = os.path.splitext(path)[0] + ".gif"
        print(f"imageio has no ffmpeg plugin (pip install imageio-ffmpeg); writing GIF: {path}",
              flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if path.lower().endswith(".gif"):
        iio.imwrite(path, np.stack(frames), duration=1000.0 / fps, loop=0)
    elif importlib.util.find_spec("imageio_ffmpeg") is not None:
        # imageio-ffmpeg pads each side to a multiple of 16 by default (210 x 160 Atari frames
        # came back 224 x 160); 2 is what H.264's 4:2:0 needs, so even sizes stay exact.
        iio.imwrite(path, np.stack(frames), fps=fps, plugin="FFMPEG", macro_block_size=2)
    else:  # PyAV
        iio.imwrite(path, np.stack(frames), fps=fps)
    return path


def jax_env_frames(args: argparse.Namespace, policy: evaluate.Policy) -> str:
    """"obs" for a JAX-native env whose observation is an image (saying so when the render
    API was asked for); otherwise one line saying the env cannot be drawn, and exit 2."""
    name = policy.sections.env.name
    make_env = evaluate.command_line_call(args, evaluate.eval_envs, policy.sections,
                                          args.noop_max)
    probe = make_env(1, args.seed)
    obs = jax.tree.map(lambda x: x[0], probe.reset())
    probe.close()
    if not is_image(obs):
        shape = obs.shape if isinstance(obs, np.ndarray) else jax.tree.map(np.shape, obs)
        command_line.fail(f"cannot render {name}: a JAX-native env has no renderer here, and "
                          f"its observation of shape {shape} is not an image to record instead; "
                          f"score its games with scripts/evaluate.py.")
    if args.frames == "render":
        print(f"{name}: a JAX-native env has no renderer here; recording its observation "
              f"frames (--frames obs).", flush=True)
    return "obs"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m scripts.render",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", help="checkpoint dir, checkpoints dir or run dir (newest checkpoint)")
    p.add_argument("--output", default="",
                   help="video path (.mp4 or .gif); default <run_dir>/videos/update<N>.mp4|gif")
    p.add_argument("--episodes", type=int, default=1, help="games to record (default 1)")
    p.add_argument("--max_frames", type=int, default=3000,
                   help="stop after this many frames in all (default 3000)")
    p.add_argument("--policy", choices=("greedy", "sample"), default="greedy")
    p.add_argument("--frames", choices=("render", "obs"), default="render",
                   help="EnvPool's RGB render (default) or the observation's last frame")
    p.add_argument("--scale", type=int, default=4, help="upscaling of observation frames")
    p.add_argument("--fps", type=float, default=30.0, help="frames per second (default 30)")
    p.add_argument("--noop_max", type=int, default=None, help="default: the run's")
    p.add_argument("--seed", type=int, default=EVAL_SEED)
    evaluate.add_member_flag(p)
    evaluate.add_import_flag(p)
    evaluate.add_verbose_flag(p)
    args = p.parse_args(argv)
    for name in ("episodes", "max_frames", "scale"):
        if getattr(args, name) < 1:
            p.error(f"--{name}={getattr(args, name)} must be >= 1")
    if args.fps <= 0:
        p.error(f"--fps={args.fps} must be positive")
    return args


def main(argv=None) -> str:
    """Records and writes the video; returns its path."""
    args = parse_args(argv)
    policy = evaluate.load_for_command(args)  # a user error: one line, exit 2
    env_cfg = eval_env_config(policy.sections.env, args.noop_max)
    frames_from = args.frames
    if wiring.is_jax_env(env_cfg):
        frames_from = jax_env_frames(args, policy)
    elif args.frames == "render":
        check_can_render(env_cfg.name)
    frames, returns = record(policy, env_cfg, args.episodes, args.max_frames, args.seed,
                             frames_from, args.scale)
    ext = ".mp4" if can_write_mp4() else ".gif"
    out = write_video(args.output or evaluate.default_output(
        policy.checkpoint, policy.meta, "videos", ext), frames, args.fps)
    cut = "" if len(returns) >= args.episodes else f" (stopped at --max_frames={args.max_frames})"
    print(f"wrote {out}: {len(frames)} frames of {frames[0].shape}, {len(returns)} finished "
          f"game(s) with returns {returns}{cut}", flush=True)
    return out


if __name__ == "__main__":
    main()

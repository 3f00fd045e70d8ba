"""A small CartPole run for fault tests, started as a subprocess by test_shutdown.py.

Usage: python -m tests.programs.sebulba_faults MODE RUN_DIR, MODE in {actor_error, long, stall}.
`long` trains until signalled; like any run it checkpoints into RUN_DIR/checkpoints at the end.
`stall`: one actor's env blocks forever at its 40th step; the learner warns after 3 s.
"""
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=3"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

from experiments import impala_atari  # noqa: E402
from experiments.configs import impala_classic  # noqa: E402
from tests.helpers import quiet_config  # noqa: E402


def main(mode: str, run_dir: str) -> None:
    # Console lines every update: the tests wait for them.
    config = quiet_config(impala_classic.get_config(), run_dir, console_every_s=0.0,
                          num_actor_threads=2, learner_device_ids=(1, 2),
                          total_env_steps=10_000_000 if mode == "long" else 200_000)
    hook = wrap_env = None
    if mode == "actor_error":
        calls = {"n": 0}

        def hook(actor_id, t, ts):
            calls["n"] += 1
            if actor_id == 1 and calls["n"] > 300:
                raise RuntimeError("injected env failure")
    if mode == "stall":
        from tests.fakes.faulty_env import faulty
        config.stall_warning_s = 3.0
        config.join_timeout_s = 2.0
        wrap_env = faulty("block", 40, pools=1)
    impala_atari.run(config, name="fault", actor_hook=hook, wrap_env=wrap_env)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

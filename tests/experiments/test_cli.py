"""The experiment command line (experiments/wiring/command_line.py), run as a user runs it.

A user error prints one message naming the field, the value, what is allowed and the close
match, exits 2 and shows no traceback unless --verbose or SEBULBA_VERBOSE=1; `--import` loads
user modules in every entry point that takes --config. The error cases run in one
tests/programs/command_lines.py process, each command line in a child of its own forked after
the imports; the `--import` runs start a fresh interpreter each.
"""
import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT, run_command_lines, write_user_env_module

CLASSIC = "--config=experiments/configs/impala_classic.py"


def _run(script: str, *args: str, cwd: str = ROOT, timeout: int = 300, **env_vars: str):
    env = dict(os.environ, JAX_PLATFORMS="cpu", **env_vars)
    env.pop("SEBULBA_VERBOSE", None) if "SEBULBA_VERBOSE" not in env_vars else None
    return subprocess.run([sys.executable, os.path.join(ROOT, "experiments", script), *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


USER_ERRORS = [
    # a misspelt field (was: AttributeError: '\'num_env\'\nDid you mean ...' and a traceback)
    (["--config.num_env=8"], ["--config.num_env=8", "'num_env' is not a field of config",
                              "Did you mean 'num_envs'", "Fields of config: "]),
    (["--config.agent.learning_rat=0.1"], ["'learning_rat' is not a field of config.agent",
                                           "Did you mean 'learning_rate'"]),
    # agent field values (was: two chained tracebacks)
    (["--config.agent.learning_rate=-1"], ["agent.learning_rate=-1.0 must be positive"]),
    (["--config.network.torso=impala_resnt"],
     ["network.torso='impala_resnt': unknown torso", "Did you mean 'impala_resnet'"]),
    (["--config.eval_policy=greedyy"], ["eval_policy='greedyy'", "Did you mean 'greedy'"]),
    (["--config.num_envs=abc"], ["--config.num_envs=abc", "invalid literal for int()"]),
    (["--config.num_envs=0"], ["num_envs=0 must be a positive integer"]),
    # a missing config file (was: `Failed loading config file config_config`, late)
    (["--config=experiments/configs/impala_clasic.py"],
     ["no such config file", "impala_clasic.py", "Did you mean 'impala_classic.py'"]),
    ([CLASSIC + ":nope"], ["impala_classic.py:nope", "unknown variant 'nope'; allowed: "]),
    (["--config.resume=/no/such/run"], ["resume='/no/such/run'", "no checkpoint at"]),
    (["--import", "no_such_module_xyz"], ["--import 'no_such_module_xyz' failed"]),
    (["--improt=x"], ["Unknown command line flag 'improt'", "import"]),
]


# (key, flags, environment) of the two ways to ask for the traceback of a user error
VERBOSE = (("--verbose", ["--verbose"], {}), ("SEBULBA_VERBOSE=1", [], {"SEBULBA_VERBOSE": "1"}))


def _error_args(args: list[str], run_dir: str) -> list[str]:
    return [*([CLASSIC] if not args[0].startswith("--config=") else []), *args,
            f"--config.run_dir={run_dir}"]


@pytest.fixture(scope="module")
def command_lines(tmp_path_factory):
    """Every command line of this module that fails before training, run at once: {key:
    CompletedProcess}; each user-error case writes (or not) under its own run dir."""
    folder = tmp_path_factory.mktemp("cli")
    cases = {f"error{i}": {"script": "train.py",
                           "args": _error_args(args, f"{folder}/run{i}")}
             for i, (args, _) in enumerate(USER_ERRORS)}
    for how, flag, env in VERBOSE:
        for bad in ("--config.agent.learning_rate=-1", "--config.num_env=8"):
            cases[f"{how} {bad}"] = {"script": "train.py",
                                     "args": [CLASSIC, bad, *flag], "env": env}
    cases["cpu_hint"] = {"script": "impala_atari.py",
                         "args": ["--config.num_envs=0", f"--config.run_dir={folder}/hint"]}
    for script in ("train.py", "impala_atari.py"):  # the user env unknown without --import
        cases[f"no_import_{script}"] = {"script": script,
                                        "args": _user_env_args(f"{folder}/no_import")}
    results = run_command_lines(list(cases.values()), folder)
    return {"folder": folder, **dict(zip(cases, results))}


@pytest.mark.parametrize("index", range(len(USER_ERRORS)),
                         ids=[" ".join(args) for args, _ in USER_ERRORS])
def test_a_user_error_prints_one_message_and_exits_2(command_lines, index):
    args, expected = USER_ERRORS[index]
    proc = command_lines[f"error{index}"]
    assert proc.returncode == 2, (args, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.startswith("error: "), proc.stderr[-3000:]
    for text in expected:
        assert text in proc.stderr, (text, proc.stderr)
    assert not os.path.exists(f"{command_lines['folder']}/run{index}")  # nothing was started


def test_verbose_or_the_environment_variable_shows_the_traceback(command_lines):
    for how, flag, env in VERBOSE:
        proc = command_lines[f"{how} --config.agent.learning_rate=-1"]
        assert proc.returncode != 0 and "Traceback" in proc.stderr, (flag, env)
        assert "agent.learning_rate=-1.0 must be positive" in proc.stderr
        proc = command_lines[f"{how} --config.num_env=8"]
        assert proc.returncode != 0 and "Traceback" in proc.stderr, (flag, env)


def _user_env_args(run_dir: str) -> list[str]:
    return [f"--config={ROOT}/experiments/configs/impala_classic.py",
            "--config.env.name=UserCartPole-cli-v0", "--config.total_env_steps=512",
            f"--config.run_dir={run_dir}", "--config.console_every_s=1e9"]


@pytest.mark.parametrize("script, how", [("train.py", "file"), ("impala_atari.py", "module")])
def test_import_flag_registers_a_user_env_for_training(command_lines, script, how, tmp_path):
    """Was: `Unknown command line flag 'import'` (README: the scripts take --import). The
    runs with --import start a fresh interpreter in the module's folder, as a user does."""
    proc = command_lines[f"no_import_{script}"]  # without it the env is unknown
    assert proc.returncode == 2 and "UserCartPole-cli-v0" in proc.stderr, proc.stderr[-3000:]
    assert not os.path.exists(f"{command_lines['folder']}/no_import")
    write_user_env_module(tmp_path / "user_envs_cli.py", "UserCartPole-cli-v0")
    module = str(tmp_path / "user_envs_cli.py") if how == "file" else "user_envs_cli"
    proc = _run(script, *_user_env_args(f"{tmp_path}/run"), "--import", module,
                cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.load(open(tmp_path / "run" / "summary.json"))
    assert summary["env_steps"] == 512


def test_cpu_variants_and_the_cpu_hint():
    """The README's first command on a CPU trains the IMPALA ResNet at ~100 steps/s: a
    one-line note says so and names the `:cpu` variant (Nature CNN, fewer envs)."""
    import jax
    from experiments.configs import impala_atari, ppo_atari
    from experiments.wiring import command_line
    assert jax.default_backend() == "cpu"
    for module in (impala_atari, ppo_atari):
        config = module.get_config("cpu")
        assert config.network.torso == "nature_cnn"
        assert config.num_envs <= 32  # envs per process, over all its actor threads
        path = module.__file__
        assert command_line.cpu_hint(config, path) is None  # already CPU-sized
        hint = command_line.cpu_hint(module.get_config(), path)
        assert hint is not None and f"--config={path}:cpu" in hint and "\n" not in hint
        multi = module.get_config()
        multi.distributed.num_processes = 2  # no device query before a multi-host join
        assert command_line.cpu_hint(multi, path) is None
    hint = command_line.cpu_hint(impala_atari.get_config(), "my_config.py")
    assert "--config.network.torso=nature_cnn" in hint  # a config without a :cpu variant


def test_the_cpu_hint_is_printed_at_start(command_lines):
    proc = command_lines["cpu_hint"]
    assert proc.returncode == 2 and "num_envs=0" in proc.stderr
    hint = [line for line in proc.stdout.splitlines() if line.startswith("note: JAX runs on CPU")]
    assert len(hint) == 1 and "configs/impala_atari.py:cpu" in hint[0], proc.stdout


def test_sweep_passes_import_to_every_run(tmp_path):
    from scripts import sweep
    args = sweep.parse_args(["--experiment", "experiments/train.py", "--config",
                             "experiments/configs/impala_classic.py", "--out", str(tmp_path),
                             "--import", "my_envs", "--import", "more.py"])
    run = sweep.plan(args.grid_spec, args.seed_list, args.out)[0]
    cmd = sweep.command(args, run, resume=False)
    assert cmd[-2:] == ["--import=my_envs", "--import=more.py"]


def test_env_options_are_added_from_the_command_line():
    """env.options is an open dict (empty in most configs): --config.env.options.<key>=<v>
    adds keys, each value read as a Python literal, else kept as a string."""
    import ml_collections

    from experiments.wiring import command_line
    argv = ["prog", "--config.env.options.max_steps=50", "--config.num_envs=4",
            "--config.env.options.backend=generalized", "--config.env.options.scale=0.5"]
    options = command_line.take_env_options(argv)
    assert argv == ["prog", "--config.num_envs=4"]
    assert options == {"max_steps": 50, "backend": "generalized", "scale": 0.5}
    config = ml_collections.ConfigDict({"env": {"name": "x", "options": {}}})
    config.lock()
    command_line.set_env_options(config, options)
    assert config.env.options.to_dict() == options
    from podracer.validation import ConfigError
    with pytest.raises(ConfigError, match="no env.options"):
        command_line.set_env_options(ml_collections.ConfigDict({"env": {"name": "x"}}),
                                     {"max_steps": 1})

"""The command line of every experiment entry point (`experiments.wiring.cli`): flags, user
errors, start-up hints.

Flags: `--config=file.py[:variant]` with `--config.x=y` overrides (ml_collections, locked, so a
misspelt field fails), `--import MODULE` (repeatable: user modules that register envs, torsos,
agents; experiments/wiring/user_modules.py) and `--verbose`.

A user error (a bad or misspelt config field, a missing config file, an unknown variant, a
damaged checkpoint to resume from, an --import that does not import) prints one message that
names the field, the value, what is allowed and the close match, and exits with status 2, with
no traceback. `--verbose` or SEBULBA_VERBOSE=1 lets the exception propagate with its traceback.
Errors in code (anything else) keep their traceback.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import Any, Callable, NoReturn, Sequence

from experiments.wiring import user_modules
from podracer import validation

VERBOSE_ENV = "SEBULBA_VERBOSE"
USER_ERROR_STATUS = 2  # as argparse: the command line (or the config it names) is wrong


class _UserError(Exception):
    """A command-line mistake found while parsing flags, with its message ready to print."""


def verbose_requested(argv: Sequence[str] = ()) -> bool:
    """--verbose on the command line (before absl has parsed it) or SEBULBA_VERBOSE set."""
    if os.environ.get(VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    return any(a in ("--verbose", "--verbose=true", "--verbose=True", "--verbose=1")
               for a in argv)


def fail(message: str) -> NoReturn:
    """Prints a user error (one message, no traceback) and exits with status 2."""
    sys.stderr.write(f"error: {message}\n(--verbose or {VERBOSE_ENV}=1 shows the traceback)\n")
    sys.stderr.flush()
    sys.exit(USER_ERROR_STATUS)


def _config_arg(argv: Sequence[str], default: str) -> str:
    """The value of --config in argv (absl takes the last one), else the default."""
    value = default
    for i, a in enumerate(argv):
        if a.startswith("--config="):
            value = a.split("=", 1)[1]
        elif a == "--config" and i + 1 < len(argv):
            value = argv[i + 1]
    return value


def check_config_file(argv: Sequence[str], default: str) -> None:
    """A missing config file fails here, naming it (ml_collections defers the error until the
    config is first used, then reports `Failed loading config file config_config`)."""
    value = _config_arg(argv, default)
    path = value.split(":", 1)[0]
    if os.path.isfile(path):
        return
    folder = os.path.dirname(path) or "."
    where = folder if os.path.isdir(folder) else os.path.dirname(os.path.abspath(default))
    files = sorted(f for f in os.listdir(where) if f.endswith(".py") and f != "__init__.py")
    if not files:  # e.g. a bare misspelt name: offer the entry point's own configs
        where = os.path.dirname(os.path.abspath(default))
        files = sorted(f for f in os.listdir(where) if f.endswith(".py") and f != "__init__.py")
    close = validation.close_matches(os.path.basename(path), files)
    raise _UserError(f"--config={value!r}: no such config file ({os.path.abspath(path)}). "
                     f"Config files in {where}: {', '.join(files)}.{close}")


def _overrides(argv: Sequence[str]) -> list[tuple[str, str]]:
    """(field path, value) of each --config.x=y (or --config.x y, --[no]config.flag) in argv."""
    out = []
    for i, a in enumerate(argv):
        m = re.fullmatch(r"--(no)?config\.([^=]+)(?:=(.*))?", a)
        if m:
            value = m.group(3)
            if value is None:
                nxt = argv[i + 1] if i + 1 < len(argv) else ""
                value = nxt if nxt and not nxt.startswith("--") else "<flag>"
            out.append((m.group(2), value))
    return out


def unknown_field_message(config: Any, argv: Sequence[str]) -> str | None:
    """The message for the first --config.<path> override that names no field of `config`:
    the field, the value, the fields allowed at that level and the closest one."""
    for path, value in _overrides(argv):
        node, walked = config, []
        for key in path.split("."):
            keys = list(node.keys()) if hasattr(node, "keys") else []
            if key not in keys:
                where = "config" + "".join(f".{k}" for k in walked)
                if not keys:
                    return (f"--config.{path}={value}: {where} is "
                            f"{type(node).__name__}, not a section with fields.")
                return (f"--config.{path}={value}: {key!r} is not a field of {where}."
                        f"{validation.close_matches(key, keys)} Fields of {where}: "
                        f"{', '.join(keys)}.")
            node, walked = node[key], walked + [key]
    return None


def load_config_file(value: str) -> Any:
    """`get_config([variant])` of the config file `value` names (`file.py[:variant]`)."""
    import importlib.util
    path, *variant = value.split(":", 1)
    spec = importlib.util.spec_from_file_location("_sebulba_cli_config", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(*variant)


def flag_error_message(error: BaseException, argv: Sequence[str], default: str) -> str:
    """One clear line (or a few) for an error raised while absl parsed the flags."""
    text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    if isinstance(error, (AttributeError, KeyError, TypeError)):
        # ml_collections: '\'num_env\'\nDid you mean "num_envs" ...': rebuild it, with the
        # value given and the fields allowed, from the config the command names.
        try:
            message = unknown_field_message(load_config_file(_config_arg(argv, default)), argv)
        except Exception:  # noqa: BLE001 - fall back to ml_collections' own words
            message = None
        return message or " ".join(text.replace("\\n", " ").split())
    if "Error whilst parsing config file" in text:
        # The config's get_config raised (e.g. an unknown variant): keep its last line, the
        # exception, not the traceback ml_collections embeds in the message.
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        last = lines[-1] if lines else text
        last = re.sub(r"^(ValueError|TypeError): ", "", last)
        return f"--config={_config_arg(argv, default)!r}: {last}"
    return text


@contextlib.contextmanager
def _flag_errors(argv: Sequence[str], default_config: str):
    """Turns the errors of flag definition and parsing into one printed message (exit 2).

    Definition too: without --config, ml_collections parses the default config and the
    --config.x overrides of sys.argv as soon as the flag is defined."""
    from absl import flags
    try:
        yield
    except _UserError as e:
        if verbose_requested(argv):
            raise
        fail(str(e))
    except (flags.Error, AttributeError, KeyError, TypeError, OSError) as e:
        if verbose_requested(argv):
            raise
        fail(flag_error_message(e, argv, default_config))


def parse_flags(argv: Sequence[str], default_config: str) -> list[str]:
    """absl's flag parsing, with user errors printed as one message (exit 2)."""
    from absl import flags
    with _flag_errors(argv, default_config):
        check_config_file(argv, default_config)
        return flags.FLAGS(list(argv))


def config_variants(config_file: str) -> tuple[str, ...]:
    """The variants the config file `config_file` (`file.py[:variant]`) declares in its
    `VARIANTS` (every shipped config does; () when a file declares none)."""
    import importlib.util
    path = config_file.split(":", 1)[0]
    spec = importlib.util.spec_from_file_location("_sebulba_cli_config_variants", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except OSError:  # not a file (a config built in code): no variants to offer
        return ()
    return tuple(module.VARIANTS) if hasattr(module, "VARIANTS") else ()


def cpu_hint(config: Any, config_file: str) -> str | None:
    """A one-line note when a GPU-sized network (networks.is_gpu_sized: the IMPALA ResNet) is
    about to train on a CPU backend, where it runs at ~50 env steps/s on 2 cores (README,
    throughput table); None otherwise. It suggests the config file's `:cpu` variant when the
    file declares one (its VARIANTS), else the Nature CNN.

    Only for a run that joins no multi-host job (podracer.distributed.joins_a_job): querying
    the backend before `jax.distributed.initialize` would break the join.
    """
    import networks
    from podracer import distributed
    from podracer.schema import read_section
    net = config.get("network", {}) if hasattr(config, "get") else {}
    if not networks.is_gpu_sized(net.get("torso", "")):
        return None
    try:
        dc = read_section(distributed.DistributedConfig,
                          config.get("distributed", {"mode": "off"}), "distributed")
    except ValueError:
        return None  # the run names the bad field when it reads the config
    if distributed.joins_a_job(dc):
        return None
    import jax
    if jax.default_backend() != "cpu":
        return None
    path = config_file.split(":", 1)[0]
    variant = (f"--config={path}:cpu" if "cpu" in config_variants(config_file)
               else "--config.network.torso=nature_cnn")
    return (f"note: JAX runs on CPU and network.torso={net.get('torso')!r} is a GPU-sized "
            f"network: expect a minute or two to the first update, then ~50 env steps/s "
            f"on 2 cores (an ETA of over a hundred hours). For a CPU-sized "
            f"run use {variant} (Nature CNN, fewer envs; README, throughput table).")


_ENV_OPTION = re.compile(r"--config\.env\.options\.([A-Za-z_][A-Za-z0-9_]*)=(.*)")


def take_env_options(argv: list[str]) -> dict[str, Any]:
    """Removes `--config.env.options.<key>=<value>` from `argv` and returns {key: value}.

    `env.options` is an open dict passed to the env's maker (gymnax EnvParams fields, a JAX
    suite's options: docs/anakin.md), empty in most configs, so ml_collections' locked
    overrides cannot add keys to it. A value is read as a Python literal (50, 0.5, True,
    "generalized", [1, 2]) and kept as the string given otherwise."""
    import ast
    options, rest = {}, []
    for a in argv:
        m = _ENV_OPTION.fullmatch(a)
        if m is None:
            rest.append(a)
            continue
        try:
            options[m.group(1)] = ast.literal_eval(m.group(2))
        except (ValueError, SyntaxError):
            options[m.group(1)] = m.group(2)
    argv[:] = rest
    return options


def set_env_options(config: Any, options: dict[str, Any]) -> None:
    """Puts `options` (take_env_options) into config.env.options."""
    if not options:
        return
    env = config.get("env") if hasattr(config, "get") else None
    if env is None or "options" not in env:
        raise validation.ConfigError(
            f"--config.env.options.{next(iter(options))}: this config has no env.options "
            f"(its env takes no options).")
    with config.unlocked():
        for key, value in options.items():
            env.options[key] = value


def run(run_fn: Callable[[Any], Any], default_config: str) -> None:
    """Defines the flags, parses them, imports --import modules and calls run_fn(config)."""
    from absl import app, flags
    from ml_collections import config_flags

    env_options = take_env_options(sys.argv)
    with _flag_errors(sys.argv, default_config):
        flag = config_flags.DEFINE_config_file(
            "config", default_config, "Experiment config file (`:variant` selects a variant).",
            lock_config=True)
    if "import" not in flags.FLAGS:
        flags.DEFINE_multi_string("import", [], user_modules.HELP)
    if "verbose" not in flags.FLAGS:
        flags.DEFINE_bool("verbose", False, f"show the traceback of a user error (config, "
                          f"checkpoint, --import); also {VERBOSE_ENV}=1")

    def main(argv):
        del argv
        verbose = flags.FLAGS.verbose or verbose_requested()
        try:
            user_modules.import_modules(flags.FLAGS["import"].value)
            config = flag.value
            set_env_options(config, env_options)
            hint = cpu_hint(config, config_flags.get_config_filename(flags.FLAGS["config"]))
            if hint:
                print(hint, flush=True)
            run_fn(config)  # returns None: app.run passes main's result to sys.exit
        except validation.ConfigError as e:
            if verbose:
                raise
            fail(str(e))
        except user_modules.ImportFailed as e:
            if verbose:
                raise
            fail(str(e))

    app.run(main, flags_parser=lambda argv: parse_flags(argv, default_config))

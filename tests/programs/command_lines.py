"""Runs many command lines of the experiment entry points as a user runs them, each in a process
of its own (for tests.helpers.run_command_lines).

Each command line runs in a child forked from this process once the entry points' imports are
done, so a case costs what the command itself does, not ~3 s of imports again. This process
never starts a JAX backend (importing jax starts none), so the children start from a process
with one thread, as a fresh interpreter does. A child runs the script as `python SCRIPT ARGS`
would (`__main__`, sys.argv, the script's folder first on sys.path) with the case's
environment variables, its stdout and stderr going to files; its exit status is the one the
interpreter would give (SystemExit's code; 1 and the traceback on stderr for an uncaught
exception).

    python tests/programs/command_lines.py CASES.json OUT.json

CASES.json: a list of {"script": path, "args": [...], "env": {NAME: value}, "cwd": dir};
OUT.json: one {"returncode", "stdout", "stderr"} per case, in order.
"""
import json
import os
import runpy
import sys
import tempfile
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def _child(case: dict, out_path: str, err_path: str) -> None:
    """In the forked child: runs the case and leaves with its exit status (never returns)."""
    code = 1
    try:
        with open(out_path, "w") as out, open(err_path, "w") as err:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
        os.chdir(case.get("cwd") or ROOT)
        os.environ.pop("SEBULBA_VERBOSE", None)
        os.environ.update(case.get("env", {}))
        script = os.path.join(ROOT, case["script"])
        sys.argv = [script, *case["args"]]
        sys.path[0] = os.path.dirname(script)
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:  # sys.exit("message"): printed on stderr, status 1
                print(e.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001 - as the interpreter: the traceback, status 1
            traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main(cases_path: str, out_path: str) -> None:
    # What every entry point imports, once, before the first fork.
    import absl.app  # noqa: F401
    import ml_collections.config_flags  # noqa: F401

    import experiments.impala_atari  # noqa: F401
    import experiments.train  # noqa: F401
    import experiments.wiring.command_line  # noqa: F401
    with open(cases_path) as f:
        cases = json.load(f)
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for i, case in enumerate(cases):
            out, err = os.path.join(folder, f"{i}.out"), os.path.join(folder, f"{i}.err")
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(case, out, err)
            _, status = os.waitpid(pid, 0)
            with open(out) as o, open(err) as e:
                results.append({"returncode": os.waitstatus_to_exitcode(status),
                                "stdout": o.read(), "stderr": e.read()})
    with open(out_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

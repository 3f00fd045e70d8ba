"""Randomised scenarios (`env.randomize`): which env parameters each env draws at every reset,
and from what.

The field is one string (configs are locked: a new key cannot be added from the command
line), items separated by ";":

    length=uniform(0.5, 1.0); m=choice(0.5, 1.0, 2.0); g=normal(10.0, 0.5)
    max_torque=loguniform(1.0, 4.0); l=my_module:draw_length

- `uniform(lo, hi)`: uniform on [lo, hi) (an integer field: an integer in [lo, hi]);
- `loguniform(lo, hi)`: log-uniform on [lo, hi), 0 < lo < hi;
- `normal(mean, std)`: Gaussian;
- `choice(a, b, ...)`: one of the values, each as likely;
- `module:function`: a distribution of your own, `function(key) -> value` (JAX, traceable);
  the module is imported by name (load it with `--import`).

A curriculum schedules a distribution (podracer/curriculum.py): `A -> B over N env_steps` (or
`updates`), A and B of one kind with as many numbers, e.g.
`density=uniform(0.5, 1.0) -> uniform(0.5, 2.0) over 2000000 env_steps`: each number moves
linearly from A's to B's over the first N, then stays.

`parse` checks the text (a ValueError naming the bad item); `check_fields` checks the names
against what an env can vary; `draw` samples every field for one env from one key (pure JAX:
under the runtime's `vmap` each env draws its own scenario). An env keeps the values it drew
until its next reset (anakin/envs.py's GymnaxEnv holds them in its state).
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import math
import re
from typing import Any, Callable, NamedTuple, Sequence

from podracer import curriculum
from podracer.episode_metrics import Bins, EpisodeMetric

KINDS = ("uniform", "loguniform", "normal", "choice")
_ITEM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.+?)\s*$")
_CALL = re.compile(r"^([a-z]+)\s*\((.*)\)$", re.S)
_FUNCTION = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_SCHEDULE = re.compile(r"^(.+?)\s*->\s*(.+?)\s+over\s+(\S+)\s+(\S+)$", re.S)


@dataclasses.dataclass(frozen=True)
class Draw:
    """One varied field: `kind` in KINDS with its numbers, or "function" with its path; a
    scheduled one (a curriculum) also has the numbers `end` it reaches `over` so many `unit`s
    (curriculum.UNITS) of training."""

    field: str
    kind: str
    args: tuple = ()
    function: str = ""
    end: tuple = ()   # () = a fixed distribution
    over: float = 0.0
    unit: str = ""

    @property
    def scheduled(self) -> bool:
        return bool(self.end)

    def describe(self) -> str:
        if self.kind == "function":
            return f"{self.field}={self.function}"
        text = f"{self.field}={self.kind}({', '.join(f'{a:g}' for a in self.args)})"
        if self.scheduled:
            over = f"{self.over:.0f}" if self.over.is_integer() else f"{self.over:g}"
            text += (f" -> {self.kind}({', '.join(f'{a:g}' for a in self.end)}) "
                     f"over {over} {self.unit}")
        return text

    def args_at(self, progress: curriculum.TrainingProgress | None) -> tuple:
        """The numbers drawn from at `progress` (a schedule's end when None; a fixed draw's
        own numbers whatever the progress)."""
        if not self.scheduled:
            return self.args
        return curriculum.args_at(self.args, self.end, self.over, self.unit, progress)


def parse(text: str) -> tuple[Draw, ...]:
    """The draws of an env.randomize string ("" = none). Raises ValueError naming the item."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} must be a string such as 'length=uniform(0.5, 1.0)'.")
    draws: list[Draw] = []
    for item in filter(str.strip, text.split(";")):
        m = _ITEM.match(item)
        if not m:
            raise ValueError(f"{item.strip()!r} is not FIELD=DISTRIBUTION (e.g. "
                             f"length=uniform(0.5, 1.0)).")
        field, spec = m.groups()
        if any(d.field == field for d in draws):
            raise ValueError(f"{field!r} is given twice.")
        draws.append(_parse_spec(field, spec))
    return tuple(draws)


def _parse_spec(field: str, spec: str) -> Draw:
    schedule = _SCHEDULE.match(spec)
    if "->" in spec and not schedule:
        raise ValueError(f"{field}={spec}: a schedule reads A -> B over N env_steps (or "
                         f"updates), e.g. uniform(0.5, 1.0) -> uniform(0.5, 2.0) over "
                         f"2000000 env_steps.")
    if schedule:
        return _parse_schedule(field, spec, *schedule.groups())
    if _FUNCTION.match(spec):
        return Draw(field, "function", function=spec)
    call = _CALL.match(spec)
    if not call or call.group(1) not in KINDS:
        raise ValueError(f"{field}={spec}: the distribution must be one of "
                         f"{', '.join(k + '(...)' for k in KINDS)} or module:function.")
    kind, inner = call.groups()
    try:
        args = ast.literal_eval(f"({inner},)") if inner.strip() else ()
    except (ValueError, SyntaxError):
        args = None
    if args is None or not all(isinstance(a, (int, float)) and not isinstance(a, bool)
                               and math.isfinite(a) for a in args):
        raise ValueError(f"{field}={spec}: the arguments must be finite numbers.")
    args = tuple(float(a) for a in args)
    if kind == "choice":
        if not args:
            raise ValueError(f"{field}={spec}: choice needs at least one value.")
    elif len(args) != 2:
        raise ValueError(f"{field}={spec}: {kind} takes 2 numbers, got {len(args)}.")
    elif kind in ("uniform", "loguniform") and not args[0] < args[1]:
        raise ValueError(f"{field}={spec}: needs low < high.")
    elif kind == "loguniform" and args[0] <= 0:
        raise ValueError(f"{field}={spec}: loguniform needs 0 < low.")
    elif kind == "normal" and args[1] <= 0:
        raise ValueError(f"{field}={spec}: normal needs std > 0.")
    return Draw(field, kind, args)


def _parse_schedule(field: str, spec: str, first: str, last: str, over: str,
                    unit: str) -> Draw:
    a, b = _parse_spec(field, first), _parse_spec(field, last)
    if a.kind == "function" or b.kind == "function":
        raise ValueError(f"{field}={spec}: a schedule moves the numbers of "
                         f"{', '.join(KINDS)}; a function of one's own cannot be scheduled.")
    if a.kind != b.kind or len(a.args) != len(b.args):
        raise ValueError(f"{field}={spec}: a schedule's two ends must be one kind with as "
                         f"many numbers (got {a.describe()} and {b.describe()}).")
    try:
        length = ast.literal_eval(over)
    except (ValueError, SyntaxError):
        length = None
    if (not isinstance(length, (int, float)) or isinstance(length, bool)
            or not math.isfinite(length) or length <= 0):
        raise ValueError(f"{field}={spec}: over {over}: the length must be a number > 0.")
    if unit not in curriculum.UNITS:
        raise ValueError(f"{field}={spec}: over {over} {unit}: the unit must be one of "
                         f"{', '.join(curriculum.UNITS)}.")
    return dataclasses.replace(a, end=b.args, over=float(length), unit=unit)


def scheduled(draws: Sequence[Draw]) -> tuple[Draw, ...]:
    """The draws of `draws` that a curriculum schedules."""
    return tuple(d for d in draws if d.scheduled)


def check_fields(draws: Sequence[Draw], allowed: Sequence[str], where: str) -> None:
    """Raises ValueError naming a varied field that `where` cannot vary, and those it can."""
    for d in draws:
        if d.field not in allowed:
            can = (f"the fields it can vary: {', '.join(sorted(allowed))}" if allowed else
                   "it has no field that can vary")
            raise ValueError(f"{where} cannot vary {d.field!r}; {can}.")


def resolve(draw: Draw) -> Callable[[Any], Any]:
    """A user's `module:function` (ValueError naming it when it does not import)."""
    module_name, _, name = draw.function.partition(":")
    try:
        fn = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"{draw.describe()}: {e} (load its module with --import).") from None
    if not callable(fn):
        raise ValueError(f"{draw.describe()}: {fn!r} is not callable (key) -> value.")
    return fn


def draw(draws: Sequence[Draw], key: Any, defaults: dict[str, Any],
         progress: curriculum.TrainingProgress | None = None) -> dict[str, Any]:
    """One env's scenario: a value per field, of the dtype of the field's default (an integer
    field draws integers), each field from its own key; a scheduled field from its
    distribution at `progress` (its end when None)."""
    import jax
    import jax.numpy as jnp
    out = {}
    keys = jax.random.split(key, max(len(draws), 1))
    for d, k in zip(draws, keys):
        dtype = jnp.asarray(defaults[d.field]).dtype
        integer = jnp.issubdtype(dtype, jnp.integer)
        args = d.args_at(progress)
        if d.kind == "function":
            value = resolve(d)(k)
        elif d.kind == "choice":
            value = jnp.stack([jnp.asarray(a, jnp.float32) for a in args])[
                jax.random.randint(k, (), 0, len(args))]
        elif d.kind == "uniform" and integer:
            lo, hi = (jnp.round(jnp.asarray(a)).astype(jnp.int32) for a in args)
            value = jax.random.randint(k, (), lo, hi + 1)
        elif d.kind == "uniform":
            value = jax.random.uniform(k, (), minval=args[0], maxval=args[1])
        elif d.kind == "loguniform":
            lo, hi = jnp.log(jnp.asarray(args[0])), jnp.log(jnp.asarray(args[1]))
            value = jnp.exp(jax.random.uniform(k, (), minval=lo, maxval=hi))
        else:  # normal
            value = args[0] + args[1] * jax.random.normal(k, ())
        out[d.field] = jnp.asarray(jnp.round(value) if integer else value, dtype)
    return out


class Derived(NamedTuple):
    """Parameters of an env that are functions of others, which its step reads beside them:
    recomputed whenever options or a draw set their sources, never set themselves."""

    fields: tuple[str, ...]
    recompute: Callable[[Any], dict]  # (the params, as attributes) -> {field: value}
    rule: str                         # what they are, for the error naming them


# By env id, the same on gymnax and gymnasium (the same names: gymnax's CartPole is a port of
# gymnasium's, gymnax/environments/classic_control/cartpole.py).
DERIVED = {
    "CartPole-v1": Derived(("total_mass", "polemass_length"),
                           lambda p: {"total_mass": p.masspole + p.masscart,
                                      "polemass_length": p.masspole * p.length},
                           "total_mass = masspole + masscart, polemass_length = "
                           "masspole * length"),
}


BINS = 4  # bins per drawn range in the per-scenario summaries (a choice: one per value)


def bins(d: Draw) -> Bins | None:
    """How games are grouped by the value `d` drew: BINS equal bins of a uniform range (of
    its logarithm for loguniform), one bin per value of a choice, 4 bins of a normal cut at
    the mean and one standard deviation either side; None for a function of one's own (its
    range is not known)."""
    def label(x: float) -> str:
        return f"{x:.3g}"

    if d.scheduled:  # the values of the whole schedule: it moves linearly between its ends
        if d.kind == "choice":
            d = Draw(d.field, d.kind, d.args + d.end)
        elif d.kind == "normal":
            d = Draw(d.field, d.kind, d.end)
        else:
            d = Draw(d.field, d.kind, (min(d.args[0], d.end[0]), max(d.args[1], d.end[1])))

    if d.kind == "choice":
        values = sorted(set(d.args))
        edges = tuple((a + b) / 2 for a, b in zip(values, values[1:]))
        return Bins(edges, tuple(label(v) for v in values))
    if d.kind in ("uniform", "loguniform"):
        lo, hi = d.args
        if d.kind == "loguniform":
            cuts = [math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * i / BINS)
                    for i in range(BINS + 1)]
        else:
            cuts = [lo + (hi - lo) * i / BINS for i in range(BINS + 1)]
        return Bins(tuple(cuts[1:-1]), tuple(f"{label(a)}-{label(b)}"
                                             for a, b in zip(cuts, cuts[1:])))
    if d.kind == "normal":
        mean, std = d.args
        cuts = (mean - std, mean, mean + std)
        return Bins(cuts, (f"<{label(cuts[0])}", f"{label(cuts[0])}-{label(cuts[1])}",
                           f"{label(cuts[1])}-{label(cuts[2])}", f">{label(cuts[2])}"))
    return None


def logged(metrics: Sequence[EpisodeMetric], randomize: str) -> tuple[EpisodeMetric, ...]:
    """`metrics` (a run's resolved env.episode_metrics) with each field `randomize` draws as a
    metric `scenario.<field>` (added as `:last` unless named already) carrying its `bins`, so
    the return and the other metrics are also summarised per scenario bin."""
    out = list(metrics)
    for d in parse(randomize):
        field, grouping = f"scenario.{d.field}", bins(d)
        if grouping is None:
            continue
        at = [i for i, m in enumerate(out) if m.field == field]
        if at:  # the value is the game's scenario whatever the reduction
            out[at[0]] = out[at[0]]._replace(bins=grouping)
        else:
            out.append(EpisodeMetric(field, "last", field.replace(".", "/"), grouping))
    return tuple(out)


NONE = "none"  # eval_randomize / --scenario: no draws, the fixed env.options


def for_evaluation(trained: str, held_out: str) -> str:
    """The env.randomize an evaluation plays: `held_out` (RunConfig.eval_randomize,
    scripts/evaluate.py --scenario) when given, "none" for no draws, "" for training's."""
    if not held_out:
        return trained
    return "" if held_out == NONE else held_out


def metrics_text(text: str, randomize: str) -> str:
    """An env.episode_metrics `text` less its `scenario.<field>` entries that `randomize`
    does not draw (a run that logs its drawn pole length, evaluated on fixed options)."""
    if text in ("", "auto"):
        return text
    drawn = {d.field for d in parse(randomize)}
    keep = [item for item in text.split(",")
            if not item.strip().startswith("scenario.")
            or item.strip()[len("scenario."):].split(":")[0] in drawn]
    return ",".join(keep)


def held_out(env: Any, randomize: str) -> Any:
    """The env settings (an env section) of an evaluation on `randomize` (for_evaluation's
    rule), with the episode metrics that scenario reports (`metrics_text`)."""
    text = for_evaluation(env.randomize, randomize)
    return dataclasses.replace(env, randomize=text,
                               episode_metrics=metrics_text(env.episode_metrics, text))

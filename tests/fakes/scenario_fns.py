"""A user's own scenario distribution for env.randomize (`module:function`), for
tests/anakin/test_scenarios.py: a pole of length 0.5 or 1.0, each as likely."""
import jax
import jax.numpy as jnp


def short_or_long(key):
    return jnp.where(jax.random.uniform(key) < 0.5, 0.5, 1.0)

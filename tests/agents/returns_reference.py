"""NumPy references for agents.returns, written from the papers' equations (see
tests/agents/test_returns.py for the equations), as explicit float64 loops that never call rlax;
plus the trajectories the tests share."""

import numpy as np

RTOL = 1e-5
# Advantages can be close to zero, where a pure relative tolerance is meaningless for
# float32 results; a tiny absolute tolerance covers that.
ATOL = 1e-5


def _f32(x):
    return np.asarray(x, dtype=np.float32)


def _close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), expected, rtol=RTOL, atol=ATOL)




def ref_vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_=1.0, clip_rho=1.0, clip_pg_rho=1.0):
    """V-trace targets and pg advantages, straight from the sum form of eq. 1."""
    v_tm1, v_t, r_t, discount_t, rho_tm1 = (
        np.asarray(a, dtype=np.float64) for a in (v_tm1, v_t, r_t, discount_t, rho_tm1)
    )
    T = len(r_t)
    vs = np.zeros(T)
    for s in range(T):
        total = 0.0
        for t in range(s, T):
            trace = 1.0  # prod_{i=s}^{t-1} discount_i * c_i
            for i in range(s, t):
                trace *= discount_t[i] * lambda_ * min(1.0, rho_tm1[i])
            delta_t = r_t[t] + discount_t[t] * v_t[t] - v_tm1[t]
            total += trace * min(clip_rho, rho_tm1[t]) * delta_t
        vs[s] = v_tm1[s] + total

    pg = np.zeros(T)
    for s in range(T):
        v_next = vs[s + 1] if s + 1 < T else v_t[T - 1]  # v_T = V(x_T)
        pg[s] = min(clip_pg_rho, rho_tm1[s]) * (r_t[s] + discount_t[s] * v_next - v_tm1[s])
    return vs, pg


def ref_n_step_return(r_t, discount_t, bootstrap):
    """G_s = sum_{t=s}^{T-1} (prod_{i=s}^{t-1} gamma_i) r_t + (prod_{i=s}^{T-1} gamma_i) V(x_T)."""
    r_t = np.asarray(r_t, dtype=np.float64)
    discount_t = np.asarray(discount_t, dtype=np.float64)
    T = len(r_t)
    G = np.zeros(T)
    for s in range(T):
        total, disc = 0.0, 1.0
        for t in range(s, T):
            total += disc * r_t[t]
            disc *= discount_t[t]
        G[s] = total + disc * float(bootstrap)
    return G


def ref_gae(r_t, discount_t, v_tm1, v_t, lambda_):
    """A_t = delta_t + gamma_t * lambda * A_{t+1}, A_T = 0."""
    r_t, discount_t, v_tm1, v_t = (np.asarray(a, dtype=np.float64)
                                   for a in (r_t, discount_t, v_tm1, v_t))
    T = len(r_t)
    adv = np.zeros(T)
    next_adv = 0.0
    for t in reversed(range(T)):
        delta = r_t[t] + discount_t[t] * v_t[t] - v_tm1[t]
        next_adv = delta + discount_t[t] * lambda_ * next_adv
        adv[t] = next_adv
    return adv


def ref_fold_truncation(r_t, v_t, terminated_t, truncated_t, gamma):
    T = len(r_t)
    r_out, disc_out = np.zeros(T), np.zeros(T)
    for i in range(T):
        # A step both terminated and truncated reached a terminal state: nothing follows it,
        # so no bootstrap (the time limit only matters when the state is not terminal).
        bootstrap = truncated_t[i] and not terminated_t[i]
        r_out[i] = r_t[i] + (gamma * v_t[i] if bootstrap else 0.0)
        disc_out[i] = 0.0 if (terminated_t[i] or truncated_t[i]) else gamma
    return r_out, disc_out


def _random_trajectory(seed, T=7, gamma=0.9):
    rng = np.random.default_rng(seed)
    values = _f32(rng.normal(size=T + 1))  # V(x_0) .. V(x_T)
    r_t = _f32(rng.normal(size=T))
    discount_t = np.full(T, gamma, dtype=np.float32)
    discount_t[T // 2] = 0.0  # one episode end inside the trajectory
    # Importance ratios on both sides of 1 (and of the clip thresholds).
    rho_tm1 = _f32(np.exp(rng.uniform(-1.5, 1.5, size=T)))
    rho_tm1[0], rho_tm1[1] = 2.5, 0.3
    assert (rho_tm1 > 1).any() and (rho_tm1 < 1).any()
    return values[:-1], values[1:], r_t, discount_t, rho_tm1

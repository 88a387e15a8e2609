"""A NumPy peer of webevo's revisit-plan solve (docs/change.md, `revisit_plan`).

Maximize sum_i w_i F(lambda_i, 1/f_i) subject to sum_i f_i = B: the optimum has
phi(lambda_i / f_i) = mu * lambda_i / w_i with phi(x) = 1 - (1 + x) e^-x, and f_i = 0
where mu * lambda_i / w_i >= 1. This peer finds mu the straightforward way, by
bisection on ln(mu) over whole-array evaluations, each solving phi(x) = y for every
page at once by Newton's method warm-started from the previous evaluation.

Usage as a module: `solve(lam_per_s, budget_per_day, weights=None) -> (freqs, seconds)`.
"""
import time

import numpy as np

DAY = 86400.0


def phi(x):
    small = x < 0.05
    out = np.empty_like(x)
    xs = x[small]
    # The series of 1 - (1 + x) e^-x, which cancels badly for small x.
    out[small] = xs * xs / 2 - xs ** 3 / 3 + xs ** 4 / 8 - xs ** 5 / 30 + xs ** 6 / 144
    xl = x[~small]
    out[~small] = -np.expm1(-xl) - xl * np.exp(-xl)
    return out


def phi_inverse(y, start):
    x = np.where(start > 0, start, np.maximum(np.sqrt(2 * y), -np.log1p(-y)))
    for _ in range(50):
        step = (phi(x) - y) / (x * np.exp(-x))
        x_new = np.maximum(x - step, x / 2)
        if np.all(np.abs(x_new - x) <= 1e-13 * x):
            return x_new
        x = x_new
    return x


def frequencies(lam, w, mu, warm):
    y = mu * lam / w
    active = y < 1
    f = np.zeros_like(lam)
    x = phi_inverse(y[active], warm[active])
    warm[active] = x
    f[active] = lam[active] / x * DAY
    return f


def solve(lam_per_s, budget_per_day, weights=None):
    """The optimal frequencies per day and the wall seconds the solve took."""
    started = time.perf_counter()
    lam = np.asarray(lam_per_s, dtype=np.float64)
    w = np.ones_like(lam) if weights is None else np.asarray(weights, dtype=np.float64)
    changing = lam > 0
    lam_c, w_c = lam[changing], w[changing]
    warm = np.zeros_like(lam_c)
    hi = np.log(np.max(w_c / lam_c))
    lo = hi - 1.0
    while frequencies(lam_c, w_c, np.exp(lo), warm).sum() < budget_per_day:
        lo -= 4.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if frequencies(lam_c, w_c, np.exp(mid), warm).sum() > budget_per_day:
            lo = mid
        else:
            hi = mid
    f_c = frequencies(lam_c, w_c, np.exp((lo + hi) / 2), warm)
    f_c *= budget_per_day / f_c.sum()
    f = np.zeros_like(lam)
    f[changing] = f_c
    return f, time.perf_counter() - started

"""Iterative solves of sparse symmetric positive definite systems with 3x3-block structure.

Conjugate gradients preconditioned with the inverse 3x3 block diagonal, and block Jacobi. ``A`` is anything
with ``A @ x`` (a scipy sparse matrix, BSR or CSR); ``D_inv`` (k, 3, 3) the inverses of its diagonal blocks.
``block_cg`` sums its dot products in a fixed order (``ordered_dot``) and applies the block diagonal in a fixed order
(``_apply_block_diagonal``), so that its C twin (``native.implicit_kernels.BlockMatrix.block_cg``, src/block_cg.c)
repeats it bit for bit.
Both start from ``x`` and stop when ||b - A x|| <= tol ||r0||, r0 = b - A x at the start (the solve's own
initial residual, so the tolerance asks for a reduction, whatever the size of b), or after ``max_iterations``,
and return (x, iterations, true final residual relative to ||r0||).
"""
import numpy as np


def inverse_3x3(blocks):
    """Inverses of (k, 3, 3) non-singular matrices by the adjugate (much faster than batched np.linalg.inv)."""
    a = blocks
    cof = np.empty_like(a)
    cof[:, 0, 0] = a[:, 1, 1] * a[:, 2, 2] - a[:, 1, 2] * a[:, 2, 1]
    cof[:, 0, 1] = a[:, 1, 2] * a[:, 2, 0] - a[:, 1, 0] * a[:, 2, 2]
    cof[:, 0, 2] = a[:, 1, 0] * a[:, 2, 1] - a[:, 1, 1] * a[:, 2, 0]
    cof[:, 1, 0] = a[:, 0, 2] * a[:, 2, 1] - a[:, 0, 1] * a[:, 2, 2]
    cof[:, 1, 1] = a[:, 0, 0] * a[:, 2, 2] - a[:, 0, 2] * a[:, 2, 0]
    cof[:, 1, 2] = a[:, 0, 1] * a[:, 2, 0] - a[:, 0, 0] * a[:, 2, 1]
    cof[:, 2, 0] = a[:, 0, 1] * a[:, 1, 2] - a[:, 0, 2] * a[:, 1, 1]
    cof[:, 2, 1] = a[:, 0, 2] * a[:, 1, 0] - a[:, 0, 0] * a[:, 1, 2]
    cof[:, 2, 2] = a[:, 0, 0] * a[:, 1, 1] - a[:, 0, 1] * a[:, 1, 0]
    det = np.einsum("ka,ka->k", a[:, 0, :], cof[:, 0, :])
    return np.swapaxes(cof, 1, 2) / det[:, None, None]


def _apply_block_diagonal(D_inv, r):
    """D_inv (k, 3, 3) times r (3 k,) block by block, each entry (D_a0 r_0 + D_a1 r_1) + D_a2 r_2: (3 k,)."""
    r3 = r.reshape(-1, 3)
    return ((D_inv[:, :, 0] * r3[:, 0, None] + D_inv[:, :, 1] * r3[:, 1, None]) + D_inv[:, :, 2] * r3[:, 2, None]).ravel()


# Dot products and norms through einsum rather than BLAS: these vectors are short enough that BLAS's
# threads cost more than they save (several times slower on a busy machine).
def _dot(a, b):
    return float(np.einsum("i,i->", a, b))


def _norm(a):
    return float(np.sqrt(np.einsum("i,i->", a, a)))


DOT_LANES = 64
"""Running sums of ``ordered_dot`` (a power of two): wide enough that NumPy's accumulation runs along rows."""


def ordered_dot(a, b) -> float:
    """a . b of two (n,) float64 vectors in an order a C loop repeats (src/block_cg.c): the products a_i b_i summed
    into DOT_LANES running sums, element i into sum i % DOT_LANES in order, then the sums folded in halves,
    s_j + s_(j + w) for w = DOT_LANES / 2, ..., 1. The running sums are np.add.reduce down the columns of the products
    laid out DOT_LANES wide: NumPy adds row after row there (its pairwise summation runs only along a reduction's
    contiguous axis), which tests/test_native_implicit.py holds against np.add.accumulate's last row."""
    products = a * b
    head = len(products) - len(products) % DOT_LANES
    lanes = np.add.reduce(products[:head].reshape(-1, DOT_LANES), axis=0) if head else np.zeros(DOT_LANES)
    lanes[:len(products) - head] += products[head:]
    width = DOT_LANES // 2
    while width:
        lanes = lanes[:width] + lanes[width:2 * width]
        width //= 2
    return float(lanes[0])


def _ordered_norm(a) -> float:
    return float(np.sqrt(ordered_dot(a, a)))


def block_cg(A, D_inv, b, x, tol, max_iterations, atol=0.0):
    """Conjugate gradients preconditioned with the inverse block diagonal, from x until |b - A x| <= tol times its
    value at the start, or <= atol. Returns (x, iterations, rel. residual). The twin of src/block_cg.c (module
    docstring): a change here is a change there."""
    x = x.copy()
    r = b - A @ x
    r0_norm = _ordered_norm(r)
    if r0_norm == 0.0 or r0_norm <= atol:
        return x, 0, 0.0 if r0_norm == 0.0 else 1.0
    z = _apply_block_diagonal(D_inv, r)
    p = z.copy()
    rz = ordered_dot(r, z)
    iterations = 0
    while iterations < max_iterations and _ordered_norm(r) > max(tol * r0_norm, atol):
        Ap = A @ p
        pAp = ordered_dot(p, Ap)
        if not pAp > 0.0:  # only at an exact solution (p = 0) for an SPD matrix
            break
        alpha = rz / pAp
        x += alpha * p
        r -= alpha * Ap
        z = _apply_block_diagonal(D_inv, r)
        rz_new = ordered_dot(r, z)
        p *= rz_new / rz
        p += z
        rz = rz_new
        iterations += 1
    return x, iterations, _ordered_norm(b - A @ x) / r0_norm


def block_jacobi(A, D_inv, b, x, tol, max_iterations, atol=0.0):
    """Block Jacobi x <- x + D^-1 (b - A x), until |b - A x| <= tol times its value at the start, or <= atol.
    Returns (x, iterations, rel. residual)."""
    x = x.copy()
    r = b - A @ x
    r0_norm = _norm(r)
    if r0_norm == 0.0 or r0_norm <= atol:
        return x, 0, 0.0 if r0_norm == 0.0 else 1.0
    iterations = 0
    while iterations < max_iterations and _norm(r) > max(tol * r0_norm, atol):
        x += _apply_block_diagonal(D_inv, r)
        r = b - A @ x
        iterations += 1
    return x, iterations, _norm(r) / r0_norm


def pcg(matvec, precondition, b, tol, max_iterations):
    """Conjugate gradients from x = 0 for A x = b, A SPD given by ``matvec``(v) = A v (n,), preconditioned by
    ``precondition``(r) = P^-1 r for an SPD P, until |b - A x| <= tol |b| (2-norms; the recurrence's residual) or
    after ``max_iterations``. Returns (x (n,), iterations, |b - A x| / |b| by the recurrence)."""
    x = np.zeros_like(b)
    b_norm = _norm(b)
    if b_norm == 0.0:
        return x, 0, 0.0
    r = b.copy()
    z = precondition(r)
    p = z.copy()
    rz = _dot(r, z)
    size = b_norm
    iterations = 0
    while iterations < max_iterations and size > tol * b_norm:
        Ap = matvec(p)
        pAp = _dot(p, Ap)
        if not pAp > 0.0:  # an SPD matrix gives pAp > 0 until p = 0 (or round-off ends it)
            break
        alpha = rz / pAp
        x += alpha * p
        r -= alpha * Ap
        size = _norm(r)
        iterations += 1
        if size <= tol * b_norm:
            break
        z = precondition(r)
        rz_new = _dot(r, z)
        p *= rz_new / rz
        p += z
        rz = rz_new
    return x, iterations, size / b_norm

"""One BLAS thread while a frame is simulated (``one_blas_thread``).

The solvers' dense kernels are small: LAPACK's banded Cholesky of NEWTON's and Projective Dynamics' matrices (band
a few hundred wide), batched 3x3 to 12x12 eigen-decompositions, small matrix products. OpenBLAS splits even these over
all its threads, which only pays on an idle machine, and costs far more than it saves when the cores are busy with
anything else (Blender's UI, another bake, a render): measured on 2 cores with two other processes running, one
banded Cholesky of the 31 x 31 cloth's NEWTON matrix (2883 unknowns, band 185) took 0.94 s on 2 threads against
8-21 ms on one, and the landing frames of a NEWTON box drape (31 x 31 cloth on a box) 9-88 s a frame against
1.4-2.7 s. The limit holds only inside the ``with`` block, so the rest of Blender keeps its threads. Not measured: an
idle machine with many cores, where threads may speed up the largest banded factorizations.

threadpoolctl (BSD, the library scikit-learn uses for this) finds the BLAS libraries numpy and scipy load, on every
platform, and sets their thread count at run time.
"""
from threadpoolctl import ThreadpoolController

_controller = None


def one_blas_thread():
    """A context manager under which the BLAS libraries loaded by numpy and scipy use one thread."""
    global _controller
    if _controller is None:  # found once (about 1 ms), after numpy and scipy have loaded their BLAS
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")

"""Shared by the benchmarks that bake Blender's built-in solvers."""
import os
import sys


class SilenceStdout:
    """Redirect file descriptor 1 (Blender's C code prints every baked frame) to /dev/null."""

    def __enter__(self):
        sys.stdout.flush()
        self.saved = os.dup(1)
        self.null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(self.null, 1)

    def __exit__(self, *exc):
        sys.stdout.flush()
        os.dup2(self.saved, 1)
        os.close(self.saved)
        os.close(self.null)

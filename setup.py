# Metadata lives in pyproject.toml; this file declares the one C extension and keeps `python setup.py develop` and
# old pip versions working.
from setuptools import Extension, setup

setup(
    ext_modules=[
        # The prioritized buffer's segment-tree loops. optional: where no C compiler is found the install still
        # succeeds and the trees run their numpy form (same results, slower; the buffer logs it once).
        Extension("ding.worker.replay_buffer._segtree", ["ding/worker/replay_buffer/_segtree.c"], optional=True),
    ],
)

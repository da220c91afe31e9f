# Metadata lives in pyproject.toml; this file keeps `python setup.py develop` and old pip versions working.
from setuptools import setup

setup()

"""Measured hardware data (CSV files with their provenance), installed with maxsim."""

from importlib import resources


def path(name):
    """A file of this folder (``maxas_gtx980_sgemm.csv``) as a path-like resource."""
    return resources.files(__name__) / name

"""The foundation layer (private): validation, randomness, frames, geometry, point sets, the ledger.

Also errors, files and the compiled kernels. The public names are re-exported by :mod:`geoldp`.
"""

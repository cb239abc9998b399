"""The numba fast path of TP, ATP and PointEM (the exactness argument is in :mod:`.driver`).

One module per concern: :mod:`.driver` (:func:`perturb_fast`, the per-length tables, the threads and the
compiled loop over trajectories), :mod:`.grid` (the spatial index, domains, supersets, membership),
:mod:`.sampling` (EM, k-RR and SW on the ChaCha20 streams), :mod:`.merge` (the merge of the two copies)
and :mod:`.anchor` (ATP's anchor p_α); ATP's region Ω is :mod:`geoldp.trajectory._atp_region`.
"""

from geoldp.trajectory._fast.driver import kernel_state, perturb_fast, precompute

__all__ = ["kernel_state", "perturb_fast", "precompute"]

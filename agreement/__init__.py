"""Inter-annotator agreement for Concord: plain functions over plain data (no Django).

Krippendorff's alpha (:func:`krippendorff_alpha`, :func:`alpha_details`) over
``{unit: {coder: value}}`` or ``(coder, unit, value)`` triples, with nominal,
ordinal, interval, ratio, Jaccard, MASI or custom distances, and unit
bootstrap confidence intervals (:func:`alpha_bootstrap`).
"""

from .alpha import AlphaResult, alpha_details, krippendorff_alpha
from .bootstrap import BootstrapResult, alpha_bootstrap
from .distances import AgreementError, jaccard_distance, masi_distance

__all__ = [
    "AgreementError",
    "AlphaResult",
    "BootstrapResult",
    "alpha_bootstrap",
    "alpha_details",
    "jaccard_distance",
    "krippendorff_alpha",
    "masi_distance",
]

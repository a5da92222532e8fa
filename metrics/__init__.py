"""Inter-annotator agreement and research metrics for Concord: plain functions over plain data.

The core modules never import Django (the reports layer in :mod:`metrics.reports` does):

* Krippendorff's alpha (:func:`krippendorff_alpha`, :func:`alpha_details`) over
  ``{unit: {coder: value}}`` or ``(coder, unit, value)`` triples, with nominal, ordinal,
  interval, ratio, Jaccard, MASI or custom distances, and unit bootstrap confidence intervals
  (:func:`alpha_bootstrap`) — :mod:`metrics.alpha`, :mod:`metrics.bootstrap`;
* Cohen's and Fleiss' kappa, pairwise / all / at-least-two agreement rates and choice entropy —
  :mod:`metrics.kappa`;
* set precision / recall / F1, claim aggregation, transparency proportion and judge-versus-humans
  alpha for citation recovery — :mod:`metrics.sets`;
* mean average rank, Spearman's rho and CV* for rankings and reproductions —
  :mod:`metrics.ranking`;
* the Bayesian utility calibration of crowd ratings — :mod:`metrics.calibration`;
* factual accuracy and consistency of stances under presupposition — :mod:`metrics.stance`;
* confusion matrix, per-class precision / recall / F1, macro and weighted F1 with bootstrap
  intervals, plurality label (judge validation on label tasks) — :mod:`metrics.classification`;
* means over items from humans on some items and a judge on all: humans alone, the judge alone
  (biased), prediction-powered (PPI++) and active-sampling estimates with intervals, and the
  human labels a target width needs — :mod:`metrics.prediction_powered`.

Two functions called ``jaccard_distance`` would be confusing: the one exported here is the set
distance of :mod:`metrics.distances` (``1 - |A ∩ B| / |A ∪ B|``, 0 for two empty sets);
:mod:`metrics.sets` has no function of that name.
"""

from .alpha import (
    AlphaResult,
    ReliabilityColumns,
    alpha_details,
    krippendorff_alpha,
    reliability_columns,
)
from .bootstrap import BootstrapResult, alpha_bootstrap
from .calibration import (
    AnnotatorPosterior,
    CalibrationResult,
    ItemPosterior,
    calibrate_utility,
    zscore_by_annotator,
)
from .classification import (
    ClassificationBootstrap,
    ClassificationScores,
    ClassScores,
    classification_bootstrap,
    classification_scores,
    confusion_matrix,
    plurality_label,
)
from .distances import AgreementError, jaccard_distance, masi_distance
from .kappa import (
    all_agree_rate,
    at_least_two_agree_rate,
    choice_entropy,
    choice_entropy_from_labels,
    cohen_kappa,
    count_matrix,
    fleiss_kappa,
    fleiss_kappa_from_labels,
    pairwise_agreement,
)
from .ranking import (
    MARResult,
    cv_star,
    mean_average_rank,
    spearman_rho,
    to_dense,
    to_fractional,
    to_standard_competition,
    unbiased_sd,
)
from .sets import (
    HUMANS,
    JUDGE,
    NONE_LABEL,
    OTHER_LABEL,
    MeanSD,
    ScoreSummary,
    SetScores,
    aggregate_claims,
    breakdown_by_group,
    breakdown_values_by_group,
    judge_human_alpha,
    judge_human_reliability_data,
    mean_sd,
    merge_selections,
    none_as_label,
    set_scores,
    standardise_to_gold,
    summarise_scores,
    transparency_proportion,
)
from .stance import (
    CORRECT_STANCE,
    LEVELS,
    FactualAccuracy,
    StanceRow,
    consistency,
    expected_stance,
    factual_accuracy,
)

__all__ = [
    "ClassScores",
    "ClassificationBootstrap",
    "ClassificationScores",
    "classification_bootstrap",
    "classification_scores",
    "confusion_matrix",
    "plurality_label",
    # alpha, bootstrap, distances
    "AgreementError",
    "AlphaResult",
    "ReliabilityColumns",
    "BootstrapResult",
    "alpha_bootstrap",
    "alpha_details",
    "reliability_columns",
    "jaccard_distance",
    "krippendorff_alpha",
    "masi_distance",
    # kappa and raw agreement
    "all_agree_rate",
    "at_least_two_agree_rate",
    "choice_entropy",
    "choice_entropy_from_labels",
    "cohen_kappa",
    "count_matrix",
    "fleiss_kappa",
    "fleiss_kappa_from_labels",
    "pairwise_agreement",
    # citation recovery sets
    "HUMANS",
    "JUDGE",
    "NONE_LABEL",
    "OTHER_LABEL",
    "MeanSD",
    "ScoreSummary",
    "SetScores",
    "aggregate_claims",
    "breakdown_by_group",
    "breakdown_values_by_group",
    "judge_human_alpha",
    "judge_human_reliability_data",
    "mean_sd",
    "merge_selections",
    "none_as_label",
    "set_scores",
    "standardise_to_gold",
    "summarise_scores",
    "transparency_proportion",
    # ranking and reproduction
    "MARResult",
    "cv_star",
    "mean_average_rank",
    "spearman_rho",
    "to_dense",
    "to_fractional",
    "to_standard_competition",
    "unbiased_sd",
    # utility calibration
    "AnnotatorPosterior",
    "CalibrationResult",
    "ItemPosterior",
    "calibrate_utility",
    "zscore_by_annotator",
    # stance
    "CORRECT_STANCE",
    "LEVELS",
    "FactualAccuracy",
    "StanceRow",
    "consistency",
    "expected_stance",
    "factual_accuracy",
]

"""The report's sections, one module per concern, all computed from `CampaignData` arrays by the pure
functions of `metrics.core` (no database). A concern keeps one name across tiers (`core/pst.py`,
`sections/pst_analysis.py`, `render/pst.py`):

- `report`: the labels, the agreement / PST / GEP sections and the whole report (`report_from_data`),
  with the registry of further sections (`register_section`);
- `values`: JSON conversion of figures and intervals (`<key>_ci` with `<key>_ci_method` beside it);
- `metric_intervals`: the interval of every PST / GEP figure, by the method suited to its statistic;
- `pst_analysis`: per-run STS of any setting with several samples, Average Gender and Neutrality of
  gender-neutral prompts, the fairness-intervention analysis;
- `gep_baseline`: GEP with more than two gender indicators (distances from a baseline indicator);
- `agreement_subsets`: agreement per GEP attribute / PST identity;
- `amplification`: amplification against each reference of the spec;
- `templates`: breakdowns by prompt template;
- `annotators`: the `annotators` section (registered; figures per group of annotators);
- `sources`: reports from other label sources (`?source=<labeller>`, `hybrid:<labeller>`);
- `significance`: the `significance` and `pooled_agreement` keys of a comparison;
- `planning`: the spec preview's `planning` section.
"""

"""Parts of the campaign report beyond one setting's scores, one module per concern, all computed from
`CampaignData` arrays by the pure functions of `metrics.core` (no database):

- `values`: JSON conversion of figures and intervals (`<key>_ci` with `<key>_ci_method` beside it);
- `intervals`: the interval of every PST / GEP figure, by the method suited to its statistic;
- `pst_extra`: per-run STS of any setting with several samples, Average Gender and Neutrality of
  gender-neutral prompts, the fairness-intervention analysis;
- `gep_extra`: GEP with more than two gender indicators (distances from a baseline indicator);
- `agreement_extra`: agreement per GEP attribute / PST identity;
- `amplification`: amplification against each reference of the spec;
- `templates`: breakdowns by prompt template.

`metrics/report.py` assembles them; nothing here imports it.
"""

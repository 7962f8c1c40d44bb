"""Writes of the annotation app, one module per concern; keyword-only arguments, each public
function one transaction. Import from the module that owns the function:

- `lifecycle`: open a campaign for annotation (questions from images), pause / resume / close,
  redundancy and gold questions;
- `annotators`: sign-up, profile, consent, and the gate to work (`enrollment_for_work`);
- `qualification`: qualification tests and their attempts;
- `quality`: the quality thresholds checked at submission, enrollment statuses, researcher actions;
- `review`: approve / reject / bonus, auto-approval;
- `leases`: giving leased questions back (release, reclaim of expired HITs);
- `derived`: the one write path for what derives from answers (labels, adaptive `required`, counters
  of an import, the data revision): every writer of answers, or of what counts of them, calls it;
- `answers`: answers written outside a HIT (imports, corrections);
- `external`: what crowd platforms' flows write on annotation's tables.

The HIT engine (next, submit, heartbeat, return) is `annotation.hits`; the majority rule is
`annotation.labels`.
"""

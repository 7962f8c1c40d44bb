"""Comparisons of several campaigns (or two settings of one): side-by-side rows from their reports
(`rows`), label sources across campaigns (`sources`), the significance tests' options (`options`),
their build (`build`) and the request-side service (`services`)."""

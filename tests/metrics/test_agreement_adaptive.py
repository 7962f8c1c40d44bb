"""Agreement under adaptive redundancy (issue 22, defect 6): computed on the first `min` answers of
every question in order of arrival, which removes the bias of the adaptive stopping rule."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bench.validity_cells import agreement as cells
from metrics.core import agreement
from metrics.extract import arrival_ids
from metrics.extract.data import CampaignData, CampaignFacts
from metrics.sections.report import agreement_data, agreement_section


def test_first_answers_keeps_the_first_k_per_item_in_order() -> None:
    items = np.array([3, 1, 3, 3, 1, 2, 1])
    assert agreement.first_answers(items, 2).tolist() == [True, True, True, False, True, True, False]
    assert agreement.first_answers(np.array([], dtype=int), 2).size == 0


def test_a_correction_keeps_the_place_of_the_answer_it_corrects() -> None:
    ids = np.array([1, 2, 3, 4, 5])
    corrects = np.array([-1, -1, 1, -1, 3])  # 3 corrects 1, 5 corrects 3
    assert arrival_ids(ids, corrects).tolist() == [1, 2, 1, 4, 1]
    assert arrival_ids(ids, np.full(5, -1)).tolist() == [1, 2, 3, 4, 5]  # no correction: the ids
    assert arrival_ids(ids[:0], corrects[:0]).tolist() == []


def test_adaptive_agreement_is_unbiased_and_says_so() -> None:
    kappas_all, kappas_first = [], []
    for seed in range(6):
        q, codes, arrival = cells.simulate(seed)
        facts_spec = {"annotation": {"redundancy": dict(cells.CFG)}}
        facts = CampaignFacts(1, "s", "gep", "GEP", "done", seed, facts_spec)
        n = cells.N_QUESTIONS
        data = CampaignData(facts, np.arange(n), np.arange(n), np.full(n, "neutral"), {}, q, np.arange(q.size),
                            codes, ["No", "Yes"], a_arrival=arrival)
        sub, basis = agreement_data(data)
        assert basis["design"] == "adaptive" and basis["answers_per_question"] == 2
        assert "first 2 answers" in basis["note"] and basis["answers_used"] == 2 * n
        kappas_first.append(agreement_section(sub)["overall"]["fleiss_kappa"])
        kappas_all.append(agreement_section(data)["overall"]["fleiss_kappa"])
        fixed = dataclasses.replace(data, campaign=dataclasses.replace(facts, spec={"annotation": {"redundancy": 3}}))
        assert agreement_data(fixed)[1]["design"] == "fixed" and agreement_data(fixed)[0] is fixed
    assert np.mean(kappas_all) > 0.97  # the old basis: the modal count's questions agree by construction
    assert np.mean(kappas_first) == pytest.approx(cells.TRUE_KAPPA, abs=0.02)

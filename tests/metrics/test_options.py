"""`ReportOptions`: parsed once at the edge (API query, console form, `report` command), validated
on construction, stored as data (`to_dict` / `from_dict`) in the report snapshot, and turned one way
into the snapshot's cache key."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.http import QueryDict

from common.errors import ApplicationError
from metrics.options import ReportOptions

DEFAULT_KEY = ("aggregation=majority|confidence=0.95|exclude_blocked=True|gep_tie_policy=absent|min_group=5|"
               "n_boot=1000|n_perm=1000|seed=None|treatment=paper")


def test_query_parameters_are_parsed_and_edge_keys_ignored() -> None:
    params = QueryDict("format=csv&campaigns=1,2&treatment=excluded&gep_tie_policy=present&aggregation=dawid_skene"
                       "&n_boot=20&n_perm=0&seed=7&confidence=0.9&exclude_blocked=false")
    assert ReportOptions.from_params(params) == ReportOptions(
        treatment="excluded", gep_tie_policy="present", aggregation="dawid_skene", n_boot=20, n_perm=0, seed=7,
        confidence=0.9, exclude_blocked=False)
    assert ReportOptions.from_params(QueryDict("n_boot=&seed=")) == ReportOptions()  # empty means default
    assert ReportOptions.from_params({"exclude_blocked": "1"}).exclude_blocked is True


@pytest.mark.parametrize("params,bad", [
    ({"treatment": "lenient", "n_boot": "-1"}, {"treatment", "n_boot"}),
    ({"n_boot": "1.5", "n_perm": "10001", "seed": "-3"}, {"n_boot", "n_perm", "seed"}),
    ({"confidence": "nan", "exclude_blocked": "yes", "aggregation": "mean"}, {"confidence", "exclude_blocked",
                                                                              "aggregation"}),
    ({"confidence": "1", "gep_tie_policy": "tie", "seed": str(2**31)}, {"confidence", "gep_tie_policy", "seed"}),
])
def test_every_bad_parameter_is_named(params: dict[str, str], bad: set[str]) -> None:
    with pytest.raises(ApplicationError) as err:
        ReportOptions.from_params(params)
    assert set(err.value.errors) == bad
    assert err.value.message.startswith("Invalid report parameter ")


def test_construction_validates() -> None:
    with pytest.raises(ApplicationError) as err:
        ReportOptions(treatment="x", n_boot=-1, confidence=2.0, exclude_blocked="no")  # type: ignore[arg-type]
    assert set(err.value.errors) == {"treatment", "n_boot", "confidence", "exclude_blocked"}
    with pytest.raises(ApplicationError):
        ReportOptions(n_boot=True)  # a bool is not a count
    with pytest.raises(AttributeError):
        ReportOptions().n_boot = 5  # type: ignore[misc]  # frozen


def test_stored_as_data_and_read_back() -> None:
    options = ReportOptions(treatment="excluded", n_boot=0, seed=11, confidence=0.9)
    stored = json.loads(json.dumps(options.to_dict()))
    assert stored == {"treatment": "excluded", "gep_tie_policy": "absent", "aggregation": "majority", "n_boot": 0,
                      "confidence": 0.9, "seed": 11, "exclude_blocked": True, "n_perm": 1000,
                      "min_group": 5, "source": "human"}
    assert ReportOptions.from_dict(stored) == options
    # An option added after a snapshot was stored takes its default; unknown or bad data is refused.
    assert ReportOptions.from_dict({"n_boot": 5}) == ReportOptions(n_boot=5)
    with pytest.raises(ApplicationError) as err:
        ReportOptions.from_dict({"n_boot": 5, "colour": "red"})
    assert set(err.value.errors) == {"colour"}
    with pytest.raises(ApplicationError) as err:
        ReportOptions.from_dict({"n_boot": "5"})
    assert set(err.value.errors) == {"n_boot"}


def test_the_cache_key_is_one_way_and_unchanged() -> None:
    assert ReportOptions().key() == DEFAULT_KEY  # the format is unchanged; nothing parses it back
    keys = {ReportOptions(**kw).key() for kw in ({}, {"n_boot": 10}, {"seed": 1}, {"treatment": "excluded"},
                                                 {"exclude_blocked": False}, {"source": "clip"},
                                                 {"source": "hybrid:clip"})}
    assert len(keys) == 7
    assert ReportOptions(source="human").key() == DEFAULT_KEY


@pytest.mark.django_db
def test_the_report_command_names_a_bad_option(researcher: Any) -> None:
    from campaigns.services import campaign_create
    from tests.builders.metrics import SMALL_PST

    campaign = campaign_create(owner=researcher, spec=SMALL_PST)
    with pytest.raises(CommandError, match="n_boot"):
        call_command("report", str(campaign.pk), "--n-boot", "-5")


def test_source_is_parsed_and_named_when_bad() -> None:
    assert ReportOptions.from_params({"source": "clip_cls"}).labeller == "clip_cls"
    hybrid = ReportOptions.from_params({"source": "hybrid:clip_cls"})
    assert hybrid.labeller == "clip_cls" and hybrid.is_hybrid
    assert ReportOptions().labeller is None and not ReportOptions().is_hybrid
    for bad in ("Clip Cls", "hybrid:", "hybrid:human", "hybrid:hybrid:x", "x" * 70, "../etc"):
        with pytest.raises(ApplicationError) as err:
            ReportOptions.from_params({"source": bad})
        assert set(err.value.errors) == {"source"}, bad

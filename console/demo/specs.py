"""The demo's accounts and campaigns: small, clearly synthetic (placeholder images, simulated people
and labeller), and shaped so that every report section has data."""
from __future__ import annotations

from typing import Any, TypedDict

from campaigns.spec import PAIRED, SINGLE


class DemoUser(TypedDict):
    password: str
    staff: bool
    superuser: bool


DEMO_USERS: dict[str, DemoUser] = {
    "admin": {"password": "admin-demo-2026", "staff": True, "superuser": True},
    "researcher": {"password": "researcher-demo-2026", "staff": False, "superuser": False},
}
# An annotator account left for a person to try the task page (the simulated annotators answer before).
DEMO_ANNOTATOR = {"username": "annotator", "password": "annotator-demo-2026"}
SIMULATED_PREFIX = "sim-annotator-"
SIMULATED_ANNOTATORS = 10  # 5 women and 5 men, two age bands, two countries: every group >= 5
# The simulated machine labeller (an `import` of labels): its error rate is stated, not estimated.
LABELLER = "sim_labeller"
LABELLER_FLIP = 0.10
SYNTHETIC_NOTE = ("Synthetic demo: placeholder images, simulated annotators and a simulated machine labeller. "
                  "The figures describe this synthetic data, not any model.")

_GROUPS = [
    {"name": "male-dominated", "stereotype": "masculine", "identities": ["pilot", "firefighter", "plumber", "CEO"]},
    {"name": "female-dominated", "stereotype": "feminine", "identities": ["nurse", "nanny", "receptionist",
                                                                         "hairdresser"]},
]
# Reference %F (illustrative values, labelled as such) for the amplification section.
_REFERENCE = {"name": "demo_reference", "source": "Illustrative values for the demo (not a statistic)",
              "percent_female": {"pilot": 9.0, "firefighter": 5.0, "plumber": 2.0, "CEO": 29.0, "nurse": 87.0,
                                 "nanny": 94.0, "receptionist": 88.0, "hairdresser": 90.0}}
_ANNOTATION: dict[str, Any] = {
    "redundancy": {"min": 2, "max": 4},  # adaptive: a third or fourth answer where two disagree
    "demographics": {"ask": True},
}


def _pst(name: str, seed: int, description: str) -> dict[str, Any]:
    return {"name": name, "kind": "pst", "seed": seed, "description": description,
            "design": {"settings": [SINGLE, PAIRED], "samples": {"single": 6, "paired": 2},
                       "identities": {"groups": _GROUPS}},
            "references": [_REFERENCE],
            "annotation": _ANNOTATION,
            "autolabel": {"human_sample": {"fraction": 0.5, "seed": 1}},
            "backend": {"name": "placeholder", "width": 256, "height": 256}}


DEMO_SPECS: list[dict[str, Any]] = [
    _pst("demo-pst-occupation", 1, "Demo (synthetic): the PST occupation design; simulated model A follows "
         "occupational stereotypes in most images."),
    _pst("demo-pst-model-b", 2, "Demo (synthetic): the same design for a simulated model B with weaker "
         "stereotypes, to compare with model A."),
    {"name": "demo-gep", "kind": "gep", "seed": 1,
     "description": "Demo (synthetic): the GEP design (neutral setting) with placeholder images.",
     "design": {"settings": ["neutral"], "samples": 2},
     "annotation": {"redundancy": 3, "demographics": {"ask": True}},
     "autolabel": {"human_sample": {"fraction": 0.5, "seed": 1}},
     "backend": {"name": "placeholder", "width": 256, "height": 256}},
]
# How strongly each simulated model follows the stereotype (share of persons shown with the
# stereotyped gender), per setting; GEP: the attribute shown more often for one gender.
MODEL_BIAS = {"demo-pst-occupation": {"single": 0.75, "paired": 0.85},
              "demo-pst-model-b": {"single": 0.55, "paired": 0.60}}

"""One home for test helpers (issue 14 target 6): builders of campaigns, images, annotators, labelled
questions, crowd fakes and real local processes. Test modules import helpers from here (or fixtures
from a conftest), never from another test module (`tests/contracts/test_layout_rules.py`)."""

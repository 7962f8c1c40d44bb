"""Compare's checkboxes in a real browser (issue 25, "misaligned checkboxes on Compare"): each
checkbox sits on its label's first line, and the items of a checklist fill rows left to right, so
items side by side share one top (CSS columns put one item in the first column and two in the
second, 4 px apart: a column break drops the first item's top margin only in the second column)."""
from __future__ import annotations

import pytest

from campaigns.services import campaign_create
from tests.browser import Browser, browser  # noqa: F401  (fixture)
from tests.builders.console import browser_login_researcher, small_pst

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

BOXES = """return [...document.querySelectorAll('.checklist')].map(list => [...list.querySelectorAll('li')].map(li => {
    const box = li.querySelector('input[type=checkbox]').getBoundingClientRect();
    const label = li.querySelector('label');
    const range = document.createRange(); range.selectNodeContents(label);
    const line = range.getClientRects()[0];
    return {top: li.getBoundingClientRect().top, left: li.getBoundingClientRect().left,
            height: li.getBoundingClientRect().height, box: (box.top + box.bottom) / 2,
            line: (line.top + line.bottom) / 2};
}));"""


@pytest.mark.parametrize("width", [1366, 390])
def test_compare_checkboxes_align_with_labels_and_rows(browser: Browser, width: int) -> None:  # noqa: F811
    b = browser
    user = browser_login_researcher(b, "cmp-align")
    for n in range(3):
        campaign_create(owner=user, spec=small_pst(name=f"align-{n}"))
    b.viewport(width, 900, mobile=width < 500)
    b.get("/console/compare/")
    b.visible("#cmp-sources")
    lists = b.js(BOXES)
    items = [item for checklist in lists for item in checklist]
    assert len(lists[0]) == 3 and items, lists
    for item in items:
        assert abs(item["box"] - item["line"]) <= 2, item  # the checkbox on its label's first line
    for checklist in lists:
        first = checklist[0]
        beside = [i for i in checklist[1:] if abs(i["top"] - first["top"]) < first["height"]]
        for item in beside:  # an item beside another shares its top
            assert abs(item["top"] - first["top"]) <= 1, (first, item)
        if width > 1000 and len(checklist) > 1:  # two columns on a laptop: the second item beside the first
            assert beside and beside[0]["left"] > first["left"], checklist
    b.shot(f"console-compare-checklist-{width}")

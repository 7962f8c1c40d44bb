"""Issue 24, "Parsers, uploads and numbers": every outside JSON through the bounded parser, every outside
number through common.numbers, CSV cells over 128 KB, capped uploads, bounded and streamed archives,
templates without format specs. Each test goes through HTTP (or the CLI) and failed before the fix
(a 500, an accepted value, or memory)."""
from __future__ import annotations

import copy
import io
import logging
import tracemalloc
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Answer
from campaigns.models import Campaign
from tests.builders.crowd import HEADER, W, batch_csv, small  # noqa: F401  (fixture)
from tests.builders.hostile import deep_json, deep_jsonl, huge_cell_csv, zip_bomb, zip_of
from tests.conftest import PST_MINIMAL

pytestmark = pytest.mark.django_db


def _file(name: str, data: bytes) -> io.BytesIO:
    f = io.BytesIO(data)
    f.name = name
    return f


def _400(response: Any, field: str) -> dict[str, Any]:
    assert response.status_code == 400, (response.status_code, response.content[:500])
    body = response.json()
    assert any(k == field or k.startswith(field + ".") for k in body["errors"]), body
    assert len(response.content) < 20_000
    return body


# -- JSON from outside ---------------------------------------------------------------------------
def test_csp_report_deep_json_is_400_not_500() -> None:
    client = Client(raise_request_exception=False)
    cache.clear()
    response = client.post("/csp-report/", b"[" * 2048, content_type="application/csp-report")
    assert response.status_code == 400
    response = client.post("/csp-report/", deep_json(1500), content_type="application/csp-report")
    assert response.status_code == 400


def test_csp_report_logs_escaped_json_and_is_rate_limited(caplog: Any, settings: Any,
                                                          throttle_clock_frozen: float) -> None:
    cache.clear()
    settings.CSP_REPORT_RATE = 3
    client = Client(REMOTE_ADDR="203.0.113.9")
    forged = '{"csp-report": {"blocked-uri": "x\\nCRITICAL django: FORGED admin login\\r\\n", "document-uri": "\\u2028y"}}'
    with caplog.at_level(logging.WARNING, logger="csp"):
        assert client.post("/csp-report/", forged, content_type="application/csp-report").status_code == 204
    lines = [r.getMessage() for r in caplog.records if r.name == "csp"]
    assert len(lines) == 1 and "\n" not in lines[0] and "\r" not in lines[0] and "\u2028" not in lines[0]
    assert "\\nCRITICAL django: FORGED" in lines[0]
    assert caplog.records[-1].csp["blocked-uri"].startswith("x\nCRITICAL")  # structured, for JSON handlers
    codes = [client.post("/csp-report/", "{}", content_type="application/csp-report").status_code for _ in range(4)]
    assert codes[:2] == [204, 204] and codes[-1] == 429
    assert Client(REMOTE_ADDR="203.0.113.10").post("/csp-report/", "{}",
                                                   content_type="application/csp-report").status_code == 204


def test_mturk_import_mapping_deep_json_is_400(api: APIClient, small: Campaign) -> None:  # noqa: F811
    response = api.post(f"/api/campaigns/{small.pk}/mturk/import/",
                        {"file": _file("b.csv", batch_csv([])), "mapping": "[" * 3000}, format="multipart")
    _400(response, "mapping")
    response = api.post(f"/api/campaigns/{small.pk}/mturk/import/",
                        {"file": _file("b.csv", batch_csv([])), "mapping": '{"slots": 2, "x": "a\\u0000b"}'},
                        format="multipart")
    _400(response, "mapping")


def test_mturk_cli_mapping_deep_json_is_a_command_error(small: Campaign, tmp_path: Any) -> None:  # noqa: F811
    path = tmp_path / "b.csv"
    path.write_bytes(batch_csv([]))
    with pytest.raises(CommandError, match="nested more than"):
        call_command("mturk", "import-batch", str(small.pk), str(path), mapping='{"a":' * 3000 + "1" + "}" * 3000)


def test_jsonl_image_manifest_with_a_deep_line_is_400(api: APIClient, small: Campaign) -> None:  # noqa: F811
    manifest = deep_jsonl({"prompt_key": "x", "sample_index": 0, "url": "https://img.example/a.png"})
    response = api.post(f"/api/campaigns/{small.pk}/images/import/", {"manifest": _file("m.jsonl", manifest)},
                        format="multipart")
    body = _400(response, "rows")
    assert "rows.2" in body["errors"] and "nested" in body["errors"]["rows.2"][0]


def test_jsonl_machine_labels_with_a_deep_line_is_400(api: APIClient, small: Campaign) -> None:  # noqa: F811
    response = api.post(f"/api/campaigns/{small.pk}/machine-labels/import/",
                        {"file": _file("l.jsonl", deep_jsonl()), "labeller": "lab-model"}, format="multipart")
    body = _400(response, "rows")
    assert "nested" in str(body["errors"])


def test_archive_manifest_deep_json_is_400(api: APIClient) -> None:
    response = api.post("/api/campaigns/import/", {"archive": _file("a.zip", zip_of({"manifest.json": deep_json()}))},
                        format="multipart")
    body = _400(response, "manifest.json")
    assert "nested" in body["detail"]


# -- Numbers -------------------------------------------------------------------------------------
@pytest.mark.parametrize("reward", ["1e200000000", "1e999999999999", "NaN", "-Infinity", 1e300, "9" * 5000])
def test_spec_reward_overflow_is_a_small_400_naming_the_field(api: APIClient, reward: Any) -> None:
    spec = copy.deepcopy(PST_MINIMAL) | {"crowd": {"mturk": {"reward": reward}}}
    tracemalloc.start()
    try:
        response = api.post("/api/specs/preview/", spec, format="json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    _400(response, "crowd.mturk.reward")
    assert peak < 50 * 1024 * 1024, peak


@pytest.mark.parametrize("column,value", [("WorkTimeInSeconds", "inf"), ("WorkTimeInSeconds", "1e400"),
                                          ("WorkTimeInSeconds", "nan"), ("Reward", "$1e999999"),
                                          ("Reward", "$1e200000000"), ("Reward", "-$1")])
def test_mturk_batch_numeric_overflow_is_400_naming_the_column(api: APIClient, small: Campaign, column: str,  # noqa: F811
                                                               value: str) -> None:
    header = [*HEADER, "Reward"]
    row = {"HITId": "H1", "WorkerId": "AW1", "AssignmentId": "A1", "AssignmentStatus": "Submitted",
           "WorkTimeInSeconds": "30", "Input.attribute": "in boots", "Input.image_url0": W, "Input.image_url1": "",
           "Answer.No0.0": "", "Answer.No1.0": "", "Answer.Yes0.1": "true", "Answer.Yes1.1": "", "Reward": "$0.10"}
    row[column] = value
    data = (",".join(header) + "\n" + ",".join(row[h] for h in header) + "\n").encode()
    response = api.post(f"/api/campaigns/{small.pk}/mturk/import/", {"file": _file("b.csv", data),
                                                                     "mapping": '{"slots": 2}'}, format="multipart")
    body = _400(response, "row 2")
    assert column in body["errors"]["row 2"][0]
    assert not Answer.objects.filter(campaign=small).exists()


# -- CSV cells, upload caps ----------------------------------------------------------------------
def test_csv_cells_over_128_kb_are_400_not_500(api: APIClient, small: Campaign) -> None:  # noqa: F811
    big = huge_cell_csv(["prompt_key", "sample_index", "url"])
    response = api.post(f"/api/campaigns/{small.pk}/images/import/", {"manifest": _file("m.csv", big)},
                        format="multipart")
    assert "128" in str(_400(response, "rows")["errors"]) or "field limit" in response.content.decode()
    big = huge_cell_csv(["image", "slot", "choice"])
    response = api.post(f"/api/campaigns/{small.pk}/machine-labels/import/",
                        {"file": _file("l.csv", big), "labeller": "lab-model"}, format="multipart")
    _400(response, "rows")
    big = huge_cell_csv(["name", "source", "identity", "percent_female"])
    response = api.post(f"/api/campaigns/{small.pk}/references/", {"file": _file("r.csv", big)}, format="multipart")
    assert response.status_code == 400, response.content[:300]
    big = (",".join([*HEADER]) + "\n" + '"' + "x" * 200_000 + '"' + ",1" * (len(HEADER) - 1) + "\n").encode()
    response = api.post(f"/api/campaigns/{small.pk}/mturk/import/", {"file": _file("b.csv", big)}, format="multipart")
    assert response.status_code == 400


@pytest.mark.parametrize("url,field,kind", [("images/import/", "manifest", "csv"), ("machine-labels/import/", "file", "csv"),
                                            ("mturk/import/", "file", "csv"), ("references/", "file", "references")])
def test_each_upload_endpoint_caps_its_file(api: APIClient, small: Campaign, settings: Any, url: str,  # noqa: F811
                                            field: str, kind: str) -> None:
    settings.UPLOAD_LIMITS = {kind: 10_000}
    data = b"prompt_key,sample_index,url\n" + b"a,0,https://img.example/x.png\n" * 1000
    response = api.post(f"/api/campaigns/{small.pk}/{url}", {field: _file("f.csv", data), "labeller": "m"},
                        format="multipart")
    assert response.status_code == 413, response.content[:300]
    assert field in response.json()["errors"]


def test_archive_upload_is_capped(api: APIClient, settings: Any) -> None:
    settings.UPLOAD_LIMITS = {"archive": 1000}
    response = api.post("/api/campaigns/import/", {"archive": _file("a.zip", b"PK" + b"\x00" * 5000)},
                        format="multipart")
    assert response.status_code == 413 and "archive" in response.json()["errors"]


def test_archive_zip_bomb_is_refused_before_it_is_read(api: APIClient) -> None:
    """A ~70 KB zip whose prompts.jsonl expands to 64 MB: refused from the headers (ratio), in little memory."""
    bomb = zip_bomb(manifest=b'{"format": "t2i-campaign-archive"}')
    assert len(bomb) < 200_000
    tracemalloc.start()
    try:
        response = api.post("/api/campaigns/import/", {"archive": _file("a.zip", bomb)}, format="multipart")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    body = _400(response, "archive")
    assert "zip bomb" in body["detail"] and not Campaign.objects.exists()
    assert peak < 20 * 1024 * 1024, peak


def test_archive_members_are_streamed_line_by_line(api: APIClient, settings: Any) -> None:
    """Under the ratio limit, a long member is read line by line: a line over the limit is named."""
    settings.ARCHIVE_MAX_RATIO = 10**9
    bomb = zip_bomb(name="prompts.jsonl", size=32 * 1024 * 1024)
    tracemalloc.start()
    try:
        from annotation.archive import _lines
        from common.zipsafe import SafeZip

        with pytest.raises(Exception, match="line longer than|not JSON"):
            _lines(SafeZip(bomb), "prompts.jsonl")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, peak  # the 32 MB member never held whole


# -- Templates -----------------------------------------------------------------------------------
def test_vlm_prompt_with_a_format_spec_is_refused_at_spec_time(api: APIClient, settings: Any) -> None:
    settings.AUTOLABEL_VLM_ENDPOINTS = {"lab": {"base": "https://vlm.example/v1"}}
    spec = copy.deepcopy(PST_MINIMAL) | {"autolabel": {"labellers": [
        {"name": "vlm", "endpoint": "lab", "model": "m", "prompt": "{question} {choices:>150000000}"}]}}
    _400(api.post("/api/specs/preview/", spec, format="json"), "autolabel.labellers.0.prompt")
    spec["autolabel"]["labellers"][0]["prompt"] = "{question} {choices!r} {question.__class__}"
    _400(api.post("/api/specs/preview/", spec, format="json"), "autolabel.labellers.0.prompt")
    spec["autolabel"]["labellers"][0]["prompt"] = "{question} Answer with one of: {choices}."
    assert api.post("/api/specs/preview/", spec, format="json").status_code == 200


def test_prompt_templates_and_wordings_take_no_format_spec(api: APIClient, researcher: User) -> None:
    spec = copy.deepcopy(PST_MINIMAL)
    spec["design"]["templates"] = {"paired": "A photo of a {id1:>1000} next to a {id2}."}
    _400(api.post("/api/specs/preview/", spec, format="json"), "design.templates.paired")
    spec = copy.deepcopy(PST_MINIMAL) | {"annotation": {"questions": {"single": "Is {identity:^100000} here?"}}}
    _400(api.post("/api/specs/preview/", spec, format="json"), "annotation.questions.single")


def test_mturk_mapping_columns_take_no_format_spec(api: APIClient, small: Campaign) -> None:  # noqa: F811
    response = api.post(f"/api/campaigns/{small.pk}/mturk/import/",
                        {"file": _file("b.csv", batch_csv([])), "mapping": '{"slots": 2, "image_url": "{k:>100000000}"}'},
                        format="multipart")
    _400(response, "mapping.image_url")

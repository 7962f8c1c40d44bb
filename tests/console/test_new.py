"""Creating a campaign from the console's form: the raw spec (JSON or YAML), an uploaded spec file,
and the validator's errors listed by dotted path with nothing created."""
from __future__ import annotations

import json

import yaml
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from campaigns.models import Campaign
from tests.builders.console import login, small_pst


def test_create_from_the_raw_spec_json(researcher: User) -> None:
    response = login(researcher).post("/console/new/", {"spec": json.dumps(small_pst(name="from-json"))})
    campaign = Campaign.objects.get(name="from-json")
    assert response.status_code == 302 and response["Location"] == f"/console/campaigns/{campaign.pk}/"
    assert campaign.owner == researcher and campaign.images_planned == 12


def test_create_from_an_uploaded_yaml_file(researcher: User) -> None:
    body = yaml.safe_dump(small_pst(name="from-yaml")).encode()
    response = login(researcher).post("/console/new/", {"spec": "", "spec_file": SimpleUploadedFile(
        "audit.yaml", body, content_type="application/yaml")})
    assert response.status_code == 302
    assert Campaign.objects.get(name="from-yaml").prompt_count == 12


def test_errors_listed_by_dotted_path_and_nothing_created(researcher: User) -> None:
    spec = small_pst(name="bad")
    spec["design"]["templates"] = {"single": "A picture of a person."}
    response = login(researcher).post("/console/new/", {"spec": json.dumps(spec)})
    page = response.content.decode()
    assert response.status_code == 400
    assert "<code>design.templates.single</code>" in page and "nothing was created" in page
    assert "A picture of a person." in page  # the spec is kept for editing
    assert not Campaign.objects.filter(name="bad").exists()
    response = login(researcher).post("/console/new/", {"spec": "name: [unclosed"})
    assert response.status_code == 400 and not Campaign.objects.exists()


def test_the_new_page_has_the_form_the_editor_and_the_preview(researcher: User) -> None:
    page = login(researcher).get("/console/new/").content.decode()
    for needle in ('name="spec"', 'name="spec_file"', 'id="preview-counts"', 'value="pst-occupation"',
                   'value="pst-power"', 'value="gep"', 'value="scratch"', 'data-path="annotation.reward"',
                   "console/new.js", "csrfmiddlewaretoken"):
        assert needle in page, needle

"""Rendering of reports: CSV zip, HTML pages, SVG charts. Never touches the database (a test runs it
under a zero-query assertion): it formats what `metrics.extract` read and `metrics.sections` computed.

Public: `report_page` (context of both report pages), `report_html`, `report_csv_zip`,
`compare_page`, the row builders (`agreement_rows`, `pst_rows`, `gep_rows`, ...) and the section
registry (`SectionRenderer`, `register`): a new report section registers its renderer, nothing
central changes.
"""
from __future__ import annotations

from .agreement import agreement_rows
from .amplification import amplification_rows
from .annotators import annotator_group_rows, annotator_test_rows
from .gep import gep_context_rows, gep_frequency_rows, gep_rows
from .html import compare_page, report_html, report_page
from .pst import pst_identity_rows, pst_rows
from .redundancy import redundancy_rows
from .registry import SectionRenderer, Table, register, renderers, sections_of
from .sources import auto_rows, hybrid_rows
from .tables import answers_csv_write, labels_csv, report_csv_zip

__all__ = ["SectionRenderer", "Table", "agreement_rows", "amplification_rows", "annotator_group_rows", "annotator_test_rows", "answers_csv_write", "auto_rows", "hybrid_rows", "compare_page", "gep_context_rows",
           "gep_frequency_rows", "gep_rows", "labels_csv", "pst_identity_rows", "pst_rows", "redundancy_rows", "register",
           "renderers", "report_csv_zip", "report_html", "report_page", "sections_of"]

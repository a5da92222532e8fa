"""Helpers for crowd-workflow tests: projects with crowd settings, controls with gold, answers."""

import io
import json

import pytest

from studies.services.imports import import_items
from tests import factories

# Factory items cite evidence i in sentence i (0-based i-1) and mask evidence 2: gold is [1].
RIGHT = {"sentences": [1], "none": False, "helpfulness": 60}
WRONG = {"sentences": [0], "none": False, "helpfulness": 60}
NONE = {"sentences": [], "none": True, "helpfulness": 60}


def crowd_project(*, crowd, regular=12, controls=6, qualification=0, per_item=2, **fields):
    """A project with crowd settings, a researcher, and items of each kind made as an import
    would (prepared by the task type)."""
    project = factories.ProjectFactory(annotators_per_item=per_item, crowd=crowd, **fields)
    researcher = factories.UserFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    factories.make_items(project, regular)
    factories.make_items(project, controls, kind="control", start=1000)
    factories.make_items(project, qualification, kind="qualification", start=2000)
    project.researcher = researcher
    return project


def add_annotator(project, **fields):
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user, role="annotator", **fields)
    return user


def import_jsonl(project, records):
    body = "".join(json.dumps(r) + "\n" for r in records).encode()
    return import_items(project=project, stream=io.BytesIO(body), fmt="jsonl")


@pytest.fixture
def batch_project(db):
    return crowd_project(
        crowd={
            "batch_size": 3,
            "controls_per_batch": 2,
            "min_controls": 3,
            "accuracy_threshold": 0.7,
        }
    )

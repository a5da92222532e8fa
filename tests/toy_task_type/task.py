from __future__ import annotations

from typing import Any

from rest_framework import serializers

from annotation.task_types import PreparedItem, TaskType, register


class YesNoPayload(serializers.Serializer):
    id = serializers.CharField(max_length=200)
    statement = serializers.CharField()
    gold = serializers.BooleanField(required=False, allow_null=True, default=None)


class YesNoAnswer(serializers.Serializer):
    answer = serializers.BooleanField()


class YesNoConfig(serializers.Serializer):
    question = serializers.CharField(default="Is this statement true?")


@register
class YesNo(TaskType):
    slug = "yes_no"
    name = "Yes or no"
    payload_serializer = YesNoPayload
    answer_serializer = YesNoAnswer
    config_serializer = YesNoConfig
    measures = {"answer": "nominal"}

    def prepare(self, payload: dict, *, config: dict) -> list[PreparedItem]:
        gold = None if payload["gold"] is None else {"answer": payload["gold"]}
        return [PreparedItem(external_id=payload["id"], payload=payload, prepared={}, gold=gold)]

    def display(self, item: Any, *, assignment: Any = None) -> dict:
        return {"statement": item.payload["statement"]}

    def score(self, answer: dict, gold: dict | None) -> dict:
        return {} if gold is None else {"correct": answer["answer"] == gold["answer"]}

    def export_row(self, item: Any, annotation: Any) -> dict:
        return {"statement": item.payload["statement"], "answer": annotation.answer["answer"]}

    def demo_payload(self) -> dict:
        return {"id": "toy-1", "statement": "Water boils at 100 °C at sea level.", "gold": True}

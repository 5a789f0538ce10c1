"""The wire models a search hit and a schema are made of, without pydantic: what a
one-shot keyword search or `kb schema` (`quick_search.py`) gives the engine's builders
(`search/hits.py`, `metadata/hits.py`, `metadata/schema.py`) in place of `protocol`'s
classes.

Each class takes the same keyword arguments as its `protocol` model (Python names, the
defaults filled in), and `wire()` is what `protocol.dump` makes of that model: camelCase
names in the model's order. The names, order and defaults come from `protocol.py`
through the generated `quick_defaults.py`; a test builds the same hits both ways.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from kb_lsp.runtime import quick_defaults as generated


class LiteModel:
    # Its `protocol` model's name; not `model`, which is a field of some (`FieldExtraction`).
    wire_model: ClassVar[str]

    def __init__(self, **fields: Any) -> None:
        kind = type(self).wire_model
        names = generated.PYTHON[kind]
        unknown = set(fields) - set(names)
        if unknown:
            raise TypeError(f"{kind} has no field {sorted(unknown)}")
        for name, (_, default) in zip(names, generated.WIRE[kind], strict=True):
            if name in fields:
                value = fields[name]
            elif default == generated.REQUIRED:
                raise TypeError(f"{kind}.{name} is required")
            else:
                value = copy.deepcopy(default)
            setattr(self, name, value)

    def model_copy(self, update: dict[str, Any] | None = None) -> LiteModel:
        copied = copy.copy(self)
        for name, value in (update or {}).items():
            setattr(copied, name, value)
        return copied

    def wire(self) -> dict[str, Any]:
        kind = type(self).wire_model
        fields = zip(generated.PYTHON[kind], generated.WIRE[kind], strict=True)
        return {wire_name: as_wire(getattr(self, name)) for name, (wire_name, _) in fields}


def as_wire(value: Any) -> Any:
    """`value` as the wire has it: models as their dicts, inside lists and dicts too."""
    if isinstance(value, LiteModel):
        return value.wire()
    if isinstance(value, list | tuple):
        return [as_wire(item) for item in value]
    if isinstance(value, dict):
        return {key: as_wire(item) for key, item in value.items()}
    return value


class Position(LiteModel):
    wire_model = "Position"


class Range(LiteModel):
    wire_model = "Range"

    @classmethod
    def of_lines(cls, start_line: int, end_line: int) -> Range:
        """As `protocol.Range.of_lines`: whole lines `start_line..end_line`."""
        return cls(
            start=Position(line=start_line, character=0),
            end=Position(line=end_line + 1, character=0),
        )


class ExtractedValue(LiteModel):
    wire_model = "ExtractedValue"


class HitMeta(LiteModel):
    wire_model = "HitMeta"


class SearchHit(LiteModel):
    wire_model = "SearchHit"


class SchemaValue(LiteModel):
    wire_model = "SchemaValue"


class FieldExtraction(LiteModel):
    wire_model = "FieldExtraction"


class SchemaField(LiteModel):
    wire_model = "SchemaField"


class SchemaResponse(LiteModel):
    wire_model = "SchemaResponse"

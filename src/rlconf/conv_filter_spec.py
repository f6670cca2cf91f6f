"""One filter of ``model.conv_filters``: ``[out_channels, kernel, stride]``, or, as RLlib's new
API stack's ``cnn_filter_specifiers`` write it, ``[out_channels, kernel, stride, padding]``.

The padding of a 4-element filter is its layer's own ("same" or "valid"); a 3-element filter's
layer pads "same", but the last layer of the stack "valid" (the reference's VisionNetwork).
The config checks the padding where one is given, before anything is built; the runtime's
``runtime.core.conv_filters`` checks the rest of a filter against the image it gets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import AfterValidator, WithJsonSchema

from rlconf.field_types import ListOf

#: The paddings a 4-element filter may give.
CONV_PADDINGS = ("same", "valid")

#: What a filter may be, for error messages.
CONV_FILTER_TEXT = (
    "[out_channels, kernel, stride] (padding 'same', the stack's last layer 'valid') or "
    "[out_channels, kernel, stride, padding] with padding 'same' or 'valid'; kernel and "
    "stride an int or [height, width], all >= 1"
)

_POSITIVE: dict[str, Any] = {"type": "integer", "minimum": 1}
_SIZE: dict[str, Any] = {
    "anyOf": [
        _POSITIVE,
        {"type": "array", "items": _POSITIVE, "minItems": 2, "maxItems": 2},
    ]
}
_SCHEMA: dict[str, Any] = {
    "type": "array",
    "prefixItems": [_POSITIVE, _SIZE, _SIZE, {"enum": list(CONV_PADDINGS)}],
    "minItems": 3,
    "maxItems": 4,
    "description": CONV_FILTER_TEXT,
}


def check_padding(entry: list[Any]) -> list[Any]:
    """A filter whose fourth element is not a padding, or with text elsewhere, is refused."""
    for position, element in enumerate(entry[:3]):
        if isinstance(element, str):
            raise ValueError(
                f"element {position} is the text {element!r}; only the fourth element, the "
                "padding, is text"
            )
    if len(entry) >= 4 and entry[3] not in CONV_PADDINGS:
        raise ValueError(
            f"padding {entry[3]!r} is neither of {', '.join(map(repr, CONV_PADDINGS))}"
        )
    return entry


if TYPE_CHECKING:
    ConvFilter: TypeAlias = list[int | list[int] | str]
else:
    ConvFilter = Annotated[
        ListOf[int | ListOf[int] | str], AfterValidator(check_padding), WithJsonSchema(_SCHEMA)
    ]

"""Field types the response models of every router share, so ``/openapi.json`` says what the JSON really holds.

Response models describe the dicts the services already build; they must not change a byte of those answers:

- ``Number``: an integer or a float, whichever the code produced. A plain ``float`` field would turn ``5`` into
  ``5.0`` on the way out.
- ``IsoTime``: a timestamp the code formatted itself with ``isoformat()`` (``+00:00``), documented as RFC 3339
  ``date-time``. A ``datetime`` field would re-serialize it as ``Z``.
- ``OpenModel``: a document whose producer may add keys (a new finding figure, a report section): they pass through
  instead of being dropped or refused by the response model.
- ``UtcDatetime``: a ``datetime`` that always leaves the API with its UTC offset (RFC 3339), whatever the database
  returned.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from monitor.core.times import as_utc

Number = int | float
IsoTime = Annotated[str, Field(json_schema_extra={"format": "date-time"})]


class OpenModel(BaseModel):
    model_config = ConfigDict(extra="allow")


UtcDatetime = Annotated[datetime, AfterValidator(as_utc)]

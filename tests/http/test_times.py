"""Times on the wire: RFC 3339 UTC with microseconds and ``Z``, whatever the zone given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from weave_http.models.base import rfc3339

_zones = st.none() | st.builds(
    lambda minutes: timezone(timedelta(minutes=minutes)), st.integers(-23 * 60, 23 * 60))


@given(st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30),
                    timezones=_zones))
def test_a_time_is_written_as_utc_with_microseconds_and_z(value: datetime) -> None:
    """The text equals the ``strftime`` spelling the API always used; a naive time is UTC."""
    utc = value if value.tzinfo is None else value.astimezone(UTC).replace(tzinfo=None)
    assert rfc3339(value) == utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert datetime.fromisoformat(rfc3339(value)[:-1]) == utc

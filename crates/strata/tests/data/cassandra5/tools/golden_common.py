"""Shared by the recorders: connecting, and turning driver values into JSON.

Value encoding (the same in every recorded file):
  blob                -> "0x" + lower-case hex
  uuid, timeuuid      -> canonical string
  timestamp           -> ISO 8601 UTC with milliseconds, "2024-01-02T03:04:05.678Z"
  date                -> "YYYY-MM-DD" (days outside the calendar as the day count)
  time                -> nanoseconds since midnight (int)
  duration            -> {"months": m, "days": d, "nanoseconds": n}
  decimal             -> string as Java's BigDecimal.toString would print it
  varint, ints        -> JSON number
  float, double       -> JSON number, or "NaN", "Infinity", "-Infinity"
  inet                -> string
  set, list, tuple    -> JSON array; UDT -> JSON object in field order
  map                 -> JSON object in the map's order; a key that does not encode to a
                         string is written as its JSON text (map<int, _> key 1 -> "1")
  unset bind value    -> {"unset": true}
"""

import datetime
import decimal
import ipaddress
import json
import math
import uuid

from cassandra import util as cutil
from cassandra.query import UNSET_VALUE

ERROR_CLASSES = {
    0x0000: "ServerError", 0x000A: "ProtocolError", 0x0100: "AuthenticationError",
    0x1000: "Unavailable", 0x1001: "Overloaded", 0x1002: "IsBootstrapping",
    0x1003: "TruncateError", 0x1100: "WriteTimeout", 0x1200: "ReadTimeout",
    0x1300: "ReadFailure", 0x1400: "FunctionFailure", 0x1500: "WriteFailure",
    0x1600: "CDCWriteFailure", 0x1700: "CASWriteUnknown", 0x2000: "SyntaxException",
    0x2100: "Unauthorized", 0x2200: "InvalidRequest", 0x2300: "ConfigurationException",
    0x2400: "AlreadyExists", 0x2500: "Unprepared",
}

EPOCH = datetime.datetime(1970, 1, 1)


def encode(v):
    if v is None:
        return None
    if v is UNSET_VALUE:
        return {"unset": True}
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, decimal.Decimal):
        return java_decimal(v)
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "0x" + bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        ms = (v - EPOCH) // datetime.timedelta(milliseconds=1)
        return iso_millis(ms)
    if isinstance(v, cutil.Date):
        try:
            return v.date().isoformat()
        except (ValueError, OverflowError):
            return v.days_from_epoch
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, cutil.Time):
        return v.nanosecond_time
    if isinstance(v, cutil.Duration):
        return {"months": v.months, "days": v.days, "nanoseconds": v.nanoseconds}
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return str(v)
    if isinstance(v, (cutil.OrderedMapSerializedKey, cutil.OrderedMap, dict)):
        return {map_key(k): encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset, cutil.SortedSet)):
        if hasattr(v, "_fields"):  # a UDT as a named tuple
            return {f: encode(getattr(v, f)) for f in v._fields}
        return [encode(x) for x in v]
    if hasattr(v, "__dict__"):  # a UDT as a class instance
        return {k: encode(x) for k, x in vars(v).items()}
    raise TypeError("no JSON encoding for %r" % type(v))


def map_key(k):
    e = encode(k)
    return e if isinstance(e, str) else json.dumps(e)


def iso_millis(ms):
    d = EPOCH + datetime.timedelta(milliseconds=ms)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def java_decimal(d):
    """BigDecimal.toString: plain unless the adjusted exponent is below -6 or scale < 0."""
    sign, digits, exp = d.as_tuple()
    unscaled = "".join(map(str, digits)) or "0"
    scale = -exp
    adjusted = -scale + (len(unscaled) - 1)
    neg = "-" if sign else ""
    if scale >= 0 and adjusted >= -6:
        if scale == 0:
            return neg + unscaled
        if len(unscaled) > scale:
            return neg + unscaled[:-scale] + "." + unscaled[-scale:]
        return neg + "0." + "0" * (scale - len(unscaled)) + unscaled
    mant = unscaled[0] + ("." + unscaled[1:] if len(unscaled) > 1 else "")
    return neg + mant + "E" + ("+" if adjusted > 0 else "") + str(adjusted)


def type_text(cqltype):
    """The type as the Python driver reports it (it prints text columns as varchar)."""
    return cqltype.cql_parameterized_type()

"""Keeps the client in step with the API: reads its OpenAPI document.

That is the repository's ``openapi/openapi.json`` when the tests run from a checkout (the file
the server compiles in and serves at GET /v1/openapi.json, so a server built from the same tree
serves it, and one built earlier cannot hide a change to it), else the served document.

Fails when an operation has no method on both clients, when a method does not take one of its
query parameters, when a field of a response (or of an export line) is unknown to the models
or has a type they do not expect, when a schema is read by no model, when a tagged union (a
``oneOf`` whose alternatives fix a tag with ``const``) has an alternative no model of the
union reads, or when the versions part.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import sys
import typing
from collections.abc import Mapping
from datetime import date
from typing import Any, Callable, Union

import pytest

import valuation_marks
from valuation_marks import API_VERSION, ApiError, AsyncClient, Client, models

from .conftest import REPO_DIR, Server

if sys.version_info >= (3, 10):  # pragma: no cover - depends on the interpreter
    from types import UnionType

    UNION_TYPES: tuple[Any, ...] = (Union, UnionType)
else:  # pragma: no cover
    UNION_TYPES = (Union,)

#: The document the server compiles in, when the tests run from a checkout.
DOCUMENT_FILE = REPO_DIR / "openapi" / "openapi.json"

# Operational endpoints, outside /v1 and not for API users: probes for orchestrators and a
# scrape target for monitoring. A client library has no business calling them.
EXCLUDED_OPERATIONS = {
    "healthz": "GET /healthz, the liveness probe",
    "readyz": "GET /readyz, the readiness probe (snapshot, refusals, budget store)",
    "metrics": "GET /metrics, Prometheus text for scraping",
}
EXCLUDED_SCHEMAS = {"Health", "Readiness"}  # the probes' bodies


# Query parameters whose API name is not a Python name: the date range's from (a keyword) and,
# to keep the pair together, to. The methods take them as start and end, both inclusive. The
# consistency proof's from is a tree size, not a date: from_size.
PYTHON_NAMES = {"from": "start", "to": "end"}
PYTHON_NAMES_BY_OPERATION = {"getLogConsistency": {"from": "from_size"}}

ClientClass = Union[type[Client], type[AsyncClient]]


@pytest.fixture(scope="module")
def document(server: Server) -> dict[str, Any]:
    if DOCUMENT_FILE.is_file():
        found: dict[str, Any] = json.loads(DOCUMENT_FILE.read_text(encoding="utf-8"))
        return found
    with Client(base_url=server.base_url) as client:
        return client.openapi()


def operations(document: Mapping[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    found = {}
    for path, item in document["paths"].items():
        for verb, op in item.items():
            if isinstance(op, dict) and "operationId" in op:
                assert verb == "get", f"{op['operationId']} is {verb.upper()}: the client only GETs"
                found[op["operationId"]] = (path, op)
    return found


def methods(cls: ClientClass) -> dict[str, list[Callable[..., Any]]]:
    by_operation: dict[str, list[Callable[..., Any]]] = {}
    for _, member in inspect.getmembers(cls, inspect.isfunction):
        operation_id = getattr(member, "__marks_operation__", None)
        if operation_id is not None:
            by_operation.setdefault(operation_id, []).append(member)
    return by_operation


def resolve(document: Mapping[str, Any], schema: Mapping[str, Any], seen: set[str]) -> Mapping[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        seen.add(name)
        schema = document["components"]["schemas"][name]
    return schema


def strip_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in UNION_TYPES:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def union_members(tp: Any) -> list[Any]:
    """The models of a union of models (a tagged union), else []."""
    if typing.get_origin(tp) not in UNION_TYPES:
        return []
    return [a for a in typing.get_args(tp) if a is not type(None)]


def tagged_member(members: list[Any], alternative: Mapping[str, Any]) -> Any:
    """The member whose ``Literal`` field holds the ``const`` the alternative fixes, or None."""
    for member in members:
        if not dataclasses.is_dataclass(member):
            continue
        for name, hint in typing.get_type_hints(member).items():
            fixed = alternative.get("properties", {}).get(name, {})
            literal = typing.get_origin(hint) is typing.Literal
            if literal and "const" in fixed and fixed["const"] in typing.get_args(hint):
                return member
    return None


SCALARS: dict[str, tuple[Any, ...]] = {
    "string": (str, date),
    "integer": (int,),
    "number": (float, int),
    "boolean": (bool,),
}


def walk(
    document: Mapping[str, Any], schema: Mapping[str, Any], tp: Any, where: str, seen: set[str]
) -> list[str]:
    """What of ``schema`` the model type ``tp`` does not know (recursively)."""
    schema = resolve(document, schema, seen)
    tp = strip_optional(tp)
    problems: list[str] = []
    members = union_members(tp)
    for alternative in schema.get("oneOf", []) + schema.get("anyOf", []):
        resolved = resolve(document, alternative, seen)
        if resolved.get("type") == "null":
            continue
        if not members:
            problems += walk(document, alternative, tp, where, seen)
            continue
        member = tagged_member(members, resolved)
        name = alternative.get("$ref", "an alternative").rsplit("/", 1)[-1]
        if member is None:
            problems.append(f"{where}: no model of {tp} has the tag {name} fixes")
        else:
            problems += walk(document, alternative, member, f"{where}<{name}>", seen)
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else [t for t in types if t != "null"]
    if tp is Any or typing.get_origin(tp) in (Mapping, dict, typing.get_origin(Mapping[str, Any])):
        return problems  # a free-form object on the model side: anything goes
    if "object" in types or "properties" in schema:
        properties = schema.get("properties")
        if not properties:
            return [*problems, f"{where}: a free-form object, read as {tp}; use Mapping[str, Any]"]
        if not (isinstance(tp, type) and dataclasses.is_dataclass(tp)):
            return [*problems, f"{where}: an object with fields, read as {tp}"]
        hints = {
            models.json_name(field): typing.get_type_hints(tp)[field.name] for field in dataclasses.fields(tp)
        }
        for name, sub in properties.items():
            if name not in hints or name == "raw":
                problems.append(f"{where}.{name}: unknown to {tp.__name__}")
            else:
                problems += walk(document, sub, hints[name], f"{where}.{name}", seen)
    elif "array" in types:
        if typing.get_origin(tp) is not tuple:
            return [*problems, f"{where}: an array, read as {tp}"]
        problems += walk(document, schema.get("items", {}), typing.get_args(tp)[0], f"{where}[]", seen)
    elif typing.get_origin(tp) is typing.Literal:
        fixed = [schema["const"]] if "const" in schema else schema.get("enum")
        if fixed is None or not set(fixed) <= set(typing.get_args(tp)):
            problems.append(f"{where}: {fixed or 'any ' + str(types)}, read as {tp}")
    elif types and types[0] in SCALARS:
        wanted = SCALARS[types[0]]
        if types[0] == "string" and "date" not in (schema.get("format"),) and tp is date:
            problems.append(f"{where}: a string, read as a date")
        elif tp not in wanted:
            problems.append(f"{where}: {types[0]}, read as {tp}")
    return problems


def response_schema(op: Mapping[str, Any]) -> Mapping[str, Any] | None:
    content = op["responses"]["200"].get("content", {})
    json_content = content.get("application/json")
    return json_content["schema"] if json_content else None


def model_of(method: Callable[..., Any]) -> Any:
    """The model a method returns, when it returns one."""
    annotation = inspect.signature(method).return_annotation
    return getattr(models, annotation, None) if isinstance(annotation, str) else None


# ---------------------------------------------------------------------------------------------


def test_the_package_version_tracks_the_apis(document: dict[str, Any]) -> None:
    assert document["info"]["version"] == API_VERSION
    assert valuation_marks.__version__.split(".")[:2] == API_VERSION.split(".")[:2]


@pytest.mark.parametrize("cls", [Client, AsyncClient], ids=["Client", "AsyncClient"])
def test_every_operation_has_a_method(document: dict[str, Any], cls: ClientClass) -> None:
    served = set(operations(document)) - set(EXCLUDED_OPERATIONS)
    implemented = set(methods(cls))
    assert served - implemented == set(), f"operations without a {cls.__name__} method"
    assert implemented - served == set(), "methods for operations the API does not serve"
    for op_id, (path, _) in operations(document).items():
        if op_id in EXCLUDED_OPERATIONS:
            assert not path.startswith("/v1/"), f"{op_id} is excluded but is an API operation"


@pytest.mark.parametrize("cls", [Client, AsyncClient], ids=["Client", "AsyncClient"])
def test_every_query_parameter_is_taken(document: dict[str, Any], cls: ClientClass) -> None:
    implemented = methods(cls)
    for op_id, (_, op) in operations(document).items():
        if op_id in EXCLUDED_OPERATIONS:
            continue
        accepted = {name for m in implemented[op_id] for name in inspect.signature(m).parameters}
        for parameter in op.get("parameters", []):
            if parameter["in"] in ("query", "path"):
                names = {**PYTHON_NAMES, **PYTHON_NAMES_BY_OPERATION.get(op_id, {})}
                name = names.get(parameter["name"], parameter["name"])
                assert name in accepted, f"{op_id}: no method takes {parameter['name']!r} (as {name!r})"


def test_every_response_field_is_known_to_the_models(document: dict[str, Any]) -> None:
    problems: list[str] = []
    seen: set[str] = {"ProblemDetail"}  # read by ApiError, below
    implemented = methods(Client)
    for op_id, (_, op) in operations(document).items():
        if op_id in EXCLUDED_OPERATIONS:
            continue
        schema = response_schema(op)
        typed = [(m, model_of(m)) for m in implemented[op_id]]
        typed = [(m, model) for m, model in typed if model is not None]
        if schema is not None and "$ref" in schema:
            assert typed, f"{op_id}: no method returns a model for its {schema['$ref']}"
            for method, model in typed:
                problems += walk(document, schema, model, f"{op_id} ({method.__name__})", seen)
        for parameter in op.get("parameters", []):
            resolve(document, parameter.get("schema", {}), seen)
        line_schemas = {
            k: v for m in implemented[op_id] for k, v in getattr(m, "__marks_schemas__", {}).items()
        }
        for name, model in line_schemas.items():
            assert name in document["components"]["schemas"], f"{op_id}: the API has no schema {name}"
            problems += walk(
                document, {"$ref": f"#/components/schemas/{name}"}, model, f"{op_id} {name}", seen
            )
        if schema is not None and "$ref" not in schema and not line_schemas:
            assert schema.get("type") == "object" and not schema.get("properties"), op_id  # getOpenApi
    assert problems == []
    unread = set(document["components"]["schemas"]) - seen - EXCLUDED_SCHEMAS
    assert unread == set(), "schemas no model reads"


def test_problem_fields_are_on_api_error(document: dict[str, Any]) -> None:
    error = ApiError(422, "invalid_parameter", "detail")
    for name in document["components"]["schemas"]["ProblemDetail"]["properties"]:
        assert hasattr(error, name), f"ApiError has no {name}"
    codes = document["components"]["schemas"]["ProblemDetail"]["properties"]["code"]["enum"]
    for code in codes:
        cls = valuation_marks.errors.error_class(code, 400)
        assert cls.default_code == code, f"no exception class for {code}"
        assert cls.__name__ in valuation_marks.__all__


def test_the_check_notices_what_the_models_lack(document: dict[str, Any]) -> None:
    """The walk itself: an added field, a changed type and a new schema are all reported."""
    changed = copy.deepcopy(document)
    schemas = changed["components"]["schemas"]
    schemas["CompanyListItem"]["properties"]["employees"] = {"type": "integer"}
    schemas["MarkPoint"]["properties"]["confidence"] = {"type": "string"}
    problems = walk(
        changed, {"$ref": "#/components/schemas/CompaniesResponse"}, models.CompaniesPage, "x", set()
    )
    assert problems == [
        "x.companies[].latest_mark.confidence: string, read as <class 'float'>",
        "x.companies[].employees: unknown to CompanyListItem",
    ]


def test_the_check_notices_what_a_tagged_union_lacks(document: dict[str, Any]) -> None:
    """A new part of an observation, a field one part adds and a changed tag are all reported."""
    changed = copy.deepcopy(document)
    schemas = changed["components"]["schemas"]
    schemas["ObservationAdjustment"] = {
        "type": "object",
        "properties": {"part": {"type": "string", "const": "adjustment"}, "pct": {"type": "number"}},
    }
    schemas["Observation"]["oneOf"].append({"$ref": "#/components/schemas/ObservationAdjustment"})
    schemas["ObservationDrift"]["properties"]["window_days"] = {"type": "integer"}
    where = "x.observations[]"
    assert walk(
        changed, {"$ref": "#/components/schemas/CompanyProfileResponse"}, models.Company, "x", set()
    ) == [
        f"{where}<ObservationDrift>.window_days: unknown to ObservationDrift",
        f"{where}: no model of {models.Observation} has the tag ObservationAdjustment fixes",
    ]
    schemas["ObservationEvent"]["properties"]["part"] = {"type": "string", "enum": ["event", "events"]}
    problems = walk(changed, {"$ref": "#/components/schemas/Observation"}, models.Observation, "y", set())
    assert "y: no model of" in problems[0] and "ObservationEvent" in problems[0]

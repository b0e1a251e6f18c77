"""The public surface: both clients have the same methods, models are frozen and tolerant."""

from __future__ import annotations

import dataclasses
import datetime
import inspect
from pathlib import Path
from typing import Any

import pytest

import valuation_marks
from valuation_marks import AsyncClient, Client, CompanyListItem, Meta, ResponseError
from valuation_marks.models import from_json


def public(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


def test_both_clients_have_the_same_methods() -> None:
    sync, asynchronous = public(Client), public(AsyncClient)
    assert set(sync) - {"close"} == set(asynchronous) - {"aclose"}
    for name in set(sync) & set(asynchronous):
        assert list(sync[name].parameters) == list(asynchronous[name].parameters), name
        assert str(sync[name].return_annotation).replace("ExportStream", "AsyncExportStream").replace(
            "Paginator", "AsyncPaginator"
        ) == str(asynchronous[name].return_annotation).replace("AsyncAsync", "Async"), name


def test_async_methods_are_coroutines_or_async_iterables() -> None:
    for name in public(AsyncClient):
        method = getattr(AsyncClient, name)
        returns = str(inspect.signature(method).return_annotation)
        if returns.startswith(("AsyncPaginator", "AsyncExportStream")):
            assert not inspect.iscoroutinefunction(method), name
        else:
            assert inspect.iscoroutinefunction(method), name


def test_the_names_of_the_contract_are_exported() -> None:
    for name in ("Client", "AsyncClient", "ApiError", "RateLimited", "TierForbidden", "NotFound"):
        assert name in valuation_marks.__all__
    for name in valuation_marks.__all__:
        assert hasattr(valuation_marks, name), name


def test_the_package_ships_py_typed() -> None:
    assert (Path(valuation_marks.__file__).parent / "py.typed").exists()


META = {
    "data_mode": "illustrative",
    "provenance": "backtest",
    "methodology_version": "v0.3.0",
    "dataset_version": "2026-11-24",
    "as_of": "2026-11-24",
    "disclaimer": "d",
}
ITEM: dict[str, Any] = {
    "slug": "acme",
    "name": "Acme",
    "sector": "ai",
    "status": "private",
    "latest_mark": {
        "as_of_date": "2026-11-24",
        "value_usd": 10,
        "lower_usd": 5,
        "upper_usd": 20,
        "confidence": 0.5,
    },
    "delta_30d_pct": None,
}


def test_models_ignore_added_fields_and_keep_them_in_raw() -> None:
    meta = from_json(Meta, {**META, "region": "eu"})
    item = from_json(CompanyListItem, {**ITEM, "employees": 12}, meta=meta)
    assert item.raw["employees"] == 12 and not hasattr(item, "employees")
    assert item.latest_mark.coverage is None  # optional and absent
    assert item.latest_mark.as_of_date == datetime.date(2026, 11, 24)
    assert item.meta.as_of == datetime.date(2026, 11, 24) and meta.raw["region"] == "eu"
    assert meta.to_dict()["as_of"] == "2026-11-24" and not meta.is_live
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.slug = "other"  # type: ignore[misc]


def test_models_say_what_is_missing() -> None:
    with pytest.raises(ResponseError, match="latest_mark"):
        from_json(CompanyListItem, {k: v for k, v in ITEM.items() if k != "latest_mark"}, meta=None)
    with pytest.raises(ResponseError, match="meta"):
        from_json(CompanyListItem, ITEM)
    with pytest.raises(ResponseError, match="as_of_date"):
        from_json(
            CompanyListItem, {**ITEM, "latest_mark": {**ITEM["latest_mark"], "as_of_date": "soon"}}, meta=None
        )


def test_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MARKS_API_KEY", "vmk_from_env")
    monkeypatch.setenv("MARKS_BASE_URL", "http://marks.example:8080/")
    with Client() as client:
        assert client.base_url == "http://marks.example:8080"
        assert client._core.headers["X-API-Key"] == "vmk_from_env"
    monkeypatch.delenv("MARKS_BASE_URL")
    with Client(api_key="vmk_given") as client:
        assert client.base_url == valuation_marks.DEFAULT_BASE_URL
        assert client._core.headers["X-API-Key"] == "vmk_given"

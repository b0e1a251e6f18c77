"""/docs: the interactive reference lists every operation and every schema of the served
OpenAPI document (RapiDoc, vendored, rendered from /v1/openapi.json)."""

from conftest import DESKTOP
from playwright.sync_api import expect

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def rapidoc_id(text):
    """RapiDoc's element id for a path or a schema name (lower case, braces to dashes)."""
    return text.replace("{", "-").replace("}", "-").lower()


def test_docs_list_every_operation_and_schema(open_page, server):
    spec = server.json("/v1/openapi.json")
    operations = [
        (method, path, op) for path, item in spec["paths"].items() for method, op in item.items() if method in METHODS
    ]
    assert len(operations) >= 16
    page, _ = open_page(viewport=DESKTOP)
    page.goto("/docs")
    doc = page.locator("rapi-doc")
    for method, path, op in operations:
        nav = doc.locator(f'[id="link-{method}-{rapidoc_id(path)}"]')
        expect(nav).to_have_count(1)
        expect(nav).to_contain_text(op["summary"])
    schemas = spec["components"]["schemas"]
    for name in schemas:
        expect(doc.locator(f'[id="link-cmp--schemas-{rapidoc_id(name)}"]')).to_have_count(1)
    # Each one opens from the navigation and shows its own section.
    for method, path, op in operations:
        doc.locator(f'[id="link-{method}-{rapidoc_id(path)}"]').click()
        section = doc.locator(f'[id="{method}-{rapidoc_id(path)}"]')
        expect(section).to_be_visible()
        expect(section).to_contain_text(op["summary"])
        expect(section).to_contain_text(path)
    for name in schemas:
        doc.locator(f'[id="link-cmp--schemas-{rapidoc_id(name)}"]').click()
        expect(doc.locator(f'[id="cmp--schemas-{rapidoc_id(name)}"]')).to_be_visible()

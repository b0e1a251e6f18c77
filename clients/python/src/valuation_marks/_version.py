"""The package version, which tracks the API's (``info.version`` of its OpenAPI document)."""

__version__ = "0.2.0"

#: The ``info.version`` of the OpenAPI document this release was built and tested against.
API_VERSION = "0.2.0"

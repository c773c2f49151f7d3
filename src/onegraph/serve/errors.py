"""The errors of serving, each with the HTTP status it is answered with.

Bad input keeps the error onegraph raises for it everywhere (:class:`~onegraph.errors.MissingColumnError`,
:class:`~onegraph.errors.ColumnTypeError`, ... are :class:`~onegraph.errors.DataError`, answered 400); the
kinds below are the ones only a server has: an unknown model, a body over the limit, a full queue, a request
that waited too long.
"""

from __future__ import annotations

from onegraph.errors import ConfigError, DataError, ModelFileError, OnegraphError

__all__ = ["ServeError", "ProtocolError", "UnknownModelError", "BodyTooLargeError", "UnsupportedMediaError", "NotAcceptableError",
           "QueueFullError", "RequestTimeoutError", "BodyTimeoutError", "ClientGoneError", "status_of", "one_line"]


class ServeError(OnegraphError):
    """An error of the server itself; ``status`` is the HTTP status code it is answered with."""

    status = 500


class ProtocolError(DataError):
    """A request that does not follow its protocol (a tensor without a datatype, data of the wrong length,
    a body that is not JSON / Arrow / CSV); the message names the tensor or field at fault."""


class UnknownModelError(ServeError):
    """No model of that name (or version) is served (404)."""

    status = 404

    def __init__(self, name: str, served: list[str], version: str | None = None) -> None:
        what = f"model {name!r}" if version is None else f"version {version!r} of model {name!r}"
        super().__init__(f"{what} is not served", hint=f"models served: {', '.join(served) or '(none)'}")


class BodyTooLargeError(ServeError):
    """The request body is over the limit (413)."""

    status = 413

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is over the limit of {limit:,} bytes",
                         hint="send fewer rows per request, or start the server with a larger --max-body-mb")


class UnsupportedMediaError(ServeError):
    """A body of a content type the endpoint does not read (415)."""

    status = 415


class NotAcceptableError(UnsupportedMediaError):
    """An Accept header naming only media types the endpoint does not write (406)."""

    status = 406


class QueueFullError(ServeError):
    """The model's queue holds as many requests as it may: back-pressure instead of unbounded memory (503)."""

    status = 503

    def __init__(self, name: str, limit: int) -> None:
        super().__init__(f"model {name!r} has {limit} requests waiting, its queue limit",
                         hint="retry later, or start the server with a larger --max-queue")


class RequestTimeoutError(ServeError):
    """The request waited or ran longer than the per-request timeout (504)."""

    status = 504

    def __init__(self, name: str, seconds: float) -> None:
        super().__init__(f"the request to model {name!r} did not finish within {seconds:g} s",
                         hint="retry later, or start the server with a larger --timeout")


class BodyTimeoutError(ServeError):
    """The client did not send its whole body within the per-request timeout (408): a body shorter than its
    Content-Length, or sent a few bytes at a time, would otherwise hold a connection open for ever."""

    status = 408

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the request body did not arrive within {seconds:g} s",
                         hint="send the whole body, as long as its Content-Length says")


class ClientGoneError(ServeError):
    """The client closed the connection before its request was read: nothing to answer, no fault of the
    server (counted as 499, nginx's "client closed request", and not logged as a failure)."""

    status = 499

    def __init__(self) -> None:
        super().__init__("the client closed the connection before sending its whole request")


def status_of(exc: BaseException) -> int:
    """The HTTP status a request failing with ``exc`` is answered with: 4xx for what the client can change
    (bad data, a model file that does not load), 5xx for the server's own state or faults."""
    if isinstance(exc, ServeError):
        return exc.status
    if isinstance(exc, (DataError, ConfigError, ModelFileError)):
        return 400
    return 500


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line; anything but an onegraph error is an internal error whose
    details stay in the server's log, never in the response."""
    if isinstance(exc, OnegraphError):
        return " ".join(str(exc).split())
    return f"internal error ({type(exc).__name__}); please report it with the server's log"

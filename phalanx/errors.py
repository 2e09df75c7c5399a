"""Errors a user can act on: bad input names the file, the object and the field."""

from __future__ import annotations


class PhalanxError(Exception):
    """Base class for errors reported to the user as one line, exit status 2."""


class InputError(PhalanxError):
    """Invalid input: which file, which object, which field, and what is wrong."""

    def __init__(self, message: str, *, file: str | None = None, obj: str | None = None,
                 field: str | None = None) -> None:
        self.file = file
        self.obj = obj
        self.field = field
        self.detail = message
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [p for p in (self.file, self.obj, self.field) if p]
        return ": ".join([*parts, self.detail])

    def at(self, *, file: str | None = None, obj: str | None = None) -> InputError:
        """The same error with the location filled in where it was not known yet."""
        return InputError(self.detail, file=self.file or file, obj=self.obj or obj, field=self.field)

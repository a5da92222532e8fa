"""The text files the import commands are given (a Label Studio export and labeling config, a
mapping file), read alike: UTF-8 (a byte order mark dropped), a missing file or one that is not
UTF-8 text a ``CommandError`` naming it, before anything is imported."""

from django.core.management.base import CommandError


def read_text_file(path: str, what: str) -> str:
    """The text of the file at ``path`` (line ends as written); ``what``: the file's role in
    the messages ("mapping file")."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        raise CommandError(f"No such {what}: {path}") from None
    except UnicodeDecodeError as exc:
        raise CommandError(
            f"Nothing imported. The {what} is not UTF-8 text (byte {exc.start}): {path}"
        ) from None
